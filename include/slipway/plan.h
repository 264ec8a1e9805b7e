/*
 * plan: the one engine-neutral plan of an endpoint, the entry point `slipway plan FLEET`, `check`
 * (the gates), `up` and every later verb call. For one fleet endpoint (or a verbatim engine
 * command line) it holds, computed once:
 *   - the engine's argv/env, rendered by the engine adapter (engine/) from the endpoint;
 *   - the law's breakdown: llama.cpp's args as the law reads that argv, the architecture (the
 *     GGUF when it is on this machine, else its header read on the endpoint's ssh host, else the
 *     endpoint's `arch`), the per-device budget
 *     (memory/llamacpp); vLLM's block arithmetic and the plan object `slipway plan` prints
 *     (memory/vllm, with the endpoint's fork profile);
 *   - the predicted boot report (the object the engine's boot-log parser fills, for the differ);
 *   - the ledger shape (docs/ledger.md): the fleet's vocabulary for an endpoint, the booted
 *     command's effective values (llama-server's defaults from the adapter's one table) for a
 *     boot.
 * Read through it: the plan view (sw_plan_view: pool, price per token, arena, band, budget per
 * device), the headroom verdict (sw_plan_headroom), the SGLang calibration pipeline
 * (sw_plan_sglang_calib) and a verbatim llama-server command line (sw_plan_llamacpp_cmdline).
 *
 * Layer (scripts/layering.sh): core -> model, fleet, ledger, net -> memory, payload -> calib ->
 * engine (adapters: argv/env, boot logs, differs) -> plan -> unit -> gate, deploy -> ... -> cli.
 * plan may call engine, calib and memory; gate and deploy call plan, never an engine's planning
 * directly.
 *
 * What it deliberately does not do: judge (gate), boot (deploy), fit (calib: a fit is handed in),
 * print (cli).
 */
#ifndef SLIPWAY_PLAN_H
#define SLIPWAY_PLAN_H

#include <slipway/calib.h>
#include <slipway/core.h>
#include <slipway/engine.h>
#include <slipway/fleet.h>
#include <slipway/profile.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_arch;
struct sw_llamacpp_args;
struct sw_llamacpp_plan;
struct sw_vllm_report;
struct sw_vllm_opts;
struct sw_sglang_report;
struct sw_sglang_opts;

/* What the caller changes about the endpoint's plan (all optional; a zeroed struct or NULL is
 * "as the fleet says"). Shape overrides are made on the endpoint first (sw_gate_set). */
struct sw_plan_overrides {
    /* A verbatim engine command line (argv[0] the program) planned instead of the endpoint's
     * rendered one; ep may then be NULL (no devices: a CPU build with no declared memory). */
    const char *const *argv;
    size_t argc;
    /* The devices of a verbatim llama.cpp command line (NULL: none declared): the law's budget
     * and --fit's context cut, as `plan --gpu/--host-memory` give them. Ignored with an ep. */
    const struct sw_llamacpp_env *llamacpp_env;
    /* Read the payload only when it is a regular file (never block on a FIFO or a device):
     * `up` predicts without ever delaying the boot. */
    bool regular_files_only;
};

/*
 * Model metadata from where the model is (plan/remote*.c, docs/hosts.md): when an endpoint's
 * payload is not on this machine and its host is reached over ssh, what the law reads (a GGUF's
 * header, config.json, the safetensors index and the shards' headers) is read from the host with
 * ranged reads, never the tensor data, and cached on this machine by (host, path, size, mtime).
 * What that cost, for a plan's --json and the tests that count it. A host that cannot be asked
 * leaves a declared `arch` to stand in, and `why` says what happened.
 */
