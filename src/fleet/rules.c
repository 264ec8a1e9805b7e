/*
 * Known-bad rules of an endpoint: `when` (the condition that fails), and why (text, note,
 * failure class, date). The text form of `when` is read by core's one rule grammar with the
 * fleet's hooks (shape fields, values in their own units, errors at their token in the file); the
 * map form is YAML structure decoded here. Both become conditions and one sw_rule.
 *
 * Not here: a grammar of its own (core/rule.c), matching a rule against a planned shape (the
 * gates).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Known-bad rules: `when` is "seqs == 2 && kv_cache_dtype == bf16" or {seqs: 2, ...}. The map
 * form's values may carry an operator (">= 245760"), read by parse_op.
 */
static int parse_op(const char **pp, enum sw_fleet_op *op)
{
    const char *p = *pp;
    static const struct {
        const char *s;
        enum sw_fleet_op op;
    } ops[] = {{"==", SW_FLEET_EQ}, {"!=", SW_FLEET_NE}, {"<=", SW_FLEET_LE}, {">=", SW_FLEET_GE},
               {"<", SW_FLEET_LT},  {">", SW_FLEET_GT},  {"=", SW_FLEET_EQ}};
    for (size_t i = 0; i < SW_ARRAY_LEN(ops); i++) {
        size_t l = strlen(ops[i].s);
        if (!strncmp(p, ops[i].s, l)) {
            *op = ops[i].op;
            *pp = p + l;
            return 0;
        }
    }
    return -1;
}

