/*
 * Known-bad rule expressions: a small boolean language over canonical shape keys, so a lesson
 * like "max_num_seqs 2 never compiles on this model" is stored as `slots == 2` and checked by the
 * gates against any planned shape, not as prose.
 *
 *   expr  := or
 *   or    := and ('||' and)*
 *   and   := unary ('&&' unary)*
 *   unary := '!' unary | '(' expr ')' | cmp
 *   cmp   := path [op value]          (a bare path means "== true")
 *   op    := '==' | '!=' | '<' | '<=' | '>' | '>='
 *   path  := key ('.' name)*          (model.<field>, flags.<name>; aliases as in shapes)
 *   value := '"' chars '"' | true | false | number-with-unit | word
 *
 * Numbers take the same units as shapes ("24GiB", "3.15e9", "200,704", "176Ki"); a word that is
 * not a number is a string (`kv_dtype == fp8`). A comparison with a key the shape lacks, or of
 * two different types, is false: a rule never fires on what it cannot see.
 *
 * What it deliberately does not do: arithmetic, functions, regexes. A rule that needs more is a
 * gate, written in C with its numbers.
 */
#include "ledger_internal.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define RULE_MAX_LEN   4096
#define RULE_MAX_NODES 256
#define RULE_MAX_DEPTH 32
#define PATH_MAX_SEG   4

enum op { OP_TRUE, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };
enum nkind { N_AND, N_OR, N_NOT, N_CMP };
enum lkind { L_INT, L_REAL, L_STR, L_BOOL };

struct node {
    enum nkind kind;
    int a, b;
    /* N_CMP */
    char seg[PATH_MAX_SEG][64];
    int nseg;
    enum op op;
    enum lkind lt;
    int64_t i;
    double d;
    bool bo;
    char *s;
};

struct sw_ledger_rule {
    struct node *nodes;
    int n;
    int root;
};

struct parser {
    const char *src;
    size_t pos;
    struct sw_ledger_rule *r;
    struct sw_err *e;
    int depth;
};

static int perr(struct parser *p, const char *fmt, ...) SW_PRINTF(2, 3);
static int perr(struct parser *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sw_err_at_offset(p->e, SW_EPARSE, "rule", (int64_t)p->pos, "%s (in \"%.120s\")", msg,
                            p->src);
}

static void skip_ws(struct parser *p)
{
    while (isspace((unsigned char)p->src[p->pos]))
        p->pos++;
}

static bool eat(struct parser *p, const char *tok)
{
    skip_ws(p);
    size_t n = strlen(tok);
    if (strncmp(p->src + p->pos, tok, n))
        return false;
    p->pos += n;
    return true;
}

static int new_node(struct parser *p, enum nkind k, int *idx)
{
    if (p->r->n >= RULE_MAX_NODES)
        return perr(p, "more than %d terms", RULE_MAX_NODES);
    struct node *n = &p->r->nodes[p->r->n];
    memset(n, 0, sizeof(*n));
    n->kind = k;
    n->a = n->b = -1;
    *idx = p->r->n++;
    return 0;
}

static int parse_or(struct parser *p, int *out);

static bool path_char(int c)
{
    return isalnum(c) || c == '_' || c == '.' || c == '-';
}

static bool value_char(int c)
{
    return c > ' ' && c != 0x7f && !strchr("()!&|<>=\"", c);
}

static int parse_path(struct parser *p, struct node *n)
{
    skip_ws(p);
    size_t start = p->pos;
    while (path_char((unsigned char)p->src[p->pos]))
        p->pos++;
    size_t len = p->pos - start;
    if (!len || !isalpha((unsigned char)p->src[start])) {
        p->pos = start;
        return perr(p, "expected a shape key (slots, ctx, kv_dtype, model.name, flags.x, ...)");
    }
    char buf[256];
    if (len >= sizeof(buf)) {
        p->pos = start;
        return perr(p, "key is too long");
    }
    memcpy(buf, p->src + start, len);
    buf[len] = '\0';
    char *save = buf;
    n->nseg = 0;
    for (char *seg = buf; seg; seg = save) {
        char *dot = strchr(seg, '.');
        if (dot)
            *dot = '\0';
        save = dot ? dot + 1 : NULL;
        if (!*seg || n->nseg >= PATH_MAX_SEG) {
            p->pos = start;
            return perr(p, "'%.*s' is not a key path", (int)len, p->src + start);
        }
        if (sw__flag_name(seg, n->seg[n->nseg], sizeof(n->seg[0]))) {
            p->pos = start;
            return perr(p, "key segment '%s' is too long", seg);
        }
        n->nseg++;
    }
    /* first segment: a canonical key or an alias (kv_dtype is the k/v pseudo-key) */
    const char *k = sw__shape_key(n->seg[0]);
    if (!k) {
        p->pos = start;
        return perr(p, "unknown shape key '%s'", n->seg[0]);
    }
    snprintf(n->seg[0], sizeof(n->seg[0]), "%s", k);
    if (!strcmp(k, "model")) {
        static const char *const f[] = {"sha256", "repo", "revision", "file",
                                        "name",   "size", "quant"};
        bool ok = n->nseg == 2;
        for (size_t i = 0; ok && i < SW_ARRAY_LEN(f); i++)
            if (!strcmp(n->seg[1], f[i]))
                break;
            else if (i + 1 == SW_ARRAY_LEN(f))
                ok = false;
        if (!ok) {
            p->pos = start;
            return perr(p, "model keys are model.sha256, .repo, .revision, .file, .name, .size, "
                           ".quant");
        }
    } else if (!strcmp(k, "flags")) {
        if (n->nseg < 2) {
            p->pos = start;
            return perr(p, "name the flag: flags.<name>");
        }
    } else if (n->nseg != 1) {
        p->pos = start;
        return perr(p, "'%s' has no fields", k);
    }
    return 0;
}

