/*
 * slipway readings: device memory used/total as the vendors' tools print it, parsed into exact
 * byte counts, matched to a fleet endpoint's devices and recorded in the ledger's usage table.
 *
 * The tools and the outputs read (tests/data/readings/ holds recorded examples of each):
 *   nvidia-smi --query-gpu=index,uuid,name,memory.used,memory.total,memory.free --format=csv
 *     with or without `noheader` and `nounits`. With a header the columns are found by name (any
 *     order, other query fields ignored; `pci.bus_id` is kept); without one the order above is
 *     assumed (5 or 6 columns). Memory is in MiB (2^20 bytes): the header says `[MiB]`, a value
 *     `20190 MiB`; a value printed as `[N/A]` or `[Not Supported]` is "not printed".
 *   rocm-smi --showmeminfo vram --json
 *     {"card0": {"VRAM Total Memory (B)": "25753026560", "VRAM Total Used Memory (B)": "..."}}:
 *     bytes, as decimal strings (a JSON integer is accepted too); "N/A" is "not printed".
 *   amd-smi metric --mem-usage --json / amd-smi static --vram --json
 *     a list of {"gpu": N, "mem_usage": {"total_vram", "used_vram", "free_vram"}} or
 *     {"gpu": N, "vram": {"size": ...}} (static: total only), optionally wrapped as
 *     {"gpu_data": [...]}. A value is {"value": N, "unit": "MB"} (newer), a plain number or
 *     "N MB" (older). amd-smi's "MB" is 2^20 bytes: the library divides byte counts by 1024*1024
 *     (amdsmi_vram_usage_t: "In MB"), so MB here means MiB. Any other unit is refused.
 *
 *   llama.cpp's log: the "memory breakdown [MiB]" table it prints when a context is freed; a
 *     device row "- CUDA0 (RTX 4090) | total = free + (self = ...) + unaccounted |" gives total
 *     and free in whole MiB (floored by llama.cpp), used = total - free (within 1 MiB). CUDAn is
 *     nvidia's device n, ROCmn amd's; other backends do not name a vendor and are refused.
 *
 * Every refusal names the tool and where: "out.csv:3:1: nvidia-smi: memory.used: \"abc\" is not
 * a number of MiB", "rocm-smi: card1: \"VRAM Total Memory (B)\" missing".
 *
 * What it deliberately does not do: run the tools (a host layer does, and hands the text here),
 * read vLLM's or SGLang's memory prints (they report the engine's own pools, not the device's
 * used/total), or decide anything from a reading (the gates do).
 */
#ifndef SLIPWAY_READINGS_H
#define SLIPWAY_READINGS_H

#include <slipway/core.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest output read, and most devices in one output. */
#define SW_READINGS_MAX_INPUT (1u << 20)
#define SW_READINGS_MAX       256
/* Largest log read by the llama.cpp table reader (the table comes at the end of a run). */
#define SW_READINGS_MAX_LOG (64u << 20)
/* Largest byte count accepted (what the ledger's and JSON's int64 hold). */
#define SW_READINGS_MAX_BYTES ((uint64_t)INT64_MAX)

enum sw_readings_tool {
    SW_READINGS_AUTO = 0, /* sw_readings_parse: tell the tool from the text */
    SW_READINGS_NVIDIA_SMI = 1,
    SW_READINGS_ROCM_SMI = 2,
    SW_READINGS_AMD_SMI = 3,
    SW_READINGS_LLAMACPP = 4, /* llama.cpp's memory breakdown table in its log */
};

/* One device's reading. Strings are NUL-terminated, "" when the tool did not print them. */
struct sw_reading {
    const char *vendor; /* "nvidia" | "amd": the fleet's device vendor words (static) */
    const char *tool;   /* "nvidia-smi" | "rocm-smi" | "amd-smi" | "llama.cpp" (static) */
    uint64_t index;     /* the tool's device index (nvidia-smi index, rocm-smi cardN, gpu N) */
    char uuid[96];      /* nvidia-smi's "GPU-..." */
    char bus_id[64];    /* PCI bus id, when printed */
    char name[128];     /* "NVIDIA GeForce RTX 4090", rocm-smi's card series */
    bool has_used, has_total, has_free; /* false: not printed ([N/A], static --vram, rocm-smi) */
    uint64_t used_bytes;                /* with has_used; <= total_bytes when both are printed */
    uint64_t total_bytes;               /* with has_total */
    uint64_t free_bytes;                /* with has_free; <= total_bytes */
    char origin[256]; /* where it was read: the CSV line as printed, or the JSON key */
    int line;         /* nvidia-smi: the 1-based line; 0 for JSON */
};

/* A parsed output: r[0..n), sorted by index, indexes unique. Free with sw_readings_free. */
struct sw_readings {
    enum sw_readings_tool tool;
    struct sw_reading *r; /* from sw_malloc */
    size_t n;             /* >= 1 after a successful parse */
};