struct sw_plan_model_read {
    bool asked;            /* the payload is not here and its (ssh) host was asked */
    bool found;            /* the host had it: the law read the host's files (or their cache) */
    char host[128];        /* the fleet's host name */
    char via[300];         /* "ssh root@169.254.36.2:22" */
    char path[1024];       /* the GGUF, or the checkpoint directory, on the host */
    char why[768];         /* asked and not found: why (not there, unreachable, ...) */
    bool header_only;      /* a GGUF whose tensor data is absent on the host */
    uint64_t file_size;    /* the GGUF's size on the host (0: a checkpoint directory) */
    uint64_t header_bytes; /* a GGUF's header (to data_offset); else the bytes of the files read */
    uint64_t bytes;        /* every byte the host's commands printed: stat lines and ranges */
    uint64_t range_bytes;  /* of which bytes of the files (the ranges read) */
    unsigned commands;     /* commands run on the host (each one ssh round trip) */
    unsigned files_read;   /* files whose bytes came from the host */
    unsigned files_cached; /* files whose bytes came from the cache (the host only stat'ed them) */
    char cache[600];       /* the cache directory, or "off: why" */
};
/* {host, via, path, found, why?, file_size?, header_bytes?, header_only, bytes, range_bytes,
 * commands, files_read, files_cached, cache}. New reference, NULL on OOM. */
json_t *sw_plan_model_read_json(const struct sw_plan_model_read *m);

struct sw_plan {
    enum sw_fleet_engine engine;
    const struct sw_fleet_endpoint *ep; /* NULL for a verbatim command line */
    struct sw_engine_cmd cmd;           /* the engine's argv/env (engine table's render) */
    char cmd_why[512]; /* why cmd is empty (vLLM: its law does not need it, e.g. a secret that
                          cannot be read here) */
    /* llama.cpp: the law's input and breakdown (NULL for other engines) */
    struct sw_llamacpp_args *args;
    struct sw_llamacpp_plan *llamacpp;
    struct sw_arch *arch;
    /* vLLM: the block arithmetic (a stand-in pool when the engine sizes it at boot) */
    struct sw_vllm_report *vllm;
    struct sw_vllm_opts *vllm_opts; /* the law's options from the endpoint (and its profile) */
    bool pool_pinned;               /* kv_cache_bytes fixes the pool */
    bool pool_sized;                /* the pool is known (pinned, or the weights are here) */
    /* SGLang: memory/sglang's pools, its options read back from the rendered argv (the argv
     * reader of engine/sglang, so the fleet's plan and the command line's plan agree) */
    struct sw_sglang_report *sglang;
    struct sw_sglang_opts *sglang_opts;
    /* {"report", "lines", "warnings", "config", "arena"...}: what `slipway plan` prints for a
     * vLLM or SGLang endpoint (NULL for llama.cpp, whose breakdown is the typed plan) */
    json_t *engine_plan;
    json_t *predicted; /* the predicted boot report (llama.cpp: the bootlog `report` object) */
    json_t *shape;     /* the ledger shape of the endpoint */
    /* what was read of the model on its host (asked false: nothing; vLLM and SGLang plans also
     * carry it in engine_plan as "model_read") */
    struct sw_plan_model_read model_read;
};

/*
 * Plan one endpoint of a loaded fleet (f may be NULL when only ep is at hand). On success the plan
 * is complete; on failure *out holds what was computed before the failure (the argv, the shape)
 * and e says why the law could not run (a missing payload with no `arch`, an engine without a
 * fleet law). Free with sw_plan_free in both cases.
 */
int sw_plan_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                     const struct sw_plan_overrides *ov, struct sw_plan *out, struct sw_err *e);
void sw_plan_free(struct sw_plan *p);
/*
 * The reads of a model on its host (plan/remote.c) made by this thread end by deadline_ns
 * (sw_now_ns() clock; 0: each command's own bound, 120 s): a caller that answers within a
 * deadline of its own (status, apply's survey, watch) sets it before it plans or renders, so a
 * host that does not answer costs that deadline, not ssh's keepalive. Returns the previous value.
 */
uint64_t sw_plan_remote_within(uint64_t deadline_ns);
/*
 * Is ep's payload where its engine runs, when it is not on this machine and the plan did not read
 * it on the host (a declared arch)? One stat on the endpoint's ssh host of the file the engine
 * opens first (the GGUF; DIR/config.json), recorded in p->model_read (found, or why not) and in a
 * vLLM/SGLang plan's "model_read". For a stand-in of the engine (the sim), which fails as the
 * engine does only when the payload does not resolve where the engine runs. Nothing is asked for
 * a local host, a payload on this machine, or a plan that read the host already. Only SW_ENOMEM
 * fails it.
 */
