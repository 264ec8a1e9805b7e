/*
 * sim internals shared by its files: the sim object, the boot script, the scheduler.
 */
#ifndef SW_SIM_INTERNAL_H
#define SW_SIM_INTERNAL_H

#include <slipway/core.h>
#include <slipway/sim.h>

#include <event2/event.h>
#include <event2/http.h>

enum sw__sim_engine { SW__SIM_LLAMACPP = 1, SW__SIM_VLLM = 2, SW__SIM_SGLANG = 3 };

enum sw__sim_state { SW__SIM_LOADING = 0, SW__SIM_READY, SW__SIM_FAILED, SW__SIM_STOPPING };

/* A request in the scheduler. */
struct sw__sim_req {
    struct sw__sim_req *next;
    struct sw_sim *sim;
    struct evhttp_request *http; /* NULL once the client is gone */
    uint64_t id;
    bool chat, stream, include_usage, reasoning;
    bool timings_per_token; /* llama.cpp: timings in every streamed chunk */
    bool continuous_usage;  /* vLLM/SGLang continuous_usage_stats: usage in every chunk */
    int slot;               /* -1 while queued */
    int64_t n_prompt;       /* tokens */
    int64_t max_tokens;     /* tokens to generate */
    int64_t n_gen;          /* generated so far */
    bool prefilled;
    bool reason_begun, content_begun; /* a part's first token has no leading space */
    bool started;                     /* admitted once (its stream's headers are out) */
    bool in_step;         /* takes part in the step under way (a decode token or a chunk) */
    int64_t prefill_done; /* tokens of its prompt prefilled so far (chunked prefill) */
    int64_t step_chunk;   /* tokens of it the step under way prefills */
    uint64_t text_seed;   /* seed x prompt */
    uint64_t t_arrive_ns, t_start_ns, t_first_ns, t_done_ns;
    double prompt_ms, predicted_ms;
    struct sw_buf text; /* generated so far (non-streamed reply) */
    struct sw_buf reason;
    char *tool_name;         /* a tool call instead of text (NULL: text) */
    struct sw_buf tool_args; /* its arguments, streamed 4 bytes a token */
    size_t tool_off;         /* bytes of them sent */
    int64_t reset_at;        /* a reset fault: its connection is reset after this many tokens */
    int64_t draft_n, draft_accepted; /* speculative decoding: drafted / kept (llama.cpp timings) */
};

struct sw_sim {
    enum sw__sim_engine engine;
    struct sw_sim_config cfg;
    char alias[1024];
    char *alias_json;       /* alias as a JSON string (free()) */
    struct evbuffer *chunk; /* reused for each streamed token */
    char model_path[1024];
    bool payload_missing;
    uint64_t payload_bytes;
    int64_t n_ctx;      /* llama.cpp n_ctx (all slots); vLLM: the KV pool in tokens */
    int64_t window;     /* per-slot (per-request) window */
    int n_slots;        /* llama.cpp -np; vLLM max_num_seqs */
    int64_t kv_pool;    /* tokens of KV the running sequences may hold (0: each slot its window) */
    int64_t block_size; /* vLLM's KV block (tokens); 1 for llama.cpp's cells */
    int64_t batch_tokens; /* a step's token budget (chunked prefill); 0: none */
    /* the boot script: lines printed before the load wait, after it (memory lines), and the
     * tail that says serving or the failure; fail_status is the engine's exit status */
    struct sw_buf boot_early, boot_mem, boot_tail;
    bool boot_fails;
    int fail_status;
    struct sw_sim_vllm_boot vboot; /* how a vLLM boot ends (text copied to vboot_text) */
    char vboot_text[1024];
    /* the loop */
    struct event_base *base;
    struct evhttp *http;
    struct event *sig_term, *sig_int, *load_timer, *step_timer;
    int listen_fd;
    bool http_owns_fd; /* evhttp closes it */
    int port;
    char host[256];
    bool metrics; /* llama-server serves /metrics only with --metrics */
    enum sw__sim_state state;
    uint64_t t0_ns;
    /* the scheduler */
    struct sw__sim_req *queue_head, *queue_tail; /* waiting for a slot */
    struct sw__sim_req **slots;                  /* n_slots entries, NULL when idle */
    bool stepping;
    bool step_chained;  /* the step being scheduled follows the one that just ended */
    bool in_window;     /* an idle engine's batch window is open (timing.batch_window_us) */
    bool window_passed; /* it just closed: the step starts now */
    struct event *window_timer;
    uint64_t step_end_ns;   /* the ideal end of the last step scheduled */
    uint64_t window_end_ns; /* the ideal end of the open batch window */
    double *pf_n, *pf_k0;   /* scratch: the prompt chunks of a step (n_pf_max entries) */
    size_t n_pf_max;
    uint64_t next_id;
    /* counters (/metrics) */
    uint64_t m_prompt_tokens, m_predicted_tokens, m_requests, m_decode_calls, m_preemptions;
    uint64_t m_cancelled; /* requests whose client went away before their end */
    uint64_t m_spec_drafts, m_spec_draft_tokens, m_spec_accepted;
    uint64_t m_spec_pos[SW_SIM_SPEC_MAX]; /* drafts whose position k was kept */
    uint64_t spec_rng;
    double m_prompt_seconds, m_predicted_seconds;
    int exit_status;
    /* more loops (cfg.threads): the other sims, their threads, and a pipe whose write end the
     * first loop closes to stop them */
    struct sw_sim **workers;
    void *worker_threads; /* pthread_t[n_workers] */
    int n_workers;
    int stop_pipe[2];
    struct event *stop_ev;
    char listen_buf[300];
    /* faults on demand (POST /sim/fault) */
    bool fault_dead;              /* generation never advances; /health stays 200 */
    bool fault_hang;              /* nothing but /sim/fault is answered */
    bool fault_oom_next;          /* the next generation request dies the runtime-OOM way */
    int64_t fault_500_left;       /* generation requests answered 500 before the path recovers */
    double fault_jitter_us;       /* every step lasts up to this much longer */
    uint64_t jitter_rng;          /* its seeded sequence */
    double fault_stall_us;        /* the next step lasts this much longer */
    int64_t fault_reset_left;     /* requests still to be reset ... */
    int64_t fault_reset_after;    /* ... after this many tokens */
    int64_t fault_crash_left;     /* generation requests to complete before a crash (0: none) */
    bool crash_pending;           /* the last of them completed: crash at the step's end */
    struct evhttp_request **hung; /* requests held by a hang (answered when it clears) */
    struct evhttp_connection **hung_conn; /* and their connections */
    size_t n_hung, cap_hung;
    struct sw__sim_guard *guards; /* the connections' head guards, a table (sim_guard.c) */
};

