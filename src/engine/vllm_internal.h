/*
 * Internal to engine/: the failure classifier shared by the vLLM and SGLang boot-log parsers.
 */
#ifndef SW_ENGINE_VLLM_INTERNAL_H
#define SW_ENGINE_VLLM_INTERNAL_H

#include <slipway/engine_vllm.h>
#include <slipway/vllm.h>

/* A size such as "50.00 MiB", "10.28 GiB", "0 bytes", "1.5 GB" at p; bytes or false. */
bool sw__bootlog_size(const char *p, const char *end, uint64_t *out);
/* needle in [p, end), or NULL. */
const char *sw__bootlog_find(const char *p, const char *end, const char *needle);
/* A fresh report of `engine` read line by line (each line [p, le), without its newline, given to
 * `line`), then its failures classified over the whole log (sw__bootlog_classify). */
void sw__bootlog_read(const char *text, size_t len, const char *engine, struct sw_vllm_bootlog *o,
                      void (*line)(struct sw_vllm_bootlog *o, const char *p, const char *le));
/* Classify failures over the whole log (lines are 1-based); fills out->failure. */
void sw__bootlog_classify(const char *text, size_t len, struct sw_vllm_bootlog *out);
/* vllm_adapter.c: shared with the SGLang adapter (same report fields, same OpenAI error body). */
int sw__vllm_diff(const json_t *predicted, const json_t *printed, const json_t *precision,
                  json_t **out, struct sw_err *e);
int sw__openai_error_shape(int status, const char *body, size_t len, struct sw_engine_error *out);

/* What vLLM's and SGLang's rows are rendered from beyond the endpoint's own fields (their
 * writers' context, vllm_render.c): the endpoint, its one address, the payload as the engine
 * sees it. */
struct sw_fleet_endpoint;
struct sw_fleet_at;
struct sw_flag;
struct sw__hf_render {
    const struct sw_fleet_endpoint *ep;
    char bind[256];
    unsigned port;
    char model[4096];
};
/* vllm_flags.c: what vLLM's and SGLang's command lines share (both are Python programs): the
 * index past "python[3] -m MODULE" at argv[i]; a line read through the engine's table t into o
 * and line, its model required ("no model: expected <usage>"); the same, for the model alone. */
int sw__hf_skip_python(int argc, const char *const *argv, int i);
int sw__hf_read(const struct sw_flag_table *t, int argc, char **argv, void *o,
                struct sw_engine_argv *line, char *ignored, size_t ignored_n, const char *usage,
                struct sw_err *e);
int sw__hf_model_dir(const struct sw_flag_table *t, int argc, char **argv, void *o,
                     const char **model_dir, char *ignored, size_t ignored_n, const char *usage,
                     struct sw_err *e);
/* vllm_render.c: the rows' writers of the address (--host, --port), from the context. */
int sw__hf_write_host(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                      struct sw_err *e);
int sw__hf_write_port(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                      struct sw_err *e);
/* vllm_render.c: a host path as the engine sees it (through the payload's container mounts when
 * the endpoint has an image); a path no mount covers is an error at `at`. */
int sw__engine_path(const struct sw_fleet_endpoint *ep, const char *host_path,
                    const struct sw_fleet_at *at, char *out, size_t n, struct sw_err *e);

#endif