int sw_plan_payload_on_host(struct sw_plan *p, const struct sw_fleet_endpoint *ep,
                            struct sw_err *e);
/*
 * The law's options of an SGLang endpoint's shape (shape NULL: ep's own), for calibration and the
 * band gate: planned with a pin when the shape pins no pool (the plan needs a pin or free-memory
 * facts to run, and the pin sets nothing else), then max_total_tokens 0 again: the engine sizes
 * the pool. SW_EINVAL when ep is not an SGLang endpoint; the plan's error otherwise.
 */
int sw_plan_sglang_opts(const struct sw_fleet_endpoint *ep, const struct sw_fleet_shape *shape,
                        struct sw_sglang_opts *o, struct sw_err *e);

/*
 * What llama-server loads beside the main model, priced into a plan the law already made (lp,
 * from a and env): the draft model (-md: its GGUF when here, else ep's draft_arch and the fact
 * draft_file) and the projector (--mmproj: its file, else the facts projector_file,
 * projector_compute, projector_cost). ep may be NULL (a verbatim command line: the files only).
 * What cannot be priced is a warning in lp, naming what would price it. sw_plan_endpoint calls
 * it; `plan --engine llama.cpp -- ...` too. Only SW_ENOMEM fails it: a draft the law cannot plan
 * (an unreadable GGUF, a draft head such as eagle3, a bad draft_arch) is a warning.
 */
int sw_plan_llamacpp_extras(const struct sw_fleet_endpoint *ep, const struct sw_llamacpp_args *a,
                            const struct sw_llamacpp_env *env, bool regular_only,
                            struct sw_llamacpp_plan *lp, struct sw_err *e);

/* The endpoint's shape in the ledger's vocabulary (docs/ledger.md): engine, engine_profile, model
 * {name, quant}, ctx, slots, kv dtypes, kv_bytes, kv_tokens, mnbt, tp/pp, util, flags {mmproj,
 * spec decode}. The model name is the GGUF file's stem without its quantization suffix, or the
 * checkpoint directory's name. New reference, or NULL on OOM. */
json_t *sw_plan_shape(const struct sw_fleet_endpoint *ep);

/* The shape of a llama.cpp boot: the argv's effective values as the law read them (llama-server's
 * defaults made explicit: batch, ubatch, flash attention, cache types), with what the engine
 * printed (printed: its bootlog `report`, may be NULL) where it printed it (n_ctx, slots, unified
 * KV, cache types). New reference, or NULL on OOM or when p has no llama.cpp args. */
json_t *sw_plan_boot_shape(const struct sw_plan *p, const json_t *printed);

/* ---------------------------------------------------------------------------------------------
 * A fleet endpoint as the laws' inputs (plan/inputs.c), what sw_plan_endpoint feeds each law.
 */
struct sw_vllm_opts;
struct sw_hf_config;
struct sw_llamacpp_env;
/* A vLLM endpoint's shape, engine_version, device and profile as the law's options. */
int sw_vllm_opts_from_endpoint(const struct sw_fleet_endpoint *ep, struct sw_vllm_opts *o,
                               struct sw_err *e);
/* An endpoint's architecture as a Hugging Face config: the checkpoint's config.json when the
 * payload directory is on this machine, else the one on the endpoint's ssh host (read over its
 * transport, cached: "HOST:PATH" in src), else the endpoint's inline `arch` (config.json-like).
 * `src` (may be NULL) receives where it came from (the config's path, or "FILE:LINE:COL: EP:
 * arch"), which errors also name. SW_ENOENT when none is there. */
int sw_endpoint_hf_config(const struct sw_fleet_endpoint *ep, struct sw_hf_config *c, char *src,
                          size_t srcn, struct sw_err *e);
/* The same, counting what was read on the host into rd (may be NULL). */
int sw_endpoint_hf_config_read(const struct sw_fleet_endpoint *ep, struct sw_hf_config *c,
                               char *src, size_t srcn, struct sw_plan_model_read *rd,
                               struct sw_err *e);
