/*
 * Shape canonicalization: turn a description of "everything that changes memory" into one
 * canonical JSON text and its SHA-256, so the same shape written two ways (aliases, units,
 * key order, "200,704" vs 200704, fp16 vs f16) hashes the same, and two shapes that differ in
 * anything memory-relevant do not. The rules are in docs/ledger.md ("Shape canonical form");
 * this file is their only implementation, and SW_LEDGER_CANON_VERSION names its revision.
 *
 * Also here: the canonical JSON writer used for every JSON document the ledger stores (sorted
 * keys, no whitespace, shortest round-trip reals), and the SHA-256 helper.
 *
 * What it deliberately does not do: it does not know engine defaults. A key left out and a key
 * set to the engine's default are different shapes (only tp/pp/dp == 1 are dropped, being "no
 * parallelism" for every engine); producers write the effective value of every key they know.
 */
#include "ledger_internal.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define CANON_MAX_DEPTH 16
#define WRITE_MAX_DEPTH 64

/* ---------------------------------------------------------------------------------------------
 * The canonical JSON writer.
 */

static int put_string(struct sw_buf *b, const char *s, size_t n, struct sw_err *e)
{
    static const char hex[] = "0123456789abcdef";
    if (!sw__utf8_valid(s, n))
        return sw_err_set(e, SW_EINVAL, "string is not valid UTF-8");
    int rc = sw_buf_putc(b, '"');
    size_t run = 0; /* bytes copied verbatim in one append */
    for (size_t i = 0; i < n && !rc; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            run++;
            continue;
        }
        rc = sw_buf_append(b, s + i - run, run);
        run = 0;
        if (rc)
            break;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            rc = sw_buf_append(b, esc, 2);
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            rc = sw_buf_append(b, esc, 6);
        }
    }
    if (!rc)
        rc = sw_buf_append(b, s + n - run, run);
    if (!rc)
        rc = sw_buf_putc(b, '"');
    return rc; /* a buffer failure: the caller names it */
}

/* The shortest %.Ng (N = 15..17) that reads back as the same double, with ".0" added when it
 * would otherwise read back as an integer. */
static int put_real(struct sw_buf *b, double v, struct sw_err *e)
{
    char tmp[48];
    if (!isfinite(v))
        return sw_err_set(e, SW_EINVAL, "JSON number is not finite");
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    if (!strpbrk(tmp, ".eE")) {
        size_t len = strlen(tmp);
        if (len + 3 <= sizeof(tmp))
            memcpy(tmp + len, ".0", 3);
    }
    return sw_buf_puts(b, tmp);
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int write_value(struct sw_buf *b, const json_t *j, int depth, struct sw_err *e)
{
    int rc = 0;
    char num[32];
    if (depth > WRITE_MAX_DEPTH)
        return sw_err_set(e, SW_ERANGE, "JSON nested deeper than %d levels", WRITE_MAX_DEPTH);
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        size_t n = json_object_size(j);
        const char **keys = NULL;
        if (n) {
            keys = sw_calloc(n, sizeof(*keys));
            if (!keys)
                return sw_err_set(e, SW_ENOMEM, "out of memory");
        }
        size_t k = 0;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)j, key, val)
        {
            if (k < n)
                keys[k++] = key;
        }
        if (k > 1)
            qsort(keys, k, sizeof(*keys), cmp_keys);
        rc = sw_buf_putc(b, '{');
        for (size_t i = 0; i < k && !rc; i++) {
            if (i)
                rc = sw_buf_putc(b, ',');
            if (!rc)
                rc = put_string(b, keys[i], strlen(keys[i]), e);
            if (!rc)
                rc = sw_buf_putc(b, ':');
            if (!rc)
                rc = write_value(b, json_object_get(j, keys[i]), depth + 1, e);
        }
        if (!rc)
            rc = sw_buf_putc(b, '}');
        sw_free(keys);
        break;
    }
    case JSON_ARRAY:
        rc = sw_buf_putc(b, '[');
        for (size_t i = 0; i < json_array_size(j) && !rc; i++) {
            if (i)
                rc = sw_buf_putc(b, ',');
            if (!rc)
                rc = write_value(b, json_array_get(j, i), depth + 1, e);
        }
        if (!rc)
            rc = sw_buf_putc(b, ']');
        break;
    case JSON_STRING:
        return put_string(b, json_string_value(j), json_string_length(j), e);
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" PRId64, (int64_t)json_integer_value(j));
        rc = sw_buf_puts(b, num);
        break;
    case JSON_REAL:
        return put_real(b, json_real_value(j), e);
    case JSON_TRUE:
        rc = sw_buf_puts(b, "true");
        break;
    case JSON_FALSE:
        rc = sw_buf_puts(b, "false");
        break;
    case JSON_NULL:
        rc = sw_buf_puts(b, "null");
        break;
    }
    return rc;
}

