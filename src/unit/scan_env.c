/*
 * The unit's environment as its engine gets it: every Environment= assignment of [Service] (split
 * as systemd splits it) and then the KEY=VALUE lines of its environment file (`#`/`;` comments, a
 * value optionally quoted); the last assignment of a name wins.
 *
 * It does not read the environment file from disk (the caller hands in its text) or expand $VAR
 * inside it.
 */
#include "scan_internal.h"

#include <string.h>

const char *sw__scan_env_get(const struct sw_unit *u, const char *name, size_t n)
{
    const char *found = NULL;
    for (size_t i = 0; i < u->n_env; i++)
        if (!strncmp(u->env[i], name, n) && u->env[i][n] == '=')
            found = u->env[i] + n + 1; /* the last assignment wins */
    return found;
}

const char *sw_unit_env(const struct sw_unit *u, const char *var)
{
    return u ? sw__scan_env_get(u, var, strlen(var)) : NULL;
}

static int env_push(struct sw__scan *s, const char *p, size_t n)
{
    int rc = sw_region_grow(s->a, &s->u->env, &s->cap_env, s->u->n_env, sizeof(char *),
                            SW__SCAN_COUNT_MAX);
    if (rc)
        return rc;
    s->u->env[s->u->n_env] = sw_region_strndup(s->a, p, n);
    if (!s->u->env[s->u->n_env])
        return SW_ENOMEM;
    s->u->n_env++;
    return 0;
}

int sw__scan_env(struct sw__scan *s, const char *env_file)
{
    struct sw_unit *u = s->u;
    int rc = 0;
    for (size_t i = 0; i < u->n_entries; i++) {
        const struct sw_unit_entry *en = &u->entries[i];
        if (en->reset || strcmp(en->section, "Service") || strcmp(en->key, "Environment"))
            continue;
        struct sw__words w = {0};
        rc = sw__scan_split(s, en->value, SW__SPLIT_SYSTEMD, false, &w);
        if (rc)
            return rc;
        for (size_t j = 0; j < w.n; j++) {
            if (!strchr(w.v[j], '='))
                continue;
            rc = env_push(s, w.v[j], strlen(w.v[j]));
            if (rc)
                return rc;
        }
    }
    /* An environment file: KEY=VALUE lines, # and ; comments, a value optionally quoted. */
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, env_file, env_file ? strlen(env_file) : 0, SIZE_MAX, 0);
    while (sw_lines_next(&it, &ln)) {
        const char *st = ln.s, *en = ln.s + ln.len;
        while (st < en && sw__scan_ws(*st))
            st++;
        while (en > st && sw__scan_ws(en[-1]))
            en--;
        if (st == en || *st == '#' || *st == ';')
            continue;
        const char *eq = memchr(st, '=', (size_t)(en - st));
        if (!eq)
            continue;
        const char *ke = eq;
        while (ke > st && sw__scan_ws(ke[-1]))
            ke--;
        const char *v = eq + 1;
        while (v < en && sw__scan_ws(*v))
            v++;
        if (en - v >= 2 && (*v == '"' || *v == '\'') && en[-1] == *v) {
            v++;
            en--;
        }
        struct sw_buf b;
        sw_buf_init(&b, SW__SCAN_LINE_MAX);
        rc = sw_buf_append(&b, st, (size_t)(ke - st));
        if (!rc)
            rc = sw_buf_putc(&b, '=');
        if (!rc)
            rc = sw_buf_append(&b, v, (size_t)(en - v));
        if (!rc)
            rc = env_push(s, sw_buf_cstr(&b), b.len);
        sw_buf_free(&b);
        if (rc)
            return rc;
    }
    return 0;
}
