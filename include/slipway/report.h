/*
 * report: the fleet as people and the tools around it read it, written from the fleet file, the
 * endpoints' plans and the ledger, so it is never stale.
 *
 *   sw_report_collect   one JSON document of the fleet: per endpoint its engine, payload, shape,
 *                       window (pool, per conversation), budget per device (weights, KV, state,
 *                       compute, arena, other, free, against the band), measured decode/prefill,
 *                       last battery, known-bad shapes and why, the harness contract, the
 *                       deploy tags (last-good, rollback, retired; restorable or not) and the
 *                       restarts the deploy attempts saw;
 *   sw_report_markdown  that document as Markdown (the operator's docs);
 *   sw_report_html      that document as one self-contained HTML page (inline SVG, no network);
 *   sw_export_harness   each endpoint's contextWindow (its real slot/request window) and the
 *                       compaction request checked against the compaction endpoint's window;
 *   sw_export_llama_swap  a llama-swap config (its `models:` map) for the llama.cpp endpoints,
 *                       from the plan's argv (never a second argv builder);
 *   sw_export_prometheus  a node_exporter textfile-collector file (exposition format 0.0.4);
 *   sw_export_k8s       an endpoint as Kubernetes objects (YAML), once the gates pass.
 *
 * Every number comes from data: the plan (the law), a fleet `measured:` fact or a ledger row;
 * each carries where it came from. A figure nobody measured is absent (null), never made up.
 * Restorability is host.h's sw_host_restore_check, the test `slipway history` prints.
 *
 * Layer: cli -> report -> probe, bench, gate, unit, plan, host, ledger, fleet, core.
 * What it deliberately does not do: boot, probe or bench anything; write files (the CLI writes
 * what these return, atomically); reach the network.
 */
#ifndef SLIPWAY_REPORT_H
#define SLIPWAY_REPORT_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fleet;
struct sw_ledger;

struct sw_report_opts {
    struct sw_ledger *ledger; /* NULL: ledger-backed figures are null, with that reason */
    int64_t since;            /* unix seconds; > 0 lists the ledger rows recorded since then */
};

/*
 * The fleet document (new reference in *out):
 *   {"fleet", "generated_by", "ledger", "since", "harness": {...},
 *    "endpoints": [{"name", "host", "engine", "enabled", "payload": {path, repo, revision, quant,
 *      gguf, mmproj}, "shape": {canonical ledger shape}, "shape_summary", "shape_hash",
 *      "window": {slots, per_conversation, pool_tokens, shared, source},
 *      "budget": {"devices": [{name, capacity, usable, band: {min, max}, parts: [{part, bytes,
 *        how}], free, free_how, reserved, measured: {used, total, free, source} | null,
 *        in_band}], "why": null | text},
 *      "measured": {decode_tok_s, prefill_tok_s, context_tokens, source, run (the bench run
 *        the figures come from), runs: [...], grid: [{run, depth, concurrency, decode_tok_s,
 *        summed_decode_tok_s, prefill_tok_s, deployed_shape}]}, "battery": {...} | null,
 *      "known_bad": [{what, why, source}], "harness": {...},
 *      "tags": null (no ledger) | {last_good: TAG | null, rollback: [TAG], retired: [TAG], count,
 *        unrestorable, checked, unchecked_why, check} with TAG = {name, created, summary,
 *        shape_hash, image, note, last_good, kept, retired, retired_why, restorable (true |
 *        false | null: not checked), missing: [...], restorable_why, payload_paths},
 *      "restarts": null (no ledger) | {source, attempts, committed, rolled_back, crash_loops,
 *        restarts_seen, last: {attempt, at, class, n_restarts} | null},
 *      "changes": [...] (with since)}]}
 * Bytes are integers. Returns 0, or SW_ENOMEM / a ledger error (SW_EDB...).
 */
int sw_report_collect(const struct sw_fleet *f, const struct sw_report_opts *o, json_t **out,
                      struct sw_err *e);

/* The document as Markdown / as one HTML page; appended to out. */
int sw_report_markdown(const json_t *doc, struct sw_buf *out, struct sw_err *e);
int sw_report_html(const json_t *doc, struct sw_buf *out, struct sw_err *e);

/* One endpoint's budget (an element of "endpoints") as an SVG of stacked bars, one per device,
 * the band drawn over each; appended to out. SW_EINVAL when it has no device to draw. */
int sw_report_budget_svg(const json_t *endpoint, struct sw_buf *out, struct sw_err *e);

