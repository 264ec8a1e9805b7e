/*
 * Known-bad rule expressions of the ledger: the vocabulary of canonical shapes for the one rule
 * grammar (core/rule.c). Keys are canonical shape keys or their aliases (slots, ctx, kv_dtype,
 * model.<field>, flags.<name>); words are normalized the way canonicalization normalizes them;
 * values are looked up in the canonical JSON, with kv_dtype the k/v pseudo-key ("f16/q8_0"
 * when they differ).
 *
 * What it deliberately does not do: parse or evaluate (core/rule.c does, for every module).
 */
#include "ledger_internal.h"

#include <ctype.h>
#include <string.h>

#define RULE_MAX_LEN 4096
#define PATH_MAX_SEG 4

struct sw_ledger_rule {
    struct sw_rule *rule;
};

/* key: "slots", "model.quant", "flags.tensor_parallel" (segments canonical, '.'-joined). */
static int ledger_key(void *ctx, const char *text, size_t len, char *out, size_t outn, char *msg,
                      size_t msgn)
{
    (void)ctx;
    char buf[SW_RULE_KEY_MAX];
    char seg[PATH_MAX_SEG][64];
    int nseg = 0;
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *save = buf;
    for (char *sg = buf; sg; sg = save) {
        char *dot = strchr(sg, '.');
        if (dot)
            *dot = '\0';
        save = dot ? dot + 1 : NULL;
        if (!*sg || nseg >= PATH_MAX_SEG) {
            snprintf(msg, msgn, "'%.*s' is not a key path", (int)len, text);
            return -1;
        }
        if (sw__flag_name(sg, seg[nseg], sizeof(seg[0]))) {
            snprintf(msg, msgn, "key segment '%s' is too long", sg);
            return -1;
        }
        nseg++;
    }
    /* first segment: a canonical key or an alias (kv_dtype is the k/v pseudo-key) */
    const char *k = sw__shape_key(seg[0]);
    if (!k) {
        snprintf(msg, msgn, "unknown shape key '%s'", seg[0]);
        return -1;
    }
    snprintf(seg[0], sizeof(seg[0]), "%s", k);
    if (!strcmp(k, "model")) {
        static const char *const f[] = {"sha256", "repo", "revision", "file",
                                        "name",   "size", "quant"};
        bool ok = false;
        for (size_t i = 0; nseg == 2 && i < SW_ARRAY_LEN(f) && !ok; i++)
            ok = !strcmp(seg[1], f[i]);
        if (!ok) {
            snprintf(msg, msgn,
                     "model keys are model.sha256, .repo, .revision, .file, .name, "
                     ".size, .quant");
            return -1;
        }
    } else if (!strcmp(k, "flags")) {
        if (nseg < 2) {
            snprintf(msg, msgn, "name the flag: flags.<name>");
            return -1;
        }
    } else if (nseg != 1) {
        snprintf(msg, msgn, "'%s' has no fields", k);
        return -1;
    }
    size_t o = 0;
    for (int i = 0; i < nseg; i++) {
        int w = snprintf(out + o, outn - o, "%s%s", i ? "." : "", seg[i]);
        if (w < 0 || (size_t)w >= outn - o) {
            snprintf(msg, msgn, "key is too long");
            return -1;
        }
        o += (size_t)w;
    }
    return 0;
}

/* String literals for normalized keys are normalized the same way shapes are; quants compare
 * lowercase. */
static bool ledger_literal(void *ctx, const char *key, const char *s, char *out, size_t outn)
{
    (void)ctx;
    if (!strchr(key, '.')) /* words of 128 bytes and more are kept as written */
        return sw__shape_norm_word(key, s, out, outn < 128 ? outn : 128);
    const char *last = strrchr(key, '.') + 1;
    if (strcmp(last, "quant") || strchr(key, '.') != last - 1)
        return false;
    size_t i = 0;
    for (; s[i] && i + 1 < outn; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
    return true;
}

static bool ledger_get(void *ctx, const void *subject, const char *key, struct sw_rule_value *out,
                       char *tmp, size_t tmpn)
{
    const json_t *shape = subject;
    (void)ctx;
    if (!strcmp(key, "kv_dtype")) {
        const char *k = json_string_value(json_object_get(shape, "kv_dtype_k"));
        const char *v = json_string_value(json_object_get(shape, "kv_dtype_v"));
        if (!k && !v)
            return false;
        if (k && v && strcmp(k, v))
            snprintf(tmp, tmpn, "%s/%s", k, v);
        else
            snprintf(tmp, tmpn, "%s", k ? k : v);
        if (!tmp[0])
            return false;
        out->type = SW_RULE_STR;
        out->s = tmp;
        return true;
    }
    char path[SW_RULE_KEY_MAX];
    snprintf(path, sizeof(path), "%s", key);
    const json_t *cur = shape;
    char *save = path;
    for (char *sg = path; sg && cur; sg = save) {
        char *dot = strchr(sg, '.');
        if (dot)
            *dot = '\0';
        save = dot ? dot + 1 : NULL;
        cur = json_object_get(cur, sg);
    }
    if (json_is_boolean(cur)) {
        out->type = SW_RULE_BOOL;
        out->b = json_is_true(cur);
    } else if (json_is_string(cur)) {
        out->type = SW_RULE_STR;
        out->s = json_string_value(cur);
    } else if (json_is_integer(cur)) {
        out->type = SW_RULE_INT;
        out->i = json_integer_value(cur);
    } else if (json_is_real(cur)) {
        out->type = SW_RULE_REAL;
        out->d = json_real_value(cur);
    } else {
        return false; /* absent, null, a list or a mapping */
    }
    return true;
}

static const struct sw_rule_vocab ledger_vocab = {
    .key = ledger_key,
    .literal = ledger_literal,
    .get = ledger_get,
    .keys_hint = "a shape key (slots, ctx, kv_dtype, model.name, flags.x, ...)",
};

void sw_ledger_rule_free(struct sw_ledger_rule *r)
{
    if (!r)
        return;
    sw_rule_free(r->rule);
    sw_free(r);
}

int sw_ledger_rule_parse(const char *expr, struct sw_ledger_rule **out, struct sw_err *e)
{
    *out = NULL;
    if (!expr || !*expr)
        return sw_err_set(e, SW_EPARSE, "rule: the expression is empty");
    size_t len = strlen(expr);
    if (len > RULE_MAX_LEN)
        return sw_err_set(e, SW_EPARSE, "rule: the expression is longer than %d bytes",
                          RULE_MAX_LEN);
    if (!sw__utf8_valid(expr, len))
        return sw_err_set(e, SW_EPARSE, "rule: the expression is not valid UTF-8");
    struct sw_ledger_rule *r = sw_calloc(1, sizeof(*r));
    if (!r)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = sw_rule_parse(expr, &ledger_vocab, &r->rule, e);
    if (rc) {
        sw_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

bool sw_ledger_rule_eval(const struct sw_ledger_rule *r, const json_t *canonical)
{
    if (!r || !json_is_object(canonical))
        return false;
    return sw_rule_eval(r->rule, canonical);
}

int sw_ledger_rule_match(const char *expr, const json_t *shape, bool *hit, struct sw_err *e)
{
    struct sw_ledger_rule *r = NULL;
    json_t *canon = NULL;
    *hit = false;
    int rc = sw_ledger_rule_parse(expr, &r, e);
    if (!rc)
        rc = sw_ledger_shape_canon(shape, &canon, NULL, NULL, e);
    if (!rc)
        *hit = sw_ledger_rule_eval(r, canon);
    json_decref(canon);
    sw_ledger_rule_free(r);
    return rc;
}