static int parse_value(struct parser *p, struct node *n)
{
    skip_ws(p);
    size_t start = p->pos;
    if (p->src[p->pos] == '"') {
        char buf[1024];
        size_t o = 0;
        p->pos++;
        for (;;) {
            char c = p->src[p->pos];
            if (!c) {
                p->pos = start;
                return perr(p, "unterminated string");
            }
            p->pos++;
            if (c == '"')
                break;
            if (c == '\\') {
                c = p->src[p->pos];
                if (c != '"' && c != '\\')
                    return perr(p, "only \\\" and \\\\ escapes are known");
                p->pos++;
            }
            if (o + 1 >= sizeof(buf))
                return perr(p, "string is longer than %zu bytes", sizeof(buf) - 1);
            buf[o++] = c;
        }
        buf[o] = '\0';
        n->lt = L_STR;
        n->s = sw_strdup(buf);
        return n->s ? 0 : sw_err_set(p->e, SW_ENOMEM, "out of memory");
    }
    while (value_char((unsigned char)p->src[p->pos]))
        p->pos++;
    size_t len = p->pos - start;
    if (!len) {
        p->pos = start;
        return perr(p, "expected a value");
    }
    char buf[256];
    if (len >= sizeof(buf)) {
        p->pos = start;
        return perr(p, "value is too long");
    }
    memcpy(buf, p->src + start, len);
    buf[len] = '\0';
    if (!strcmp(buf, "true") || !strcmp(buf, "false")) {
        n->lt = L_BOOL;
        n->bo = buf[0] == 't';
        return 0;
    }
    if (isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '.') {
        uint64_t u;
        double d;
        if (!sw_parse_bytes(buf, &u, NULL) && u <= (uint64_t)INT64_MAX) {
            n->lt = L_INT;
            n->i = (int64_t)u;
            return 0;
        }
        if (!sw_parse_double(buf, &d, NULL)) {
            n->lt = L_REAL;
            n->d = d;
            return 0;
        }
    }
    n->lt = L_STR;
    n->s = sw_strdup(buf);
    return n->s ? 0 : sw_err_set(p->e, SW_ENOMEM, "out of memory");
}

static int parse_cmp(struct parser *p, int *out)
{
    int idx;
    int rc = new_node(p, N_CMP, &idx);
    if (rc)
        return rc;
    struct node *n = &p->r->nodes[idx];
    rc = parse_path(p, n);
    if (rc)
        return rc;
    static const struct {
        const char *t;
        enum op op;
    } ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE},
               {">=", OP_GE}, {"<", OP_LT},  {">", OP_GT}};
    n->op = OP_TRUE;
    for (size_t i = 0; i < SW_ARRAY_LEN(ops); i++) {
        if (eat(p, ops[i].t)) {
            n->op = ops[i].op;
            break;
        }
    }
    skip_ws(p);
    if (n->op == OP_TRUE) {
        if (p->src[p->pos] == '=')
            return perr(p, "'=' is not an operator; use '=='");
        n->lt = L_BOOL;
        n->bo = true;
        n->op = OP_EQ;
    } else {
        rc = parse_value(p, n);
        if (rc)
            return rc;
        /* string literals for normalized keys are normalized the same way shapes are */
        char word[128];
        if (n->lt == L_STR && n->nseg == 1 &&
            sw__shape_norm_word(n->seg[0], n->s, word, sizeof(word))) {
            char *s = sw_strdup(word);
            if (!s)
                return sw_err_set(p->e, SW_ENOMEM, "out of memory");
            sw_free(n->s);
            n->s = s;
        }
        if (n->lt == L_STR && n->nseg == 2 && !strcmp(n->seg[1], "quant"))
            for (char *c = n->s; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        if ((n->lt == L_STR || n->lt == L_BOOL) && n->op != OP_EQ && n->op != OP_NE)
            return perr(p, "only == and != compare %s", n->lt == L_STR ? "strings" : "true/false");
    }
    *out = idx;
    return 0;
}

static int parse_unary(struct parser *p, int *out)
{
    if (++p->depth > RULE_MAX_DEPTH)
        return perr(p, "nested deeper than %d levels", RULE_MAX_DEPTH);
    int rc;
    skip_ws(p);
    if (p->src[p->pos] == '!' && p->src[p->pos + 1] != '=') {
        p->pos++;
        int idx, child;
        rc = parse_unary(p, &child);
        if (!rc)
            rc = new_node(p, N_NOT, &idx);
        if (!rc) {
            p->r->nodes[idx].a = child;
            *out = idx;
        }
    } else if (eat(p, "(")) {
        rc = parse_or(p, out);
        if (!rc && !eat(p, ")"))
            rc = perr(p, "expected ')'");
    } else {
        rc = parse_cmp(p, out);
    }
    p->depth--;
    return rc;
}

