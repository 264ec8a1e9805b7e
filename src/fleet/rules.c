/*
 * Known-bad rules of an endpoint: `when` (the condition that fails), and why (text, note,
 * failure class, date).
 *
 * Not here: matching a rule against a planned shape (the gates).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Known-bad rules: `when` is "seqs == 2 && kv_cache_dtype == bf16" or {seqs: 2, ...}.
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
        size_t nf;
        const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
        const char *known[64];
        size_t nk = 0;
        for (size_t i = 0; i < nf && nk < SW_ARRAY_LEN(known); i++)
            known[nk++] = fs[i].name;
        const char *sug = sw__fleet_suggest(fname, known, nk);
        return sw__fleet_err(c, &cd->at, "%s: '%s' is not a shape field%s%s%s", c->path, fname,
                             sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
    }
    struct sw__fleet_spec sp = sw__fleet_shape_slot(cd->field)->spec;
    if (operand->kind == SW__FLN_SEQ) {
        cd->op = SW_FLEET_IN;
        cd->in = sw__fleet_allocn(c->a, operand->n ? operand->n : 1, sizeof(*cd->in));
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

static int dec_when_expr(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                         struct sw_fleet_rule *r)
{
    const char *t = sw__fleet_scalar(c, v);
    if (!t)
        return SW_EPARSE;
    /* count the conjuncts first to size the array */
    size_t nconds = 1;
    for (const char *p = t; (p = strstr(p, "&&")); p += 2)
        nconds++;
    for (const char *p = t; (p = strstr(p, " and ")); p += 5)
        nconds++;
    r->conds = sw__fleet_allocn(c->a, nconds, sizeof(*r->conds));
    char *copy = sw__fleet_strdup(c->a, t);
    if (!r->conds || !copy)
        return sw__fleet_nomem(c);
    char *p = copy;
    int rc = 0;
    while (p && *p) {
        char *amp = strstr(p, "&&");
        char *andw = strstr(p, " and ");
        char *end = amp && (!andw || amp < andw) ? amp : andw;
        char *next = NULL;
        if (end) {
            next = end + (end == amp ? 2 : 5);
            *end = '\0';
        }
        while (isspace((unsigned char)*p))
            p++;
        /* field name */
        char *q = p;
        while (*q && (isalnum((unsigned char)*q) || *q == '_' || *q == '.'))
            q++;
        if (q == p) {
            return sw__fleet_errp(
                c, v, "'%s' is not a condition: write FIELD OP VALUE, joined with &&", t);
        }
        char fname[96];
        snprintf(fname, sizeof(fname), "%.*s", (int)(q - p), p);
        while (isspace((unsigned char)*q))
            q++;
        enum sw_fleet_op op;
        const char *opp = q;
        if (parse_op(&opp, &op))
            return sw__fleet_errp(c, v, "'%s': after %s comes an operator (== != < <= > >=)", t,
                                  fname);
        struct sw__fleet_node operand = *v;
        char *val = sw__fleet_printf(c->a, "%.*s%s", (int)(opp - q), q, opp);
        if (!val)
            return sw__fleet_nomem(c);
        operand.text = val;
        operand.len = strlen(val);
        operand.plain = true;
        /* trim trailing space */
        while (operand.len && isspace((unsigned char)val[operand.len - 1]))
            val[--operand.len] = '\0';
        int r2 = dec_cond(c, v, fname, &operand, &r->conds[r->n_conds]);
        if (r2)
            rc = r2;
        else
            r->n_conds++;
        p = next;
    }
    if (!rc && !r->n_conds)
        return sw__fleet_errp(c, v, "states no condition");
    return rc;
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
        r->conds = sw__fleet_allocn(c->a, val->n ? val->n : 1, sizeof(*r->conds));
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
    if (p->n_rules == p->cap_rules) {
        size_t cap = p->cap_rules ? p->cap_rules * 2 : 8;
        struct sw_rule **nr = sw_realloc(p->rules, cap * sizeof(*nr));
        if (!nr) {
            rc = sw__fleet_nomem(c);
            goto out;
        }
        p->rules = nr;
        p->cap_rules = cap;
    }
    r->expr_text = sw__fleet_strdup(c->a, sw_buf_cstr(&b));
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
    ep->known_bad = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->known_bad));
    if (!ep->known_bad)
        return sw__fleet_nomem(c);
    return sw__fleet_walk_seq(c, v, dec_rule, ep);
}
