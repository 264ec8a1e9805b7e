/*
 * Fuzz the unit scanner and the lint over it (no exec: the verify step is off): any bytes must
 * parse or fail cleanly, and every finding must be a NUL-terminated message with a known law.
 * The input is a unit; after a line holding only "%%ENV%%", the rest is its environment file.
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
    struct sw_unit *u = NULL;
    struct sw_err e;
    if (sw_unit_parse(s, ulen, "fuzz.service", env, &u, &e) == 0) {
        struct sw_unit_report r = {0};
        struct sw_unit_lint_opts o = {.verify = false};
        if (sw_unit_lint(u, &o, &r, &e) == 0) {
            for (size_t i = 0; i < r.n; i++)
                if (!r.v[i].law || strlen(r.v[i].msg) >= sizeof(r.v[i].msg))
                    abort();
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
