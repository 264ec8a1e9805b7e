/*
 * slipway serve [ENDPOINT...] [--fleet FILE] [--listen ADDR] [--keys FILE] [--queue N]
 *               [--max-wait D] [--ready-file F] [--keep] [--ledger PATH | --no-ledger]
 *
 * One OpenAI-compatible front door for the fleet's endpoints, admitting models by their planned
 * memory per device (docs/serve.md). Runs in the foreground until Ctrl-C or SIGTERM; decisions
 * go to stderr with their figures.
 *
 * Exit: 0 served and stopped; 1 it could not serve (the address, a start-up error); 2 unusable
 * input (the fleet, an endpoint not in it, the keys file).
 */
#include "cli.h"

#include <slipway/serve.h>

#include <stdio.h>

static const struct sw_opt opts[] = {
    {"listen", 0, "HOST:PORT", 0,
     "where the front door listens (default 127.0.0.1:8090; port 0: any)", NULL},
    {"keys", 0, "FILE", 0,
     "the clients' API keys, CLIENT=KEY lines (an env file); without it no key is asked", NULL},
    {"queue", 0, "N", 0, "requests waiting per model before 429, 1..100000 (default 64)", NULL},
    {"max-wait", 0, "D", 0, "how long a request waits for its model before 503 (default 120s)",
     NULL},
    {"boot-timeout", 0, "D", 0, "how long a start may take, readiness and proof (default 900s)",
     NULL},
    {"grace", 0, "D", 0, "a stop's SIGTERM -> SIGKILL delay (default 10s)", NULL},
    {"ready-file", 0, "FILE", 0, "gets the bound port once it listens", NULL},
    {"keep", 0, NULL, 0, "leave the endpoints serve started running when it stops", NULL},
    {"loops", 0, "N", 0, "request loops, each its own thread, 1..64 (default: the online CPUs)",
     NULL},
    {"ledger", 0, "PATH", 0,
     "the ledger of its deploys (default: $SLIPWAY_LEDGER, else the fleet's)", NULL},
    {"no-ledger", 0, NULL, 0, "record no deploy through serve", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway serve --fleet fleet.yaml",
    "slipway serve --fleet fleet.yaml qwen-small qwen-big --listen 0.0.0.0:8090 --keys clients.env",
    NULL,
};

const struct sw_cmd_spec sw_spec_serve = {
    .name = "serve",
    .summary = "one OpenAI-compatible front door: models admitted by their planned memory",
    .synopsis = "[ENDPOINT...] [--fleet FILE] [--listen HOST:PORT] [--keys FILE] [--queue N] "
                "[--max-wait D] [--ledger PATH | --no-ledger]",
    .about = "Routes /v1/chat/completions, /v1/completions and /v1/embeddings by `model` to the\n"
             "fleet's endpoints (all enabled ones, or those named), starting a stopped one when\n"
             "its plan's memory per device fits beside what runs there, else stopping idle ones\n"
             "by policy (fleet `serve: {policy, idle_ttl, pinned, priority}`). /v1/models lists\n"
             "every served name with its state; /metrics is Prometheus text. A deploy through\n"
             "it (`slipway deploy --via-serve`) is recorded in the ledger. docs/serve.md.\n"
             "Exit: 0 served and stopped, 1 it could not serve, 2 unusable input.",
    .opts = opts,
    .max_args = -1,
    .examples = examples,
    .fleet = true,
};

static void on_listen(void *ctx, const char *url)
{
    (void)ctx;
    printf("serving on %s; Ctrl-C stops it\n", url);
    fflush(stdout);
}

int sw_cmd_serve(int argc, char **argv)
{
    struct sw_args a;
    int ex = 0;
    if (!sw_args_parse(&sw_spec_serve, argc, argv, &a, &ex))
        return ex;
    struct sw_serve_opts o = {0};
    uint64_t q = 0, loops = 0;
    int64_t wait = 0, boot = 0, grace = 0;
    if ((ex = sw_args_number(&a, "queue", 1, 100000, &q)) ||
        (ex = sw_args_duration(&a, "max-wait", 1, 86400000, &wait)) ||
        (ex = sw_args_duration(&a, "boot-timeout", 1000, 86400000, &boot)) ||
        (ex = sw_args_duration(&a, "grace", 0, 3600000, &grace)) ||
        (ex = sw_args_number(&a, "loops", 1, 64, &loops)))
        return ex;
    if (sw_args_str(&a, "ledger") && sw_args_flag(&a, "no-ledger"))
        return sw_args_usage(&a, "--ledger and --no-ledger: choose one");
    struct sw_cli_fleet fl;
    if ((ex = sw_cli_fleet(&a, 0, 0, &fl)))
        return ex;
    o.fleet = fl.path;
    o.endpoints = fl.endpoints;
    o.n_endpoints = (size_t)fl.n_endpoints;
    o.listen = sw_args_str(&a, "listen");
    o.keys_file = sw_args_str(&a, "keys");
    o.queue_max = (unsigned)q;
    o.max_wait_ms = (uint64_t)wait;
    o.boot_timeout_s = (unsigned)(boot / 1000);
    o.grace_ms = (unsigned)grace;
    o.ready_file = sw_args_str(&a, "ready-file");
    o.keep = sw_args_flag(&a, "keep");
    o.loops = (unsigned)loops;
    o.ledger = sw_args_str(&a, "ledger");
    o.no_ledger = sw_args_flag(&a, "no-ledger");
    o.stop = &sw_cli_stop;
    o.on_listen = on_listen;
    sw_cli_catch_stop(false);
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_serve_run(&o, &e);
    sw_cli_release_stop();
    if (rc)
        return sw_cli_fail(&e, a.json);
    return 0;
}
