/*
 * engine: the adapter table and what every adapter shares (names of boot classes, phases and
 * payload kinds, the failure's JSON, argv/env ownership and quoting).
 *
 * It does not know how any engine works: the adapters live in src/engine/<engine>*.c and are
 * listed once in engine_internal.h. It does hold each engine's marks (the lines only that engine
 * prints), so that one engine's boot-log parser can say a log is another's.
 */
#include "engine_internal.h"

#include <string.h>
#include <strings.h>

static const struct sw_engine *const engines[] = {
#define SW_ENGINE_ROW(id) &sw__engine_##id,
    SW_ENGINES(SW_ENGINE_ROW)
#undef SW_ENGINE_ROW
};

const struct sw_engine *const *sw_engine_list(size_t *n)
{
    if (n)
        *n = SW_ARRAY_LEN(engines);
    return engines;
}

const struct sw_engine *sw_engine_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < SW_ARRAY_LEN(engines); i++) {
        const struct sw_engine *g = engines[i];
        if (!strcasecmp(g->name, name))
            return g;
        for (const char *const *a = g->aliases; a && *a; a++)
            if (!strcasecmp(*a, name))
                return g;
    }
    return NULL;
}

static const char *const class_names[SW_BOOT__NCLASS] = {
    [SW_BOOT_NONE] = "none",
    [SW_BOOT_OOM] = "oom",
    [SW_BOOT_BAD_PAYLOAD] = "bad_payload",
    [SW_BOOT_MISSING_PAYLOAD] = "missing_payload",
    [SW_BOOT_BAD_FLAG] = "bad_flag",
    [SW_BOOT_PORT_IN_USE] = "port_in_use",
    [SW_BOOT_UNSUPPORTED] = "unsupported_arch",
    [SW_BOOT_CRASH] = "crash",
    [SW_BOOT_TIMEOUT] = "timeout",
    [SW_BOOT_UNKNOWN] = "unknown",
    [SW_BOOT_COMPILE_CONSTRAINT] = "compile_constraint",
    [SW_BOOT_KV_TOO_SMALL] = "kv_too_small",
    [SW_BOOT_BAD_PATH] = "bad_path",
    [SW_BOOT_ENGINE_DEAD_EXIT0] = "engine_dead_exit0",
    [SW_BOOT_NOT_THIS_ENGINE] = "not_this_engine",
};

static const char *const phase_names[SW_PHASE__N] = {
    [SW_PHASE_NONE] = NULL,
    [SW_PHASE_ARGS] = "args",
    [SW_PHASE_BIND] = "bind",
    [SW_PHASE_LOAD] = "load",
    [SW_PHASE_CONTEXT] = "context",
    [SW_PHASE_KV_ALLOC] = "kv_alloc",
    [SW_PHASE_COMPUTE_ALLOC] = "compute_alloc",
    [SW_PHASE_WARMUP] = "warmup",
    [SW_PHASE_RUNTIME] = "runtime",
    [SW_PHASE_PROFILE] = "profile",
    [SW_PHASE_GRAPH_CAPTURE] = "graph_capture",
};

static const char *const payload_names[SW_PAYLOAD__N] = {
    [SW_PAYLOAD_NONE] = NULL,
    [SW_PAYLOAD_HTML] = "html",
    [SW_PAYLOAD_LFS_POINTER] = "lfs_pointer",
    [SW_PAYLOAD_JSON] = "json",
    [SW_PAYLOAD_TRUNCATED] = "truncated",
    [SW_PAYLOAD_BAD_MAGIC] = "bad_magic",
    [SW_PAYLOAD_CORRUPT] = "corrupt",
};

const char *sw_boot_class_name(enum sw_boot_class c)
{
    if ((int)c < 0 || c >= SW_BOOT__NCLASS)
        return "unknown";
    return class_names[c];
}

const char *sw_boot_phase_name(enum sw_boot_phase p)
{
    if ((int)p < 0 || p >= SW_PHASE__N)
        return NULL;
    return phase_names[p];
}

const char *sw_payload_kind_name(enum sw_payload_kind k)
{
    if ((int)k < 0 || k >= SW_PAYLOAD__N)
        return NULL;
    return payload_names[k];
}

int sw_boot_class_parse(const char *s, enum sw_boot_class *out)
{
    for (int i = 0; s && i < SW_BOOT__NCLASS; i++) {
        if (!strcmp(class_names[i], s)) {
            *out = (enum sw_boot_class)i;
            return 0;
        }
    }
    return SW_ENOENT;
}

json_t *sw_boot_failure_to_json(const struct sw_boot_failure *f)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    int rc = 0;
    rc |= sw_json_set_str(j, "class", sw_boot_class_name(f->cls));
    rc |= sw_json_set_str(j, "phase", sw_boot_phase_name(f->phase));
    rc |= sw_json_set_str(j, "payload_kind", sw_payload_kind_name(f->payload_kind));
    rc |= sw_json_set_str(j, "message", f->message);
    if (f->line > 0)
        rc |= sw_json_set_int(j, "line", f->line);
    else
        rc |= sw_json_set_new(j, "line", json_null());
    if (rc) {
        json_decref(j);
        return NULL;
    }
    return j;
}

json_t *sw_engine_boot_failure(const json_t *parsed, const struct sw_boot_status *st)
{
    json_t *failure = json_object_get(parsed, "failure");
    if (json_is_object(failure))
        return json_incref(failure);
    if (st->booted)
        return NULL;
    /* a log that ends without the engine serving and without an error is no success */
    return json_pack("{s:s,s:O,s:s}", "class", "unknown", "phase", json_object_get(parsed, "phase"),
                     "message", "the log ends before the engine served, without an error");
}

