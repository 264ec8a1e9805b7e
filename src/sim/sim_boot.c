/*
 * sim boot scripts: the lines an engine prints at boot, written from the law's plan in the
 * engine's own format, and the failure it prints when the payload does not resolve or the shape
 * does not fit the declared device memory.
 *
 * llama.cpp: the formats are the pinned llama-server's (80fb11a) as captured in
 * tests/data/bootlogs/llamacpp (ok_llama_dense.log for a boot, oom_load/oom_kv/oom_compute.log for
 * the allocation failures, missing_payload.log for a model path that does not open). The order of
 * allocations is the engine's: weights (load_tensors), output buffer and KV caches
 * (llama_context), compute buffers (sched_reserve); the first that does not fit the declared
 * device memory is the one that fails.
 * vLLM: the law's lines ("Available KV cache memory", "GPU KV cache size", "Maximum concurrency")
 * behind vLLM's EngineCore prefix, and its check_enough_kv_cache_memory ValueError when one
 * request of max_model_len does not fit the pool.
 *
 * What it does not do: print the lines a boot prints that carry no number the law predicts (the
 * GGUF metadata dump, print_info), or model vLLM's graph-capture OOM (no law predicts it yet).
 */
#include "sim_internal.h"

#include <slipway/engine.h>
#include <slipway/memory.h>

#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Lines are stored with llama.cpp's level letter and message ("I srv  llama_server: ..."); the
 * timestamp is added when printed. vLLM's lines are stored whole. */
void sw__sim_log_lines(struct sw_sim *s, const struct sw_buf *b)
{
    FILE *f = s->cfg.log ? s->cfg.log : stderr;
    const char *p = sw_buf_cstr(b);
    uint64_t us = (sw_now_ns() - s->t0_ns) / 1000u;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (s->engine == SW__SIM_LLAMACPP)
            /* common/log.cpp: minutes.seconds.milliseconds.microseconds */
            fprintf(f, "%u.%02u.%03u.%03u ", (unsigned)(us / 60000000u),
                    (unsigned)(us / 1000000u % 60u), (unsigned)(us / 1000u % 1000u),
                    (unsigned)(us % 1000u));
        fprintf(f, "%.*s\n", (int)n, p);
        p += n + (nl ? 1 : 0);
    }
    fflush(f);
}

static const char *mib(uint64_t b, char *out, size_t n)
{
    snprintf(out, n, "%.2f", (double)b / 1048576.0);
    return out;
}

/* llama.cpp's name of a device's model buffer: CPU weights are mmapped ("CPU_Mapped"). */
static const char *model_buf_name(const char *dev, char *out, size_t n)
{
    if (!strcmp(dev, "CPU"))
        snprintf(out, n, "CPU_Mapped");
    else
        snprintf(out, n, "%s", dev);
    return out;
}

/* The three lines of a failed allocation on a device, as ggml prints them. */
static int alloc_fail(struct sw_buf *b, const char *dev, uint64_t bytes, const char *who)
{
    int rc = 0;
    if (!strcmp(dev, "CPU")) {
        rc |= sw_buf_printf(b,
                            "E ggml_aligned_malloc: insufficient memory (attempted to allocate "
                            "%7.2f MB)\n",
                            (double)bytes / 1048576.0);
        rc |= sw_buf_printf(b,
                            "E ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate "
                            "buffer of size %" PRIu64 "\n",
                            bytes);
    } else {
        rc |= sw_buf_printf(b,
                            "E ggml_backend_cuda_buffer_type_alloc_buffer: allocating %.2f MiB on "
                            "device 0: cudaMalloc failed: out of memory\n",
                            (double)bytes / 1048576.0);
    }
    rc |= sw_buf_printf(b, "E %s: failed to allocate %s buffer of size %" PRIu64 "\n", who, dev,
                        bytes);
    return rc;
}

