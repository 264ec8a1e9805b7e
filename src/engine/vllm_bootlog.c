/*
 * engine/vllm: parse a vLLM boot log (journal, container log or a pasted excerpt) into the same
 * `report` the law predicts, plus a classified `failure`.
 *
 * The failure classes come from the operator's own nights: a torch/HIP out-of-memory with the
 * phase it happened in (profile, kv_alloc, graph_capture, runtime) and its "Tried to allocate X
 * ... Y free" figures; a torch.compile/dynamo constraint violation naming the dimension it
 * specialised; max_model_len above the KV capacity with the engine's own suggestion; a host path
 * handed to a container ("Repo id must be in the form ..."); an engine that died while the API
 * server exited 0; a flag the CLI refused; and unknown.
 *
 * What it does not do: follow a log as it grows (deploy/ does), or decide what to do next.
 */
#include <slipway/engine_vllm.h>

#include "vllm_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Boot order of the phases vLLM and SGLang go through (engine.h's enum is not in this order). */
static int rank(enum sw_boot_phase p)
{
    switch (p) {
    case SW_PHASE_ARGS:
        return 1;
    case SW_PHASE_LOAD:
        return 2;
    case SW_PHASE_PROFILE:
        return 3;
    case SW_PHASE_KV_ALLOC:
        return 4;
    case SW_PHASE_GRAPH_CAPTURE:
        return 5;
    case SW_PHASE_RUNTIME:
        return 6;
    default:
        return 0;
    }
}

static void advance(enum sw_boot_phase *cur, enum sw_boot_phase to)
{
    if (rank(to) > rank(*cur))
        *cur = to;
}

/* strtod on a bounded copy: the text is not NUL-terminated where a line ends. */
static bool num_at(const char *p, const char *end, double *out, const char **after)
{
    char buf[48];
    size_t n = 0;
    while (p < end && n + 1 < sizeof(buf) &&
           (isdigit((unsigned char)*p) || *p == '.' || *p == ',' || (n == 0 && *p == '-'))) {
        if (*p != ',')
            buf[n++] = *p;
        p++;
    }
    if (n == 0 || (n == 1 && (buf[0] == '-' || buf[0] == '.')))
        return false;
    buf[n] = 0;
    char *e;
    *out = strtod(buf, &e);
    if (after)
        *after = p;
    /* Callers cast to int64: a figure no log prints (or NaN) is no figure. */
    return *e == 0 && *out == *out && *out < 9e18 && *out > -9e18;
}

bool sw__bootlog_size(const char *p, const char *end, uint64_t *out)
{
    double v;
    const char *a;
    if (!num_at(p, end, &v, &a) || v < 0)
        return false;
    while (a < end && *a == ' ')
        a++;
    char u[8] = {0};
    for (size_t i = 0; i < 5 && a + i < end; i++)
        u[i] = a[i];
    double m = 1;
    if (!strncmp(u, "GiB", 3) || !strncmp(u, "GB", 2))
        m = 1073741824.0;
    else if (!strncmp(u, "MiB", 3) || !strncmp(u, "MB", 2))
        m = 1048576.0;
    else if (!strncmp(u, "KiB", 3) || !strncmp(u, "KB", 2) || !strncmp(u, "kB", 2))
        m = 1024.0;
    else if (!strncmp(u, "bytes", 5) || u[0] == 'B')
        m = 1;
    else
        return false;
    double r = v * m;
    if (r > 1e18)
        return false;
    *out = (uint64_t)(r + 0.5);
    return true;
}

/* Find needle inside [p, end). */
static const char *find(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    if ((size_t)(end - p) < n)
        return NULL;
    for (const char *q = p; q + n <= end; q++)
        if (*q == *needle && !memcmp(q, needle, n))
            return q;
    return NULL;
}

const char *sw__bootlog_find(const char *p, const char *end, const char *needle)
{
    return find(p, end, needle);
}

/* A figure in GiB that is a byte count int64_t can hold (a hostile log prints 1e14 GB). */
static bool gib_fits(double v)
{
    return v >= 0 && v < (double)INT64_MAX / (double)SW_GIB;
}

/* The first of a NULL-terminated list of needles found in [p, end), or NULL. */
static const char *find_any(const char *p, const char *end, const char *const *needles)
{
    for (; *needles; needles++) {
        const char *q = find(p, end, *needles);
        if (q)
            return q;
    }
    return NULL;
}

/* Which failure a line states, in the order they are tried; *q: where its mark starts. */
enum line_failure { LF_NONE, LF_OOM, LF_CONSTRAINT, LF_KV_TOO_SMALL, LF_BAD_PATH, LF_BAD_FLAG };