void sw_engine_cmd_free(struct sw_engine_cmd *c)
{
    if (!c)
        return;
    for (size_t i = 0; c->argv && i < c->argc; i++)
        sw_free(c->argv[i]);
    for (size_t i = 0; c->env && i < c->envc; i++)
        sw_free(c->env[i]);
    sw_free(c->argv);
    sw_free(c->env);
    memset(c, 0, sizeof(*c));
}

/* Single-quote a word for a POSIX shell when it needs it. */
static int quote_word(struct sw_buf *out, const char *w)
{
    bool plain = *w != '\0';
    for (const char *p = w; *p; p++) {
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%",
                    *p)) {
            plain = false;
            break;
        }
    }
    if (plain)
        return sw_buf_puts(out, w);
    int rc = sw_buf_putc(out, '\'');
    for (const char *p = w; !rc && *p; p++)
        rc = *p == '\'' ? sw_buf_puts(out, "'\\''") : sw_buf_putc(out, *p);
    return rc ? rc : sw_buf_putc(out, '\'');
}

int sw_engine_cmd_format(const struct sw_engine_cmd *c, struct sw_buf *out)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < c->argc; i++) {
        if (i)
            rc = sw_buf_putc(out, ' ');
        if (!rc)
            rc = quote_word(out, c->argv[i]);
    }
    return rc;
}

/* Length of a valid UTF-8 sequence at p (at most n bytes available), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t need;
    uint32_t cp;
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xe0) == 0xc0) {
        need = 2;
        cp = p[0] & 0x1f;
    } else if ((p[0] & 0xf0) == 0xe0) {
        need = 3;
        cp = p[0] & 0x0f;
    } else if ((p[0] & 0xf8) == 0xf0) {
        need = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (need > n)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    /* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
    if ((need == 2 && cp < 0x80) || (need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return need;
}

void sw__engine_copy_line(char *dst, size_t n, const char *p, size_t len)
{
    if (!n)
        return;
    while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
        len--;
    /* The text ends up in JSON and on terminals: control bytes and invalid UTF-8 become '?'. */
    size_t o = 0;
    const unsigned char *u = (const unsigned char *)p;
    for (size_t i = 0; i < len && o + 1 < n;) {
        size_t k = utf8_len(u + i, len - i);
        if (k == 0 || (k == 1 && ((u[i] < 0x20 && u[i] != '\t') || u[i] == 0x7f))) {
            dst[o++] = '?';
            i++;
            continue;
        }
        if (o + k >= n)
            break;
        memcpy(dst + o, u + i, k);
        o += k;
        i += k;
    }
    dst[o] = '\0';
}

/* Marks only one engine's log carries. llama.cpp: its function-name prefixes and server lines
 * (common/log.cpp prefixes each line with the function); vLLM and SGLang: their names, their
 * process tags and lines only they print. Facts a parser reads count too (the callers check). */
static const struct {
    const char *engine;
    const char *label;
    const char *marks[16];
} engine_marks[] = {
    {"llama.cpp",
     "llama.cpp",
     {"llama_", "ggml_", "gguf_init", "common_param", "common_init", "llama-server", "load_backend",
      "print_info:", "load_tensors:", "system_info:", "srv  ", "slot ", "main: ", "build: ", NULL}},
    {"vllm",
     "vLLM",
     {"vllm", "vLLM", "VLLM", "Vllm", "EngineCore", "APIServer", "GPU KV cache size",
      "# GPU blocks", "Maximum concurrency", "Loading model weights took", "Model loading took",
      "gpu_model_runner", "kv_cache_utils", NULL}},
    {"sglang",
     "SGLang",
     {"sglang", "SGLang", "SGLANG", "ServerArgs", "KV Cache is allocated", "Load weight begin",
      "Load weight end", "max_total_num_tokens", "fired up and ready", NULL}},
};

static int marks_of(const char *engine)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(engine_marks); i++)
        if (!strcmp(engine_marks[i].engine, engine))
            return (int)i;
    return -1;
}

static bool has_marks(const char *text, size_t len, int k)
{
    for (size_t j = 0; k >= 0 && engine_marks[k].marks[j]; j++) {
        const char *m = engine_marks[k].marks[j];
        if (memmem(text, len, m, strlen(m)))
            return true;
    }
    return false;
}

bool sw__bootlog_not_this_engine(const char *text, size_t len, const char *where,
                                 const char *engine, const struct sw_bootlog_hints *hints,
                                 struct sw_boot_status *st)
{
    int self = marks_of(engine);
    size_t i = 0;
    if (!text || self < 0 || (hints && hints->live))
        return false;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
        i++;
    if (i == len || has_marks(text, len, self))
        return false;
    const char *other = NULL;
    for (size_t k = 0; k < SW_ARRAY_LEN(engine_marks) && !other; k++)
        if ((int)k != self && has_marks(text, len, (int)k))
            other = engine_marks[k].engine;
    struct sw_boot_failure *f = &st->failure;
    memset(f, 0, sizeof(*f));
    f->cls = SW_BOOT_NOT_THIS_ENGINE;
    f->phase = st->phase;
    f->payload_kind = SW_PAYLOAD_NONE;
    if (other)
        snprintf(f->message, sizeof(f->message),
                 "%.200s is not a %s boot log: none of its %d lines is one %s prints; it looks "
                 "like %s's (--engine %s)",
                 where ? where : "the log", engine_marks[self].label, st->n_lines,
                 engine_marks[self].label, engine_marks[marks_of(other)].label, other);
    else
        snprintf(f->message, sizeof(f->message),
                 "%.200s is not a %s boot log: none of its %d lines is one %s prints",
                 where ? where : "the log", engine_marks[self].label, st->n_lines,
                 engine_marks[self].label);
    st->failed = true;
    st->booted = false;
    return true;
}
