/*
 * engine/argv: an engine's command line as it is built: the growable, NULL-terminated lists of
 * an argv and an environment, and the writer that renders a flag table's rows (memory.h "Engine
 * command lines as flag tables") from a launch or a fleet endpoint, in the table's order.
 *
 * What it does not do: decide what is rendered (each row's `write` and the adapter's source do),
 * validate values (the adapters check what they are given first), or quote for a shell
 * (sw_engine_cmd_format).
 */
#include "engine_internal.h"

#include <slipway/fleet.h>
#include <slipway/memory.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Room for one more entry and the NULL after it (doubling). */
static bool room(struct sw__list *l)
{
    if (l->n + 2 <= l->cap)
        return true;
    size_t cap = l->cap ? l->cap * 2 : 32;
    char **v = sw_realloc(l->v, cap * sizeof(*v));
    if (v) {
        l->v = v;
        l->cap = cap;
    }
    return v != NULL;
}

void sw__list_push(struct sw__list *l, const char *s)
{
    if (l->rc)
        return; /* the first failure stands */
    char *copy = room(l) ? sw_strdup(s) : NULL;
    if (!copy) {
        l->rc = SW_ENOMEM;
        return;
    }
    l->v[l->n++] = copy;
    l->v[l->n] = NULL;
}

void sw__list_push_env(struct sw__list *l, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *kv = l->rc ? NULL : sw_malloc(n);
    if (!kv) {
        l->rc = SW_ENOMEM;
        return;
    }
    snprintf(kv, n, "%s=%s", name, value);
    sw__list_push(l, kv);
    memset(kv, 0, n); /* it may hold a secret */
    sw_free(kv);
}

void sw__list_free(struct sw__list *l)
{
    for (size_t i = 0; i < l->n; i++)
        sw_free(l->v[i]);
    sw_free(l->v);
    memset(l, 0, sizeof(*l));
}

int sw__cmd_take(struct sw_engine_cmd *c, struct sw__list *argv, struct sw__list *env)
{
    int rc = argv->rc ? argv->rc : env->rc;
    if (rc) {
        sw__list_free(argv);
        sw__list_free(env);
        return rc;
    }
    c->argv = argv->v;
    c->argc = argv->n;
    c->env = env->v;
    c->envc = env->n;
    memset(argv, 0, sizeof(*argv));
    memset(env, 0, sizeof(*env));
    return 0;
}

/* The text a row writes after its flag for src: into num or val; NULL when the row is not
 * written. *alone: the flag alone (a switch). */
static const char *row_value(const struct sw_flag *f, const void *src, const void *ctx, char *num,
                             size_t n, struct sw_buf *val, bool *alone, int *rc, struct sw_err *e)
{
    const char *p = (const char *)src + f->from;
    const char *s;
    int64_t x;
    *alone = false;
    switch (f->write) {
    case SW_FLAG_W_STR:
        return *(const char *const *)p;
    case SW_FLAG_W_STR_OR:
        s = *(const char *const *)p;
        return s && *s ? s : f->wtext;
    case SW_FLAG_W_U64:
        if (!*(const uint64_t *)p)
            return NULL;
        snprintf(num, n, "%" PRIu64, *(const uint64_t *)p);
        return num;
    case SW_FLAG_W_UINT:
        if (!*(const unsigned *)p)
            return NULL;
        snprintf(num, n, "%u", *(const unsigned *)p);
        return num;
    case SW_FLAG_W_INT_POS:
        if (*(const int *)p <= 0)
            return NULL;
        snprintf(num, n, "%d", *(const int *)p);
        return num;
    case SW_FLAG_W_INT_OR:
        x = *(const int *)p;
        snprintf(num, n, "%" PRId64, x >= 0 ? x : f->wnum);
        return num;
    case SW_FLAG_W_IS:
        *alone = true;
        return *(const int *)p == f->arg ? "" : NULL;
    case SW_FLAG_W_LAYERS:
        x = *(const int64_t *)p;
        if (x == INT64_MAX)
            return "all";
        if (x < 0)
            return NULL;
        snprintf(num, n, "%" PRId64, x);
        return num;
    case SW_FLAG_W_FLEET_U64:
        if (!((const struct sw_fleet_u64 *)p)->set)
            return NULL;
        snprintf(num, n, "%" PRIu64, ((const struct sw_fleet_u64 *)p)->v);
        return num;
    case SW_FLAG_W_FLEET_F64:
        if (!((const struct sw_fleet_f64 *)p)->set)
            return NULL;
        snprintf(num, n, "%g", ((const struct sw_fleet_f64 *)p)->v);
        return num;
    case SW_FLAG_W_FLEET_STR:
        return ((const struct sw_fleet_str *)p)->v;
    case SW_FLAG_W_FLEET_IS:
        *alone = true;
        return ((const struct sw_fleet_bool *)p)->set &&
                       ((const struct sw_fleet_bool *)p)->v == (f->arg != 0)
                   ? ""
                   : NULL;
    case SW_FLAG_W_FN:
        sw_buf_reset(val);
        *rc = f->wfn(f, ctx, val, e);
        return *rc == 1 ? sw_buf_cstr(val) : NULL;
    case SW_FLAG_W_NONE:
        break;
    }
    return NULL;
}

int sw__argv_render(const struct sw_flag_table *t, const void *src, const void *ctx,
                    struct sw__list *out, struct sw_err *e)
{
    struct sw_buf val;
    char name[128], num[32];
    int rc = 0;
    sw_buf_init(&val, 1u << 20);
    for (size_t i = 0; i < t->n_rows; i++) {
        const struct sw_flag *f = &t->rows[i];
        bool alone;
        const char *v = row_value(f, src, ctx, num, sizeof(num), &val, &alone, &rc, e);
        if (rc < 0)
            break;
        rc = 0;
        if (!v)
            continue;
        sw__list_push(out, sw_flag_name(f, name, sizeof(name)));
        if (!alone)
            sw__list_push(out, v);
    }
    sw_buf_free(&val);
    return rc;
}
