/*
 * deploy/service_probe: the two proofs that an installed endpoint serves (GET /health 200, then a
 * one-token generation), shared by install and status, over the endpoint's route (host/route:
 * direct, or through its host when it listens on the host's loopback). The requests go through
 * deploy/http.c (net's client), each bounded by the caller's timeout.
 *
 * What it deliberately does not do: retry (the callers poll), or print a bearer.
 */
#include "deploy_internal.h"
#include "service_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct sw_engine *sw__svc_engine(const struct sw_fleet_endpoint *ep)
{
    return sw_engine_find(sw_fleet_engine_name(ep->engine));
}

void sw__svc_bearer_text(const char *text, size_t len, char *out, size_t n)
{
    struct sw_lines it;
    struct sw_line ln;
    out[0] = '\0';
    sw_lines_init(&it, text, len, SIZE_MAX, 0);
    while (sw_lines_next(&it, &ln)) {
        const char *t = ln.s;
        size_t l = ln.len;
        const char *eq = memchr(t, '=', l);
        if (eq && t[0] != '#' && eq - t >= 7 && !memcmp(eq - 7, "API_KEY", 7)) {
            size_t vl = l - (size_t)(eq + 1 - t);
            const char *v = eq + 1;
            /* a value quoted for systemd */
            if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
                v++;
                vl -= 2;
            }
            if (vl < n) {
                memcpy(out, v, vl);
                out[vl] = '\0';
            }
            return;
        }
    }
}

void sw__svc_bearer(const struct sw_unit_render *r, char *out, size_t n)
{
    sw__svc_bearer_text(r->env.text, r->env.len, out, n);
}

void sw__svc_health(const struct sw_engine *eng, const struct sw_host_route *rt, const char *bearer,
                    unsigned timeout_ms, int *status, double *ms)
{
    char u[512];
    snprintf(u, sizeof(u), "%s%s", rt->url, eng && eng->health_path ? eng->health_path : "/health");
    double t0 = sw_now_s();
    *status = 0;
    sw__http("GET", u, rt->unix_socket, NULL, bearer, timeout_ms, NULL, status, NULL, NULL);
    *ms = (sw_now_s() - t0) * 1000.0;
}

static void printable(char *out, size_t n, const char *s)
{
    size_t o = 0;
    for (; *s && o + 1 < n; s++)
        out[o++] = (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\') ? *s : '?';
    out[o] = '\0';
}

bool sw__svc_liveness(const struct sw_engine *eng, const struct sw_host_route *rt,
                      const char *bearer, unsigned timeout_ms, char *detail, size_t n, double *ms)
{
    char u[512];
    struct sw_buf body;
    struct sw_err e;
    int status = 0;
    bool ok = false;
    if (!eng || !eng->liveness_path || !eng->liveness_body) {
        snprintf(detail, n, "no liveness request for this engine");
        *ms = 0;
        return false;
    }
    sw_err_clear(&e);
    sw_buf_init(&body, 1 << 20);
    snprintf(u, sizeof(u), "%s%s", rt->url, eng->liveness_path);
    double t0 = sw_now_s();
    int rc = sw__http("POST", u, rt->unix_socket, eng->liveness_body, bearer, timeout_ms, NULL,
                      &status, &body, &e);
    *ms = (sw_now_s() - t0) * 1000.0;
    if (rc) {
        snprintf(detail, n, "POST %s: %.400s", eng->liveness_path, e.msg);
        goto out;
    }
    if (status != 200) {
        char shown[200];
        printable(shown, sizeof(shown), sw_buf_cstr(&body));
        snprintf(detail, n, "POST %s: HTTP %d: %s", eng->liveness_path, status, shown);
        goto out;
    }
    json_error_t je;
    json_t *j = json_loadb(body.data ? body.data : "", body.len, 0, &je);
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    const char *fin = json_string_value(json_object_get(ch, "finish_reason"));
    const char *text =
        json_string_value(json_object_get(json_object_get(ch, "message"), "content"));
    json_int_t ntok =
        json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens"));
    if (ch && ntok >= 1) {
        char shown[48];
        printable(shown, sizeof(shown), text ? text : "");
        snprintf(detail, n, "POST %s: HTTP 200, %lld token(s), finish_reason %s, text \"%s\"",
                 eng->liveness_path, (long long)ntok, fin ? fin : "?", shown);
        ok = true;
    } else {
        snprintf(detail, n, "POST %s: HTTP 200 without a completion token", eng->liveness_path);
    }
    json_decref(j);
out:
    sw_buf_free(&body);
    return ok;
}

/* s with every "%h" replaced by home. */
static int expand_h(const char *s, const char *home, char *out, size_t n, struct sw_err *e)
{
    size_t o = 0;
    for (; *s; s++) {
        const char *add = NULL;
        char c[2] = {*s, 0};
        if (s[0] == '%' && s[1] == 'h') {
            if (!home || !*home)
                return sw_err_set(e, SW_EINVAL, "%s: %%h needs the host's $HOME, unknown", s);
            add = home;
            s++;
        } else {
            add = c;
        }
        size_t l = strlen(add);
        if (o + l >= n)
            return sw_err_set(e, SW_ERANGE, "path too long after %%h: %s", out);
        memcpy(out + o, add, l);
        o += l;
        out[o] = '\0';
    }
    out[o] = '\0';
    return 0;
}

int sw__svc_paths(const struct sw_unit_render *r, const char *home, char *unit_path, size_t un,
                  char *env_path, size_t en, struct sw_err *e)
{
    int w;
    if (r->scope == SW_FLEET_SCOPE_USER) {
        if (!home || home[0] != '/')
            return sw_err_set(e, SW_EINVAL, "%s: a user unit needs the host's $HOME (got '%s')",
                              r->name, home ? home : "");
        w = snprintf(unit_path, un, "%s/.config/systemd/user/%s", home, r->service.name);
    } else {
        w = snprintf(unit_path, un, "/etc/systemd/system/%s", r->service.name);
    }
    if (w < 0 || (size_t)w >= un)
        return sw_err_set(e, SW_ERANGE, "%s: unit path too long", r->name);
    int rc = expand_h(r->env_path, home, env_path, en, e);
    if (rc)
        return rc;
    if (env_path[0] != '/')
        return sw_err_set(e, SW_EINVAL, "%s: environment file path '%s' is not absolute", r->name,
                          env_path);
    return 0;
}

int64_t sw__svc_left_ms(uint64_t t0, int64_t budget_ms)
{
    int64_t used = (int64_t)((sw_now_ns() - t0) / 1000000ull);
    return used >= budget_ms ? 1 : budget_ms - used;
}