/* "nvidia-smi", "rocm-smi", "amd-smi", "llama.cpp" ("auto" for AUTO). */
const char *sw_readings_tool_name(enum sw_readings_tool t);
/* The reverse; SW_EINVAL naming the known tools for anything else. */
int sw_readings_tool_from_name(const char *name, enum sw_readings_tool *t /* OUT */,
                               struct sw_err *e);

/*
 * Which tool printed `text`: JSON with cardN keys is rocm-smi's, a list of {"gpu": ...} (or
 * {"gpu_data": [...]}) amd-smi's, text holding "memory breakdown [MiB]" llama.cpp's log, other
 * text nvidia-smi's CSV. Anything else, or JSON holding both
 * shapes, is SW_EPARSE ("cannot tell which tool printed this: give the tool").
 */
int sw_readings_detect(const char *text, size_t len, const char *where,
                       enum sw_readings_tool *t /* OUT */, struct sw_err *e);

/*
 * Parse one tool's output (tool AUTO: detected first). `where` names the source in errors (a
 * file name, "<stdin>"; NULL = the tool's name only). On success *out holds n >= 1 readings
 * (caller frees with sw_readings_free); on error *out is empty and e says why: SW_EPARSE for
 * malformed or ambiguous output, SW_ERANGE for a figure past SW_READINGS_MAX_BYTES or used/free
 * above total, SW_EINVAL for input over SW_READINGS_MAX_INPUT, SW_ENOMEM.
 */
int sw_readings_parse(enum sw_readings_tool tool, const char *text, size_t len, const char *where,
                      struct sw_readings *out, struct sw_err *e);
int sw_readings_nvidia_smi(const char *text, size_t len, const char *where, struct sw_readings *out,
                           struct sw_err *e);
int sw_readings_rocm_smi(const char *text, size_t len, const char *where, struct sw_readings *out,
                         struct sw_err *e);
int sw_readings_amd_smi(const char *text, size_t len, const char *where, struct sw_readings *out,
                        struct sw_err *e);
/* (input up to SW_READINGS_MAX_LOG) */
int sw_readings_llamacpp(const char *text, size_t len, const char *where, struct sw_readings *out,
                         struct sw_err *e);
/* The same, read from path ("-": standard input, named "<stdin>" in errors) first
 * (readings/load.c): at most SW_READINGS_MAX_LOG bytes (more: SW_EINVAL), sw_read_file's errors. */
int sw_readings_load(enum sw_readings_tool tool, const char *path, struct sw_readings *out,
                     struct sw_err *e);
/* Release the readings (accepts an empty or already freed set). */
void sw_readings_free(struct sw_readings *rs);

/* {"tool": ..., "readings": [{vendor, tool, index, uuid, bus_id, name, used_bytes, total_bytes,
 * free_bytes, origin}]} with null for what was not printed. New reference; NULL when out of
 * memory. */
json_t *sw_readings_json(const struct sw_readings *rs);

/* ---------------------------------------------------------------------------------------------
 * Recording.
 */

/* The endpoint's device a reading is of: same vendor, same index (the device's `index`, else its
 * position in its host, as the fleet defaults it). NULL when the endpoint has no such device. */
const struct sw_fleet_device *sw_readings_match(const struct sw_fleet_endpoint *ep,
                                                const struct sw_reading *r);

/*
 * A reading as the ledger's usage row holds it (MiB). Bytes that are not whole MiB are counted
 * against the free figure: used rounds up, total and free round down, used is capped at total and
 * free at total - used. SW_EINVAL when used or total was not printed, or total is under 1 MiB.
 */
int sw_readings_to_usage(const struct sw_reading *r, struct sw_ledger_usage *u /* OUT: mib */,
                         struct sw_err *e);

struct sw_readings_record_opts {
    int64_t boot_id;  /* 0 = not tied to a boot */
    int64_t taken_at; /* 0 = now */
    const char *note; /* NULL = none */
};

/* What happened to one reading. */
struct sw_readings_outcome {
    const struct sw_fleet_device *device; /* NULL: not recorded (warning says why) */
    int64_t usage_id;                     /* the ledger row, 0 when not recorded */
    char warning[512];                    /* "" when recorded */
};

/*
 * Record the readings of endpoint `ep` in the ledger, one usage row per reading that matches one
 * of its devices (sw_readings_match), through sw_ledger_record_usage with the tool as source and
 * the reading's origin as source_line. A reading with no matching device, or with used/total not
 * printed, is not recorded: its outcome holds a warning (never silently dropped). Every reading
 * is checked before the first row is written; out[0..rs->n) (caller-allocated) receives each
 * outcome. *recorded (may be NULL) receives the rows written. A ledger error stops the loop: the
 * rows before it stay (each is its own transaction) and out says which they are.
 */
int sw_readings_record(struct sw_ledger *l, const struct sw_fleet_endpoint *ep,
                       const struct sw_readings *rs, const struct sw_readings_record_opts *o,
                       struct sw_readings_outcome *out, size_t *recorded, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
