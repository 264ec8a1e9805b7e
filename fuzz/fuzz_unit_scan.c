/*
 * Fuzz the unit scanner and the lint over it (no exec: the verify step is off): any bytes must
 * parse or fail cleanly, and every finding must be a NUL-terminated message with a known law
 * whose position names one of the parts. The input is a unit; after a line holding only
 * "%%ENV%%", the rest is its environment file; a line holding only "%%DROPIN%%" starts a drop-in.
 */
#include <slipway/unit_lint.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t ulen = size;
    char *env = NULL;
    char *mark = memmem(s, size, "\n%%ENV%%\n", 9);
    if (mark) {
        ulen = (size_t)(mark - s) + 1;
        env = mark + 9;
        if (memchr(env, '\0', size - (size_t)(env - s)))
            env = NULL; /* the environment file is a C string */
    }
    static const char *const names[] = {"fuzz.service", "fuzz.service.d/a.conf",
                                        "fuzz.service.d/b.conf", "fuzz.service.d/c.conf"};
    struct sw_unit_part parts[4];
    size_t np = 0;
    const char *p = s, *end = s + ulen;
    while (np < 4) {
        const char *m = np < 3 ? memmem(p, (size_t)(end - p), "\n%%DROPIN%%\n", 12) : NULL;
        parts[np].where = names[np];
        parts[np].text = p;
        parts[np].len = m ? (size_t)(m - p) + 1 : (size_t)(end - p);
        np++;
        if (!m)
            break;
        p = m + 12;
    }
    struct sw_unit *u = NULL;
    struct sw_err e;
    if (sw_unit_parse_parts(parts, np, env, &u, &e) == 0) {
        struct sw_unit_report r = {0};
        struct sw_unit_lint_opts o = {.verify = false};
        if (sw_unit_lint(u, &o, &r, &e) == 0) {
            for (size_t i = 0; i < r.n; i++) {
                int line = 0;
                const char *w = sw_unit_pos(u, r.v[i].line, &line);
                if (!r.v[i].law || strlen(r.v[i].msg) >= sizeof(r.v[i].msg) || !w || line < 0 ||
                    (size_t)r.v[i].line / SW_UNIT_PART_LINES >= np)
                    abort();
            }
        }
        sw_unit_report_free(&r);
        for (size_t i = 0; i < u->n_cmds; i++)
            if (u->cmds[i].argv[u->cmds[i].argc] != NULL)
                abort();
        sw_unit_free(u);
    }
    free(s);
    return 0;
}