static int fail_tail(struct sw_buf *b, const char *model, bool context)
{
    int rc = 0;
    if (context) {
        rc |= sw_buf_printf(b, "E cmn  common_init_: failed to create context with model '%s'\n",
                            model);
        rc |= sw_buf_printf(b, "E srv    load_model: failed to create_context with model '%s'\n",
                            model);
    } else {
        rc |= sw_buf_printf(b, "E llama_model_load_from_file_impl: failed to load model\n");
        rc |= sw_buf_printf(b, "E cmn  common_init_: failed to load model '%s'\n", model);
        rc |= sw_buf_printf(b, "E srv    load_model: failed to load model, '%s'\n", model);
    }
    rc |= sw_buf_puts(b, "I srv    operator(): operator(): cleaning up before exit...\n");
    rc |= sw_buf_puts(b, "E srv  llama_server: exiting due to model loading error\n");
    return rc;
}

int sw__sim_boot_llamacpp(struct sw_sim *s, const struct sw_plan *p, struct sw_err *e)
{
    struct sw_buf *E = &s->boot_early, *M = &s->boot_mem, *T = &s->boot_tail;
    const char *model = s->model_path;
    char a[32], c[32];
    int rc = 0;

    rc |= sw_buf_printf(E,
                        "I cmn  common_param: common_params_print_info: build 1 (%.7s) with "
                        "slipway-sim for Linux x86_64\n",
                        SW_ENGINE_LLAMACPP_PIN);
    rc |= sw_buf_printf(E, "I srv          init: using 8 threads for HTTP server\n");
    rc |= sw_buf_printf(E, "I srv         start: binding port with default address family\n");
    rc |= sw_buf_printf(E, "I srv    load_model: loading model '%s'\n", model);
    if (s->payload_missing) {
        /* missing_payload.log: the GGUF open fails inside fit, then again in the load */
        rc |= sw_buf_printf(T,
                            "E gguf_init_from_file: failed to open GGUF file '%s' (No such file "
                            "or directory)\n",
                            model);
        rc |= sw_buf_printf(T,
                            "E llama_model_load: error loading model: llama_model_loader: failed "
                            "to load model from %s\n",
                            model);
        rc |= fail_tail(T, model, false);
        s->boot_fails = true;
        s->fail_status = 1;
        return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
    }
    const struct sw_llamacpp_plan *pl = p->llamacpp;
    const struct sw_llamacpp_report *r = &pl->report;
    uint64_t override = s->cfg.device_memory;
    /* per device, what is allocated so far; the first allocation past capacity fails */
    uint64_t used[SW_LLAMACPP_MAX_DEV] = {0};
#define CAP(d)       (override && (d) == 0 ? override : pl->dev[(d)].memory)
#define FITS(d, add) (!CAP(d) || used[(d)] + (add) <= CAP(d))

    rc |= sw_buf_puts(M, "I load_tensors: loading model tensors, this can take a while... "
                         "(load_mode = mmap)\n");
    for (int d = 0; d < pl->n_dev; d++) {
        if (!FITS(d, pl->dev[d].weights)) {
            rc |= alloc_fail(M, pl->dev[d].name, pl->dev[d].weights, "alloc_tensor_range");
            rc |= sw_buf_printf(M,
                                "E llama_model_load: error loading model: unable to allocate "
                                "%s buffer\n",
                                pl->dev[d].name);
            rc |= fail_tail(M, model, false);
            s->boot_fails = true;
            s->fail_status = 1;
            goto out;
        }
        used[d] += pl->dev[d].weights;
        if (pl->dev[d].weights || (r->model_known && d == 0 && pl->n_dev == 1))
            rc |= sw_buf_printf(M, "I load_tensors: %12s model buffer size = %8s MiB\n",
                                model_buf_name(pl->dev[d].name, c, sizeof(c)),
                                mib(pl->dev[d].weights, a, sizeof(a)));
    }
    rc |= sw_buf_puts(M, "I llama_context: constructing llama_context\n");
    rc |= sw_buf_printf(M, "I llama_context: n_seq_max             = %u\n", r->n_seq_max);
    rc |= sw_buf_printf(M, "I llama_context: n_ctx                 = %u\n", r->n_ctx);
    rc |= sw_buf_printf(M, "I llama_context: n_ctx_seq             = %u\n", r->n_ctx_seq);
    rc |= sw_buf_printf(M, "I llama_context: n_batch               = %u\n", r->n_batch);
    rc |= sw_buf_printf(M, "I llama_context: n_ubatch              = %u\n", r->n_ubatch);
    rc |= sw_buf_puts(M, "I llama_context: causal_attn           = 1\n");
    rc |= sw_buf_printf(M, "I llama_context: flash_attn            = %s\n",
                        p->args->flash_attn == SW_FA_AUTO ? "auto"
                        : p->args->flash_attn == SW_FA_ON ? "enabled"
                                                          : "disabled");
    rc |= sw_buf_printf(M, "I llama_context: kv_unified            = %s\n",
                        r->kv_unified ? "true" : "false");
    /* the output buffer lives on the host */
    rc |= sw_buf_printf(M, "I llama_context: %10s  output buffer size = %8s MiB\n", "CPU",
                        mib(r->output_bytes, a, sizeof(a)));
    /* the caches: each device's share of the KV (and recurrent state) is one allocation */
    for (int d = 0; d < pl->n_dev; d++) {
        uint64_t kv = pl->dev[d].kv + pl->dev[d].recurrent + pl->dev[d].output;
        if (!FITS(d, kv)) {
            rc |= alloc_fail(M, pl->dev[d].name, pl->dev[d].kv + pl->dev[d].recurrent,
                             "alloc_tensor_range");
            rc |= sw_buf_printf(M,
                                "E llama_init_from_model: failed to initialize the context: "
                                "failed to allocate buffer for %s cache\n",
                                pl->dev[d].kv ? "kv" : "rs");
            rc |= fail_tail(M, model, true);
            s->boot_fails = true;
            s->fail_status = 1;
            goto out;
        }
        used[d] += kv;
    }
    for (uint32_t i = 0; i < r->n_kv; i++) {
        const struct sw_llamacpp_kv *k = &r->kv[i];
        if (r->n_kv > 1)
            rc |= sw_buf_printf(M, "I llama_kv_cache_iswa: creating %s KV cache, size = %u cells\n",
                                k->swa ? "    SWA" : "non-SWA", k->cells);
        for (int d = 0; d < pl->n_dev && r->n_kv == 1; d++)
            if (pl->dev[d].kv)
                rc |= sw_buf_printf(M, "I llama_kv_cache: %10s KV buffer size = %8s MiB\n",
                                    pl->dev[d].name, mib(pl->dev[d].kv, a, sizeof(a)));
        rc |= sw_llamacpp_kv_line(M, "I ", k);
    }
    if (r->has_recurrent)
        rc |= sw_llamacpp_recurrent_line(M, "I ", &r->recurrent);
    rc |= sw_buf_puts(M, "I sched_reserve: reserving ...\n");
    for (int d = 0; d < pl->n_dev; d++) {
        if (!FITS(d, pl->dev[d].compute)) {
            rc |= alloc_fail(M, pl->dev[d].name, pl->dev[d].compute, "ggml_gallocr_reserve_n_impl");
            rc |= sw_buf_puts(M, "E graph_reserve: failed to allocate compute buffers\n");
            rc |= sw_buf_puts(M, "E llama_init_from_model: failed to initialize the context: "
                                 "failed to allocate compute pp buffers\n");
            rc |= fail_tail(M, model, true);
            s->boot_fails = true;
            s->fail_status = 1;
            goto out;
        }
        used[d] += pl->dev[d].compute;
        if (r->compute_known)
            rc |= sw_buf_printf(M, "I sched_reserve: %10s compute buffer size = %8s MiB\n",
                                pl->dev[d].name, mib(pl->dev[d].compute, a, sizeof(a)));
    }
#undef FITS
#undef CAP
    rc |= sw_buf_puts(M, "I cmn  common_init_: warming up the model with an empty run - please "
                         "wait ... (--no-warmup to disable)\n");
    rc |= sw_buf_printf(T,
                        "I srv    load_model: initializing, n_slots = %d, n_ctx_slot = %" PRId64
                        ", kv_unified = '%s'\n",
                        s->n_slots, s->window, r->kv_unified ? "true" : "false");
    for (int i = 0; i < s->n_slots; i++)
        rc |= sw_buf_printf(
            T, "I slot   load_model: id %2d | task -1 | new slot, n_ctx = %" PRId64 "\n", i,
            s->window);
    rc |= sw_buf_puts(T, "I srv  llama_server: model loaded\n");
    /* "listening on" and "all slots are idle" are printed with the port, at ready */
out:
    return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
}