/* A fleet endpoint's devices as llama.cpp's environment: a `vendor: cpu` device's memory (usable,
 * else total) is the host memory, every other device is a GPU with its memory (0 = undeclared). */
void sw_llamacpp_env_from_endpoint(const struct sw_fleet_endpoint *ep, struct sw_llamacpp_env *env);

/* ---------------------------------------------------------------------------------------------
 * The plan view (plan/view.c): the one engine-neutral reading of an endpoint's plan that `plan`'s
 * print, the gates and the report read, computed once: the pool (slots, tokens per request,
 * tokens held, bytes), the price per token of THIS geometry, the fork profile's arena, the free
 * band, and the budget per device (the law's parts on it, its capacity, and the free memory the
 * fleet's measured non-KV fact leaves). A struct: JSON is made only where a verb prints --json.
 */
#define SW_PLAN_VIEW_MAX_DEV 8

struct sw_plan_view_dev {
    const struct sw_fleet_device *dev; /* the fleet's device */
    char law_name[32];                 /* the law's name for it (llama.cpp "CUDA0"; its "CPU" is
                                          the fleet's `vendor: cpu` device) */
    uint64_t capacity;                 /* memory_total, as nvidia-smi/rocm-smi print it */
    uint64_t kv, rec;                  /* KV caches and recurrent state on this device */
    /* llama.cpp: the law's weights and compute (+ output) buffers, the draft model (-md: its
     * weights, KV and compute) and the projector (--mmproj: weights and encoder compute) */
    uint64_t weights, compute;
    uint64_t draft_weights, draft_kv, draft_compute, projector;
    /* By the fleet's measured non-KV fact (in bytes, on a device with a capacity): used = the
     * fact + the law's KV, state and draft; free = capacity - used. */
    bool by_fact;
    double used, free;
};

struct sw_plan_view {
    bool ok; /* the law ran; else `why` (and `err`, the plan's error) say why */
    char why[768];
    struct sw_err err;
    enum sw_fleet_engine engine;
    struct sw_plan plan; /* the endpoint's plan (owned): what `slipway plan FLEET` shows */
    /* the pool */
    uint64_t slots;       /* SEQS */
    uint64_t maxlen;      /* tokens one request may hold (llama.cpp n_ctx_slot, vLLM L) */
    uint64_t pool_tokens; /* llama.cpp: cells over all slots; vLLM: printed GPU KV tokens */
    bool shared;          /* slots share one pool (vLLM, SGLang, llama.cpp unified) */
    bool pinned; /* the pool size is fixed by a flag (llama.cpp -c, --kv-cache-memory-bytes) */
    uint64_t kv_bytes; /* per device / rank, summed KV caches */
    uint64_t recurrent_bytes;
    /* the price per token */
    double kv_price;     /* attention KV bytes per token (per rank) */
    char price_how[256]; /* how the price was derived, for a verdict line */
    uint32_t kv_layers;  /* llama.cpp: attention layers holding KV */
    int64_t stride;      /* vLLM: bytes of one block across a group (page x group size) */
    const struct sw_llamacpp_plan *lp; /* into plan */
    const struct sw_vllm_report *vr;   /* into plan */
    /* the fork profile, and its expert arena at this max_model_len and the shape's MNBT */
    struct sw_fork_profile prof;
    bool has_prof;
    bool has_arena;
    struct sw_arena arena;
    int64_t mnbt; /* the shape's max_num_batched_tokens (0: not set) */
    /* the free band (the endpoint's free_band, else SW_PLAN_BAND_MIN..MAX) */
    uint64_t band_min, band_max;
    bool band_declared;
    const struct sw_fleet_fact *non_kv; /* measured.non_kv_cost[_with_projector], or NULL */
    /* the devices the law put memory on, in the endpoint's order */
    int n_dev;
    struct sw_plan_view_dev dev[SW_PLAN_VIEW_MAX_DEV];
};

/* The band used when an endpoint declares no free_band: the operator's 2-3 GiB. */
#define SW_PLAN_BAND_MIN (2ull * 1024 * 1024 * 1024)
#define SW_PLAN_BAND_MAX (3ull * 1024 * 1024 * 1024)