/* Content errors (UTF-8, depth, non-finite) set e where they are found; a bare buffer failure
 * (out of memory, past the ceiling) is named here. */
int sw__json_canon_write(struct sw_buf *b, const json_t *j, struct sw_err *e)
{
    if (!j)
        return sw_err_set(e, SW_EINVAL, "no JSON value");
    if (e)
        e->code = 0;
    int rc = write_value(b, j, 0, e);
    if (rc && e && !e->code) {
        if (rc == SW_ERANGE)
            sw_err_set(e, rc, "JSON text longer than %zu bytes", b->max);
        else
            sw_err_set(e, rc, "out of memory");
    }
    return rc;
}

int sw__json_canon_text(const json_t *j, size_t max, char **out, struct sw_err *e)
{
    struct sw_buf b;
    sw_buf_init(&b, max);
    *out = NULL;
    int rc = sw__json_canon_write(&b, j, e);
    if (!rc) {
        *out = sw_buf_steal(&b);
        if (!*out)
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    sw_buf_free(&b);
    return rc;
}

int sw__sha256_hex(const void *p, size_t n, char out[SW_LEDGER_HASH_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        return SW_EIO;
    for (unsigned i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[SW_LEDGER_HASH_LEN] = '\0';
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The shape keys.
 */

enum kind {
    K_ENGINE,     /* engine name, spellings folded */
    K_LABEL,      /* a non-empty string, trimmed */
    K_MODEL,      /* model identity */
    K_HEX,        /* a hex digest, lowercased */
    K_COUNT,      /* a whole number >= 1, units as sw_parse_count */
    K_BYTES,      /* a whole number of bytes >= 1, units as sw_parse_bytes */
    K_FRACTION,   /* a real in (0, 1] */
    K_DTYPE,      /* one KV dtype */
    K_DTYPE_BOTH, /* sets kv_dtype_k and kv_dtype_v */
    K_PAR,        /* a parallel degree: a count, dropped when 1 */
    K_LAYERS,     /* a count >= 0 or a word ("all", "auto") */
    K_FLAGS,      /* an object of other memory-relevant flags */
};

struct keydef {
    const char *name;
    enum kind kind;
    const char *alias[7];
};

static const struct keydef keydefs[] = {
    {"engine", K_ENGINE, {NULL}},
    {"engine_profile", K_LABEL, {"profile", NULL}},
    {"model", K_MODEL, {NULL}},
    {"arch_digest", K_HEX, {"arch", NULL}},
    {"ctx",
     K_COUNT,
     {"context", "n_ctx", "ctx_size", "max_model_len", "context_length", "c", NULL}},
    {"slots",
     K_COUNT,
     {"seqs", "max_num_seqs", "n_parallel", "parallel", "np", "max_running_requests", NULL}},
    {"kv_dtype", K_DTYPE_BOTH, {"kv_cache_dtype", NULL}},
    {"kv_dtype_k", K_DTYPE, {"cache_type_k", "ctk", NULL}},
    {"kv_dtype_v", K_DTYPE, {"cache_type_v", "ctv", NULL}},
    {"kv_bytes", K_BYTES, {"kv_cache_memory_bytes", "kv_cache_memory", NULL}},
    {"kv_tokens", K_COUNT, {"max_total_tokens", NULL}},
    {"mnbt", K_COUNT, {"max_num_batched_tokens", NULL}},
    {"batch", K_COUNT, {"n_batch", "batch_size", "b", NULL}},
    {"ubatch", K_COUNT, {"n_ubatch", "ubatch_size", "ub", NULL}},
    {"gpu_memory_utilization", K_FRACTION, {"util", NULL}},
    {"mem_fraction_static", K_FRACTION, {NULL}},
    {"gpu_layers", K_LAYERS, {"n_gpu_layers", "ngl", NULL}},
    {"tp", K_PAR, {"tensor_parallel_size", NULL}},
    {"pp", K_PAR, {"pipeline_parallel_size", NULL}},
    {"dp", K_PAR, {"data_parallel_size", NULL}},
    {"flags", K_FLAGS, {NULL}},
};

static const struct keydef *find_key(const char *name)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(keydefs); i++) {
        if (!strcmp(keydefs[i].name, name))
            return &keydefs[i];
        for (size_t a = 0; keydefs[i].alias[a]; a++)
            if (!strcmp(keydefs[i].alias[a], name))
                return &keydefs[i];
    }
    return NULL;
}

const char *sw__shape_key(const char *name)
{
    const struct keydef *k = find_key(name);
    return k ? k->name : NULL;
}

/* Lowercase copy of s (trimmed) into out; false when empty or too long. */
static bool lower_trim(const char *s, char *out, size_t n)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (!len || len >= n)
        return false;
    for (size_t i = 0; i < len; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[len] = '\0';
    return true;
}

static bool all_of(const char *s, const char *set)
{
    for (; *s; s++)
        if (!strchr(set, *s))
            return false;
    return true;
}

#define LOWER_ALNUM "abcdefghijklmnopqrstuvwxyz0123456789"

static const char *engine_alias(const char *low)
{
    static const char *const llama[] = {"llama.cpp", "llamacpp",     "llama-cpp",
                                        "llama_cpp", "llama-server", "llama_server"};
    for (size_t i = 0; i < SW_ARRAY_LEN(llama); i++)
        if (!strcmp(low, llama[i]))
            return "llama.cpp";
    return low;
}

static const char *dtype_alias(const char *low)
{
    static const char *const tab[][2] = {
        {"fp16", "f16"}, {"float16", "f16"}, {"half", "f16"},  {"bfloat16", "bf16"},
        {"fp32", "f32"}, {"float32", "f32"}, {"float", "f32"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(tab); i++)
        if (!strcmp(low, tab[i][0]))
            return tab[i][1];
    return low;
}

bool sw__shape_norm_word(const char *key, const char *s, char *out, size_t n)
{
    const struct keydef *k = find_key(key);
    char low[128];
    if (!k || !s || !lower_trim(s, low, sizeof(low)))
        return false;
    const char *w;
    if (k->kind == K_ENGINE)
        w = engine_alias(low);
    else if (k->kind == K_DTYPE || k->kind == K_DTYPE_BOTH)
        w = dtype_alias(low);
    else
        return false;
    int len = snprintf(out, n, "%s", w);
    return len >= 0 && (size_t)len < n;
}

int sw__flag_name(const char *in, char *out, size_t n)
{
    while (*in == '-')
        in++;
    size_t len = strlen(in);
    if (!len || len >= n)
        return SW_EINVAL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        out[i] = c == '-' ? '_' : (char)tolower(c);
    }
    out[len] = '\0';
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Value normalization.
 */

struct canon_ctx {
    struct sw_err *e;
    char path[256]; /* "shape.flags.spec" for messages */
};

static int bad(struct canon_ctx *c, const char *fmt, ...) SW_PRINTF(2, 3);
static int bad(struct canon_ctx *c, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sw_err_set(c->e, SW_EINVAL, "%s: %s", c->path, msg);
}

static int oom(struct canon_ctx *c)
{
    return sw_err_set(c->e, SW_ENOMEM, "%s: out of memory", c->path);
}

/* Render a JSON value briefly for an error message. */
static const char *brief(const json_t *v, char *out, size_t n)
{
    char *s = sw_json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(out, n, "%.60s%s", s ? s : "?", s && strlen(s) > 60 ? "..." : "");
    sw_free(s);
    return out;
}

/* A whole number from an integer, an integral real or a string with units. */
static int whole(struct canon_ctx *c, const json_t *v, bool bytes, uint64_t *out)
{
    char b[96];
    if (json_is_number(v)) {
        /* a real is exact up to 2^53; an integer may go to int64_t's end */
        int64_t max = json_is_integer(v) ? INT64_MAX : 9000000000000000ll, x;
        if (json_number_value(v) < 0)
            return bad(c, "%s must not be negative", brief(v, b, sizeof(b)));
        if (sw_json_int_range(v, 0, max, NULL, "n", &x, NULL))
            return bad(c, "%s is not a whole number%s", brief(v, b, sizeof(b)),
                       bytes ? " of bytes" : "");
        *out = (uint64_t)x;
        return 0;
    }
    if (json_is_string(v)) {
        struct sw_err pe;
        sw_err_clear(&pe);
        int rc = bytes ? sw_parse_bytes(json_string_value(v), out, &pe)
                       : sw_parse_count(json_string_value(v), out, &pe);
        if (rc)
            return bad(c, "%s", pe.msg);
        return 0;
    }
    return bad(c, "expected a number, got %s", brief(v, b, sizeof(b)));
}

static int set_new(struct canon_ctx *c, json_t *obj, const char *key, json_t *v)
{
    if (!v || json_object_set_new(obj, key, v))
        return oom(c);
    return 0;
}

static int norm_generic(struct canon_ctx *c, const json_t *v, int depth, json_t **out);

static int norm_object(struct canon_ctx *c, const json_t *v, int depth, json_t **out)
{
    json_t *o = json_object();
    if (!o)
        return oom(c);
    size_t plen = strlen(c->path);
    const char *key;
    json_t *val;
    int rc = 0;
    json_object_foreach((json_t *)v, key, val)
    {
        char name[128];
        if (sw__flag_name(key, name, sizeof(name))) {
            rc = bad(c, "flag name '%.60s' is empty or longer than %zu bytes", key,
                     sizeof(name) - 1);
            break;
        }
        if (!sw__utf8_valid(name, strlen(name))) {
            rc = bad(c, "flag name is not valid UTF-8");
            break;
        }
        if (json_is_null(val))
            continue;
        if (json_object_get(o, name)) {
            rc = bad(c, "'%s' is given twice (flag names fold '-' to '_' and case)", name);
            break;
        }
        snprintf(c->path + plen, sizeof(c->path) - plen, ".%s", name);
        json_t *nv = NULL;
        rc = norm_generic(c, val, depth + 1, &nv);
        c->path[plen] = '\0';
        if (rc)
            break;
        rc = set_new(c, o, name, nv);
        if (rc)
            break;
    }
    if (rc) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

/* Is s a plain decimal integer ("0", "-12", "4096"), small enough for int64? */
static bool plain_int(const char *s, int64_t *out)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (!isdigit((unsigned char)*p) || (p[0] == '0' && p[1]) || strlen(p) > 18)
        return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    *out = strtoll(s, NULL, 10);
    return true;
}

static int norm_generic(struct canon_ctx *c, const json_t *v, int depth, json_t **out)
{
    if (depth > CANON_MAX_DEPTH)
        return bad(c, "nested deeper than %d levels", CANON_MAX_DEPTH);
    json_t *r = NULL;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return norm_object(c, v, depth, out);
    case JSON_ARRAY: {
        r = json_array();
        if (!r)
            return oom(c);
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *el = NULL;
            int rc = norm_generic(c, json_array_get(v, i), depth + 1, &el);
            if (!rc && json_array_append_new(r, el))
                rc = oom(c);
            if (rc) {
                json_decref(r);
                return rc;
            }
        }
        break;
    }
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (strlen(s) != len)
            return bad(c, "string holds a NUL byte");
        while (len && isspace((unsigned char)*s)) {
            s++;
            len--;
        }
        while (len && isspace((unsigned char)s[len - 1]))
            len--;
        char small[24];
        int64_t iv;
        if (len < sizeof(small)) {
            memcpy(small, s, len);
            small[len] = '\0';
            if (!strcmp(small, "true") || !strcmp(small, "false")) {
                r = json_boolean(small[0] == 't');
                break;
            }
            if (plain_int(small, &iv)) {
                r = json_integer(iv);
                break;
            }
        }
        r = json_stringn(s, len);
        break;
    }
    case JSON_REAL: {
        double x = json_real_value(v);
        if (x == floor(x) && fabs(x) <= 9007199254740992.0)
            r = json_integer((json_int_t)x);
        else
            r = json_real(x);
        break;
    }
    case JSON_INTEGER:
    case JSON_TRUE:
    case JSON_FALSE:
    case JSON_NULL:
        r = json_copy((json_t *)v);
        break;
    }
    if (!r)
        return oom(c);
    *out = r;
    return 0;
}