/* vLLM's log prefix for the engine core's lines and the API server's. */
static int vline(struct sw_buf *b, bool core, const char *level, const char *file, const char *msg)
{
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%m-%d %H:%M:%S", &tm);
    return sw_buf_printf(b, "(%s pid=%d) %s %s [%s] %s\n", core ? "EngineCore_DP0" : "APIServer",
                         core ? 2 : 1, level, ts, file, msg);
}

/* vLLM's engine core failed to start of `cause` (its exception's last line): the core's error, the
 * cause, the API server's RuntimeError; the boot ends, exit 1. rc: the boot script's writes so
 * far (nonzero: out of memory). */
static int core_failed(struct sw_sim *s, int rc, const char *cause, struct sw_err *e)
{
    struct sw_buf *M = &s->boot_mem;
    rc |= vline(M, true, "ERROR", "core.py:708", "EngineCore failed to start.");
    rc |= sw_buf_printf(M, "%s\n", cause);
    rc |= vline(M, false, "ERROR", "api_server.py:1900",
                "RuntimeError: Engine core initialization failed. See root cause above. "
                "Failed core proc(s): {}");
    s->boot_fails = true;
    s->fail_status = 1;
    return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
}

/* vLLM and SGLang load the model's config through transformers: a path that is neither a
 * directory nor a Hub id ends the boot in the launcher, exit 1. rc: the boot script's writes so
 * far (nonzero: out of memory). */
