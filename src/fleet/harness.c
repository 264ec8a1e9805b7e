/*
 * The client harness of a fleet file: context window, compaction ratio and endpoint, summary
 * budget, and per-endpoint client context windows.
 *
 * Not here: resolving endpoint names (validate.c) or running a client (bench).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Harness.
 */

int sw__fleet_dec_harness(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                          struct sw__fleet_harness_raw *hr)
{
    struct sw_fleet_harness *h = &c->f->harness;
    h->present = true;
    h->at = sw__fleet_at(v);
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
        const char *key = k->text;
        int r = 0;
        size_t saved;
        if (!strcmp(key, "context_window") || !strcmp(key, "contextWindow")) {
            struct sw__fleet_spec sp = SW__SPECN(SW__FT_COUNT, 1, 0);
            saved = sw__fleet_path_push(c, "context_window");
            r = sw__fleet_dec_u64(c, val, &sp, &h->context_window);
        } else if (!strcmp(key, "compaction_ratio") || !strcmp(key, "compactionRatio")) {
            struct sw__fleet_spec sp = {.ft = SW__FT_REAL, .fmin = 0, .fmax = 1, .fmin_open = true};
            saved = sw__fleet_path_push(c, "compaction_ratio");
            r = sw__fleet_dec_f64(c, val, &sp, &h->compaction_ratio);
        } else if (!strcmp(key, "summary_budget") || !strcmp(key, "summaryBudget")) {
            struct sw__fleet_spec sp = SW__SPECN(SW__FT_COUNT, 0, 0);
            saved = sw__fleet_path_push(c, "summary_budget");
            r = sw__fleet_dec_u64(c, val, &sp, &h->summary_budget);
        } else if (!strcmp(key, "compaction_endpoint") || !strcmp(key, "compaction")) {
            struct sw__fleet_spec sp = SW__SPEC(SW__FT_NAME);
            saved = sw__fleet_path_push(c, "compaction_endpoint");
            r = sw__fleet_dec_str(c, val, &sp, &hr->compaction_endpoint);
            h->compaction_endpoint_at = sw__fleet_at(val);
        } else if (!strcmp(key, "endpoints")) {
            saved = sw__fleet_path_push(c, "endpoints");
            sw__fleet_record(c, val);
            if (!sw__fleet_want_map(c, val)) {
                r = SW_EPARSE;
            } else {
                h->clients = sw__fleet_allocn(c->a, val->n ? val->n : 1, sizeof(*h->clients));
                hr->client_names =
                    sw__fleet_allocn(c->a, val->n ? val->n : 1, sizeof(*hr->client_names));
                if (!h->clients || !hr->client_names) {
                    sw__fleet_path_pop(c, saved);
                    return sw__fleet_nomem(c);
                }
                for (size_t j = 0; j < val->n && !c->oom; j++) {
                    const struct sw__fleet_node *ek = val->kids[2 * j], *evv = val->kids[2 * j + 1];
                    if (!sw__fleet_check_name(c, ek, "endpoint")) {
                        r = SW_EPARSE;
                        continue;
                    }
                    struct sw_fleet_client *cl = &h->clients[h->n_clients];
                    struct sw_fleet_str *nm = &hr->client_names[h->n_clients];
                    memset(cl, 0, sizeof(*cl));
                    memset(nm, 0, sizeof(*nm));
                    nm->v = sw__fleet_strdup(c->a, ek->text);
                    if (!nm->v) {
                        sw__fleet_path_pop(c, saved);
                        return sw__fleet_nomem(c);
                    }
                    nm->at = sw__fleet_at(ek);
                    cl->at = sw__fleet_at(ek);
                    size_t s2 = sw__fleet_path_push(c, ek->text);
                    static const struct sw__fleet_fdef cdefs[] = {
                        {"context_window",
                         {"contextWindow"},
                         sw__fleet_dec_u64f,
                         SW__SPECN(SW__FT_COUNT, 1, 0),
                         offsetof(struct sw_fleet_client, context_window)},
                    };
                    int r2 = sw__fleet_dec_map(c, evv, cl, cdefs, 1, "harness endpoint");
                    sw__fleet_path_pop(c, s2);
                    if (r2) {
                        r = r2;
                        continue;
                    }
                    h->n_clients++;
                }
            }
        } else {
            static const char *const known[] = {"context_window", "compaction_ratio",
                                                "summary_budget", "compaction_endpoint",
                                                "endpoints"};
            rc = sw__fleet_unknown_key(c, k, "harness", known, 5);
            continue;
        }
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}
