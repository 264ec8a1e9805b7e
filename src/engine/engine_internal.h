/*
 * engine (internal): the list of registered adapters. One line per engine: X(<id>) declares
 * `extern const struct sw_engine sw__engine_<id>` and puts it in the table sw_engine_find reads.
 */
#ifndef SW_ENGINE_INTERNAL_H
#define SW_ENGINE_INTERNAL_H

#include <slipway/engine.h>

#define SW_ENGINES(X) X(llamacpp) X(vllm) X(sglang)

#define SW_ENGINE_DECL(id) extern const struct sw_engine sw__engine_##id;
SW_ENGINES(SW_ENGINE_DECL)
#undef SW_ENGINE_DECL

/* Every engine's liveness request (the OpenAI chat route all three serve): a real generation of
 * exactly one token. */
#define SW__LIVENESS_PATH "/v1/chat/completions"
#define SW__LIVENESS_BODY                                                                          \
    "{\"messages\":[{\"role\":\"user\",\"content\":\"Say "                                         \
    "OK.\"}],\"max_tokens\":1,\"temperature\":0,"                                                  \
    "\"stream\":false}"

/* Copy the text of a log line (without its trailing newline) into dst, bounded. */
void sw__engine_copy_line(char *dst, size_t n, const char *p, size_t len);

/*
 * Whose boot log is this? Each engine's parser, having found none of the facts it reads, asks
 * whether any line carries one of the engine's own marks (a logger name, a function prefix, a
 * line only that engine prints; engine is "llama.cpp", "vllm" or "sglang"). When none does and
 * the log has text, the verdict: not booted, failed with SW_BOOT_NOT_THIS_ENGINE, the message
 * naming the log, the engine and, when another engine's marks are there, that engine. Returns
 * true when it applied (a blank log, or a live one, is left as it is).
 */
bool sw__bootlog_not_this_engine(const char *text, size_t len, const char *where,
                                 const char *engine, const struct sw_bootlog_hints *hints,
                                 struct sw_boot_status *st);

/* argv.c: a list being built (an argv, an environment): NULL-terminated at every step; rc keeps
 * the first failure and every later push does nothing, so a list is checked once, at the end. */
struct sw__list {
    char **v;
    size_t n, cap;
    int rc;
};
void sw__list_push(struct sw__list *l, const char *s);
/* "NAME=VALUE" (the copy it was built in is wiped: a value may be a secret). */
void sw__list_push_env(struct sw__list *l, const char *name, const char *value);
void sw__list_free(struct sw__list *l);
/* Both lists into c, which owns them then; the first failure of either is returned, and both
 * are freed. */
int sw__cmd_take(struct sw_engine_cmd *c, struct sw__list *argv, struct sw__list *env);
/* Every row of t that its source says to write, in the table's order: the rows' `from` offsets
 * into src, their own writers (SW_FLAG_W_FN) given ctx. The flag is the row's first spelling. */
struct sw_flag_table;
int sw__argv_render(const struct sw_flag_table *t, const void *src, const void *ctx,
                    struct sw__list *out, struct sw_err *e);

/* launch_fleet.c: the table's render for llama.cpp (sw_engine_launch_from_fleet, then
 * sw_engine_llamacpp_render). */
int sw__llamacpp_render_endpoint(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out,
                                 struct sw_err *e);

/* llamacpp_diff.c: the table's diff for llama.cpp reports. */
int sw__llamacpp_diff(const json_t *predicted, const json_t *printed, const json_t *precision,
                      json_t **out, struct sw_err *e);

#endif
