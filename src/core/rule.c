/*
 * Known-bad rule expressions: the one grammar and the one evaluator, a small boolean language
 * over the keys of a shape, so a lesson like "max_num_seqs 2 never compiles on this model" is
 * stored as `slots == 2` and checked against any planned shape, not as prose.
 *
 *   expr  := or
 *   or    := and (('||' | 'or') and)*
 *   and   := unary (('&&' | 'and') unary)*
 *   unary := ('!' | 'not') unary | '(' expr ')' | cmp
 *   cmp   := path [op value]          (a bare path means "== true")
 *   op    := '==' | '=' | '!=' | '<' | '<=' | '>' | '>='      ('=' is '==')
 *   path  := key ('.' name)*
 *   value := '"' chars '"' | true | false | number-with-unit | word
 *            (a unit may follow its number after spaces: "6 GiB", "180 k")
 *
 * The words and, or, not are operators where an operator can stand (a value may still be
 * spelled so: `kv_dtype == not` compares with the word "not"). Numbers take the units of byte
 * sizes ("24GiB", "3.15e9", "200,704", "176Ki"); a word that is not a number is a string
 * (`kv_dtype == fp8`). A comparison with a key the subject lacks, or of two different types, is
 * false: a rule never fires on what it cannot see.
 *
 * Which keys exist, how a literal is read (a vocabulary may read it in the key's own units and
 * choices, and refuse it) and where a key's value is found belong to the caller (struct
 * sw_rule_vocab): the ledger's canonical JSON shapes are one vocabulary, a fleet shape another.
 *
 * What it deliberately does not do: arithmetic, functions, regexes. A rule that needs more is a
 * gate, written in C with its numbers.
 */
#include <slipway/core.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define RULE_MAX_NODES 256
#define RULE_MAX_DEPTH 32

enum op { OP_TRUE, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };
enum nkind { N_AND, N_OR, N_NOT, N_CMP };

struct node {
    enum nkind kind;
    int a, b;
    /* N_CMP */
    char key[SW_RULE_KEY_MAX];
    enum op op;
    struct sw_rule_value lit; /* lit.s owned (sw_strdup) */
};

struct sw_rule {
    struct sw_rule_vocab vocab;
    struct node *nodes;
    int n;
    int root;
};

struct parser {
    const char *src;
    size_t pos;
    struct sw_rule *r;
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

static bool path_char(int c);

/* An operator word (and, or, not): the word, then something that cannot continue a key. */
static bool eat_word(struct parser *p, const char *word)
{
    skip_ws(p);
    size_t n = strlen(word);
    if (strncmp(p->src + p->pos, word, n) || path_char((unsigned char)p->src[p->pos + n]))
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
    const struct sw_rule_vocab *v = &p->r->vocab;
    if (!len || !isalpha((unsigned char)p->src[start])) {
        p->pos = start;
        return perr(p, "expected %s", v->keys_hint ? v->keys_hint : "a key");
    }
    if (len >= 256) {
        p->pos = start;
        return perr(p, "key is too long");
    }
    char msg[256] = "";
    if (v->key(v->ctx, p->src + start, len, n->key, sizeof(n->key), msg, sizeof(msg))) {
        p->pos = start;
        return perr(p, "%s", msg);
    }
    return 0;
}

static int literal(struct parser *p, struct node *n, const char *text)
{
    n->lit.type = SW_RULE_STR;
    n->lit.s = sw_strdup(text);
    return n->lit.s ? 0 : sw_err_set(p->e, SW_ENOMEM, "out of memory");
}

/* The literal as written into buf (a quoted one unescaped): *quoted says which. */
static int read_literal(struct parser *p, char *buf, size_t bufn, bool *quoted)
{
    skip_ws(p);
    size_t start = p->pos;
    *quoted = p->src[p->pos] == '"';
    if (*quoted) {
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
            if (o + 1 >= bufn)
                return perr(p, "string is longer than %zu bytes", bufn - 1);
            buf[o++] = c;
        }
        buf[o] = '\0';
        return 0;
    }
    while (value_char((unsigned char)p->src[p->pos]))
        p->pos++;
    size_t len = p->pos - start;
    if (!len) {
        p->pos = start;
        return perr(p, "expected a value");
    }
    /* a number, a space, a unit of core's tables: one value ("6 GiB", "180 k", "644 GB/s") */
    struct sw_number num;
    if (len < 256) {
        memcpy(buf, p->src + start, len);
        buf[len] = '\0';
    }
    if (len < 256 && (size_t)sw_number_scan(buf, true, &num) == len) {
        size_t q = p->pos, u = 0;
        while (p->src[q] == ' ' || p->src[q] == '\t')
            q++;
        while (isalpha((unsigned char)p->src[q + u]))
            u++;
        if (q > p->pos && u &&
            (sw_unit_bytes(p->src + q, u) || sw_unit_multiplier(p->src + q, u))) {
            p->pos = q;
            while (value_char((unsigned char)p->src[p->pos]))
                p->pos++;
            len = p->pos - start;
        }
    }
    if (len >= 256) {
        p->pos = start;
        return perr(p, "value is too long");
    }
    memcpy(buf, p->src + start, len);
    buf[len] = '\0';
    return 0;
}