static int hf_path_fails(struct sw_sim *s, int rc, struct sw_err *e)
{
    rc |= sw_buf_printf(&s->boot_tail,
                        "huggingface_hub.errors.HFValidationError: Repo id must be in the form "
                        "'repo_name' or 'namespace/repo_name': '%s'. Use `repo_type` argument "
                        "if needed.\n",
                        s->model_path);
    s->boot_fails = true;
    s->fail_status = 1;
    return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
}

int sw__sim_boot_vllm(struct sw_sim *s, const json_t *plan, struct sw_err *e)
{
    struct sw_buf *E = &s->boot_early, *M = &s->boot_mem, *T = &s->boot_tail;
    char msg[2048];
    int rc = 0;
    const json_t *rep = json_object_get(plan, "report");
    const char *ver = json_string_value(json_object_get(rep, "engine_version"));

    /* the law names its token-count rule ("vllm-v1-current (>= 0.24: ...)"): print the first
     * release it names, as vLLM prints its version */
    const char *num = ver && ver[0] >= '0' && ver[0] <= '9' ? ver : NULL;
    if (!num && ver && strstr(ver, ">= "))
        num = strstr(ver, ">= ") + 3;
    size_t nl = 0;
    int dots = 0;
    while (num && ((num[nl] >= '0' && num[nl] <= '9') || num[nl] == '.'))
        dots += num[nl++] == '.';
    if (nl) { /* else the law names no release: no version line */
        snprintf(msg, sizeof(msg), "vLLM API server version %.*s%s", (int)nl, num,
                 dots == 1 ? ".0" : "");
        rc |= vline(E, false, "INFO", "api_server.py:1839", msg);
    }
    snprintf(msg, sizeof(msg), "non-default args: {'model': '%s'}", s->model_path);
    rc |= vline(E, false, "INFO", "utils.py:233", msg);
    if (s->payload_missing)
        return hf_path_fails(s, rc, e);
    if (s->vboot.fault == SW_SIM_VLLM_COMPILE) {
        /* torch.compile specializes a dynamic dimension in profile_run -> _dummy_run, before
         * the KV cache is sized: the fleet's declared error, as the worker raises it */
        rc |= vline(M, true, "INFO", "gpu_worker.py:277",
                    "Memory profiling takes place: determine_available_memory -> profile_run -> "
                    "_dummy_run");
        return core_failed(s, rc,
                           s->vboot.text[0] ? s->vboot.text
                                            : "RuntimeError: Worker failed with error "
                                              "'Constraints violated'",
                           e);
    }
    const json_t *lines = json_object_get(plan, "lines");
    for (size_t k = 0; k < json_array_size(lines); k++) {
        const char *l = json_string_value(json_array_get(lines, k));
        if (!l || !strncmp(l, "ValueError:", 11))
            continue; /* the law's summary of the failure: vLLM's own words follow */
        const char *file =
            strstr(l, "Available KV") ? "gpu_worker.py:298" : "kv_cache_utils.py:1087";
        rc |= vline(M, true, "INFO", file, l);
    }
    if (json_is_false(json_object_get(rep, "fits"))) {
        /* vLLM's check_enough_kv_cache_memory (v1/core/kv_cache_utils.py) */
        double need = (double)json_integer_value(json_object_get(rep, "kv_needed_bytes")) / SW_GIB;
        double avail =
            (double)json_integer_value(json_object_get(rep, "available_kv_bytes")) / SW_GIB;
        snprintf(msg, sizeof(msg),
                 "ValueError: To serve at least one request with the models's max seq len "
                 "(%" PRId64 "), (%.2f GiB KV cache is needed, which is larger than the available "
                 "KV cache memory (%.2f GiB). Based on the available memory, the estimated maximum "
                 "model length is %" PRId64 ". Try increasing `gpu_memory_utilization` or "
                 "decreasing `max_model_len` when initializing the engine.",
                 (int64_t)json_integer_value(json_object_get(rep, "max_model_len")), need, avail,
                 (int64_t)json_integer_value(json_object_get(rep, "estimated_max_model_len")));
        return core_failed(s, rc, msg, e);
    }
    if (s->vboot.fault == SW_SIM_VLLM_KV_OOM || s->vboot.fault == SW_SIM_VLLM_CAPTURE_OOM) {
        /* the headroom model's verdict: the allocation that does not fit, in torch's words */
        bool kv = s->vboot.fault == SW_SIM_VLLM_KV_OOM;
        char tried[64], fr[64];
        double t = (double)s->vboot.tried_bytes;
        if (t >= SW_GIB)
            snprintf(tried, sizeof(tried), "%.2f GiB", t / SW_GIB);
        else
            snprintf(tried, sizeof(tried), "%.2f MiB", t / SW_MIB);
        if (s->vboot.free_bytes >= SW_GIB)
            snprintf(fr, sizeof(fr), "%.2f GiB", (double)s->vboot.free_bytes / SW_GIB);
        else if (s->vboot.free_bytes)
            snprintf(fr, sizeof(fr), "%.2f MiB", (double)s->vboot.free_bytes / SW_MIB);
        else
            snprintf(fr, sizeof(fr), "0 bytes");
        if (kv)
            rc |= vline(M, true, "INFO", "gpu_model_runner.py:3120",
                        "initialize_kv_cache: allocating the KV cache tensors");
        else
            rc |= vline(M, true, "INFO", "gpu_model_runner.py:3436",
                        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 0%|          | "
                        "0/67 [00:00<?, ?it/s]");
        snprintf(msg, sizeof(msg),
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. GPU 0 has a "
                 "total capacity of %.2f GiB of which %s is free.",
                 tried, (double)s->vboot.total_bytes / SW_GIB, fr);
        return core_failed(s, rc, msg, e);
    }
    rc |= vline(M, true, "INFO", "gpu_model_runner.py:3480",
                "Graph capturing finished in 1 secs, took 0.10 GiB");
    rc |= vline(T, false, "INFO", "launcher.py:44", "Route: /health, Methods: GET");
    rc |= vline(T, false, "INFO", "launcher.py:44", "Route: /v1/chat/completions, Methods: POST");
    return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
}