static int parse_chain(struct parser *p, const char *tok, enum nkind k, int *out)
{
    int left;
    int rc = k == N_OR ? parse_chain(p, "&&", N_AND, &left) : parse_unary(p, &left);
    while (!rc && eat(p, tok)) {
        int right, idx;
        rc = k == N_OR ? parse_chain(p, "&&", N_AND, &right) : parse_unary(p, &right);
        if (!rc)
            rc = new_node(p, k, &idx);
        if (!rc) {
            p->r->nodes[idx].a = left;
            p->r->nodes[idx].b = right;
            left = idx;
        }
    }
    if (!rc)
        *out = left;
    return rc;
}

static int parse_or(struct parser *p, int *out)
{
    return parse_chain(p, "||", N_OR, out);
}

void sw_ledger_rule_free(struct sw_ledger_rule *r)
{
    if (!r)
        return;
    for (int i = 0; r->nodes && i < r->n; i++)
        sw_free(r->nodes[i].s);
    sw_free(r->nodes);
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
    r->nodes = sw_calloc(RULE_MAX_NODES, sizeof(*r->nodes));
    if (!r->nodes) {
        sw_free(r);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    struct parser p = {.src = expr, .r = r, .e = e};
    int rc = parse_or(&p, &r->root);
    if (!rc) {
        skip_ws(&p);
        if (p.src[p.pos])
            rc = perr(&p, "unexpected '%.20s'", p.src + p.pos);
    }
    if (rc) {
        sw_ledger_rule_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 */

static const json_t *lookup(const struct node *n, const json_t *shape, char *tmp, size_t tn)
{
    if (n->nseg == 1 && !strcmp(n->seg[0], "kv_dtype")) {
        const char *k = json_string_value(json_object_get(shape, "kv_dtype_k"));
        const char *v = json_string_value(json_object_get(shape, "kv_dtype_v"));
        if (!k && !v)
            return NULL;
        if (k && v && strcmp(k, v))
            snprintf(tmp, tn, "%s/%s", k, v);
        else
            snprintf(tmp, tn, "%s", k ? k : v);
        return NULL; /* signalled through tmp */
    }
    const json_t *cur = shape;
    for (int i = 0; i < n->nseg && cur; i++)
        cur = json_object_get(cur, n->seg[i]);
    return cur;
}

static bool cmp_order(enum op op, int c)
{
    switch (op) {
    case OP_EQ:
        return c == 0;
    case OP_NE:
        return c != 0;
    case OP_LT:
        return c < 0;
    case OP_LE:
        return c <= 0;
    case OP_GT:
        return c > 0;
    case OP_GE:
        return c >= 0;
    case OP_TRUE:
        return false;
    }
    return false;
}

static bool eval_cmp(const struct node *n, const json_t *shape)
{
    char tmp[160] = "";
    const json_t *v = lookup(n, shape, tmp, sizeof(tmp));
    if (tmp[0]) /* kv_dtype pseudo-key */
        return n->lt == L_STR && cmp_order(n->op, strcmp(tmp, n->s) ? 1 : 0);
    if (!v || json_is_null(v))
        return false;
    switch (n->lt) {
    case L_BOOL:
        return json_is_boolean(v) && cmp_order(n->op, json_is_true(v) == n->bo ? 0 : 1);
    case L_STR:
        return json_is_string(v) && cmp_order(n->op, strcmp(json_string_value(v), n->s) ? 1 : 0);
    case L_INT:
        if (json_is_integer(v)) {
            int64_t x = json_integer_value(v);
            return cmp_order(n->op, x < n->i ? -1 : x > n->i ? 1 : 0);
        }
        if (json_is_real(v)) {
            double x = json_real_value(v), y = (double)n->i;
            return cmp_order(n->op, x < y ? -1 : x > y ? 1 : 0);
        }
        return false;
    case L_REAL:
        if (json_is_number(v)) {
            double x = json_number_value(v);
            return cmp_order(n->op, x < n->d ? -1 : x > n->d ? 1 : 0);
        }
        return false;
    }
    return false;
}

static bool eval(const struct sw_ledger_rule *r, int idx, const json_t *shape)
{
    const struct node *n = &r->nodes[idx];
    switch (n->kind) {
    case N_AND:
        return eval(r, n->a, shape) && eval(r, n->b, shape);
    case N_OR:
        return eval(r, n->a, shape) || eval(r, n->b, shape);
    case N_NOT:
        return !eval(r, n->a, shape);
    case N_CMP:
        return eval_cmp(n, shape);
    }
    return false;
}

bool sw_ledger_rule_eval(const struct sw_ledger_rule *r, const json_t *canonical)
{
    if (!r || !json_is_object(canonical))
        return false;
    return eval(r, r->root, canonical);
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