static enum line_failure line_failure(const char *p, const char *le, const char **q)
{
    static const char *const oom[] = {"out of memory", "OutOfMemoryError", "Tried to allocate",
                                      NULL};
    static const char *const bad_path[] = {
        "Repo id must be in the form", "does not appear to have a file named config.json",
        "is not a valid model identifier", "Invalid repository ID or local directory", NULL};
    static const char *const bad_flag[] = {"error: unrecognized arguments", "error: argument ",
                                           "error: the following arguments are required",
                                           "error: invalid choice", NULL};
    *q = find_any(p, le, oom);
    if (*q)
        return LF_OOM;
    *q = find(p, le, "Constraints violated");
    if (*q)
        return LF_CONSTRAINT;
    *q = find(p, le, "max seq len (");
    if (*q && (find(p, le, "larger than") || find(p, le, "KV cache is needed")))
        return LF_KV_TOO_SMALL;
    *q = find_any(p, le, bad_path);
    if (*q)
        return LF_BAD_PATH;
    *q = find_any(p, le, bad_flag);
    if (*q)
        return LF_BAD_FLAG;
    *q = NULL;
    return LF_NONE;
}

static void copy_msg(char *dst, size_t n, const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    size_t l = (size_t)(end - p);
    if (l >= n)
        l = n - 1;
    memcpy(dst, p, l);
    dst[l] = 0;
    for (size_t i = 0; i < l; i++)
        if ((unsigned char)dst[i] < 0x20)
            dst[i] = ' ';
}

static void set_fail(struct sw_vllm_bootlog *o, enum sw_boot_class c, enum sw_boot_phase ph,
                     const char *kind, const char *p, const char *end, int line)
{
    struct sw_boot_failure *f = &o->st.failure;
    f->cls = c;
    f->phase = ph;
    f->payload_kind = SW_PAYLOAD_NONE;
    snprintf(o->kind, sizeof(o->kind), "%s", kind);
    copy_msg(f->message, sizeof(f->message), p, end);
    f->line = line;
    o->st.failed = true;
}

/* Priority of a class when several appear: the root cause wins over its consequences. */
static int prio(enum sw_boot_class c)
{
    switch (c) {
    case SW_BOOT_BAD_FLAG:
        return 7;
    case SW_BOOT_BAD_PATH:
        return 6;
    case SW_BOOT_COMPILE_CONSTRAINT:
        return 5;
    case SW_BOOT_KV_TOO_SMALL:
        return 5;
    case SW_BOOT_OOM:
        return 4;
    case SW_BOOT_ENGINE_DEAD_EXIT0:
        return 2;
    case SW_BOOT_UNKNOWN:
        return 1;
    default:
        return 0;
    }
}

