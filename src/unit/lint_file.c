/*
 * The files one lint reads (sw_unit_lint_file): the unit and its drop-ins, the way systemd reads
 * them. Text that is not a unit is refused before it is scanned (an HTML page, a JSON error body,
 * a GGUF, a binary: the sniffer's classes), but what systemd reads is read: a first line `[Unit]`
 * (the sniffer's JSON array), a UTF-8 byte order mark, a Description in UTF-8. A unit's drop-ins
 * are NAME.d/FILE.conf beside it, applied in lexical order after it; a drop-in given alone brings
 * its unit and the unit's other drop-ins, or is linted by itself when its unit is not beside it.
 *
 * What it deliberately does not do: search systemd's other unit directories (/etc, /run,
 * /usr/lib), the type-wide (service.d/) or prefix (foo-.service.d/) drop-in directories, or
 * follow a unit's Also=/aliases: it reads the files beside the one it was given, and says which.
 */
#include "lint_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first line that is not blank is a [Section] header: "[Unit]" is a unit, not the JSON
 * array the sniffer takes a leading '[' for ("[1,2]", "[{...}]", "[\"a\"]" stay JSON). */
static bool section_first(const char *t, size_t n)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)t[i]))
        i++;
    if (i >= n || t[i] != '[')
        return false;
    size_t e = i + 1;
    while (e < n && t[e] != '\n' && t[e] != '\r')
        e++;
    while (e > i + 1 && (t[e - 1] == ' ' || t[e - 1] == '\t'))
        e--;
    if (e - i < 3 || t[e - 1] != ']')
        return false;
    for (size_t k = i + 1; k < e - 1; k++)
        if (strchr("[]{}\",:", t[k]) || (unsigned char)t[k] < 0x20)
            return false;
    return true;
}

/* The sniffer's window (64 bytes) holds text: printable ASCII, blanks, or well-formed UTF-8
 * (a Description in another language is text; the sniffer counts only ASCII as printable). */
static bool utf8_text(const char *t, size_t n)
{
    const unsigned char *u = (const unsigned char *)t;
    for (size_t i = 0; i < n && i < 64;) {
        if (u[i] < 0x80) {
            if (!isprint(u[i]) && !isspace(u[i]))
                return false;
            i++;
            continue;
        }
        size_t k = sw_utf8_seq(u + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

/* Refuse what systemd would not read as a unit file (an HTML page, a JSON error body, a GGUF, a
 * binary), after the UTF-8 byte order mark systemd skips. */
static int unit_text_ok(const char *path, const char *text, size_t len, const char *kind,
                        struct sw_err *e)
{
    size_t off = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0;
    const char *t = text + off;
    size_t n = len - off;
    enum sw_sniff_kind k = sw_sniff_kind(t, n);
    if (k == SW_SNIFF_JSON && section_first(t, n))
        k = SW_SNIFF_TEXT;
    if (k == SW_SNIFF_BINARY && !memchr(t, '\0', SW_MIN(n, (size_t)64)) && utf8_text(t, n))
        k = SW_SNIFF_TEXT;
    if (k == SW_SNIFF_TEXT || k == SW_SNIFF_EMPTY)
        return 0;
    char what[96];
    sw_sniff(t, n, what, sizeof(what));
    return sw_err_at(e, SW_EPARSE, path, 0, 0, "not a %s: %s", kind, what);
}

/* path is a drop-in, DIR/NAME.d/FILE.conf: *unit gets DIR/NAME (".." when path names no
 * directory and the working directory is NAME.d). */
static bool dropin_of(const char *path, char *unit, size_t n)
{
    size_t l = strlen(path);
    if (l < 6 || strcmp(path + l - 5, ".conf"))
        return false;
    const char *sl = strrchr(path, '/');
    char cwd[4096];
    const char *d, *de;
    if (sl) {
        de = sl;
        d = de;
        while (d > path && d[-1] != '/')
            d--;
    } else {
        if (!getcwd(cwd, sizeof(cwd)))
            return false;
        de = cwd + strlen(cwd);
        d = strrchr(cwd, '/');
        d = d ? d + 1 : cwd;
    }
    /* NAME.d, NAME a unit name (it has a type suffix) */
    size_t dl = (size_t)(de - d);
    if (dl < 4 || strncmp(de - 2, ".d", 2) || !memchr(d, '.', dl - 2))
        return false;
    int w = sl ? snprintf(unit, n, "%.*s%.*s", (int)(d - path), path, (int)(dl - 2), d)
               : snprintf(unit, n, "../%.*s", (int)(dl - 2), d);
    return w > 0 && (size_t)w < n;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files read for one lint: the unit and its drop-ins, owned here. */
struct files {
    struct sw_unit_part p[SW_UNIT_PARTS_MAX];
    char *name[SW_UNIT_PARTS_MAX]; /* where, allocated */
    char *text[SW_UNIT_PARTS_MAX];
    size_t n;
};

static void files_free(struct files *f)
{
    for (size_t i = 0; i < f->n; i++) {
        sw_free(f->name[i]);
        sw_free(f->text[i]);
    }
    f->n = 0;
}

static int files_add(struct files *f, const char *path, struct sw_err *e)
{
    if (f->n == SW_UNIT_PARTS_MAX)
        return sw_err_at(e, SW_ERANGE, path, 0, 0,
                         "more than %d drop-ins: not read (slipway reads at most %d)",
                         SW_UNIT_PARTS_MAX - 1, SW_UNIT_PARTS_MAX - 1);
    size_t len = 0;
    char *text = NULL;
    int rc = sw_read_file(path, SW_UNIT_TEXT_MAX, &text, &len, e);
    if (!rc)
        rc = unit_text_ok(path, text, len, f->n ? "drop-in" : "unit file", e);
    char *name = rc ? NULL : sw_strdup(path);
    if (!rc && !name)
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    if (rc) {
        sw_free(text);
        return rc;
    }
    f->name[f->n] = name;
    f->text[f->n] = text;
    f->p[f->n] = (struct sw_unit_part){name, text, len};
    f->n++;
    return 0;
}

/* unit.d/NAME.conf in the order systemd applies them (lexical; hidden files and what is not a
 * regular file skipped: a drop-in masked by a link to /dev/null adds nothing). None: 0. */
static int add_dropins(struct files *f, const char *unit, struct sw_err *e)
{
    char dir[4096], p[8192];
    if ((size_t)snprintf(dir, sizeof(dir), "%s.d", unit) >= sizeof(dir))
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[256];
    size_t n = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) && !rc) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".conf"))
            continue;
        if (n == SW_ARRAY_LEN(names)) {
            rc = sw_err_at(e, SW_ERANGE, dir, 0, 0, "more than %zu drop-ins: not read",
                           SW_ARRAY_LEN(names));
            break;
        }
        names[n] = sw_strdup(de->d_name);
        if (!names[n])
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        else
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n && !rc; i++) {
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        if (stat(p, &st) || !S_ISREG(st.st_mode))
            continue;
        rc = files_add(f, p, e);
    }
    for (size_t i = 0; i < n; i++)
        sw_free(names[i]);
    return rc;
}

