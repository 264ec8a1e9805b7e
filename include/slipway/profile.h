/*
 * memory/profile: declared engine profiles for forks. A profile extends a known law (vLLM here)
 * with named terms and constants, so a fork's own figures are predicted from a declaration
 * instead of a code change: KV-law terms (extra bytes per token on each attention page, extra
 * state blocks per request) and the expert-offload arena of the operator's vLLM fork:
 *
 *   arena = usable - weights - non_torch [- graphs] - overhead(MNBT) - reserve x max_model_len
 *           + adjust
 *   overhead(MNBT) = overhead + step x ceil((MNBT - threshold) / per) when MNBT > threshold
 *   slots = floor(arena / slot)
 *
 * Calibrating the constants from measured boots is calib's job (slipway/calib.h: the arena's
 * slope and intercept from the ledger's boots); here the law and its declaration exist. A fleet
 * profile becomes a fork profile in memory/profile_fleet; an endpoint's other law inputs are
 * plan/inputs.c's (slipway/plan.h). What it does not do: guess a constant the declaration omits.
 */
#ifndef SLIPWAY_PROFILE_H
#define SLIPWAY_PROFILE_H

#include <slipway/core.h>
#include <slipway/vllm.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fork_profile {
    char name[64];
    char extends[16]; /* "vllm" */
    /* KV-law terms */
    int64_t extra_attn_bytes_per_token;
    int64_t extra_mamba_blocks;
    /* arena terms, bytes per rank */
    bool has_arena;
    uint64_t usable, weights, non_torch, graphs, overhead;
    bool subtract_graphs;
    uint64_t overhead_step; /* added per `overhead_per` tokens of MNBT above threshold */
    int64_t overhead_threshold, overhead_per;
    double reserve_per_token; /* B/token x max_model_len */
    int64_t adjust;           /* signed bytes, a calibration term (0 when declared) */
    uint64_t slot;            /* bytes per arena slot */
    /* headroom terms (0 = not declared) */
    uint64_t overhead_precise; /* the overhead --expert-precise-memory selects (the fitted one) */
    double utilization;        /* the gpu_memory_utilization the arena constants were read at: a
                                  shape at another utilization moves the arena by the difference
                                  x usable (0: the shape's utilization does not enter) */
};

struct sw_arena {
    int64_t arena_bytes;
    int64_t slots;
    uint64_t reserve_bytes, overhead_bytes;
};

/*
 * Parse a declaration (JSON object): {"name", "extends", "kv": {"extra_attn_bytes_per_token",
 * "extra_mamba_blocks"}, "arena": {"usable", "weights", "non_torch", "graphs",
 * "subtract_graphs", "overhead", "overhead_step", "overhead_threshold", "overhead_per",
 * "reserve_per_token", "adjust", "slot"}}. Byte values are numbers or strings with a unit and
 * decimals ("31.86 GiB", "2.34375 MiB"), rounded to the byte. Unknown keys are errors (a typo in
 * a constant must not silently default). `where` names the source.
 */
int sw_profile_parse(const char *text, size_t len, const char *where, struct sw_fork_profile *p,
                     struct sw_err *e);
/* Apply the KV-law terms to vLLM options. */
void sw_profile_apply_vllm(const struct sw_fork_profile *p, struct sw_vllm_opts *o);
/* The arena for a shape. SW_EINVAL when the profile declares no arena. */
int sw_profile_arena(const struct sw_fork_profile *p, int64_t max_model_len,
                     int64_t max_num_batched_tokens, struct sw_arena *out, struct sw_err *e);
/* out.arena = {profile, arena_bytes, slots, reserve_bytes, overhead_bytes} for this shape, when
 * the profile declares an arena (nothing is added otherwise). What `plan` prints for a fork. */
void sw_profile_arena_json(const struct sw_fork_profile *p, int64_t max_model_len,
                           int64_t max_num_batched_tokens, json_t *out);

/* ---------------------------------------------------------------------------------------------
 * Headroom: what is left on a rank at CUDA-graph capture, by the fork's budget
 *
 *   resident = weights + non_torch + arena(L, MNBT, precise, util) + pool + graphs
 *   free at capture = usable - resident
 *
 * where the arena's overhead is `overhead_precise` under --expert-precise-memory (the fitted
 * overhead alone, without the compile/graph-capture headroom the default carries), and a shape
 * at another gpu_memory_utilization than the profile's moves the arena by the difference x usable.
 * Capture allocates transiently on top of that; runtime activations too. The transient needs are
 * functions of the shape with fitted coefficients (calib's sw_calib_headroom):
 *
 *   capture(seqs, MNBT, MTP n) = tau x seqs x (1 + n)     (graphs captured per batch size)
 *   activation(seqs, MNBT, MTP n) = a0 + a1 x seqs x (1 + n)   (held when the pool is allocated;
 *                                   the MNBT step is the overhead's, already in the arena term)
 *
 * The seed's budget line (bf16 2 x 262144, precise: 6.28 + 6.80 + 0.55 + 16.65 + 1.45 = 31.73 of
 * 31.86 GiB) is this sum. What it does not do: fit tau, a0, a1 (calib) or decide (gate, sim).
 */
struct sw_headroom_shape {
    int64_t max_model_len;
    int64_t seqs;
    int64_t mnbt;        /* max_num_batched_tokens (0: below the overhead's threshold) */
    int64_t spec_tokens; /* MTP / draft tokens per step (0: none) */
    bool precise;        /* --expert-precise-memory */
    double util;         /* gpu_memory_utilization (0: the profile's) */
    uint64_t pool;       /* KV pool bytes per rank (pinned, or a predicted engine-sized pool) */
};

struct sw_headroom_budget {
    struct sw_arena arena; /* with the selected overhead and the utilization shift */
    uint64_t overhead;     /* the selected overhead, with the MNBT step */
    int64_t util_shift;    /* bytes the utilization moved the arena by (negative: smaller) */
    uint64_t weights, non_torch, graphs, pool, usable;
    double resident;     /* weights + non_torch + arena + pool + graphs */
    double free_capture; /* usable - resident (signed: negative = the budget does not hold) */
    double free_kv;      /* usable - weights - non_torch - arena: what the pool and the activations
                            share when the pool is allocated */
};

/* The budget of a shape. SW_EINVAL when the profile declares no arena, or precise is asked of a
 * profile without overhead_precise (the message says which constant to declare). */
int sw_profile_headroom(const struct sw_fork_profile *p, const struct sw_headroom_shape *s,
                        struct sw_headroom_budget *out, struct sw_err *e);
/* The shape's multiplier of the per-sequence terms: seqs x (1 + spec_tokens). */
double sw_headroom_seq_units(const struct sw_headroom_shape *s);

/* A fleet file's engine profile as a fork profile: its named constants (usable, weights,
 * non_torch, graphs, overhead, overhead_step, overhead_per, overhead_threshold,
 * reserve_per_token, slot, adjust, extra_attn_bytes_per_token, extra_mamba_blocks,
 * overhead_precise (the --expert-precise-memory alternative, not the default term), utilization) and its raw `terms` in the JSON form above. An unknown
 * constant is an error at its fleet position. */
struct sw_fleet_profile;
struct sw_fleet_endpoint;
int sw_profile_from_fleet(const struct sw_fleet_profile *fp, struct sw_fork_profile *p,
                          struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