void sw__bootlog_classify(const char *text, size_t len, struct sw_vllm_bootlog *o)
{
    const char *p = text, *end = text + len;
    int line = 0;
    enum sw_boot_phase phase = SW_PHASE_LOAD;
    bool served = false, exit0 = false, dead = false;
    int dead_line = 0, err_line = 0;
    const char *dead_p = NULL, *dead_e = NULL, *err_p = NULL, *err_e = NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        /* Phase markers, in boot order. */
        if (find(p, le, "profile_run") || find(p, le, "determine_available_memory") ||
            find(p, le, "_dummy_run") || find(p, le, "Memory profiling"))
            advance(&phase, SW_PHASE_PROFILE);
        if (find(p, le, "Available KV cache memory") || find(p, le, "GPU KV cache size") ||
            find(p, le, "initialize_kv_cache") || find(p, le, "_allocate_kv_cache") ||
            find(p, le, "init_kv_cache") || find(p, le, "KV Cache is allocated") ||
            find(p, le, "dying at KV allocation"))
            advance(&phase, SW_PHASE_KV_ALLOC);
        if (find(p, le, "Capturing CUDA graph") || find(p, le, "capture_model") ||
            find(p, le, "graph capture") || find(p, le, "Capturing cuda graph") ||
            find(p, le, "_capture_cudagraphs") || find(p, le, "CUDA graph capture") ||
            find(p, le, "Capture cuda graph"))
            advance(&phase, SW_PHASE_GRAPH_CAPTURE);
        if (find(p, le, "Application startup complete") ||
            find(p, le, "The server is fired up and ready") ||
            find(p, le, "Avg prompt throughput") || find(p, le, "POST /v1/"))
            served = true, advance(&phase, SW_PHASE_RUNTIME);
        enum sw_boot_class c = SW_BOOT_NONE;
        const char *q;
        enum line_failure lf = line_failure(p, le, &q);
        if (lf == LF_OOM) {
            c = SW_BOOT_OOM;
            if (prio(c) >= prio(o->st.failure.cls)) {
                bool first = o->st.failure.cls != SW_BOOT_OOM;
                if (first || find(p, le, "Tried to allocate"))
                    set_fail(o, c, phase, find(p, le, "HIP") ? "hip_oom" : "torch_oom", p, le,
                             line);
                const char *t = find(p, le, "Tried to allocate ");
                if (t)
                    sw__bootlog_size(t + 18, le, &o->tried_bytes);
                const char *fr = find(p, le, "of which ");
                if (fr)
                    sw__bootlog_size(fr + 9, le, &o->free_bytes);
                else {
                    /* "... 0 bytes free" / "with 9.46 GiB free" */
                    const char *fw = find(p, le, " free");
                    if (fw) {
                        const char *s = fw;
                        int sp = 0;
                        while (s > p && sp < 2) {
                            s--;
                            if (*s == ' ')
                                sp++;
                        }
                        sw__bootlog_size(s + 1, le, &o->free_bytes);
                    }
                }
            }
        } else if (lf == LF_CONSTRAINT) {
            c = SW_BOOT_COMPILE_CONSTRAINT;
            if (prio(c) >= prio(o->st.failure.cls)) {
                set_fail(o, c, phase, "dynamo", q, le, line);
                /* The message is often wrapped over lines: look a little further. */
                const char *w = (size_t)(end - q) > 600 ? q + 600 : end;
                const char *a = find(q, w, "(");
                const char *b = a ? find(a, w, ")!") : NULL;
                if (a && b) {
                    size_t l = (size_t)(b - a - 1);
                    if (memchr(a, '\n', l))
                        l = 0;
                    if (l >= sizeof(o->dimension))
                        l = sizeof(o->dimension) - 1;
                    memcpy(o->dimension, a + 1, l);
                    o->dimension[l] = 0;
                }
                const char *k = find(q, w, "constant (");
                double cv;
                if (k && num_at(k + 10, w, &cv, NULL))
                    o->constant = (int64_t)cv;
            }
        } else if (lf == LF_KV_TOO_SMALL) {
            c = SW_BOOT_KV_TOO_SMALL;
            if (prio(c) >= prio(o->st.failure.cls)) {
                set_fail(o, c, phase, "value_error", p, le, line);
                double v;
                if (num_at(q + 13, le, &v, NULL))
                    o->max_model_len = (int64_t)v;
                const char *s = find(p, le, "stored in KV cache (");
                if (s && num_at(s + 20, le, &v, NULL))
                    o->suggested_max_len = (int64_t)v;
                s = find(p, le, "maximum model length is ");
                if (s && num_at(s + 24, le, &v, NULL))
                    o->suggested_max_len = (int64_t)v;
                s = find(p, le, "), (");
                if (s && num_at(s + 4, le, &v, NULL))
                    o->needed_gib = v;
                s = find(p, le, "KV cache memory (");
                if (s && num_at(s + 17, le, &v, NULL))
                    o->available_gib = v;
            }
        } else if (lf == LF_BAD_PATH) {
            c = SW_BOOT_BAD_PATH;
            if (prio(c) >= prio(o->st.failure.cls))
                set_fail(o, c, SW_PHASE_LOAD, "hf_repo_id", p, le, line);
        } else if (lf == LF_BAD_FLAG) {
            c = SW_BOOT_BAD_FLAG;
            if (prio(c) >= prio(o->st.failure.cls))
                set_fail(o, c, SW_PHASE_ARGS, "argparse", q + 7, le, line);
        } else if (find(p, le, "EngineDeadError") || find(p, le, "died unexpectedly") ||
                   find(p, le, "EngineCore encountered a fatal error") ||
                   find(p, le, "Engine core initialization failed") ||
                   find(p, le, "EngineCore failed to start")) {
            if (!dead) {
                dead = true;
                dead_line = line;
                dead_p = p;
                dead_e = le;
            }
        } else if (find(p, le, "exited with code 0") || find(p, le, "code=exited, status=0") ||
                   find(p, le, "Deactivated successfully") ||
                   find(p, le, "Shutting down FastAPI HTTP server")) {
            exit0 = true;
        } else if (!err_p && (find(p, le, "Traceback (most recent call last)") ||
                              find(p, le, "RuntimeError:") || find(p, le, "ValueError:"))) {
            err_line = line;
            err_p = p;
            err_e = le;
        }
        p = nl ? nl + 1 : end;
    }
    o->st.booted = served;
    o->st.phase = phase;
    o->st.n_lines = line;
    if (o->st.failure.cls == SW_BOOT_NONE && dead && exit0)
        set_fail(o, SW_BOOT_ENGINE_DEAD_EXIT0, phase, "engine_dead", dead_p, dead_e, dead_line);
    else if (o->st.failure.cls == SW_BOOT_NONE && dead)
        set_fail(o, SW_BOOT_UNKNOWN, phase, "engine_dead", dead_p, dead_e, dead_line);
    else if (o->st.failure.cls == SW_BOOT_NONE && err_p)
        set_fail(o, SW_BOOT_UNKNOWN, phase, "exception", err_p, err_e, err_line);
}