int sw_unit_lint_file(const char *path, const char *env_file, const struct sw_unit_lint_opts *o,
                      struct sw_unit_report *r, struct sw_unit **uout, struct sw_err *e)
{
    struct files f = {0};
    char *env = NULL;
    size_t elen = 0;
    struct sw_unit *u = NULL;
    char what[64], unit[4096];
    bool alone = false;
    if (uout)
        *uout = NULL;
    int rc = 0;
    struct stat st;
    /* given a drop-in, its unit (beside the drop-in's directory) is read first, then every
     * drop-in of that unit; without the unit, the drop-in alone */
    if (dropin_of(path, unit, sizeof(unit)) && stat(unit, &st) == 0 && S_ISREG(st.st_mode)) {
        rc = files_add(&f, unit, e);
        if (!rc)
            rc = add_dropins(&f, unit, e);
    } else {
        alone = dropin_of(path, unit, sizeof(unit));
        rc = files_add(&f, path, e);
        if (!rc && !alone)
            rc = add_dropins(&f, path, e);
    }
    if (rc)
        goto out;
    if (env_file) {
        rc = sw_read_file(env_file, SW_UNIT_TEXT_MAX, &env, &elen, e);
        if (rc)
            goto out;
        if (memchr(env, '\0', elen) || sw_sniff_kind(env, elen) == SW_SNIFF_BINARY) {
            sw_sniff(env, elen, what, sizeof(what));
            rc = sw_err_at(e, SW_EPARSE, env_file, 0, 0, "not an environment file: %s", what);
            goto out;
        }
    }
    rc = sw_unit_parse_parts(f.p, f.n, env, &u, e);
    if (rc)
        goto out;
    struct sw_unit_lint_opts lo = o ? *o : (struct sw_unit_lint_opts){0};
    lo.verify = lo.verify && !alone;
    rc = sw_unit_lint(u, &lo, r, e);
    if (!rc && alone && o && o->verify) {
        /* systemd-analyze verify reads a drop-in only with its unit */
        rc = sw__unit_add(r, SW_UNIT_LAW_VERIFY, SW_UNIT_WARNING, 0,
                          "%.300s is a drop-in, and its unit %.300s is not beside its directory: "
                          "it was linted alone (the laws see only its own settings) and "
                          "`systemd-analyze verify` did not read it; lint the unit file, with "
                          "its drop-ins beside it",
                          path, unit);
        if (!rc)
            sw__unit_sort(r);
    }
out:
    if (uout && !rc)
        *uout = u;
    else
        sw_unit_free(u);
    files_free(&f);
    sw_free(env);
    return rc;
}
