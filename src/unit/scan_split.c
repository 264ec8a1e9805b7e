/*
 * Words as systemd splits a command line (quotes anywhere, C escapes such as the renderer's
 * \xNN, `$VAR` split into words and `${VAR}` kept in one, from the unit's environment) and as a
 * POSIX shell splits `sh -c '...'` (single quotes literal; `;`, `&&`, `||`, `|` and `&` as words
 * of their own), each word at most SW__SCAN_LINE_MAX bytes.
 *
 * It does not run anything or expand what neither systemd nor the engine's shell would.
 */
#include "scan_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool var_char(char c, bool first)
{
    return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

int sw__scan_split(struct sw__scan *s, const char *p, int mode, bool expand, struct sw__words *w)
{
    struct sw_buf cur;
    sw_buf_init(&cur, SW__SCAN_LINE_MAX);
    int rc = 0;
    size_t i = 0, n = strlen(p);
    while (i < n) {
        while (i < n && sw__scan_ws(p[i]))
            i++;
        if (i >= n)
            break;
        if (mode == SW__SPLIT_SHELL && strchr(";&|", p[i])) {
            char op[4] = {'\1', p[i], 0, 0};
            if (i + 1 < n && p[i + 1] == p[i] && p[i] != ';')
                op[2] = p[++i];
            i++;
            rc = sw__scan_word(s, w, op, strlen(op));
            if (rc)
                goto out;
            continue;
        }
        sw_buf_reset(&cur);
        bool whole_var = false, any = false;
        char q = 0;
        while (i < n) {
            char c = p[i];
            if (!q && sw__scan_ws(c))
                break;
            if (!q && mode == SW__SPLIT_SHELL && strchr(";&|", c))
                break;
            if (!q && (c == '"' || c == '\'')) {
                q = c;
                any = true;
                i++;
                continue;
            }
            if (q && c == q) {
                q = 0;
                i++;
                continue;
            }
            if (c == '\\' && i + 1 < n && !(mode == SW__SPLIT_SHELL && q == '\'')) {
                char d = p[i + 1];
                char out = d;
                if (mode == SW__SPLIT_SYSTEMD) {
                    /* systemd's cunescape: the one-letter escapes and \xNN (what the renderer
                     * writes for a control character) */
                    static const char from[] = "ntsrfvab", to[] = "\n\t \r\f\v\a\b";
                    const char *k = strchr(from, d);
                    if (d && k)
                        out = to[k - from];
                    if (d == 'x' && i + 3 < n && isxdigit((unsigned char)p[i + 2]) &&
                        isxdigit((unsigned char)p[i + 3])) {
                        char hex[3] = {p[i + 2], p[i + 3], '\0'};
                        out = (char)strtol(hex, NULL, 16);
                        i += 2;
                    }
                } else if (q == '"' && !strchr("$`\"\\\n", d)) {
                    rc = sw_buf_putc(&cur, '\\');
                    if (rc)
                        goto out;
                }
                rc = sw_buf_putc(&cur, out);
                if (rc)
                    goto out;
                i += 2;
                continue;
            }
            bool may_expand = expand && c == '$' && !(mode == SW__SPLIT_SHELL && q == '\'');
            if (may_expand && i + 1 < n && p[i + 1] == '$' && mode == SW__SPLIT_SYSTEMD) {
                rc = sw_buf_putc(&cur, '$');
                if (rc)
                    goto out;
                i += 2;
                continue;
            }
            if (may_expand && i + 1 < n && (p[i + 1] == '{' || var_char(p[i + 1], true))) {
                size_t ns, ne, next;
                bool braced = p[i + 1] == '{';
                if (braced) {
                    ns = i + 2;
                    ne = ns;
                    while (ne < n && p[ne] != '}')
                        ne++;
                    if (ne >= n) {
                        rc = sw_buf_putc(&cur, c);
                        if (rc)
                            goto out;
                        i++;
                        continue;
                    }
                    next = ne + 1;
                } else {
                    ns = i + 1;
                    ne = ns;
                    while (ne < n && var_char(p[ne], ne == ns))
                        ne++;
                    next = ne;
                }
                const char *val = sw__scan_env_get(s->u, p + ns, ne - ns);
                /* systemd splits a word that is exactly $VAR at whitespace; the shell splits any
                 * unquoted expansion. */
                bool whole =
                    !braced && !q && cur.len == 0 && !any && (next >= n || sw__scan_ws(p[next]));
                if (whole && (mode == SW__SPLIT_SYSTEMD || !q)) {
                    whole_var = true;
                    if (val) {
                        rc = sw__scan_split(s, val, SW__SPLIT_SYSTEMD, false, w);
                        if (rc)
                            goto out;
                    }
                } else if (val) {
                    rc = sw_buf_puts(&cur, val);
                    if (rc)
                        goto out;
                }
                i = next;
                any = true;
                continue;
            }
            rc = sw_buf_putc(&cur, c);
            if (rc)
                goto out;
            i++;
        }
        if (whole_var)
            continue;
        if (cur.len || any) {
            rc = sw__scan_word(s, w, sw_buf_cstr(&cur), cur.len);
            if (rc)
                goto out;
        }
    }
out:
    sw_buf_free(&cur);
    return rc;
}
