/*
 * deploy/drift: installed against rendered, setting by setting (service.h sw_service_drift): what
 * `status` calls drift and `diff`/`apply` a change. A secret stays ***.
 *
 * What it does not do: read the installed files (status.c, apply/survey.c read them on the host)
 * or render (unit/).
 */
#include <slipway/service.h>
#include <slipway/unit.h>

#include <stdio.h>
#include <string.h>

#define MAX_DRIFT 20

/* A line of an environment file as it may be shown: KEY=*** when the render shows that key's
 * value as *** (a secret), the line itself otherwise. */
static void shown_line(const struct sw_unit_render *ur, bool env, const char *line, size_t len,
                       char *out, size_t n)
{
    const char *eq = env ? memchr(line, '=', len) : NULL;
    if (eq) {
        /* a key named like a secret is never shown, rendered as one or not */
        static const char *const words[] = {"KEY", "TOKEN", "SECRET", "PASS"};
        char key[256];
        size_t kl = SW_MIN((size_t)(eq - line), sizeof(key) - 1);
        for (size_t i = 0; i < kl; i++)
            key[i] = (char)(line[i] >= 'a' && line[i] <= 'z' ? line[i] - 32 : line[i]);
        key[kl] = '\0';
        for (size_t i = 0; i < SW_ARRAY_LEN(words); i++)
            if (strstr(key, words[i])) {
                snprintf(out, n, "%.*s=***", (int)kl, line);
                return;
            }
        char pat[300];
        snprintf(pat, sizeof(pat), "%.*s=***", (int)SW_MIN((size_t)(eq - line), (size_t)280), line);
        const char *s = ur->env.shown ? strstr(ur->env.shown, pat) : NULL;
        if (s && (s == ur->env.shown || s[-1] == '\n')) {
            snprintf(out, n, "%s", pat);
            return;
        }
    }
    snprintf(out, n, "%.*s", (int)SW_MIN(len, n - 1), line);
}

/* The next line of a unit or env file that is a setting (not blank, not a comment: systemd's '#'
 * and ';'), blanks and CRs trimmed off both ends; false when none is left (its number: it->no). */
static bool next_setting(struct sw_lines *it, const char **s, size_t *len)
{
    struct sw_line ln;
    while (sw_lines_next(it, &ln)) {
        const char *q = ln.s, *le = ln.s + ln.len;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q == le || *q == '#' || *q == ';')
            continue;
        *s = q;
        *len = (size_t)(le - q);
        while (*len && (q[*len - 1] == ' ' || q[*len - 1] == '\t' || q[*len - 1] == '\r'))
            (*len)--;
        return true;
    }
    return false;
}

size_t sw_service_drift(const struct sw_unit_render *ur, bool env, const char *file,
                        const char *inst, size_t ilen, const char *rend, size_t rlen, json_t *drift)
{
    size_t n = 0;
    struct sw_lines ii, ri;
    sw_lines_init(&ii, inst, ilen, SIZE_MAX, 0);
    sw_lines_init(&ri, rend, rlen, SIZE_MAX, 0);
    for (;;) {
        const char *is = NULL, *rs = NULL;
        size_t il = 0, rl = 0;
        bool ihas = next_setting(&ii, &is, &il);
        bool rhas = next_setting(&ri, &rs, &rl);
        if (!ihas && !rhas)
            break;
        if (ihas == rhas && il == rl && !memcmp(is, rs, il))
            continue;
        if (n < MAX_DRIFT) {
            char a[1100], b[1100];
            json_t *d = json_object();
            sw_json_set_str(d, "file", file);
            sw_json_set_int(d, "line", ihas ? ii.no : 0);
            sw_json_set_int(d, "rendered_line", rhas ? ri.no : 0);
            if (ihas) {
                shown_line(ur, env, is, il, a, sizeof(a));
                sw_json_set_str(d, "installed", a);
            } else {
                sw_json_set_new(d, "installed", json_null());
            }
            if (rhas) {
                shown_line(ur, env, rs, rl, b, sizeof(b));
                sw_json_set_str(d, "rendered", b);
            } else {
                sw_json_set_new(d, "rendered", json_null());
            }
            json_array_append_new(drift, d);
        }
        n++;
    }
    return n;
}
