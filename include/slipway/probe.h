/*
 * slipway probe: the live battery. "Boot is not proof of runtime survivability": each check asks
 * the endpoint for something its clients rely on and keeps the evidence.
 *
 * Checks, in running order (names are stable; `--only` takes them):
 *   readiness    /health semantics per engine (llama-server: 503 while loading, then 200)
 *   liveness     a real one-token generation (not /health)
 *   models       /v1/models lists the promised name; the context length it reports
 *   chat         a non-streamed reply: finish_reason, usage, token counts agree
 *   stream       a streamed reply: [DONE], usage, token counts agree, chunk times
 *   reasoning    reasoning separated from content (reasoning_content or reasoning), or the
 *                inline form named
 *   tool_calls   a declared tool with a required argument comes back as a parsable call
 *   vision       an image_url part with a generated solid-colour PNG: the answer names the
 *                colour; also whether the legacy top-level "images" field is silently ignored
 *   metrics      /metrics read with the engine's names (llamacpp:*, vllm:* with spec-decode
 *                acceptance per position, sglang:*)
 *   over_length  a prompt longer than the window: HTTP 400 with the engine's error type, and
 *                the endpoint still alive afterwards
 *   concurrency  N = slots streams overlap in time; stream N+1 waits for a slot
 *   speed        decode and prefill tok/s at two or three context depths, client and server side
 *   worst_case   (opt-in) prompt + max_tokens fill the window, run to completion, still alive
 *
 * Each check gives {name, status pass|fail|skip, evidence, reason, ms} and a `data` object with
 * its numbers. What the battery needs to know (engine, served name, window, slots, vision) comes
 * from the caller (the fleet) or, when not given, from the endpoint itself (/v1/models,
 * llama-server's /props); the report says which.
 *
 * What it deliberately does not do: judge answer quality beyond what a check names, retry a
 * failed check, or change the endpoint (it only sends requests a client would send; the one
 * llama.cpp-specific device is a GBNF `grammar` forcing a <think> block, so the reasoning check
 * can see what the server does with one even when the model never thinks on its own).
 */
#ifndef SLIPWAY_PROBE_H
#define SLIPWAY_PROBE_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sw_probe_status { SW_PROBE_PASS = 0, SW_PROBE_FAIL = 1, SW_PROBE_SKIP = 2 };

/* The battery's default overall deadline: 15 minutes. A full battery against a large model on a
 * GPU (speed at three depths, concurrency rounds) fits in it; a silent or dead endpoint is given
 * up on long before (see sw_probe_run). */
#define SW_PROBE_DEADLINE_MS_DEFAULT (15u * 60u * 1000u)

const char *sw_probe_status_name(enum sw_probe_status s); /* "pass", "fail", "skip" */

/* One check's outcome. */
struct sw_probe_result {
    const char *name; /* static */
    enum sw_probe_status status;
    char evidence[1024]; /* one line: what was observed */
    char reason[512];    /* why it failed or was skipped; "" when it passed */
    double ms;           /* wall time of the check */
    json_t *data;        /* its numbers (object, owned), never NULL after a run */
};

/* What to probe. Zero/NULL fields are discovered from the endpoint. */
struct sw_probe_target {
    const char *url;         /* base, e.g. http://127.0.0.1:8080 (a trailing /v1 is accepted) */
    const char *unix_socket; /* connect through this socket (a route through the endpoint's
                              * host, host/route); NULL or "": to the URL's host and port */
    const char *via;         /* with unix_socket: the connection it goes through, for the
                              * report ("ssh root@dankserver"); NULL: none */
    const char *api_key;     /* bearer token or NULL; never printed */
    const char *engine;      /* "llama.cpp", "vllm", "sglang"; NULL: detect */
    const char *model;       /* the served name clients use (the fleet's alias); NULL: the first
                          * one /v1/models lists */
    int64_t window;          /* the per-request window clients rely on (tokens); 0: as reported */
    int slots;               /* parallel sequences; 0: llama-server's /props, else unknown */
    int vision;              /* 1 declared, 0 declared absent, -1 detect */
    unsigned timeout_ms;     /* one request's budget; 0: 300000 */
    unsigned ready_ms;       /* readiness waits through 503 "loading" this long; 0: 60000 */
    unsigned deadline_ms;    /* the whole battery; every request's wait is cut to what is left of
                           * it, and a check that finds none left is skipped saying so;
                           * 0: SW_PROBE_DEADLINE_MS_DEFAULT */
    const char *only;        /* comma-separated check names; NULL: every default check */
    bool worst_case;         /* add worst_case */
    FILE *progress;          /* a line per check as it runs, or NULL */
};