/*
 * The harness contract (new reference):
 *   {"endpoints": [{name, engine, contextWindow (the real window), window_source, configured
 *     (the harness's contextWindow or null), matches, reasoning: {...}, tools: {...}}],
 *    "compaction": {endpoint, window, ratio, summary_budget, requests: [{context_window,
 *     starts_at, request_tokens, fits}]} | null,
 *    "ok": false when a configured window exceeds the real one or a request does not fit}
 */
int sw_export_harness(const struct sw_fleet *f, const struct sw_report_opts *o, json_t **out,
                      struct sw_err *e);

/* The harness export (sw_export_harness's doc) in the harness's own models.yml form: a `models:`
 * mapping, each endpoint with its real window as `contextWindow` (the key the harness reads),
 * appended to out as YAML. */
int sw_export_harness_models_yml(const json_t *doc, const char *fleet_path, struct sw_buf *out,
                                 struct sw_err *e);

/*
 * llama-swap configs, keys as llama-swap documents them (README, docs/configuration.md,
 * config.example.yaml): one config per host, since llama-swap starts the engines on its own
 * machine. Per host: healthCheckTimeout (seconds, 1.5 x the slowest measured boot, else a stated
 * 300; at least llama-swap's minimum 15) and `models:`, one per enabled endpoint of every engine:
 *   cmd            the engine's command line as the render runs it (a container's `podman run`
 *                  in the foreground with --rm; the port as llama-swap's ${PORT} macro)
 *   cmdStop        a container's `podman stop -t GRACE NAME`
 *   env            ["NAME=value"]: the endpoint's literal environment and the devices it is
 *                  pinned to (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES);
 *                  a secret is only named, in a comment
 *   proxy          http://127.0.0.1:${PORT}
 *   checkEndpoint  the engine's health route (/health; SGLang's /health too)
 *   ttl            0: never unloaded (a fleet endpoint stays up)
 *   aliases        [the served name] when it differs from the endpoint's name
 * sw_export_llama_swap_host writes one host's config (host: its name); sw_export_llama_swap
 * writes every host's, as YAML documents separated by `---`, each headed by a `# host: NAME`
 * comment. */
int sw_export_llama_swap_host(const struct sw_fleet *f, const char *host,
                              const struct sw_report_opts *o, struct sw_buf *out, struct sw_err *e);
int sw_export_llama_swap(const struct sw_fleet *f, const struct sw_report_opts *o,
                         struct sw_buf *out, struct sw_err *e);

/* The fleet document (sw_report_collect) as Prometheus text exposition (HELP/TYPE, labels
 * escaped), appended to out. */
int sw_export_prometheus(const json_t *doc, struct sw_buf *out, struct sw_err *e);

/*
 * An endpoint as Kubernetes objects for kubectl (report/export_k8s.c), only when the gates pass
 * (sw_gate_endpoint with o's ledger; out->check is their document, out->rejected says a gate
 * failed and nothing was rendered), its startupProbe sized from the slowest measured boot
 * (sw_report_boot_ms): out->doc is sw_unit_render_k8s's document, its objects appended to
 * out->yaml (the caller's buffer) as YAML, out->name the first object's name. nodes: a
 * LeaderWorkerSet across that many nodes (0: the fleet's). check and doc are new references, the
 * caller's (after an error too). Errors: the gates' (unusable input), the render's, SW_ENOMEM.
 */
struct sw_fleet_endpoint;
struct sw_export_k8s {
    json_t *check;
    bool rejected;
    json_t *doc;
    struct sw_buf *yaml;
    char name[256];
};
int sw_export_k8s(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                  const struct sw_report_opts *o, unsigned nodes, struct sw_export_k8s *out,
                  struct sw_err *e);

/* The ledger a report reads (report/ledger.c): `ledger`, else the one beside fleet_path,
 * read-only; none there (and none named) is not an error: *opened false, figures from the fleet
 * alone. path (n bytes) gets its path. Errors as sw_ledger_open_for. */
int sw_report_ledger_open(struct sw_ledger *l, const char *ledger, const char *fleet_path,
                          bool *opened, char *path, size_t n, struct sw_err *e);

/* The slowest measured boot of an endpoint in the ledger (duration_ms of an ok boot), in ms;
 * 0 when none is recorded (or l is NULL). */
int sw_report_boot_ms(struct sw_ledger *l, const char *endpoint, int64_t *ms, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
