/*
 * engine/llamacpp_bootlog: read what llama-server printed while it booted.
 *
 * Two jobs, one pass over the lines:
 *   1. the numbers: n_ctx/n_ctx_seq/n_seq_max/kv_unified (llama_context), every
 *      `llama_kv_cache: size = ...` line (SWA caches are announced by llama_kv_cache_iswa just
 *      before theirs), the `llama_memory_recurrent: size = ...` line, and the model, output and
 *      compute buffer lines (summed over devices). Values are kept as printed: MiB with two
 *      decimals, turned into bytes, with the rounding that the print allows kept beside them.
 *   2. the outcome: how far the boot got (a phase tracked from marker lines) and, when it failed,
 *      why, from the engine's own error lines. Rules are substrings of messages that the pinned
 *      llama.cpp prints (src/llama-model-loader.cpp, src/llama-kv-cache.cpp,
 *      src/llama-context.cpp, ggml/src/ggml.c, ggml-backend.cpp, common/arg.cpp,
 *      tools/server/server.cpp); every rule has a captured real log under
 *      tests/data/bootlogs/llamacpp/.
 *
 * Lines may carry any prefix (llama.cpp's own "0.00.012.025 I ", journald, docker): every match
 * is by substring. Older builds' spellings (llama_new_context_with_model, llm_load_tensors,
 * llama_kv_cache_unified) are read too, so the public boot logs in ../shared parse.
 *
 * What it deliberately does not do: predict anything (memory/llamacpp does), read the request
 * log after boot except to notice a crash, or trust the log to be text (a binary file parses as
 * "nothing recognised").
 */
#include "engine_internal.h"

#include <slipway/arch.h>
#include <slipway/gguf.h>

#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_KEEP 4096

/* ---------------------------------------------------------------------------------------------
 * A cursor over one NUL-terminated line.
 */
struct cur {
    const char *p;
};

static void skip_ws(struct cur *c)
{
    while (*c->p == ' ' || *c->p == '\t')
        c->p++;
}

static bool lit(struct cur *c, const char *s)
{
    skip_ws(c);
    size_t n = strlen(s);
    if (strncmp(c->p, s, n))
        return false;
    c->p += n;
    return true;
}

