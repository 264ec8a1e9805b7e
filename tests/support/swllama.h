/*
 * Test helpers for the real llama.cpp tier: find the pinned llama.cpp build, start llama-server on
 * 127.0.0.1 on a free port with its log captured to a file, wait for /health with a bounded
 * deadline, talk to it over plain sockets, and stop it by PID (its own process group: SIGTERM,
 * a grace period, then SIGKILL). If the test process dies first, llama-server is killed too
 * (PR_SET_PDEATHSIG). Nothing here is a timing assertion: deadlines only bound waits.
 *
 * Usage:
 *     swt_need(swl_llama_dir() != NULL, "%s", swl_missing());
 *     struct swl_server s;
 *     const char *args[] = {"-c", "512", NULL};
 *     assert_int_equal(swl_start(model, args, NULL, 120, &s), 0);
 *     char *text = NULL;
 *     assert_int_equal(swl_chat(&s, "hello", 8, &text), 0);
 *     swl_stop(&s);
 */
#ifndef SWLLAMA_H
#define SWLLAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The head of a test fleet with one llama.cpp endpoint `tiny` on the local host, up to its engine
 * line (the test's fields of tiny follow, indented four spaces). */
#define SWL_FLEET_LOCAL_TINY                                                                       \
    "version: 1\n"                                                                                 \
    "hosts:\n"                                                                                     \
    "  localhost:\n"                                                                               \
    "    transport: local\n"                                                                       \
    "endpoints:\n"                                                                                 \
    "  tiny:\n"                                                                                    \
    "    host: localhost\n"                                                                        \
    "    engine: llama.cpp\n"

/* The pinned llama.cpp cache dir (scripts/llama-build.sh --print-dir) when it is built, else NULL
 * (and a note on stderr once). $SW_LLAMA_DIR overrides. */
const char *swl_llama_dir(void);
/* What is missing when swl_llama_dir() is NULL, naming llama-server and where it was looked for
 * (for swt_need); "" when nothing is. */
const char *swl_missing(void);
/* <dir>/bin/<name> and <dir>/src/models/<name>, in static rotating buffers. NULL if not built. */
const char *swl_bin(const char *name);
const char *swl_model_file(const char *name);

/* A small chat-capable model for the tests that talk to llama-server: $SW_NET_LLAMA_MODEL when set,
 * else test-llama-archs' random llama (seed 7) with llama.cpp's SPM vocabulary grafted by `slipway
 * gguf synth --seed 7`, written as DIR/chat.gguf. The fixed seeds give the same weights every run,
 * so fixed prompts give the same tokens (a random model may write invalid UTF-8, which the pinned
 * llama-server answers with 500). out receives the path. Returns 0, or -1 with what failed in
 * why (may be NULL). */
int swl_chat_model(const char *dir, char *out, size_t n, char *why, size_t why_n);
/* The setup most llama-server tests share: a fresh temporary directory in *dir (free with
 * swt_tmpdir_free) holding the chat model of swl_chat_model, its path in model. Returns 0, or -1
 * with what is missing in missing (swl_missing(), or what failed) and *dir NULL. */
int swl_chat_dir(char **dir, char *model, size_t n, char *missing, size_t missing_n);

struct swl_server {
    pid_t pid; /* llama-server, leader of its own process group; 0 when not running */
    int port;
    char url[64];    /* http://127.0.0.1:PORT */
    char log[4096];  /* its stdout+stderr */
    bool own_log;    /* the log is a temporary file that swl_stop removes (unless kept) */
    int exit_status; /* after it exited: exit code, or 128+signal; -1 while running */
};

/* Start llama-server -m MODEL --host 127.0.0.1 --port P EXTRA... and wait until GET /health
 * answers 200, at most timeout_s seconds. log_path NULL = a temporary file. On failure
 * (exited while loading, deadline passed) the server is stopped, s->log still names the log, and
 * a summary with the log's tail goes to stderr. A busy port is retried with another one.
 * Returns 0, or -1. */
int swl_start(const char *model, const char *const *extra_args, const char *log_path,
              unsigned timeout_s, struct swl_server *s);
/* SIGTERM to the group, wait up to 10 s, then SIGKILL; reaps the child. Safe to call twice. */
void swl_stop(struct swl_server *s);
/* Keep the temporary log after swl_stop (to show it when a test fails). */
void swl_keep_log(struct swl_server *s);

/* One HTTP/1.1 request (Connection: close). *status is the HTTP status; *body (NUL-terminated,
 * free with free()) the de-chunked body. Returns 0, or -1 on a transport error or deadline. */
int swl_http(int port, const char *method, const char *path, const char *json_body,
             unsigned timeout_s, int *status, char **body);
/* POST /v1/chat/completions with one user message and max_tokens (temperature 0); *content gets
 * the assistant message text (free with free()). Returns 0 when the server answered 200 with a
 * message. When llama-server cannot parse a random model's output as its chat format (HTTP 500
 * "does not match the expected ... format") it retries up to 5 times with other prompts, sampled
 * at temperature 1 with other seeds. */
int swl_chat(const struct swl_server *s, const char *user, int max_tokens, unsigned timeout_s,
             char **content);
/* The last n bytes of a file (the log) in a malloc'd string, for failure messages. */
char *swl_tail(const char *path, size_t n);

#endif