/* The grammar's own reading: true/false, a number with a byte unit, else a string. */
static int own_value(struct parser *p, struct node *n, const char *buf, bool quoted)
{
    if (quoted)
        return literal(p, n, buf);
    if (!strcmp(buf, "true") || !strcmp(buf, "false")) {
        n->lit.type = SW_RULE_BOOL;
        n->lit.b = buf[0] == 't';
        return 0;
    }
    if (isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '.') {
        uint64_t u;
        double d;
        if (!sw_parse_bytes(buf, &u, NULL) && u <= (uint64_t)INT64_MAX) {
            n->lit.type = SW_RULE_INT;
            n->lit.i = (int64_t)u;
            return 0;
        }
        if (!sw_parse_double(buf, &d, NULL)) {
            n->lit.type = SW_RULE_REAL;
            n->lit.d = d;
            return 0;
        }
    }
    return literal(p, n, buf);
}

/* The comparison's value through the vocabulary's reader (vocab->value), which may refuse it. */
static int vocab_value(struct parser *p, struct node *n, struct sw_rule_cmp *cmp)
{
    const struct sw_rule_vocab *v = &p->r->vocab;
    char msg[256] = "";
    struct sw_rule_value val;
    memset(&val, 0, sizeof(val));
    if (v->value(v->ctx, cmp, &val, msg, sizeof(msg))) {
        p->pos = cmp->lit_at;
        return perr(p, "%s", msg[0] ? msg : "not a value of this key");
    }
    n->lit = val;
    n->lit.s = NULL;
    if (val.type != SW_RULE_STR)
        return 0;
    n->lit.s = sw_strdup(val.s ? val.s : "");
    return n->lit.s ? 0 : sw_err_set(p->e, SW_ENOMEM, "out of memory");
}

static const enum sw_rule_op public_op[] = {
    [OP_EQ] = SW_RULE_EQ, [OP_NE] = SW_RULE_NE, [OP_LT] = SW_RULE_LT,
    [OP_LE] = SW_RULE_LE, [OP_GT] = SW_RULE_GT, [OP_GE] = SW_RULE_GE};