/*
 * Fill the view of ep's plan. A plan the law cannot make is not an error: v->ok false, v->why and
 * v->err say why (a gate that needs the law skips with that reason). Only SW_ENOMEM fails it.
 * Free with sw_plan_view_free in every case.
 */
int sw_plan_view(const struct sw_fleet_endpoint *ep, struct sw_plan_view *v, struct sw_err *e);
void sw_plan_view_free(struct sw_plan_view *v);
/* The view of fleet device d (the last the law named for it), or NULL. */
const struct sw_plan_view_dev *sw_plan_view_device(const struct sw_plan_view *v,
                                                   const struct sw_fleet_device *d);
/*
 * The device memory the endpoint takes on view device d while it runs: what co-tenancy (`slipway
 * apply`'s fleet gate) sums per device. The fleet's measured non-KV fact with the law's KV and
 * state when the fleet gives one (d->used); else, for llama.cpp, the law's parts (weights,
 * compute, KV, state, the draft and the projector); for vLLM the share of the device it reserves
 * at boot (gpu_memory_utilization, 0.9 by default, of the capacity); for SGLang its
 * mem_fraction_static of the capacity. 0 with `how` saying why when nothing says (no capacity
 * for a fraction). how (may be NULL) says which rule, in words.
 */
double sw_plan_view_claim(const struct sw_plan_view *v, const struct sw_plan_view_dev *d, char *how,
                          size_t n);
/* Does `free_bytes` land inside the view's band? */
bool sw_plan_view_in_band(const struct sw_plan_view *v, double free_bytes);
/* Does every device of a llama.cpp plan hold its total (a declared memory)? */
bool sw_plan_llamacpp_fits(const struct sw_llamacpp_plan *lp);

/*
 * The budget `slipway plan FLEET` prints beside a llama.cpp plan: the measured non-KV fact on its
 * device (the fact's, else the endpoint's first, as the law names it) with the law's KV, state
 * and draft; the band only when the endpoint declares one. SW_ENOENT when there is no such fact
 * in bytes, no such device in the plan, or no capacity.
 */
struct sw_plan_fact_budget {
    const struct sw_plan_view_dev *dev;
    const struct sw_fleet_fact *fact;
    double draft; /* the draft model's weights + KV + compute on the device */
    bool band;    /* the endpoint declares a free_band */
    bool in_band;
};
int sw_plan_fact_budget(const struct sw_plan_view *v, struct sw_plan_fact_budget *out);
/* {device, fact, source?, kv_bytes, recurrent_bytes, non_kv_bytes, draft_bytes?, used_bytes,
 * memory_bytes, free_bytes, band_min_bytes?, band_max_bytes?, in_band?}. New reference or NULL. */
json_t *sw_plan_fact_budget_json(const struct sw_plan_view *v, const struct sw_plan_fact_budget *b);

/* ---------------------------------------------------------------------------------------------
 * A verbatim llama-server command line (plan/cmdline.c), `slipway plan --engine llama.cpp`'s.
 */
struct sw_plan_cmdline {
    struct sw_llamacpp_args *args;
    struct sw_arch *arch;
    struct sw_llamacpp_plan *plan;
    bool fits; /* every device holds its total (sw_plan_llamacpp_fits) */
};
/*
 * Plan argv (llama-server and its flags) over the devices env names: the architecture from the
 * declaration at arch_path (slipway/arch.h sw_arch_from_json), else the GGUF's header; the draft
 * and the projector priced beside it (sw_plan_llamacpp_extras). Free with sw_plan_cmdline_free,
 * also after a failure (the parse's, the file's, the law's).
 */
int sw_plan_llamacpp_cmdline(int argc, const char *const *argv, const char *arch_path,
                             const struct sw_llamacpp_env *env, struct sw_plan_cmdline *out,
                             struct sw_err *e);