/* One condition from a field name and an operand node ("2", ">= 245760", [1, 2]). */
static int dec_cond(struct sw__fleet_ctx *c, const struct sw__fleet_node *at_node,
                    const char *fname, const struct sw__fleet_node *operand,
                    struct sw_fleet_cond *cd)
{
    cd->at = sw__fleet_at(at_node);
    cd->field = sw_fleet_shape_field(fname);
    if (!cd->field) {
        const char *sug = sw__fleet_near_field(fname);
        return sw__fleet_err(c, &cd->at, "%s: '%s' is not a shape field%s%s%s", c->path, fname,
                             sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
    }
    struct sw__fleet_spec sp = sw__fleet_shape_slot(cd->field)->spec;
    if (operand->kind == SW__FLN_SEQ) {
        cd->op = SW_FLEET_IN;
        cd->in = sw_region_allocn(c->a, operand->n ? operand->n : 1, sizeof(*cd->in));
        if (!cd->in)
            return sw__fleet_nomem(c);
        int rc = 0;
        for (size_t i = 0; i < operand->n; i++) {
            int r =
                sw__fleet_dec_value(c, operand->kids[i], cd->field->type, &sp, &cd->in[cd->n_in]);
            if (r)
                rc = r;
            else
                cd->n_in++;
        }
        if (!rc && !cd->n_in)
            rc = sw__fleet_errp(c, operand, "lists no values");
        return rc;
    }
    const char *t = sw__fleet_scalar(c, operand);
    if (!t)
        return SW_EPARSE;
    const char *p = t;
    while (isspace((unsigned char)*p))
        p++;
    cd->op = SW_FLEET_EQ;
    /* ">= 245760" must be quoted in YAML (a plain '>' starts a folded block), so quoting does not
     * make the operator part of the value; no allowed value starts with = < > ! */
    if (parse_op(&p, &cd->op))
        p = t; /* a bare value means == */
    while (isspace((unsigned char)*p))
        p++;
    struct sw__fleet_node tmp = *operand;
    tmp.text = p;
    tmp.len = strlen(p);
    tmp.plain = false;
    if ((cd->field->type == SW_FLEET_V_STR || cd->field->type == SW_FLEET_V_BOOL) &&
        cd->op != SW_FLEET_EQ && cd->op != SW_FLEET_NE)
        return sw__fleet_errp(c, operand, "%s only compares with == or !=", cd->field->name);
    return sw__fleet_dec_value(c, &tmp, cd->field->type, &sp, &cd->v);
}

/* ---------------------------------------------------------------------------------------------
 * The text form, "seqs == 2 and kv_cache_dtype = fp8", is read by the one rule grammar
 * (core/rule.c) with the hooks below: keys are shape fields, each value is decoded in its field's
 * own units and choices, and every error points at its token inside the text (file:line:col).
 */
struct when_text {
    struct sw__fleet_ctx *c;
    const struct sw__fleet_node *v; /* the when: scalar */
    const char *src;                /* its text */
    struct sw_fleet_rule *r;
    size_t cap;    /* r->conds holds cap */
    bool reported; /* a hook reported its error itself */
};

/* Where byte off of the rule text is in the fleet file. A scalar whose text is not its source
 * (folded over lines, escapes) keeps the scalar's own position. */
static struct sw_fleet_at when_at(const struct when_text *w, size_t off)
{
    struct sw_fleet_at at = sw__fleet_at(w->v);
    const char *src = w->c->src;
    size_t n = w->c->src_len, len = strlen(w->src), i = 0;
    if (!src || at.file != w->c->file || at.line < 1 || at.col < 1 || off > len)
        return at;
    for (int line = 1; i < n && line < at.line; i++)
        line += src[i] == '\n';
    for (int col = 1; i < n && col < at.col && src[i] != '\n'; col++) {
        i++;
        while (i < n && ((unsigned char)src[i] & 0xC0) == 0x80)
            i++;
    }
    if (n - i < len || memcmp(src + i, w->src, len) || memchr(w->src, '\n', len))
        return at;
    for (size_t k = 0; k < off; k++)
        at.col += ((unsigned char)w->src[k] & 0xC0) != 0x80;
    return at;
}

static int when_key(void *ctx, const char *text, size_t n, char *out, size_t outn, char *msg,
                    size_t msgn)
{
    struct when_text *w = ctx;
    char name[96];
    snprintf(name, sizeof(name), "%.*s", (int)n, text);
    const struct sw_fleet_field *f = n < sizeof(name) ? sw_fleet_shape_field(name) : NULL;
    if (f) {
        snprintf(out, outn, "%s", f->name);
        return 0;
    }
    const char *sug = sw__fleet_near_field(name);
    struct sw_fleet_at at = when_at(w, (size_t)(text - w->src));
    sw__fleet_err(w->c, &at, "%s: '%s' is not a shape field%s%s%s", w->c->path, name,
                  sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
    w->reported = true;
    snprintf(msg, msgn, "'%s' is not a shape field", name);
    return -1;
}

static int when_value(void *ctx, const struct sw_rule_cmp *cmp, struct sw_rule_value *out,
                      char *msg, size_t msgn)
{
    struct when_text *w = ctx;
    struct sw__fleet_ctx *c = w->c;
    static const enum sw_fleet_op ops[] = {
        [SW_RULE_EQ] = SW_FLEET_EQ, [SW_RULE_NE] = SW_FLEET_NE, [SW_RULE_LT] = SW_FLEET_LT,
        [SW_RULE_LE] = SW_FLEET_LE, [SW_RULE_GT] = SW_FLEET_GT, [SW_RULE_GE] = SW_FLEET_GE};
    if (w->r->n_conds >= w->cap) {
        snprintf(msg, msgn, "more than %zu conditions", w->cap);
        return -1;
    }
    struct sw_fleet_cond *cd = &w->r->conds[w->r->n_conds];
    memset(cd, 0, sizeof(*cd));
    cd->at = when_at(w, cmp->key_at);
    cd->field = sw_fleet_shape_field(cmp->key);
    cd->op = ops[cmp->op];
    w->reported = true;
    if (!cd->field) /* when_key gave this key */
        return -1;
    if (cmp->bare) {
        struct sw_fleet_at at = when_at(w, cmp->key_at + strlen(cmp->key));
        sw__fleet_err(c, &at, "%s: after %s comes an operator (== != < <= > >=)", c->path,
                      cd->field->name);
        return -1;
    }
    if ((cd->field->type == SW_FLEET_V_STR || cd->field->type == SW_FLEET_V_BOOL) &&
        cd->op != SW_FLEET_EQ && cd->op != SW_FLEET_NE) {
        struct sw_fleet_at at = when_at(w, cmp->op_at);
        sw__fleet_err(c, &at, "%s %s only compares with == or !=", c->path, cd->field->name);
        return -1;
    }
    /* the value as a scalar of its own, at its place in the text */
    struct sw_fleet_at at = when_at(w, cmp->lit_at);
    struct sw__fleet_node lit = *w->v;
    lit.line = at.line;
    lit.col = at.col;
    lit.text = cmp->text;
    lit.len = strlen(cmp->text);
    lit.plain = !cmp->quoted;
    struct sw__fleet_spec sp = sw__fleet_shape_slot(cd->field)->spec;
    if (sw__fleet_dec_value(c, &lit, cd->field->type, &sp, &cd->v))
        return -1;
    if (cd->field->type == SW_FLEET_V_STR && cd->v.s) { /* cmp->text is the parser's buffer */
        cd->v.s = sw_region_strdup(c->a, cd->v.s);
        if (!cd->v.s) {
            sw__fleet_nomem(c);
            return -1;
        }
    }
    w->reported = false;
    const struct sw_fleet_value *v = &cd->v;
    switch (v->type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES:
        out->type = v->u > (uint64_t)INT64_MAX ? SW_RULE_REAL : SW_RULE_INT;
        out->i = (int64_t)v->u;
        out->d = (double)v->u;
        break;
    case SW_FLEET_V_REAL:
        out->type = SW_RULE_REAL;
        out->d = v->f;
        break;
    case SW_FLEET_V_BOOL:
        out->type = SW_RULE_BOOL;
        out->b = v->b;
        break;
    case SW_FLEET_V_STR:
        out->type = SW_RULE_STR;
        out->s = v->s ? v->s : "";
        break;
    }
    w->r->n_conds++;
    return 0;
}

static int dec_when_expr(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                         struct sw_fleet_rule *r)
{
    const char *t = sw__fleet_scalar(c, v);
    if (!t)
        return SW_EPARSE;
    struct when_text w = {.c = c, .v = v, .src = t, .r = r, .cap = strlen(t) / 2 + 1};
    r->conds = sw_region_allocn(c->a, w.cap, sizeof(*r->conds));
    if (!r->conds)
        return sw__fleet_nomem(c);
    struct sw_rule_vocab vocab = sw_fleet_rule_vocab;
    vocab.key = when_key;
    vocab.value = when_value;
    vocab.ctx = &w;
    struct sw_rule *expr = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_rule_parse(t, &vocab, &expr, &e);
    if (rc == SW_ENOMEM)
        return sw__fleet_nomem(c);
    if (rc && w.reported)
        return SW_EPARSE;
    if (rc) {
        struct sw_fleet_at at = when_at(&w, e.offset >= 0 ? (size_t)e.offset : 0);
        return sw__fleet_err(c, &at, "%s: %s", c->path, e.msg);
    }
    bool conj = sw_rule_is_conjunction(expr);
    sw_rule_free(expr); /* compile_rule makes the rule's own from the conditions */
    if (!conj)
        return sw__fleet_errp(c, v,
                              "joins its conditions with && (or and) only; for one of several "
                              "values list them in the map form ({tp: [1, 2]})");
    return 0;
}

static int dec_when_cond(struct sw__fleet_ctx *c, const struct sw__fleet_node *fk,
                         const struct sw__fleet_node *operand, void *arg)
{
    struct sw_fleet_rule *r = arg;
    int rc = dec_cond(c, fk, fk->text, operand, &r->conds[r->n_conds]);
    if (!rc)
        r->n_conds++;
    return rc;
}

static int dec_rule_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                        const struct sw__fleet_node *val, void *arg)
{
    struct sw_fleet_rule *r = arg;
    if (!strcmp(k->text, "when")) {
        if (val->kind != SW__FLN_MAP) {
            sw__fleet_record(c, val);
            return dec_when_expr(c, val, r);
        }
        r->conds = sw_region_allocn(c->a, val->n ? val->n : 1, sizeof(*r->conds));
        if (!r->conds)
            return sw__fleet_nomem(c);
        struct sw__fleet_walk w = {.fn = dec_when_cond, .arg = r};
        int rc = sw__fleet_walk(c, val, &w);
        if (!rc && !r->n_conds)
            rc = sw__fleet_errp(c, val, "states no condition");
        return rc;
    }
    if (!strcmp(k->text, "failure")) {
        struct sw__fleet_spec sp = SW__SPEC(SW__FT_WORD);
        struct sw_fleet_str s = {0};
        int rc = sw__fleet_dec_str(c, val, &sp, &s);
        r->failure = s.v;
        return rc;
    }
    if (!strcmp(k->text, "date"))
        return sw__fleet_dec_date(c, val, &r->date);
    return sw__fleet_dec_text(c, val, !strcmp(k->text, "text") ? &r->text : &r->note);
}

/* One operand in the rule language: numbers as numbers, words quoted. */
static int render_value(struct sw_buf *b, const struct sw_fleet_value *v)
{
    switch (v->type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES:
        return sw_buf_printf(b, "%llu", (unsigned long long)v->u);
    case SW_FLEET_V_REAL:
        return sw_buf_printf(b, "%.17g", v->f);
    case SW_FLEET_V_BOOL:
        return sw_buf_printf(b, "%s", v->b ? "true" : "false");
    case SW_FLEET_V_STR:
        break;
    }
    int rc = sw_buf_printf(b, "\"");
    for (const char *p = v->s ? v->s : ""; !rc && *p; p++)
        rc = sw_buf_printf(b, "%s%c", *p == '"' || *p == '\\' ? "\\" : "", *p);
    return rc ? rc : sw_buf_printf(b, "\"");
}

/* The decoded conditions as one expression of the rule language, parsed by the one grammar:
 * "seqs == 2 && (tp == 1 || tp == 2)". The rule keeps it for sw_fleet_rule_matches. */
static int compile_rule(struct sw__fleet_ctx *c, const struct sw__fleet_node *rv,
                        struct sw_fleet_rule *r)
{
    struct sw_buf b;
    struct sw_rule *expr = NULL;
    struct sw_err e;
    int rc = 0;
    sw_buf_init(&b, 4096);
    for (size_t i = 0; !rc && i < r->n_conds; i++) {
        const struct sw_fleet_cond *cd = &r->conds[i];
        rc = sw_buf_printf(&b, "%s", i ? " && " : "");
        if (!rc && cd->op == SW_FLEET_IN) {
            for (size_t k = 0; !rc && k < cd->n_in; k++) {
                rc = sw_buf_printf(&b, "%s%s == ", k ? " || " : "(", cd->field->name);
                if (!rc)
                    rc = render_value(&b, &cd->in[k]);
            }
            if (!rc)
                rc = sw_buf_printf(&b, ")");
        } else if (!rc) {
            rc = sw_buf_printf(&b, "%s %s ", cd->field->name, sw_fleet_op_name(cd->op));
            if (!rc)
                rc = render_value(&b, &cd->v);
        }
    }
    if (rc) {
        sw_buf_free(&b);
        return rc == SW_ENOMEM ? sw__fleet_nomem(c) : sw__fleet_errp(c, rv, "is too long");
    }
    sw_err_clear(&e);
    rc = sw_rule_parse(sw_buf_cstr(&b), &sw_fleet_rule_vocab, &expr, &e);
    if (rc) {
        rc = rc == SW_ENOMEM ? sw__fleet_nomem(c) : sw__fleet_errp(c, rv, "%s", e.msg);
        goto out;
    }
    struct sw__fleet_priv *p = c->p;
    if (sw_grow(&p->rules, &p->cap_rules, p->n_rules, sizeof(*p->rules), SIZE_MAX)) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    r->expr_text = sw_region_strdup(c->a, sw_buf_cstr(&b));
    if (!r->expr_text) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    p->rules[p->n_rules++] = expr;
    r->expr = expr;
    expr = NULL;
out:
    sw_rule_free(expr);
    sw_buf_free(&b);
    return rc;
}

static int dec_rule(struct sw__fleet_ctx *c, const struct sw__fleet_node *rv, void *arg)
{
    struct sw_fleet_endpoint *ep = arg;
    struct sw_fleet_rule *r = &ep->known_bad[ep->n_known_bad];
    memset(r, 0, sizeof(*r)); /* a failed item leaves its slot to the next one */
    r->at = sw__fleet_at(rv);
    static const char *const known[] = {"when", "failure", "text", "date", "note"};
    struct sw__fleet_walk w = {
        .what = "known_bad rule", .known = known, .n_known = 5, .fn = dec_rule_key, .arg = r};
    int res = sw__fleet_walk(c, rv, &w);
    if (!res && !sw__fleet_map_get(rv, "when"))
        res = sw__fleet_errp(c, rv, "needs when: the condition that fails");
    if (!res && !r->text && !r->note)
        res = sw__fleet_errp(c, rv,
                             "needs text: (the failure that taught it) or note: (how it was "
                             "learned), so the refusal can say why");
    if (!res)
        res = compile_rule(c, rv, r);
    if (!res)
        ep->n_known_bad++;
    return res;
}

int sw__fleet_ep_known_bad(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                           const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    return sw__fleet_seq_into(c, v, &ep->known_bad, sizeof(*ep->known_bad), dec_rule, ep);
}
