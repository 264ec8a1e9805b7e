/*
 * Paths compared as text: the lexical form of a path (`.` and empty segments dropped, `..` taking
 * the segment before it away) and whether one path lies at or under another in that form. Every
 * check that a path is inside a mount compares these forms, so `/models/../etc` is not inside
 * `/models` and `/models/./a//b` is. And the stem of a fleet file's path, which the files kept
 * beside it are named from.
 *
 * What it deliberately does not do: touch the file system (a symlink is not followed, so a path
 * through one resolves differently in the kernel: callers that hand a path on give its lexical
 * form, which is what they checked), or expand `~`.
 */
#include <slipway/core.h>

#include <string.h>

int sw_path_lexical(const char *path, char *out, size_t n)
{
    if (!path || n < 2)
        return SW_ERANGE;
    bool abs = path[0] == '/';
    size_t o = 0, floor = 0; /* floor: what `..` cannot remove ("/", or leading ".." segments) */
    if (abs)
        out[o++] = '/';
    floor = o;
    const char *s = path;
    while (*s) {
        while (*s == '/')
            s++;
        if (!*s)
            break;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t l = (size_t)(e - s);
        bool dot = l == 1 && s[0] == '.', dotdot = l == 2 && s[0] == '.' && s[1] == '.';
        if (dot) {
            s = e;
            continue;
        }
        if (dotdot && o > floor) {
            while (o > floor && out[o - 1] != '/')
                o--;
            if (o > floor)
                o--; /* the slash before the segment, never the root */
            s = e;
            continue;
        }
        if (dotdot && abs) { /* `..` of the root is the root */
            s = e;
            continue;
        }
        bool sep = o > 0 && out[o - 1] != '/';
        if (o + sep + l + 1 > n)
            return SW_ERANGE;
        if (sep)
            out[o++] = '/';
        memcpy(out + o, s, l);
        o += l;
        if (dotdot)
            floor = o; /* a relative path keeps its leading `..` */
        s = e;
    }
    if (o == 0)
        out[o++] = '.';
    out[o] = '\0';
    return 0;
}

size_t sw_path_within(const char *path, const char *dir, char *rest, size_t rn)
{
    char p[4096], d[4096];
    if (rest && rn)
        rest[0] = '\0';
    if (sw_path_lexical(path, p, sizeof(p)) || sw_path_lexical(dir, d, sizeof(d)))
        return 0;
    size_t l = strlen(d);
    const char *r;
    if (!strcmp(d, "/")) {
        if (p[0] != '/')
            return 0;
        r = strcmp(p, "/") ? p : "";
    } else {
        if (strncmp(p, d, l) || (p[l] != '/' && p[l] != '\0'))
            return 0;
        r = p + l;
    }
    if (rest && rn) {
        if (strlen(r) >= rn)
            return 0;
        memcpy(rest, r, strlen(r) + 1);
    }
    return l;
}

size_t sw_path_rebase(const char *path, const char *from, const char *to, char *out, size_t n)
{
    char rest[4096], t[4096];
    size_t l = sw_path_within(path, from, rest, sizeof(rest));
    if (!l || sw_path_lexical(to, t, sizeof(t)))
        return 0;
    const char *head = !strcmp(t, "/") && rest[0] ? "" : t;
    size_t hl = strlen(head), rl = strlen(rest);
    if (hl + rl + 1 > n)
        return 0;
    memcpy(out, head, hl);
    memcpy(out + hl, rest, rl + 1);
    return l;
}

size_t sw_path_yaml_stem(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot && dot != base && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml")))
        return (size_t)(dot - path);
    return strlen(path);
}