void sw__bootlog_read(const char *text, size_t len, const char *engine, struct sw_vllm_bootlog *o,
                      void (*line)(struct sw_vllm_bootlog *o, const char *p, const char *le))
{
    memset(o, 0, sizeof(*o));
    snprintf(o->engine, sizeof(o->engine), "%s", engine);
    o->mamba_padding_pct = -1;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        line(o, p, nl ? nl : end);
        p = nl ? nl + 1 : end;
    }
    sw__bootlog_classify(text, len, o);
}

/* One line of a vLLM boot log, [p, le): the figures it prints. */
static void vllm_line(struct sw_vllm_bootlog *o, const char *p, const char *le)
{
    const char *q;
    double v;
    q = find(p, le, "GPU KV cache size: ");
    if (q && num_at(q + 19, le, &v, NULL)) {
        o->kv_cache_tokens = (int64_t)v;
        o->has_tokens = true;
    }
    q = find(p, le, "Maximum concurrency for ");
    if (q) {
        const char *a;
        if (num_at(q + 24, le, &v, &a)) {
            o->concurrency_len = (int64_t)v;
            const char *c = find(a, le, "request: ");
            if (c && num_at(c + 9, le, &v, NULL)) {
                o->max_concurrency = v;
                o->has_concurrency = true;
            }
        }
    }
    q = find(p, le, "Maximum concurrency for ") ? NULL : find(p, le, "Maximum concurrency");
    if (q) {
        /* An elided line ("... Maximum concurrency ... 41.14x"): the last number before x. */
        for (const char *x = le - 1; x > q; x--) {
            if (*x == 'x' && x > q && isdigit((unsigned char)x[-1])) {
                const char *b = x - 1;
                while (b > q && (isdigit((unsigned char)b[-1]) || b[-1] == '.'))
                    b--;
                if (num_at(b, x, &v, NULL)) {
                    o->max_concurrency = v;
                    o->has_concurrency = true;
                }
                break;
            }
        }
    }
    q = find(p, le, "Available KV cache memory: ");
    if (q && num_at(q + 27, le, &v, NULL) && gib_fits(v)) {
        o->available_kv_gib = v;
        o->has_available = true;
    }
    q = find(p, le, "kv_cache_size=");
    if (q && num_at(q + 14, le, &v, NULL) && gib_fits(v) && !o->has_available) {
        o->available_kv_gib = v;
        o->has_available = true;
    }
    q = find(p, le, "GPU blocks: ");
    if (q && num_at(q + 12, le, &v, NULL)) {
        o->num_gpu_blocks = (int64_t)v;
        o->has_blocks = true;
    }
    q = find(p, le, "Setting attention block size to ");
    if (q && num_at(q + 32, le, &v, NULL)) {
        o->block_size = (int64_t)v;
        o->has_block_size = true;
    }
    q = find(p, le, "Padding mamba page size by ");
    if (q && num_at(q + 27, le, &v, NULL))
        o->mamba_padding_pct = v;
    q = find(p, le, "Add ");
    if (q && find(q, le, "padding layers") && num_at(q + 4, le, &v, NULL))
        o->padding_layers = (int)v;
    q = find(p, le, "Model loading took ");
    if (q && num_at(q + 19, le, &v, NULL)) {
        o->weights_gib = v;
    } else {
        q = find(p, le, "Loading model weights took ");
        if (q && num_at(q + 27, le, &v, NULL))
            o->weights_gib = v;
    }
    q = find(p, le, "vLLM API server version ");
    if (!q)
        q = find(p, le, "Initializing a V1 LLM engine (v");
    if (q) {
        const char *s = find(q, le, "version ");
        s = s ? s + 8 : q + 31;
        size_t l = 0;
        while (s + l < le && !isspace((unsigned char)s[l]) && s[l] != ')' &&
               l + 1 < sizeof(o->engine_version))
            l++;
        memcpy(o->engine_version, s, l);
        o->engine_version[l] = 0;
        snprintf(o->st.build, sizeof(o->st.build), "%s", o->engine_version);
    }
}