static bool read_i64(struct cur *c, int64_t *out)
{
    skip_ws(c);
    if (!isdigit((unsigned char)*c->p))
        return false;
    int64_t v = 0;
    while (isdigit((unsigned char)*c->p)) {
        int d = *c->p - '0';
        if (v > (INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        c->p++;
    }
    *out = v;
    return true;
}

/*
 * A printed MiB value ("4.00", "5049.71") -> bytes (value x 2^20, rounded half up) and the half
 * unit of its last printed digit in bytes (0.005 MiB = 5242.88 B for two decimals), rounded up.
 */
static bool read_mib(struct cur *c, int64_t *bytes, int64_t *half_unit)
{
    skip_ws(c);
    if (!isdigit((unsigned char)*c->p))
        return false;
    uint64_t m = 0;
    int dec = -1;
    for (;; c->p++) {
        if (*c->p == '.' && dec < 0) {
            dec = 0;
            continue;
        }
        if (!isdigit((unsigned char)*c->p))
            break;
        if (m > (1ull << 36) || dec >= 6)
            return false; /* past a petabyte or absurd precision: not a llama.cpp print */
        m = m * 10 + (uint64_t)(*c->p - '0');
        if (dec >= 0)
            dec++;
    }
    if (dec < 0)
        dec = 0;
    uint64_t p10 = 1;
    for (int i = 0; i < dec; i++)
        p10 *= 10;
    /* m < 2^41 and 2^20 * m < 2^61: no overflow */
    *bytes = (int64_t)(((m << 20) + p10 / 2) / p10);
    *half_unit = (int64_t)(((1ull << 20) + 2 * p10 - 1) / (2 * p10));
    return true;
}

/* A ggml type name in parentheses: "(q8_0)". */
static bool read_paren_word(struct cur *c, char *out, size_t n)
{
    if (!lit(c, "("))
        return false;
    size_t i = 0;
    while (*c->p && *c->p != ')' && i + 1 < n)
        out[i++] = *c->p++;
    out[i] = '\0';
    return *c->p == ')' ? (c->p++, i > 0) : false;
}

/* Float rounding of a size printed from a `float` (llama_kv_cache and llama_memory_recurrent
 * convert to float before printf): half an ulp of 2^-24 relative. */
static int64_t float_slack(int64_t bytes)
{
    return bytes > 0 ? (bytes >> 24) + 1 : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Parser state.
 */
struct cand {
    bool set;
    int line;
    enum sw_boot_phase phase;
    bool phase_explicit;
    enum sw_payload_kind kind;
    char msg[512];
};

struct st {
    struct sw_bootlog_report *r;
    struct sw_boot_status *s;
    int contexts;  /* "constructing llama_context" seen so far */
    bool swa_next; /* the next kv line belongs to the SWA cache */
    bool in_usage; /* inside llama-server's usage text after a bad flag */
    struct cand c[SW_BOOT__NCLASS];
    struct cand generic; /* the first error line of any kind */
};

/* Where the message starts: after llama.cpp's "0.00.012.025 I " and a server module tag. */
static const char *msg_start(const char *ln)
{
    const char *p = ln;
    const char *q = p;
    int dots = 0;
    while (isdigit((unsigned char)*q) || *q == '.') {
        dots += *q == '.';
        q++;
    }
    if (dots == 3 && q[0] == ' ' && strchr("IWEDTN", q[1]) && q[1] && q[2] == ' ')
        p = q + 3;
    /* "srv    load_model: ..." / "cmn  common_init_: ...": a short tag, spaces, then a word: */
    size_t k = 0;
    while (k < 5 && isalpha((unsigned char)p[k]))
        k++;
    if (k > 0 && k <= 4 && p[k] == ' ') {
        const char *w = p + k;
        while (*w == ' ')
            w++;
        const char *colon = strchr(w, ':');
        const char *sp = strchr(w, ' ');
        if (colon && (!sp || colon < sp))
            p = w;
    }
    return p;
}

static void cand_set(struct st *t, enum sw_boot_class cls, int line, const char *msg,
                     enum sw_boot_phase explicit_phase, enum sw_payload_kind kind)
{
    struct cand *c = &t->c[cls];
    if (!c->set) {
        c->set = true;
        c->line = line;
        c->phase = explicit_phase ? explicit_phase : t->s->phase;
        c->phase_explicit = explicit_phase != SW_PHASE_NONE;
        c->kind = kind;
        sw__engine_copy_line(c->msg, sizeof(c->msg), msg, strlen(msg));
        return;
    }
    /* A later line may name the phase outright ("failed to allocate buffer for kv cache"
     * after "ggml_aligned_malloc: insufficient memory"): keep the first words, take the phase. */
    if (explicit_phase && !c->phase_explicit) {
        c->phase = explicit_phase;
        c->phase_explicit = true;
    }
    if (kind && !c->kind)
        c->kind = kind;
}

static void advance(struct st *t, enum sw_boot_phase p)
{
    if (p > t->s->phase)
        t->s->phase = p;
}

static enum sw_payload_kind kind_from_magic(const char *m)
{
    if (m[0] == '<')
        return SW_PAYLOAD_HTML;
    if (!strncmp(m, "vers", 4))
        return SW_PAYLOAD_LFS_POINTER;
    if (m[0] == '{' || m[0] == '[')
        return SW_PAYLOAD_JSON;
    return SW_PAYLOAD_BAD_MAGIC;
}

/* ---------------------------------------------------------------------------------------------
 * The numbers.
 */
static void parse_kv_line(struct st *t, const char *at, int line)
{
    struct sw_bootlog_report *r = t->r;
    if (r->n_kv >= SW_BOOTLOG_MAX_KV)
        return;
    struct sw_bootlog_kv kv;
    memset(&kv, 0, sizeof(kv));
    kv.cells = kv.layers = kv.seqs = kv.streams = -1;
    kv.k_bytes = kv.v_bytes = -1;
    int64_t total, half, kb, kh, vb, vh;
    struct cur c = {at};
    if (!lit(&c, "size =") || !read_mib(&c, &total, &half) || !lit(&c, "MiB"))
        return;
    if (lit(&c, "(")) {
        if (!read_i64(&c, &kv.cells) || !lit(&c, "cells,") || !read_i64(&c, &kv.layers) ||
            !lit(&c, "layers,") || !read_i64(&c, &kv.seqs))
            return;
        if (lit(&c, "/") && !read_i64(&c, &kv.streams))
            return;
        if (!lit(&c, "seqs)"))
            return;
        if (!lit(&c, ","))
            return;
    }
    if (!lit(&c, "K") || !read_paren_word(&c, kv.k_type, sizeof(kv.k_type)) || !lit(&c, ":") ||
        !read_mib(&c, &kb, &kh) || !lit(&c, "MiB,") || !lit(&c, "V") ||
        !read_paren_word(&c, kv.v_type, sizeof(kv.v_type)) || !lit(&c, ":") ||
        !read_mib(&c, &vb, &vh))
        return;
    kv.k_bytes = kb;
    kv.v_bytes = vb;
    kv.k_prec = kh + float_slack(kb);
    kv.v_prec = vh + float_slack(vb);
    kv.swa = t->swa_next;
    kv.line = line;
    r->kv[r->n_kv++] = kv;
    t->swa_next = false;
}

static void parse_recurrent_line(struct st *t, const char *at, int line)
{
    struct sw_bootlog_report *r = t->r;
    if (r->has_recurrent)
        return;
    int64_t total, half, seqs, rs_seq, b, h;
    char ty[16];
    struct cur c = {at};
    if (!lit(&c, "size =") || !read_mib(&c, &total, &half) || !lit(&c, "MiB") || !lit(&c, "(") ||
        !read_i64(&c, &r->recurrent.cells) || !lit(&c, "cells,") ||
        !read_i64(&c, &r->recurrent.layers) || !lit(&c, "layers,") || !read_i64(&c, &seqs) ||
        !lit(&c, "seqs"))
        return;
    if (read_i64(&c, &rs_seq) && !lit(&c, "rs_seq"))
        return;
    r->has_recurrent = true;
    r->recurrent.line = line;
    r->recurrent.r_bytes = r->recurrent.s_bytes = -1;
    r->recurrent.r_prec = r->recurrent.s_prec = 0;
    if (!lit(&c, "),"))
        return; /* an older build printed R and S on their own; leave them unknown */
    if (lit(&c, "R") && read_paren_word(&c, ty, sizeof(ty)) && lit(&c, ":") &&
        read_mib(&c, &b, &h)) {
        r->recurrent.r_bytes = b;
        r->recurrent.r_prec = h + float_slack(b);
    }
    if (lit(&c, "MiB,") && lit(&c, "S") && read_paren_word(&c, ty, sizeof(ty)) && lit(&c, ":") &&
        read_mib(&c, &b, &h)) {
        r->recurrent.s_bytes = b;
        r->recurrent.s_prec = h + float_slack(b);
    }
}

/* "... <what> buffer size = X MiB": add X to a summed field. */
static void add_buffer(const char *at, int64_t *field, unsigned *lines, int64_t *prec)
{
    struct cur c = {at};
    int64_t b, h;
    if (!lit(&c, "=") || !read_mib(&c, &b, &h))
        return;
    if (*field < 0)
        *field = 0;
    *field += b;
    *prec += h;
    (*lines)++;
}

static void parse_ctx_value(const char *ln, const char *key, int64_t *out)
{
    const char *k = strstr(ln, key);
    if (!k)
        return;
    struct cur c = {k + strlen(key)};
    int64_t v;
    if (lit(&c, "=") && read_i64(&c, &v))
        *out = v;
}

static void numbers(struct st *t, const char *ln, int line)
{
    struct sw_bootlog_report *r = t->r;
    const char *m;
    bool main_ctx = t->contexts <= 1;

    if (strstr(ln, "constructing llama_context")) {
        t->contexts++;
        return;
    }
    m = t->contexts == 0 ? strstr(ln, "model buffer size") : NULL;
    if (m) {
        add_buffer(m + strlen("model buffer size"), &r->model_bytes, &r->model_lines,
                   &r->model_prec);
        return;
    }
    if (!main_ctx)
        return;
    if (strstr(ln, "llama_context:") || strstr(ln, "llama_new_context_with_model:")) {
        if (r->n_ctx < 0)
            parse_ctx_value(ln, " n_ctx ", &r->n_ctx);
        if (r->n_ctx < 0)
            parse_ctx_value(ln, ": n_ctx", &r->n_ctx);
        parse_ctx_value(ln, " n_ctx_seq ", &r->n_ctx_seq);
        parse_ctx_value(ln, ": n_ctx_seq", &r->n_ctx_seq);
        parse_ctx_value(ln, " n_seq_max ", &r->n_seq_max);
        parse_ctx_value(ln, ": n_seq_max", &r->n_seq_max);
        m = strstr(ln, "kv_unified ");
        if (!m)
            m = strstr(ln, ": kv_unified");
        if (m) {
            const char *eq = strchr(m, '=');
            if (eq) {
                struct cur c = {eq + 1};
                if (lit(&c, "true"))
                    r->kv_unified = 1;
                else if (lit(&c, "false"))
                    r->kv_unified = 0;
            }
        }
    }
    m = strstr(ln, "output buffer size");
    if (m) {
        add_buffer(m + strlen("output buffer size"), &r->output_bytes, &r->output_lines,
                   &r->output_prec);
        return;
    }
    m = strstr(ln, "compute buffer size");
    if (m) {
        add_buffer(m + strlen("compute buffer size"), &r->compute_bytes, &r->compute_lines,
                   &r->compute_prec);
        return;
    }
    if (strstr(ln, "creating non-SWA KV cache") || strstr(ln, "creating     SWA KV cache") ||
        strstr(ln, "creating SWA KV cache")) {
        t->swa_next = strstr(ln, "non-SWA") == NULL;
        return;
    }
    m = strstr(ln, "llama_kv_cache: size");
    if (!m)
        m = strstr(ln, "llama_kv_cache_unified: size");
    if (m) {
        parse_kv_line(t, strchr(m, ':') + 1, line);
        return;
    }
    m = strstr(ln, "KV self size");
    if (m) {
        /* builds before the per-cache line: one cache, no cell count */
        struct cur c = {m + strlen("KV self size")};
        struct sw_bootlog_kv kv;
        int64_t b, h, kb, kh, vb, vh;
        memset(&kv, 0, sizeof(kv));
        kv.cells = r->n_ctx;
        kv.layers = kv.seqs = kv.streams = -1;
        if (r->n_kv < SW_BOOTLOG_MAX_KV && lit(&c, "=") && read_mib(&c, &b, &h) &&
            lit(&c, "MiB,") && lit(&c, "K") && read_paren_word(&c, kv.k_type, sizeof(kv.k_type)) &&
            lit(&c, ":") && read_mib(&c, &kb, &kh) && lit(&c, "MiB,") && lit(&c, "V") &&
            read_paren_word(&c, kv.v_type, sizeof(kv.v_type)) && lit(&c, ":") &&
            read_mib(&c, &vb, &vh)) {
            kv.k_bytes = kb;
            kv.v_bytes = vb;
            kv.k_prec = kh;
            kv.v_prec = vh;
            kv.line = line;
            r->kv[r->n_kv++] = kv;
        }
        return;
    }
    m = strstr(ln, "llama_memory_recurrent: size");
    if (m) {
        parse_recurrent_line(t, strchr(m, ':') + 1, line);
        return;
    }
}

/* ---------------------------------------------------------------------------------------------
 * The outcome.
 */
static void phases(struct st *t, const char *ln)
{
    if (strstr(ln, "binding port") || strstr(ln, "HTTP server listening"))
        advance(t, SW_PHASE_BIND);
    if (strstr(ln, "load_model: loading model") || strstr(ln, "llama_model_loader:") ||
        strstr(ln, "load_tensors:") || strstr(ln, "gguf_init_from") ||
        strstr(ln, "llama_model_load"))
        advance(t, SW_PHASE_LOAD);
    if (strstr(ln, "constructing llama_context") || strstr(ln, "llama_context: n_ctx") ||
        strstr(ln, "llama_new_context_with_model: n_ctx"))
        advance(t, SW_PHASE_CONTEXT);
    /* The caches are allocated right after the output buffer (llama_context::llama_context). */
    if (strstr(ln, "output buffer size") || strstr(ln, "KV buffer size") ||
        strstr(ln, "llama_kv_cache") || strstr(ln, "llama_memory_recurrent") ||
        strstr(ln, "RS buffer size"))
        advance(t, SW_PHASE_KV_ALLOC);
    if (strstr(ln, "sched_reserve:") || strstr(ln, "graph_reserve") ||
        strstr(ln, "compute buffer size"))
        advance(t, SW_PHASE_COMPUTE_ALLOC);
    if (strstr(ln, "warming up the model"))
        advance(t, SW_PHASE_WARMUP);
    if (strstr(ln, "model loaded") || strstr(ln, "listening on http") ||
        strstr(ln, "server is listening on") || strstr(ln, "all slots are idle")) {
        advance(t, SW_PHASE_RUNTIME);
        t->s->booted = true;
    }
}

/* Does the line report an error? llama.cpp marks them " E " after its timestamp; older builds
 * and direct prints say "error" in the text. */
static bool is_error_line(const char *ln)
{
    const char *q = ln;
    while (isdigit((unsigned char)*q) || *q == '.')
        q++;
    if (q != ln && !strncmp(q, " E ", 3))
        return true;
    return !strncmp(ln, "error", 5) || strstr(ln, " error: ") || strstr(ln, "error loading");
}

static void classify(struct st *t, const char *ln, const char *msg, int line)
{
    const char *m;

    /* --- the command line (common/arg.cpp prints these before any log prefix exists) --- */
    if (!strncmp(msg, "error: invalid argument:", 24) ||
        !strncmp(msg, "error while handling argument", 29) ||
        !strncmp(msg, "error: unknown value for", 24) ||
        !strncmp(msg, "error: expected value for argument", 34) ||
        strstr(msg, "error: invalid parameter for")) {
        cand_set(t, SW_BOOT_BAD_FLAG, line, msg, SW_PHASE_ARGS, SW_PAYLOAD_NONE);
        t->in_usage = true;
        return;
    }
    if (t->in_usage)
        return;
    /* a combination llama_init_from_model refuses (src/llama.cpp / llama-context.cpp) */
    if (strstr(msg, "requires flash_attn") || strstr(msg, "requires Flash Attention")) {
        cand_set(t, SW_BOOT_BAD_FLAG, line, msg, SW_PHASE_CONTEXT, SW_PAYLOAD_NONE);
        return;
    } /* the usage text that follows names every flag; none of it is an error */

    /* --- the listening socket (tools/server/server.cpp: no errno is printed) --- */
    if (strstr(msg, "couldn't bind HTTP server socket") || strstr(msg, "Address already in use")) {
        cand_set(t, SW_BOOT_PORT_IN_USE, line, msg, SW_PHASE_BIND, SW_PAYLOAD_NONE);
        return;
    }

    /* --- the payload (ggml/src/gguf.cpp, src/llama-model-loader.cpp, src/llama-mmap.cpp) --- */
    if ((strstr(msg, "failed to open GGUF file") || strstr(msg, "failed to open ")) &&
        (strstr(msg, "No such file") || strstr(msg, "Permission denied") ||
         strstr(msg, "Not a directory"))) {
        cand_set(t, SW_BOOT_MISSING_PAYLOAD, line, msg, SW_PHASE_LOAD, SW_PAYLOAD_NONE);
        return;
    }
    m = strstr(msg, "invalid magic characters: '");
    if (m) {
        char magic[8] = {0};
        m += strlen("invalid magic characters: '");
        for (int i = 0; i < 4 && m[i]; i++)
            magic[i] = m[i];
        cand_set(t, SW_BOOT_BAD_PAYLOAD, line, msg, SW_PHASE_LOAD, kind_from_magic(magic));
        return;
    }
    if (strstr(msg, "failed to read magic") || strstr(msg, "failed to read key-value pairs") ||
        strstr(msg, "failed to read tensor info") || strstr(msg, "failed to read header") ||
        strstr(msg, "failed to read the header") || strstr(msg, "not within the file bounds") ||
        strstr(msg, "unexpectedly reached end of file") || strstr(msg, "file is truncated") ||
        strstr(msg, "failed to read tensor data")) {
        cand_set(t, SW_BOOT_BAD_PAYLOAD, line, msg, SW_PHASE_LOAD, SW_PAYLOAD_TRUNCATED);
        return;
    }
    if (strstr(msg, "unknown model architecture") ||
        strstr(msg, "unsupported model architecture") ||
        strstr(msg, "unknown pre-tokenizer type") || strstr(msg, "has invalid ggml type") ||
        strstr(msg, "invalid ggml type") || strstr(msg, "unknown vocab type") ||
        strstr(msg, "unknown tokenizer")) {
        cand_set(t, SW_BOOT_UNSUPPORTED, line, msg, SW_PHASE_LOAD, SW_PAYLOAD_NONE);
        return;
    }
    if (strstr(msg, "gguf_init_from") &&
        (strstr(msg, "failed to read") || strstr(msg, "invalid") || strstr(msg, "duplicate"))) {
        cand_set(t, SW_BOOT_BAD_PAYLOAD, line, msg, SW_PHASE_LOAD, SW_PAYLOAD_CORRUPT);
        return;
    }
    if (strstr(msg, "wrong number of tensors") || strstr(msg, "missing tensor") ||
        (strstr(msg, "tensor '") && strstr(msg, "has wrong shape"))) {
        cand_set(t, SW_BOOT_BAD_PAYLOAD, line, msg, SW_PHASE_LOAD, SW_PAYLOAD_CORRUPT);
        return;
    }

    /* The prompt cache shrinks itself when a copy cannot be allocated
     * (tools/server/server-task.cpp server_prompt_cache::alloc): the server goes on. */
    if (strstr(msg, "failed to allocate memory for prompt cache state") ||
        strstr(msg, "cache size limit reduced"))
        return;

    /* --- allocations (ggml.c ggml_aligned_malloc, ggml-backend.cpp, llama-model.cpp,
     *     llama-kv-cache.cpp, llama-memory-recurrent.cpp, llama-context.cpp) --- */
    if (strstr(msg, "failed to allocate buffer for kv cache") ||
        strstr(msg, "failed to allocate buffer for rs cache")) {
        cand_set(t, SW_BOOT_OOM, line, msg, SW_PHASE_KV_ALLOC, SW_PAYLOAD_NONE);
        return;
    }
    if (strstr(msg, "failed to allocate compute") ||
        strstr(msg, "compute buffer allocation failed")) {
        cand_set(t, SW_BOOT_OOM, line, msg, SW_PHASE_COMPUTE_ALLOC, SW_PAYLOAD_NONE);
        return;
    }
    if (strstr(msg, "error loading model: unable to allocate")) {
        cand_set(t, SW_BOOT_OOM, line, msg, SW_PHASE_LOAD, SW_PAYLOAD_NONE);
        return;
    }
    if (strstr(msg, "failed to allocate output buffer") ||
        strstr(msg, "failed to reserve initial output buffer")) {
        cand_set(t, SW_BOOT_OOM, line, msg, SW_PHASE_CONTEXT, SW_PAYLOAD_NONE);
        return;
    }
    if (strstr(msg, "insufficient memory") || strstr(msg, "out of memory") ||
        strstr(msg, "std::bad_alloc") || strstr(msg, "failed to allocate") ||
        strstr(msg, "unable to allocate") || strstr(msg, "ErrorOutOfDeviceMemory") ||
        strstr(msg, "cudaMalloc failed") || strstr(msg, "hipMalloc failed") ||
        strstr(msg, "Cannot allocate memory")) {
        cand_set(t, SW_BOOT_OOM, line, msg, t->s->booted ? SW_PHASE_RUNTIME : SW_PHASE_NONE,
                 SW_PAYLOAD_NONE);
        return;
    }

    /* --- crashes (ggml_abort prints "GGML_ASSERT(...) failed" and a backtrace) --- */
    if (strstr(msg, "GGML_ASSERT") || strstr(msg, "GGML_ABORT") ||
        strstr(msg, "terminate called") || strstr(msg, "Segmentation fault") ||
        strstr(msg, "Aborted (core dumped)") || strstr(msg, "SIGSEGV") ||
        strstr(msg, "fatal error") || strstr(msg, "Illegal instruction") ||
        strstr(msg, "Floating point exception")) {
        cand_set(t, SW_BOOT_CRASH, line, msg, t->s->booted ? SW_PHASE_RUNTIME : SW_PHASE_NONE,
                 SW_PAYLOAD_NONE);
        return;
    }

    if (!t->generic.set && !t->s->booted && is_error_line(ln)) {
        t->generic.set = true;
        t->generic.line = line;
        t->generic.phase = t->s->phase;
        sw__engine_copy_line(t->generic.msg, sizeof(t->generic.msg), msg, strlen(msg));
    }
}

/* Read the first bytes of the payload, if it is a readable file, to name what it really is. */
static enum sw_payload_kind sniff_payload(const char *path, char *desc, size_t n)
{
    unsigned char buf[512];
    desc[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return SW_PAYLOAD_NONE;
    ssize_t got = read(fd, buf, sizeof(buf));
    close(fd);
    if (got < 0)
        return SW_PAYLOAD_NONE;
    sw_sniff(buf, (size_t)got, desc, n);
    size_t i = 0;
    while (i < (size_t)got && isspace(buf[i]))
        i++;
    const char *p = (const char *)buf + i;
    size_t m = (size_t)got - i;
    if (m >= 4 && !memcmp(p, "GGUF", 4)) {
        /* right magic: is the rest there? (the header and the tensor data it promises) */
        struct sw_gguf *g = NULL;
        struct sw_err ge;
        int rc = sw_gguf_open(path, &g, &ge);
        sw_gguf_free(g);
        if (rc == SW_ETRUNC || rc == SW_EPARSE || rc == SW_ERANGE) {
            char text[1200];
            snprintf(desc, n, "%s", sw_err_format(&ge, text, sizeof(text)));
            return rc == SW_ETRUNC ? SW_PAYLOAD_TRUNCATED : SW_PAYLOAD_CORRUPT;
        }
        return SW_PAYLOAD_NONE;
    }
    if (m >= 23 && !strncasecmp(p, "version https://git-lfs", 23))
        return SW_PAYLOAD_LFS_POINTER;
    if (m && p[0] == '<')
        return SW_PAYLOAD_HTML;
    if (m && (p[0] == '{' || p[0] == '['))
        return SW_PAYLOAD_JSON;
    return got < 4 ? SW_PAYLOAD_TRUNCATED : SW_PAYLOAD_BAD_MAGIC;
}

/* A whole GGUF whose architecture the pinned llama.cpp does not know (model/arch says so from the
 * same table llama.cpp's llm_arch_from_string reads): what llama-server refuses with "unknown
 * model architecture", when its log lost that line. */
static bool unsupported_payload(const char *path, char *desc, size_t n)
{
    struct sw_gguf *g = NULL;
    struct sw_arch *a = NULL;
    struct sw_err e;
    bool unsupported = false;
    sw_err_clear(&e);
    if (sw_gguf_open(path, &g, NULL) == 0 && sw_arch_from_gguf(g, &a, &e) == SW_EUNSUPPORTED) {
        snprintf(desc, n, "%.400s", e.msg);
        unsupported = true;
    }
    sw_arch_free(a);
    sw_gguf_free(g);
    return unsupported;
}

static void decide(struct st *t, const struct sw_bootlog_hints *h)
{
    static const enum sw_boot_class order[] = {
        SW_BOOT_BAD_FLAG,    SW_BOOT_PORT_IN_USE, SW_BOOT_MISSING_PAYLOAD, SW_BOOT_BAD_PAYLOAD,
        SW_BOOT_UNSUPPORTED, SW_BOOT_OOM,         SW_BOOT_CRASH,
    };
    struct sw_boot_status *s = t->s;
    struct sw_boot_failure *f = &s->failure;
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < SW_ARRAY_LEN(order); i++) {
        struct cand *c = &t->c[order[i]];
        if (!c->set)
            continue;
        /* After a successful boot only what kills a server counts: an allocation failure or a
         * crash. A request-level error line does not fail the boot. */
        if (s->booted && order[i] != SW_BOOT_OOM && order[i] != SW_BOOT_CRASH)
            continue;
        f->cls = order[i];
        f->phase = c->phase;
        f->payload_kind = order[i] == SW_BOOT_BAD_PAYLOAD ? c->kind : SW_PAYLOAD_NONE;
        snprintf(f->message, sizeof(f->message), "%s", c->msg);
        f->line = c->line;
        break;
    }
    if (!f->cls && !s->booted && t->generic.set) {
        f->cls = SW_BOOT_UNKNOWN;
        f->phase = t->generic.phase;
        snprintf(f->message, sizeof(f->message), "%s", t->generic.msg);
        f->line = t->generic.line;
    }
    if (!f->cls && h && h->exited) {
        /* Nothing in the log, but the process is gone. */
        f->phase = s->booted ? SW_PHASE_RUNTIME : s->phase;
        if (h->exit_signal > 0) {
            f->cls = SW_BOOT_CRASH;
            snprintf(f->message, sizeof(f->message), "killed by signal %d (%s) during %s%s",
                     h->exit_signal, strsignal(h->exit_signal),
                     sw_boot_phase_name(f->phase) ? sw_boot_phase_name(f->phase) : "startup",
                     h->exit_signal == 9 ? "; the kernel OOM killer sends this too" : "");
        } else if (h->exit_code != 0 || !s->booted) {
            f->cls = s->booted ? SW_BOOT_CRASH : SW_BOOT_UNKNOWN;
            snprintf(f->message, sizeof(f->message), "exited with status %d during %s",
                     h->exit_code,
                     sw_boot_phase_name(f->phase) ? sw_boot_phase_name(f->phase) : "startup");
        }
    }
    if (f->cls == SW_BOOT_CRASH && !f->phase)
        f->phase = s->phase ? s->phase : SW_PHASE_ARGS;
    if (f->cls == SW_BOOT_OOM && !f->phase)
        f->phase = s->phase ? s->phase : SW_PHASE_LOAD;
    if (f->cls == SW_BOOT_OOM && f->phase == SW_PHASE_CONTEXT)
        f->phase = SW_PHASE_KV_ALLOC; /* between the output buffer and the caches */
    if (h && h->exited && h->payload && !s->booted && s->phase <= SW_PHASE_LOAD &&
        (f->cls == SW_BOOT_UNKNOWN || f->cls == SW_BOOT_NONE)) {
        /* The engine died while loading and its log lost the reason (its logger thread writes
         * asynchronously; an exit can drop the tail). The payload itself may still say why. */
        char desc[160];
        struct stat sb;
        if (stat(h->payload, &sb) != 0) {
            f->cls = SW_BOOT_MISSING_PAYLOAD;
            f->phase = SW_PHASE_LOAD;
            snprintf(f->message, sizeof(f->message),
                     "the engine exited while loading and %s does not exist", h->payload);
            f->line = 0;
        } else {
            enum sw_payload_kind k = sniff_payload(h->payload, desc, sizeof(desc));
            if (k) {
                f->cls = SW_BOOT_BAD_PAYLOAD;
                f->phase = SW_PHASE_LOAD;
                f->payload_kind = k;
                snprintf(f->message, sizeof(f->message),
                         "the engine exited while loading; %s is %s", h->payload, desc);
                f->line = 0;
                s->failed = true;
                return;
            }
            char why[512];
            if (unsupported_payload(h->payload, why, sizeof(why))) {
                f->cls = SW_BOOT_UNSUPPORTED;
                f->phase = SW_PHASE_LOAD;
                snprintf(f->message, sizeof(f->message), "the engine exited while loading; %.400s",
                         why);
                f->line = 0;
                s->failed = true;
                return;
            }
        }
    }
    if (f->cls == SW_BOOT_BAD_PAYLOAD && h && h->payload) {
        /* The log shows four bytes at most; the file itself says what it is. */
        char desc[160];
        enum sw_payload_kind k = sniff_payload(h->payload, desc, sizeof(desc));
        if (k && f->payload_kind != SW_PAYLOAD_TRUNCATED)
            f->payload_kind = k;
        if (desc[0]) {
            size_t n = strlen(f->message);
            snprintf(f->message + n, sizeof(f->message) - n, " [the file is %s]", desc);
        }
    }
    s->failed = f->cls != SW_BOOT_NONE;
}

/* "build 1 (80fb11a)" / "build: 4198 (fee824a1)" -> "1 (80fb11a)". */
static void find_build(const char *ln, char *out, size_t n)
{
    for (const char *p = strstr(ln, "build"); p; p = strstr(p + 1, "build")) {
        const char *q = p + 5;
        if (*q == ':')
            q++;
        if (*q != ' ' || !isdigit((unsigned char)q[1]))
            continue;
        q++;
        size_t len = strspn(q, "0123456789");
        if (q[len] == ' ' && q[len + 1] == '(') {
            const char *close = strchr(q + len, ')');
            if (close && close - q < 64)
                len = (size_t)(close - q) + 1;
        }
        sw__engine_copy_line(out, n, q, len);
        return;
    }
}

int sw_engine_llamacpp_bootlog(const char *text, size_t len, const struct sw_bootlog_hints *hints,
                               struct sw_bootlog_report *rep, struct sw_boot_status *st)
{
    struct sw_bootlog_report rtmp;
    struct sw_boot_status stmp;
    if (!text && len)
        return SW_EINVAL;
    struct st *t = sw_calloc(1, sizeof(*t));
    if (!t)
        return SW_ENOMEM;
    char *ln = sw_malloc(LINE_MAX_KEEP + 1);
    if (!ln) {
        sw_free(t);
        return SW_ENOMEM;
    }
    t->r = rep ? rep : &rtmp;
    t->s = st ? st : &stmp;
    memset(t->r, 0, sizeof(*t->r));
    memset(t->s, 0, sizeof(*t->s));
    t->r->n_ctx = t->r->n_ctx_seq = t->r->n_seq_max = -1;
    t->r->kv_unified = -1;
    t->r->model_bytes = t->r->output_bytes = t->r->compute_bytes = -1;
    t->s->phase = SW_PHASE_ARGS;

    size_t pos = 0;
    int line = 0;
    while (pos < len) {
        const char *p = text + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        pos += n + (nl ? 1 : 0);
        line++;
        size_t k = SW_MIN(n, (size_t)LINE_MAX_KEEP);
        for (size_t i = 0; i < k; i++)
            ln[i] = p[i] == '\0' ? ' ' : p[i];
        while (k && ln[k - 1] == '\r')
            k--;
        ln[k] = '\0';
        if (!t->s->build[0])
            find_build(ln, t->s->build, sizeof(t->s->build));
        phases(t, ln);
        numbers(t, ln, line);
        classify(t, ln, msg_start(ln), line);
    }
    t->s->n_lines = line;
    decide(t, hints);
    if (hints && hints->ready && !t->s->booted)
        t->s->booted = true;

    sw_free(ln);
    sw_free(t);
    return 0;
}