static int parse_cmp(struct parser *p, int *out)
{
    int idx;
    int rc = new_node(p, N_CMP, &idx);
    if (rc)
        return rc;
    struct node *n = &p->r->nodes[idx];
    skip_ws(p);
    struct sw_rule_cmp cmp = {.key = n->key, .key_at = p->pos};
    rc = parse_path(p, n);
    if (rc)
        return rc;
    /* longest first; a lone '=' is '==' */
    static const struct {
        const char *t;
        enum op op;
    } ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE}, {">=", OP_GE},
               {"<", OP_LT},  {">", OP_GT},  {"=", OP_EQ}};
    n->op = OP_TRUE;
    skip_ws(p);
    cmp.op_at = p->pos;
    for (size_t i = 0; i < SW_ARRAY_LEN(ops); i++) {
        if (eat(p, ops[i].t)) {
            n->op = ops[i].op;
            break;
        }
    }
    const struct sw_rule_vocab *v = &p->r->vocab;
    char buf[1024];
    if (n->op == OP_TRUE) {
        /* a bare key means "== true" */
        n->op = OP_EQ;
        if (v->value) {
            cmp.op = SW_RULE_EQ;
            cmp.bare = true;
            cmp.text = "true";
            cmp.lit_at = cmp.key_at;
            rc = vocab_value(p, n, &cmp);
            if (rc)
                return rc;
        } else {
            n->lit.type = SW_RULE_BOOL;
            n->lit.b = true;
        }
    } else {
        skip_ws(p);
        cmp.op = public_op[n->op];
        cmp.lit_at = p->pos;
        rc = read_literal(p, buf, sizeof(buf), &cmp.quoted);
        if (rc)
            return rc;
        cmp.text = buf;
        rc = v->value ? vocab_value(p, n, &cmp) : own_value(p, n, buf, cmp.quoted);
        if (rc)
            return rc;
        /* a string literal is normalized the way the subject's values are */
        char word[1024];
        if (n->lit.type == SW_RULE_STR && v->literal &&
            v->literal(v->ctx, n->key, n->lit.s, word, sizeof(word))) {
            char *s = sw_strdup(word);
            if (!s)
                return sw_err_set(p->e, SW_ENOMEM, "out of memory");
            sw_free((char *)n->lit.s);
            n->lit.s = s;
        }
        if ((n->lit.type == SW_RULE_STR || n->lit.type == SW_RULE_BOOL) && n->op != OP_EQ &&
            n->op != OP_NE) {
            p->pos = cmp.op_at;
            return perr(p, "only == and != compare %s",
                        n->lit.type == SW_RULE_STR ? "strings" : "true/false");
        }
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
    bool bang = p->src[p->pos] == '!' && p->src[p->pos + 1] != '=';
    if (bang)
        p->pos++;
    if (bang || eat_word(p, "not")) {
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

/* left (tok left)*: tok is "&&" (or the word and) for N_AND, "||" (or) for N_OR. */
static int parse_chain(struct parser *p, enum nkind k, int *out)
{
    const char *tok = k == N_OR ? "||" : "&&";
    const char *word = k == N_OR ? "or" : "and";
    int left;
    int rc = k == N_OR ? parse_chain(p, N_AND, &left) : parse_unary(p, &left);
    while (!rc && (eat(p, tok) || eat_word(p, word))) {
        int right, idx;
        rc = k == N_OR ? parse_chain(p, N_AND, &right) : parse_unary(p, &right);
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
    return parse_chain(p, N_OR, out);
}

void sw_rule_free(struct sw_rule *r)
{
    if (!r)
        return;
    for (int i = 0; r->nodes && i < r->n; i++)
        sw_free((char *)r->nodes[i].lit.s);
    sw_free(r->nodes);
    sw_free(r);
}

int sw_rule_parse(const char *expr, const struct sw_rule_vocab *vocab, struct sw_rule **out,
                  struct sw_err *e)
{
    int rc = 0;
    *out = NULL;
    struct sw_rule *r = sw_calloc(1, sizeof(*r));
    if (!r)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    r->vocab = *vocab;
    r->nodes = sw_calloc(RULE_MAX_NODES, sizeof(*r->nodes));
    if (!r->nodes) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    struct parser p = {.src = expr, .r = r, .e = e};
    rc = parse_or(&p, &r->root);
    if (rc)
        goto out;
    skip_ws(&p);
    if (p.src[p.pos]) {
        rc = perr(&p, "unexpected '%.20s'", p.src + p.pos);
        goto out;
    }
    *out = r;
    return 0;
out:
    sw_rule_free(r);
    return rc;
}

static bool conjunction(const struct sw_rule *r, int idx)
{
    const struct node *n = &r->nodes[idx];
    return n->kind == N_CMP || (n->kind == N_AND && conjunction(r, n->a) && conjunction(r, n->b));
}

bool sw_rule_is_conjunction(const struct sw_rule *r)
{
    return r && conjunction(r, r->root);
}

/* ---------------------------------------------------------------------------------------------
 * Evaluation.
 */
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

static int order_d(double x, double y)
{
    return x < y ? -1 : x > y ? 1 : 0;
}

static bool eval_cmp(const struct sw_rule *r, const struct node *n, const void *subject)
{
    char tmp[256] = "";
    struct sw_rule_value v;
    memset(&v, 0, sizeof(v));
    if (!r->vocab.get(r->vocab.ctx, subject, n->key, &v, tmp, sizeof(tmp)))
        return false;
    const struct sw_rule_value *l = &n->lit;
    switch (l->type) {
    case SW_RULE_BOOL:
        return v.type == SW_RULE_BOOL && cmp_order(n->op, v.b == l->b ? 0 : 1);
    case SW_RULE_STR:
        return v.type == SW_RULE_STR && cmp_order(n->op, strcmp(v.s, l->s) ? 1 : 0);
    case SW_RULE_INT:
        if (v.type == SW_RULE_INT)
            return cmp_order(n->op, v.i < l->i ? -1 : v.i > l->i ? 1 : 0);
        if (v.type == SW_RULE_REAL)
            return cmp_order(n->op, order_d(v.d, (double)l->i));
        return false;
    case SW_RULE_REAL:
        if (v.type == SW_RULE_INT || v.type == SW_RULE_REAL)
            return cmp_order(n->op, order_d(v.type == SW_RULE_INT ? (double)v.i : v.d, l->d));
        return false;
    }
    return false;
}

static bool eval(const struct sw_rule *r, int idx, const void *subject)
{
    const struct node *n = &r->nodes[idx];
    switch (n->kind) {
    case N_AND:
        return eval(r, n->a, subject) && eval(r, n->b, subject);
    case N_OR:
        return eval(r, n->a, subject) || eval(r, n->b, subject);
    case N_NOT:
        return !eval(r, n->a, subject);
    case N_CMP:
        return eval_cmp(r, n, subject);
    }
    return false;
}

bool sw_rule_eval(const struct sw_rule *r, const void *subject)
{
    return r && eval(r, r->root, subject);
}