void sw__sim_sglang_prefix(char *out, size_t n, bool rank)
{
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(out, n, "[%s%s] ", ts, rank ? " TP0" : "");
}

/* One SGLang line: the scheduler's (rank TP0) or the launcher's. */
static int sline(struct sw_buf *b, bool rank, const char *msg)
{
    char pre[64];
    sw__sim_sglang_prefix(pre, sizeof(pre), rank);
    return sw_buf_printf(b, "%s%s\n", pre, msg);
}

int sw__sim_sglang_death(struct sw_buf *b, const char *cause)
{
    int rc = sline(b, true, "Scheduler hit an exception: Traceback (most recent call last):");
    rc |= sw_buf_printf(b, "%s\n", cause);
    return rc | sline(b, false,
                      "Received sigquit from a child process. It usually means the child failed.");
}

/*
 * SGLang (python/sglang/srt/managers/scheduler.py and model_executor/model_runner.py, v0.5.x):
 * the server args, the weights' load, the law's pool lines ("KV Cache is allocated. #tokens: N,
 * K size: ..., V size: ..."; a hybrid's "Mamba Cache is allocated."), "Memory pool end", the
 * scheduler's limits line, then (once the HTTP server is up) "The server is fired up". A pool the
 * law sizes at no token is the scheduler's "Not enough memory" RuntimeError; a payload that does
 * not resolve fails in the launcher before any child starts (exit 1).
 */