struct sw_probe_report {
    char url[512];   /* redacted */
    char via[300];   /* "" direct; else the host connection the requests went through */
    char engine[32]; /* what was used: given or detected, "" unknown */
    char model[256];
    int64_t window;       /* per request, 0 unknown */
    int slots;            /* 0 unknown */
    int vision;           /* 1, 0, -1 unknown */
    unsigned deadline_ms; /* the battery's deadline that applied */
    char gave_up[256];    /* why the checks after readiness/liveness were not run (nothing
                           * listens, or it is silent); "" when they were */
    json_t *found;        /* what discovery read, and from where (object, owned) */
    struct sw_probe_result *v;
    size_t n;
    int passed, failed, skipped;
};

/* The names in running order; *n gets the count (worst_case included, last). */
const char *const *sw_probe_check_names(size_t *n);

/*
 * Run the battery. Returns 0 when it ran (read out->failed for the verdict), SW_EINVAL for an
 * unknown name in `only` or a missing URL, SW_ENOMEM. out is always initialised; free it with
 * sw_probe_report_free.
 *
 * When readiness finds nothing listening, or an endpoint that accepts the connection and sends
 * no byte (its request timed out), or liveness's generation gets no byte back, every later check
 * is skipped with that reason instead of waiting out its own budget. Whatever a server sent
 * reaches the report as well-formed UTF-8 (each invalid byte as U+FFFD, counted in the check's
 * data.invalid_utf8_replaced and said in its evidence) and with the API key, in every form
 * sw_redact knows, replaced by "***".
 */
int sw_probe_run(const struct sw_probe_target *t, struct sw_probe_report *out, struct sw_err *e);
void sw_probe_report_free(struct sw_probe_report *r);
/* {"url","engine","model","window","slots","vision","deadline_ms","gave_up" (null or why),
 * "found","checks":[{name,
 * status,evidence,reason,ms,data}],"passed","failed","skipped"}. Text that is not well-formed
 * UTF-8 is repaired (U+FFFD), never a reason to fail. New reference, or NULL when out of memory
 * (the caller must treat that as an error: nothing was printed). */
json_t *sw_probe_report_json(const struct sw_probe_report *r);
/* The human table: a header line, then one line per check with its evidence. Control
 * characters a server sent (C0 but tab, DEL, C1 U+0080..U+009F) are written as \xNN / \uNNNN
 * escapes, never raw to the terminal. */
void sw_probe_report_print(FILE *f, const struct sw_probe_report *r);
/* The speed check of a report document (sw_probe_report_json's form) as an SVG: decode and
 * prefill tok/s by context depth, client and server side by side. SW_ENOENT when the battery has
 * no speed figures (says why). */
int sw_probe_speed_svg(const json_t *doc, const char *path, struct sw_err *e);

/*
 * An endpoint of a fleet as the battery reaches it (probe/target.c): fleet_path (NULL:
 * ./fleet.yaml) loaded, endpoint `name` found and its route opened (through its host when it
 * listens on the host's loopback); t's url, unix_socket, via, model, engine and api_key point into
 * pe, and the slots, window (the harness's contextWindow, else max_model_len) and vision are what
 * the fleet promises. SW_ENOENT naming the fleet file for an unknown endpoint, the fleet's, the
 * route's or the secret's error. pe is always safe to close (which wipes the key).
 */
struct sw_fleet;
struct sw_service_target;
struct sw_probe_endpoint {
    const struct sw_fleet *fleet;
    struct sw_service_target *svc; /* the fleet and the open route (deploy's); key wiped on close */
};
int sw_probe_target_open(const char *fleet_path, const char *name, struct sw_probe_target *t,
                         struct sw_probe_endpoint *pe, struct sw_err *e);
void sw_probe_target_close(struct sw_probe_endpoint *pe);

/* The battery (doc: sw_probe_report_json of rep) recorded in the ledger (probe/record.c): ledger,
 * else the one beside fleet_path; it must exist. endpoint may be NULL (a URL). *id the row; path
 * (n bytes) the ledger's path. */
int sw_probe_record(const char *ledger, const char *fleet_path, const char *endpoint,
                    const struct sw_probe_report *rep, int64_t started, const json_t *doc,
                    int64_t *id, char *path, size_t n, struct sw_err *e);

/* A PNG of w x h pixels of one RGB colour (stored deflate, no compression library). sw_free
 * the result. NULL on OOM or a size over 1024. */
unsigned char *sw_probe_png_solid(unsigned w, unsigned h, unsigned char r, unsigned char g,
                                  unsigned char b, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
