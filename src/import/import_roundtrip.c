/*
 * import_roundtrip: render(import(unit)) against the unit. The imported fleet is loaded, each
 * imported endpoint rendered as slipway would install it (sw_unit_render_endpoint), and the
 * engine's command line the render runs compared with the one the unit ran: both read through the
 * engine's flag table into (flag, value) pairs under the flag's rendered spelling, so `-c 8192`
 * and `--ctx-size=8192` are the same setting and the order of flags does not matter. Every pair on
 * one side only is a note naming it.
 *
 * What it does not do: compare what is around the engine (the unit's other lines: the import's
 * notes name those), or judge which side is right.
 */
#include "import_internal.h"

#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/memory.h>
#include <slipway/unit.h>

#include <stdio.h>
#include <string.h>

#define PAIRS_MAX 512

struct pair {
    char flag[96];
    const char *val; /* "" for a switch */
    bool matched;
};

static const struct sw_flag_table *table_of(const char *engine)
{
    return !strcmp(engine, "llama.cpp") ? &sw_llamacpp_flags
           : !strcmp(engine, "vllm")    ? &sw_vllm_flags
                                        : &sw_sglang_flags;
}

/* argv[from..] as pairs; a positional is the pair ("", word). */
static size_t pairs(const struct sw_flag_table *t, const char *const *argv, size_t argc,
                    size_t from, struct pair *out)
{
    size_t n = 0;
    bool argparse = (t->dialect & SW_FLAGS_ARGPARSE) != 0;
    for (size_t j = from; j < argc && n < PAIRS_MAX; j++) {
        const char *w = argv[j];
        struct pair *p = &out[n++];
        memset(p, 0, sizeof(*p));
        if (w[0] != '-' || !w[1]) {
            p->val = w;
            continue;
        }
        const char *eq = strchr(w, '=');
        size_t len = eq ? (size_t)(eq - w) : strlen(w);
        char name[96];
        snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1), w);
        if (argparse)
            for (char *c = name + 2; *c; c++)
                if (*c == '_')
                    *c = '-';
        const struct sw_flag *row = sw_flags_find(t, name);
        if (row)
            sw_flag_name(row, p->flag, sizeof(p->flag));
        else
            snprintf(p->flag, sizeof(p->flag), "%s", name);
        bool takes = row ? row->value : (argparse && !eq && j + 1 < argc && argv[j + 1][0] != '-');
        p->val = eq ? eq + 1 : (takes && j + 1 < argc) ? argv[++j] : "";
    }
    return n;
}

static bool same_value(const char *a, const char *b)
{
    /* llama-swap's ${PORT}: whatever port the fleet gives it */
    if (!strcmp(a, b) || strstr(a, SW__IMP_PORT_MARK))
        return true;
    double x, y;
    return !sw_parse_double(a, &x, NULL) && !sw_parse_double(b, &y, NULL) && x == y;
}

/* The first word of a rendered engine argv past its launcher (`vllm serve`, `python3 -m M`). */
static size_t launcher_end(const struct sw_flag_table *t, char **argv, size_t argc)
{
    if (t->skip)
        return (size_t)t->skip((int)argc, (const char *const *)argv);
    return argc ? 1 : 0;
}

int sw_import_roundtrip(struct sw_import *im, const char *fleet_path, size_t *n_diff,
                        struct sw_err *e)
{
    struct sw__imp *p = sw__imp(im);
    if (!p)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    size_t diffs = 0;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    struct sw_fleet *f = NULL;
    int rc = sw_fleet_load(fleet_path, &fo, &f, e);
    if (rc)
        return rc;
    struct pair *a = sw_calloc(PAIRS_MAX, sizeof(*a)), *b = sw_calloc(PAIRS_MAX, sizeof(*b));
    if (!a || !b) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < p->n_eps && !rc; i++) {
        struct sw__imp_ep *ep = p->eps[i];
        if (!ep->argv)
            continue;
        const struct sw_fleet_endpoint *fe = sw_fleet_endpoint(f, ep->name);
        const char *w = sw__imp_printf(im, "round trip %s", ep->name);
        if (!fe || !w) {
            rc = w ? sw__imp_note(im, w, "not in %s", fleet_path) : SW_ENOMEM;
            continue;
        }
        struct sw_unit_render r;
        struct sw_err re;
        sw_err_clear(&re);
        if (sw_unit_render_endpoint(f, fe, &r, &re)) {
            rc = sw__imp_note(im, w, "the render refuses it: %s", re.msg);
            diffs++;
            sw_unit_render_free(&r);
            continue;
        }
        const struct sw_flag_table *t = table_of(ep->engine);
        size_t na = pairs(t, ep->argv, ep->argc, ep->arg0, a);
        size_t nb = pairs(t, (const char *const *)r.engine_argv, r.engine_argc,
                          launcher_end(t, r.engine_argv, r.engine_argc), b);
        for (size_t x = 0; x < na; x++)
            for (size_t y = 0; y < nb && !a[x].matched; y++)
                if (!b[y].matched && !strcmp(a[x].flag, b[y].flag) &&
                    same_value(a[x].val, b[y].val))
                    a[x].matched = b[y].matched = true;
        for (size_t x = 0; x < na && !rc; x++)
            if (!a[x].matched) {
                diffs++;
                rc = sw__imp_note(im, w, "the unit runs %s%s%s; the render does not", a[x].flag,
                                  a[x].flag[0] && a[x].val[0] ? " " : "", a[x].val);
            }
        for (size_t y = 0; y < nb && !rc; y++)
            if (!b[y].matched) {
                diffs++;
                rc = sw__imp_note(im, w, "the render adds %s%s%s", b[y].flag,
                                  b[y].flag[0] && b[y].val[0] ? " " : "", b[y].val);
            }
        sw_unit_render_free(&r);
    }
    if (rc)
        rc = sw_err_set(e, rc, "out of memory");
out:
    sw_free(a);
    sw_free(b);
    sw_fleet_free(f);
    if (n_diff)
        *n_diff = diffs;
    return rc;
}