void sw_plan_cmdline_free(struct sw_plan_cmdline *c);
/* `--gpu NAME=BYTES` added to env (SW_ERANGE past the law's devices, SW_EINVAL malformed). */
int sw_plan_parse_gpu(const char *v, struct sw_llamacpp_env *env, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * The headroom verdict (plan/headroom.c): a shape's free memory at graph capture and for the pool
 * by the fork profile's budget, against the transient needs calib fitted from the endpoint's boots
 * (docs/calibrate.md "Headroom"). The gates, the ladder and the simulator read it.
 */
struct sw_calib_fit;
struct sw_plan_headroom {
    struct sw_headroom_shape shape; /* the shape as priced */
    char kv_dtype[64];              /* its KV dtype ("auto", "fp8") */
    struct sw_calib_hr_pred pred;   /* pred.verdict: the verdict; the figures behind it */
};
/* The verdict of a canonical ledger shape. SW_EINVAL "the shape names no max_model_len and seqs to
 * price"; else sw_calib_headroom_predict's errors (SW_ENOENT: the fit has no headroom model). The
 * caller checks fit->headroom.have and .consistent, in its own words. */
int sw_plan_headroom(const struct sw_calib_fit *fit, const json_t *canon,
                     struct sw_plan_headroom *out, struct sw_err *e);
/* The terms alone (out->shape, out->kv_dtype; out->pred zero) of an endpoint's shape as the fleet
 * (and any --set) gives it: sw_plan_shape, canonicalized like the ledger, the headroom terms read
 * from it. SW_EINVAL as sw_plan_headroom's; the canonicalization's errors. The ladder reads them
 * once and walks its grid in the typed shape. */
int sw_plan_headroom_terms(const struct sw_fleet_endpoint *ep, struct sw_plan_headroom *out,
                           struct sw_err *e);
/* The same, then the verdict (sw_calib_headroom_predict): sw_plan_headroom of the endpoint. */
int sw_plan_headroom_endpoint(const struct sw_calib_fit *fit, const struct sw_fleet_endpoint *ep,
                              struct sw_plan_headroom *out, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * The SGLang calibration pipeline (plan/sglang_calib.c), `slipway calibrate`'s and the band
 * gate's: the model, the declared shape's law options and pools, the observations (the ledger's
 * SGLang boots, else the fleet's facts free_at_boot and autofit_tokens), the fit.
 */
struct sw_plan_sglang_calib_opts {
    const struct sw_fleet_shape *declared; /* the shape the facts are of (NULL: ep's own) */
    const struct sw_calib_fit *fit;        /* its fit->sglang: the ledger's boots (NULL: none) */
    const int64_t *exclude;                /* boot ids held out of the fit */
    int n_exclude;
};
struct sw_plan_sglang_calib {
    struct sw_hf_config *c;          /* the endpoint's model (owned) */
    struct sw_sglang_opts declared;  /* the law's options of the declared shape */
    bool declared_pinned;            /* it pins max_total_tokens */
    struct sw_sglang_report drep;    /* its pools by the law (unpinned: planned with a pin, for
                                       the cell and the mamba pool only) */
    bool law_ok;                     /* the model, the options and the pools were had */
    struct sw_calib_sglang_obs *obs; /* SW_CALIB_SG_MAX (owned) */
    int n_obs;
    bool from_ledger;          /* the observations are the ledger's boots, not the fleet's facts */
    struct sw_calib_sglang *s; /* the fit (owned) */
};
/* Run the pipeline. Errors: the law's (law_ok false: no model, no options, no pools), then the
 * fit's (sw_calib_sglang_fit). Free with sw_plan_sglang_calib_free in every case. */
int sw_plan_sglang_calib(const struct sw_fleet_endpoint *ep,
                         const struct sw_plan_sglang_calib_opts *o,
                         struct sw_plan_sglang_calib *out, struct sw_err *e);
void sw_plan_sglang_calib_free(struct sw_plan_sglang_calib *c);
/* `slipway calibrate`'s "sglang" section into doc: the fleet at fleet_path (NULL: a note that the
 * law needs it), the pipeline over fit's SGLang boots with `exclude` held out, the fit and the
 * declared and unpinned shapes predicted. *fitted when a rest or a free constant came out, *bad
 * when the boots are inconsistent. */
int sw_plan_sglang_calib_doc(const char *fleet_path, const char *endpoint,
                             const struct sw_calib_fit *fit, const int64_t *exclude, int n_exclude,
                             json_t *doc, bool *fitted, bool *bad, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