static bool is_hex(const char *s)
{
    return *s && all_of(s, "0123456789abcdef");
}

static int norm_model(struct canon_ctx *c, const json_t *v, json_t **out)
{
    static const char *const allowed[] = {"sha256", "repo", "revision", "file",
                                          "name",   "size", "quant"};
    char b[96];
    json_t *src = NULL;
    json_t *m = NULL;
    int rc = 0;
    if (json_is_string(v)) {
        /* shorthands: "sha256:<hex>", "hf:<namespace/repo>[@<revision>]", else a name */
        const char *s = json_string_value(v);
        if (!strncmp(s, "sha256:", 7)) {
            src = json_pack("{s:s}", "sha256", s + 7);
        } else if (!strncmp(s, "hf:", 3)) {
            const char *at = strchr(s + 3, '@');
            if (at)
                src = json_pack("{s:s%,s:s}", "repo", s + 3, (size_t)(at - (s + 3)), "revision",
                                at + 1);
            else
                src = json_pack("{s:s}", "repo", s + 3);
        } else {
            src = json_pack("{s:s}", "name", s);
        }
        if (!src)
            return oom(c);
        v = src;
    }
    if (!json_is_object(v)) {
        rc = bad(c,
                 "expected an object {sha256 | repo, revision, file | name, size, quant} or "
                 "a string, got %s",
                 brief(v, b, sizeof(b)));
        goto out;
    }
    m = json_object();
    if (!m) {
        rc = oom(c);
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        bool ok = false;
        for (size_t i = 0; i < SW_ARRAY_LEN(allowed); i++)
            ok = ok || !strcmp(key, allowed[i]);
        if (!ok) {
            rc = bad(c,
                     "unknown model key '%.60s' (sha256, repo, revision, file, name, size, "
                     "quant)",
                     key);
            goto out;
        }
    }
    json_t *sha = json_object_get(v, "sha256");
    if (sha && !json_is_null(sha)) {
        char low[80];
        if (!json_is_string(sha) || !lower_trim(json_string_value(sha), low, sizeof(low)) ||
            strlen(low) != 64 || !is_hex(low)) {
            rc = bad(c, "model.sha256 must be 64 hex digits, got %s", brief(sha, b, sizeof(b)));
            goto out;
        }
        /* the bytes decide everything: names and sizes are dropped so that the same file
         * recorded under two names is one model */
        rc = set_new(c, m, "sha256", json_string(low));
        goto out;
    }
    static const char *const strkeys[] = {"repo", "revision", "file", "name", "quant"};
    for (size_t i = 0; i < SW_ARRAY_LEN(strkeys); i++) {
        json_t *x = json_object_get(v, strkeys[i]);
        if (!x || json_is_null(x))
            continue;
        if (!json_is_string(x)) {
            rc = bad(c, "model.%s must be a string, got %s", strkeys[i], brief(x, b, sizeof(b)));
            goto out;
        }
        const char *s = json_string_value(x);
        size_t len = json_string_length(x);
        while (len && isspace((unsigned char)*s)) {
            s++;
            len--;
        }
        while (len && isspace((unsigned char)s[len - 1]))
            len--;
        if (!len || len > 512 || memchr(s, '\0', len)) {
            rc = bad(c, "model.%s must be a non-empty string of at most 512 bytes", strkeys[i]);
            goto out;
        }
        json_t *nv;
        if (!strcmp(strkeys[i], "quant") || !strcmp(strkeys[i], "revision")) {
            /* quant names and hex revisions are case-insensitive */
            char low[520];
            memcpy(low, s, len);
            low[len] = '\0';
            bool hexrev = true;
            for (size_t k = 0; k < len; k++) {
                low[k] = (char)tolower((unsigned char)low[k]);
                hexrev = hexrev && isxdigit((unsigned char)low[k]);
            }
            nv = (!strcmp(strkeys[i], "quant") || hexrev) ? json_string(low) : json_stringn(s, len);
        } else {
            nv = json_stringn(s, len);
        }
        rc = set_new(c, m, strkeys[i], nv);
        if (rc)
            goto out;
    }
    json_t *size = json_object_get(v, "size");
    if (size && !json_is_null(size)) {
        uint64_t n = 0;
        rc = whole(c, size, true, &n);
        if (rc)
            goto out;
        if (n == 0 || n > INT64_MAX) {
            rc = bad(c, "model.size must be at least 1 byte");
            goto out;
        }
        rc = set_new(c, m, "size", json_integer((json_int_t)n));
        if (rc)
            goto out;
    }
    if (!json_object_get(m, "repo") && !json_object_get(m, "name"))
        rc = bad(c, "model needs sha256, repo or name");
out:
    json_decref(src);
    if (rc) {
        json_decref(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* A KV dtype already set (by kv_dtype or kv_dtype_k/_v) to something else: an error. */
static bool dtype_clash(struct canon_ctx *c, const json_t *dst, const char *key, const char *name)
{
    const char *have = json_string_value(json_object_get(dst, key));
    if (!have || !strcmp(have, name))
        return false;
    bad(c, "'%s' disagrees with %s '%s' given by another key", name, key, have);
    return true;
}

static int norm_key(struct canon_ctx *c, const struct keydef *k, const json_t *v, json_t *dst)
{
    char b[96];
    char low[128];
    uint64_t n = 0;
    int rc;
    switch (k->kind) {
    case K_ENGINE:
    case K_DTYPE:
    case K_DTYPE_BOTH: {
        if (!json_is_string(v) || !lower_trim(json_string_value(v), low, sizeof(low)))
            return bad(c, "expected a name, got %s", brief(v, b, sizeof(b)));
        const char *name = k->kind == K_ENGINE ? engine_alias(low) : dtype_alias(low);
        if (!all_of(name, k->kind == K_ENGINE ? LOWER_ALNUM "._-" : LOWER_ALNUM "_"))
            return bad(c, "'%s' is not a valid %s name", name,
                       k->kind == K_ENGINE ? "engine" : "dtype");
        if (k->kind == K_ENGINE)
            return set_new(c, dst, k->name, json_string(name));
        if (k->kind == K_DTYPE)
            return dtype_clash(c, dst, k->name, name) ? SW_EINVAL
                                                      : set_new(c, dst, k->name, json_string(name));
        /* kv_dtype sets both; it may sit beside kv_dtype_k/_v only when they agree */
        if (dtype_clash(c, dst, "kv_dtype_k", name) || dtype_clash(c, dst, "kv_dtype_v", name))
            return SW_EINVAL;
        rc = set_new(c, dst, "kv_dtype_k", json_string(name));
        return rc ? rc : set_new(c, dst, "kv_dtype_v", json_string(name));
    }
    case K_LABEL: {
        if (!json_is_string(v))
            return bad(c, "expected a string, got %s", brief(v, b, sizeof(b)));
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        while (len && isspace((unsigned char)*s)) {
            s++;
            len--;
        }
        while (len && isspace((unsigned char)s[len - 1]))
            len--;
        if (!len || len > 128 || memchr(s, '\0', len))
            return bad(c, "expected a non-empty name of at most 128 bytes");
        return set_new(c, dst, k->name, json_stringn(s, len));
    }
    case K_MODEL: {
        json_t *m = NULL;
        rc = norm_model(c, v, &m);
        return rc ? rc : set_new(c, dst, k->name, m);
    }
    case K_HEX: {
        if (!json_is_string(v) || !lower_trim(json_string_value(v), low, sizeof(low)))
            return bad(c, "expected a hex digest, got %s", brief(v, b, sizeof(b)));
        const char *h = !strncmp(low, "sha256:", 7) ? low + 7 : low;
        if (!is_hex(h) || strlen(h) < 8)
            return bad(c, "'%s' is not a hex digest (8 or more hex digits)", low);
        return set_new(c, dst, k->name, json_string(h));
    }
    case K_COUNT:
    case K_BYTES:
    case K_PAR:
        rc = whole(c, v, k->kind == K_BYTES, &n);
        if (rc)
            return rc;
        if (n < 1 || n > ((uint64_t)1 << 62))
            return bad(c, "%s is out of range (1 .. 2^62)", brief(v, b, sizeof(b)));
        if (k->kind == K_PAR && n == 1)
            return 0;
        return set_new(c, dst, k->name, json_integer((json_int_t)n));
    case K_LAYERS:
        if (json_is_string(v) && lower_trim(json_string_value(v), low, sizeof(low)) &&
            !isdigit((unsigned char)low[0])) {
            if (!all_of(low, LOWER_ALNUM "_"))
                return bad(c, "'%s' is not a layer count or word", low);
            return set_new(c, dst, k->name, json_string(low));
        }
        rc = whole(c, v, false, &n);
        if (rc)
            return rc;
        if (n > 100000)
            return bad(c, "%s layers is out of range", brief(v, b, sizeof(b)));
        return set_new(c, dst, k->name, json_integer((json_int_t)n));
    case K_FRACTION: {
        double x;
        if (json_is_number(v)) {
            x = json_number_value(v);
        } else if (json_is_string(v)) {
            struct sw_err pe;
            if (sw_parse_double(json_string_value(v), &x, &pe))
                return bad(c, "%s", pe.msg);
        } else {
            return bad(c, "expected a fraction, got %s", brief(v, b, sizeof(b)));
        }
        if (!(x > 0 && x <= 1))
            return bad(c, "%s is outside (0, 1]", brief(v, b, sizeof(b)));
        return set_new(c, dst, k->name, json_real(x));
    }
    case K_FLAGS: {
        if (!json_is_object(v))
            return bad(c, "expected an object of flags, got %s", brief(v, b, sizeof(b)));
        json_t *f = NULL;
        rc = norm_object(c, v, 1, &f);
        if (rc)
            return rc;
        if (!json_object_size(f)) {
            json_decref(f);
            return 0;
        }
        return set_new(c, dst, k->name, f);
    }
    }
    return bad(c, "internal: unhandled key kind");
}

static int canon_object(const json_t *shape, json_t **out, struct sw_err *e)
{
    struct canon_ctx c = {.e = e};
    snprintf(c.path, sizeof(c.path), "shape");
    char b[96];
    if (!json_is_object(shape))
        return bad(&c, "expected an object, got %s",
                   shape ? brief(shape, b, sizeof(b)) : "nothing");
    json_t *dst = json_object();
    if (!dst)
        return oom(&c);
    /* which spelling set each canonical key, to refuse two spellings of one key */
    const char *given[SW_ARRAY_LEN(keydefs)] = {0};
    const char *key;
    json_t *val;
    int rc = 0;
    json_object_foreach((json_t *)shape, key, val)
    {
        const struct keydef *k = find_key(key);
        if (!k) {
            snprintf(c.path, sizeof(c.path), "shape");
            rc = bad(&c,
                     "unknown key '%.60s' (memory-relevant flags go under \"flags\"; "
                     "docs/ledger.md lists the keys)",
                     key);
            goto out;
        }
        size_t idx = (size_t)(k - keydefs);
        snprintf(c.path, sizeof(c.path), "shape.%.60s", key);
        if (given[idx]) {
            rc = bad(&c, "'%s' and '%s' are the same key (%s); give one", given[idx], key, k->name);
            goto out;
        }
        given[idx] = key;
        if (json_is_null(val))
            continue;
        rc = norm_key(&c, k, val, dst);
        if (rc)
            goto out;
    }
    snprintf(c.path, sizeof(c.path), "shape");
    if (!json_object_get(dst, "engine")) {
        rc = bad(&c, "\"engine\" is required");
        goto out;
    }
    if (!json_object_get(dst, "model")) {
        rc = bad(&c, "\"model\" is required");
        goto out;
    }
out:
    if (rc) {
        json_decref(dst);
        return rc;
    }
    *out = dst;
    return 0;
}

int sw_ledger_shape_canon(const json_t *shape, json_t **canonical, char **text,
                          char hash[SW_LEDGER_HASH_LEN + 1], struct sw_err *e)
{
    json_t *obj = NULL;
    char *t = NULL;
    if (canonical)
        *canonical = NULL;
    if (text)
        *text = NULL;
    int rc = canon_object(shape, &obj, e);
    if (rc)
        return rc;
    rc = sw__json_canon_text(obj, 1u << 20, &t, e);
    if (rc)
        goto out;
    if (hash && sw__sha256_hex(t, strlen(t), hash)) {
        rc = sw_err_set(e, SW_EIO, "SHA-256 failed");
        goto out;
    }
    if (canonical) {
        *canonical = obj;
        obj = NULL;
    }
    if (text) {
        *text = t;
        t = NULL;
    }
out:
    json_decref(obj);
    sw_free(t);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Summary for tables.
 */

static void add(char *out, size_t n, size_t *len, const char *fmt, ...) SW_PRINTF(4, 5);
static void add(char *out, size_t n, size_t *len, const char *fmt, ...)
{
    if (*len >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out + *len, n - *len, fmt, ap);
    va_end(ap);
    if (w > 0)
        *len = SW_MIN(n - 1, *len + (size_t)w);
}

const char *sw_ledger_shape_summary(const json_t *s, char *out, size_t n)
{
    size_t len = 0;
    char num[40];
    if (!n)
        return out;
    out[0] = '\0';
    if (!json_is_object(s)) {
        add(out, n, &len, "-");
        return out;
    }
    const char *eng = json_string_value(json_object_get(s, "engine"));
    add(out, n, &len, "%s", eng ? eng : "?");
    const json_t *m = json_object_get(s, "model");
    const char *mn = json_string_value(json_object_get(m, "name"));
    if (!mn)
        mn = json_string_value(json_object_get(m, "repo"));
    if (!mn)
        mn = json_string_value(json_object_get(m, "file"));
    const char *sha = json_string_value(json_object_get(m, "sha256"));
    if (mn) {
        const char *slash = strrchr(mn, '/');
        add(out, n, &len, " %.28s", slash ? slash + 1 : mn);
    } else if (sha) {
        add(out, n, &len, " sha256:%.12s", sha);
    }
    const char *q = json_string_value(json_object_get(m, "quant"));
    if (q)
        add(out, n, &len, ":%s", q);
    static const char *const ints[][2] = {{"tp", "tp"},       {"ctx", "ctx"},
                                          {"slots", "slots"}, {"kv_tokens", "kvtok"},
                                          {"mnbt", "mnbt"},   {"ubatch", "ub"}};
    for (size_t i = 0; i < SW_ARRAY_LEN(ints); i++) {
        json_t *v = json_object_get(s, ints[i][0]);
        if (json_is_integer(v))
            add(out, n, &len, " %s=%s", ints[i][1],
                sw_fmt_count((uint64_t)json_integer_value(v), num, sizeof(num)));
    }
    const char *k = json_string_value(json_object_get(s, "kv_dtype_k"));
    const char *v = json_string_value(json_object_get(s, "kv_dtype_v"));
    if (k && v && strcmp(k, v))
        add(out, n, &len, " kv=%s/%s", k, v);
    else if (k || v)
        add(out, n, &len, " kv=%s", k ? k : v);
    json_t *kb = json_object_get(s, "kv_bytes");
    if (json_is_integer(kb))
        add(out, n, &len, " kvb=%s",
            sw_fmt_count((uint64_t)json_integer_value(kb), num, sizeof(num)));
    json_t *u = json_object_get(s, "gpu_memory_utilization");
    if (json_is_number(u))
        add(out, n, &len, " util=%g", json_number_value(u));
    json_t *f = json_object_get(s, "flags");
    if (json_object_size(f))
        add(out, n, &len, " +%zu flag%s", json_object_size(f), json_object_size(f) == 1 ? "" : "s");
    return out;
}