/* The boot scripts (sim_boot.c). */
int sw__sim_boot_llamacpp(struct sw_sim *s, const struct sw_plan *p, struct sw_err *e);
int sw__sim_boot_vllm(struct sw_sim *s, const json_t *plan, struct sw_err *e);
int sw__sim_boot_sglang(struct sw_sim *s, const json_t *plan, struct sw_err *e);
/* SGLang's line prefix: "[YYYY-MM-DD HH:MM:SS TP0] " (wall clock), or without the rank. */
void sw__sim_sglang_prefix(char *out, size_t n, bool rank);
/* SGLang's scheduler died of `cause` (its traceback's last line): the scheduler's lines and the
 * launcher's, appended to b; the launcher then kills its process tree (SIGKILL: what a shell
 * reports as SW__SIM_SGLANG_DIED). Nonzero when b could not grow. */
#define SW__SIM_SGLANG_DIED 137
int sw__sim_sglang_death(struct sw_buf *b, const char *cause);
/* Print one buffered part of the boot log, each line prefixed the engine's way. */
void sw__sim_log_lines(struct sw_sim *s, const struct sw_buf *b);

/* A request's head: the request line and its headers, at most this many bytes and header lines
 * (docs/sim.md); past either the sim answers 431 and closes the connection (sim_guard.c). */
#define SW__SIM_HEAD_MAX   (64u << 10)
#define SW__SIM_HEAD_LINES 100u
struct sw__sim_guard;
/* Put every connection of s->http under the guard (evhttp_set_bevcb); SW_ENOMEM. */
int sw__sim_guard_init(struct sw_sim *s);
void sw__sim_guard_free(struct sw_sim *s);
/* req was dispatched: the next bytes on its connection begin the next head. */
void sw__sim_guard_rearm(struct sw_sim *s, struct evhttp_request *req);

/* Where the engine's command line says the sim serves (--host, --port), when the sim was given
 * no address: host (else 127.0.0.1) and port (else 0, a free one); nothing when neither is. */
void sw__sim_listen(struct sw_sim *s, const char *host, const char *port);
/* SGLang's request window: the one given (--context-length, a fleet shape's max_model_len), else
 * the model's max_position_embeddings; 0 when neither is known (the sim refuses that). */
int64_t sw__sim_sglang_window(const char *dir, int64_t given);
/* How a vLLM fleet endpoint's boot ends (sim_headroom.c): c and ep as sim.h's
 * sw_sim_new_endpoint says. */
struct sw_fleet_endpoint;
int sw__sim_vllm_boot(struct sw_fleet_endpoint *ep, const char *ledger, struct sw_sim_config *c,
                      struct sw_sim_vllm_boot *boot, struct sw_err *e);