int sw_vllm_bootlog_parse(const char *text, size_t len, struct sw_vllm_bootlog *o, struct sw_err *e)
{
    sw__bootlog_read(text, len, "vllm", o, vllm_line);
    (void)e;
    return 0;
}

json_t *sw_vllm_bootlog_json(const struct sw_vllm_bootlog *r)
{
    json_t *root = json_object();
    json_t *rep = json_object();
    json_t *prec = json_object();
    if (!root || !rep || !prec) {
        json_decref(root);
        json_decref(rep);
        json_decref(prec);
        return NULL;
    }
    sw_json_set_str(root, "engine", r->engine);
    sw_json_set_bool(root, "booted", r->st.booted);
    sw_json_set_str(root, "phase", sw_boot_phase_name(r->st.phase));
    sw_json_set_str(rep, "engine_version", r->engine_version[0] ? r->engine_version : NULL);
    if (r->has_tokens)
        sw_json_set_int(rep, "kv_cache_tokens", r->kv_cache_tokens);
    if (r->has_concurrency) {
        sw_json_set_real(rep, "max_concurrency", r->max_concurrency);
        sw_json_set_real(prec, "max_concurrency", 0.005);
        if (r->concurrency_len)
            sw_json_set_int(rep, "max_model_len", r->concurrency_len);
    }
    if (r->has_available) {
        /* printed to 0.01 GiB: any size within half a digit */
        sw_json_set_int(rep, "available_kv_bytes",
                        (int64_t)(r->available_kv_gib * (double)SW_GIB + 0.5));
        sw_json_set_int(prec, "available_kv_bytes", (int64_t)(0.005 * (double)SW_GIB) + 1);
    }
    if (r->has_blocks)
        sw_json_set_int(rep, "num_gpu_blocks", r->num_gpu_blocks);
    if (r->has_block_size)
        sw_json_set_int(rep, "block_size", r->block_size);
    if (r->mamba_padding_pct >= 0)
        sw_json_set_real(rep, "mamba_padding_pct", r->mamba_padding_pct);
    if (r->padding_layers)
        sw_json_set_int(rep, "padding_layers", r->padding_layers);
    if (r->weights_gib > 0)
        sw_json_set_real(rep, "weights_gib", r->weights_gib);
    if (r->has_sglang_kv) {
        sw_json_set_int(rep, "max_total_num_tokens", r->sglang_tokens);
        sw_json_set_real(rep, "k_size_gb", r->sglang_k_gb);
        sw_json_set_real(rep, "v_size_gb", r->sglang_v_gb);
    }
    if (r->max_running_requests)
        sw_json_set_int(rep, "max_running_requests", r->max_running_requests);
    if (r->pre_load_avail_gb > 0)
        sw_json_set_real(rep, "pre_load_avail_gb", r->pre_load_avail_gb);
    if (r->post_load_avail_gb > 0)
        sw_json_set_real(rep, "post_load_avail_gb", r->post_load_avail_gb);
    if (r->pool_end_avail_gb > 0)
        sw_json_set_real(rep, "pool_end_avail_gb", r->pool_end_avail_gb);
    if (r->mamba_slots)
        sw_json_set_int(rep, "mamba_pool_size", r->mamba_slots);
    sw_json_set_new(root, "report", rep);
    sw_json_set_new(root, "precision", prec);
    if (!r->st.failed) {
        sw_json_set_new(root, "failure", json_null());
        return root;
    }
    json_t *f = sw_boot_failure_to_json(&r->st.failure);
    if (!f) {
        json_decref(root);
        return NULL;
    }
    sw_json_set_str(f, "payload_kind", r->kind);
    if (r->st.failure.cls == SW_BOOT_OOM) {
        sw_json_set_int(f, "tried_bytes", (int64_t)r->tried_bytes);
        sw_json_set_int(f, "free_bytes", (int64_t)r->free_bytes);
    }
    if (r->dimension[0]) {
        sw_json_set_str(f, "dimension", r->dimension);
        sw_json_set_int(f, "constant", r->constant);
    }
    if (r->max_model_len)
        sw_json_set_int(f, "max_model_len", r->max_model_len);
    if (r->suggested_max_len)
        sw_json_set_int(f, "suggested_max_len", r->suggested_max_len);
    sw_json_set_new(root, "failure", f);
    return root;
}