int sw__sim_boot_sglang(struct sw_sim *s, const json_t *plan, struct sw_err *e)
{
    struct sw_buf *E = &s->boot_early, *M = &s->boot_mem;
    char msg[4096];
    int rc = 0;
    snprintf(
        msg, sizeof(msg),
        "server_args=ServerArgs(model_path='%s', served_model_name='%s', context_length=%" PRId64
        ", max_running_requests=%d, chunked_prefill_size=%" PRId64 ")",
        s->model_path, s->alias, s->window, s->n_slots, s->batch_tokens);
    rc |= sline(E, false, msg);
    if (s->payload_missing)
        return hf_path_fails(s, rc, e);
    /* the free memory around the load when the plan had it (--device-memory, --weights) */
    const json_t *rep = json_object_get(plan, "report");
    const json_t *pre = json_object_get(rep, "pre_load_avail_gb");
    const json_t *post = json_object_get(rep, "post_load_avail_gb");
    if (json_is_number(pre))
        snprintf(msg, sizeof(msg), "Load weight begin. avail mem=%.2f GB", json_number_value(pre));
    else
        snprintf(msg, sizeof(msg), "Load weight begin.");
    rc |= sline(M, true, msg);
    if (json_is_number(post) && json_is_number(pre))
        snprintf(msg, sizeof(msg), "Load weight end. avail mem=%.2f GB, mem usage=%.2f GB.",
                 json_number_value(post), json_number_value(pre) - json_number_value(post));
    else
        snprintf(msg, sizeof(msg), "Load weight end. mem usage=%.2f GB.",
                 (double)s->payload_bytes / SW_GIB);
    rc |= sline(M, true, msg);
    if (s->kv_pool < 1) {
        rc |= sw__sim_sglang_death(M, "RuntimeError: Not enough memory. Please try to increase "
                                      "--mem-fraction-static.");
        s->boot_fails = true;
        s->fail_status = SW__SIM_SGLANG_DIED;
        return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
    }
    const json_t *lines = json_object_get(plan, "lines");
    for (size_t k = 0; k < json_array_size(lines); k++) {
        const char *l = json_string_value(json_array_get(lines, k));
        if (l)
            rc |= sline(M, true, l);
    }
    if (!json_object_get(rep, "pool_end_avail_gb"))
        rc |= sline(M, true, "Memory pool end."); /* the law's line carries the figure */
    rc |= sline(M, true, "Capture cuda graph begin. This can take up to several minutes.");
    rc |= sline(M, true, "Capture cuda graph end. Time elapsed: 1.00 s.");
    snprintf(msg, sizeof(msg),
             "max_total_num_tokens=%" PRId64 ", chunked_prefill_size=%" PRId64
             ", max_prefill_tokens=16384, max_running_requests=%d, context_len=%" PRId64,
             s->kv_pool, s->batch_tokens, s->n_slots, s->window);
    rc |= sline(M, true, msg);
    return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
}