/* The HTTP surface (sim_http.c): the loop's server and its routes. */
int sw__sim_http_init(struct sw_sim *s, struct sw_err *e);
void sw__sim_on_request(struct evhttp_request *req, void *arg);
/* A request body is at most this (libevent answers 413 past it). */
#define SW__SIM_BODY_MAX (64u << 20)

/* A generation request (sim_request.c): read, refused, or queued. */
void sw__sim_on_generate(struct sw_sim *s, struct evhttp_request *req, bool chat);
/* /metrics in the engine's names (sim_metrics.c). */
void sw__sim_on_metrics(struct sw_sim *s, struct evhttp_request *req);

/* The scheduler (sim_sched.c). */
int sw__sim_sched_init(struct sw_sim *s, struct sw_err *e);
/* The engine serves: the faults set from the start, then the queue's first step. */
void sw__sim_http_ready(struct sw_sim *s);
/* r (of req) joins the queue; its client's going away cancels it. */
void sw__sim_enqueue(struct sw_sim *s, struct sw__sim_req *r);
void sw__sim_admit(struct sw_sim *s);
void sw__sim_schedule_step(struct sw_sim *s);
/* Every request, running or queued, dropped without a reply. */
void sw__sim_drop_all(struct sw_sim *s);
/* r's connection no longer tells r that its client went away. */
void sw__sim_detach(struct sw__sim_req *r);
int sw__sim_n_running(const struct sw_sim *s);
int sw__sim_n_queued(const struct sw_sim *s);
/* KV the running sequences hold of the shared pool. */
int64_t sw__sim_kv_held(const struct sw_sim *s);

/* The replies in the engine's shapes (sim_reply.c). reply_json takes j. */
void sw__sim_reply_json(struct evhttp_request *req, int code, const char *reason, json_t *j);
void sw__sim_reply_text(struct evhttp_request *req, int code, const char *ctype, const char *txt,
                        size_t n);
void sw__sim_reply_loading(struct evhttp_request *req);
void sw__sim_reply_too_long(struct sw_sim *s, struct evhttp_request *req, int64_t n_prompt,
                            int64_t max_tokens);
void sw__sim_reply_bad(struct sw_sim *s, struct evhttp_request *req, const char *msg);
void sw__sim_reply_500(struct sw_sim *s, struct evhttp_request *req);
/* A streamed request's headers and role chunk; a token's (or a draft's) chunk; a tool call's
 * delta (its name first, then a piece of its arguments); the end, streamed or whole. */
void sw__sim_start_stream(struct sw_sim *s, struct sw__sim_req *r);
void sw__sim_stream_token(struct sw_sim *s, struct sw__sim_req *r, const char *tok, bool reasoning);
void sw__sim_stream_tool_call(struct sw_sim *s, struct sw__sim_req *r, bool first,
                              const char *piece);
void sw__sim_finish(struct sw_sim *s, struct sw__sim_req *r, const char *reason);

static inline double sw__sim_ms_between(uint64_t a, uint64_t b)
{
    return b > a ? (double)(b - a) / 1e6 : 0.0;
}

/* What the sim says (sim_text.c). */
uint64_t sw__sim_mix64(uint64_t x);
/* The next value of a seeded sequence (the faults' jitter, the drafts' acceptance). */
uint64_t sw__sim_rng_next(uint64_t *state);
/* The token at index i of a request: a word, with a leading space after the first. */
void sw__sim_token_text(const struct sw__sim_req *r, int64_t i, char *out, size_t n);
/* A message's content (a string, or the text parts of an array) into the hash h. */
void sw__sim_hash_content(const json_t *c, uint64_t *h);
/* A call's arguments: every required property, a word for a string, 1 for a number or an
 * integer, true for a boolean. Allocated (sw_free); NULL on OOM. */
char *sw__sim_tool_arguments(const json_t *params, uint64_t seed);

/* The engine's deaths (sim_death.c). */
/* The engine is gone: what is in flight is cut, and the process ends with the engine's status
 * once the replies already written are flushed. */
void sw__sim_die(struct sw_sim *s, int status);
/* vLLM's API server after its engine core died: its last lines. */
void sw__sim_vllm_dead_tail(struct sw_buf *b);
/* The crash fault, at a step's end. */
void sw__sim_crash(struct sw_sim *s);
/* The engine dies on this request the runtime-OOM way. */
void sw__sim_runtime_oom(struct sw_sim *s, struct evhttp_request *req);

/* Faults (sim_fault.c): set one (POST /sim/fault, --fault; docs/sim.md "Faults"); hold a request
 * while the engine hangs (answered when the hang clears, forgotten when its client goes). */
void sw__sim_fault_apply(struct sw_sim *s, const struct sw_sim_fault *f);
void sw__sim_hold(struct sw_sim *s, struct evhttp_request *req);

#endif
