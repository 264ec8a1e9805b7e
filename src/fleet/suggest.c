/*
 * "Did you mean" for near misses: a key or a value that is one or two edits away from a known one
 * is almost always a typo, and a typo that is silently ignored is the bug the operator paid for
 * (systemd's "Unknown key ... in section Service" scrolled by on every load).
 * Spellings are compared case-insensitively with '-' equal to '_' and leading dashes dropped, so
 * "--max-model-len" and "contextWindow" find "max_model_len" and "context_window".
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <string.h>

static size_t normalize(const char *s, char *out, size_t n)
{
    size_t j = 0;
    while (*s == '-')
        s++;
    for (; *s && j + 1 < n; s++) {
        char ch = *s;
        if (ch == '-' || ch == ' ')
            ch = '_';
        if (ch == '_')
            continue; /* "contextWindow" ~ "context_window" */
        out[j++] = (char)tolower((unsigned char)ch);
    }
    out[j] = '\0';
    return j;
}

size_t sw__fleet_distance(const char *a0, const char *b0)
{
    char a[64], b[64];
    size_t la = normalize(a0, a, sizeof(a));
    size_t lb = normalize(b0, b, sizeof(b));
    /* optimal string alignment distance (Levenshtein + adjacent transposition) */
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb];
}

const char *sw__fleet_suggest(const char *word, const char *const *cands, size_t n)
{
    if (!word || !*word)
        return NULL;
    char w[64];
    size_t lw = normalize(word, w, sizeof(w));
    size_t limit = lw <= 3 ? 1 : lw <= 8 ? 2 : 3;
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        if (!cands[i])
            continue;
        size_t d = sw__fleet_distance(word, cands[i]);
        if (d < bestd) {
            bestd = d;
            best = cands[i];
        }
    }
    if (best && bestd <= limit && bestd < lw)
        return best;
    /* a prefix of a longer name ("max_model" for "max_model_len") */
    if (lw >= 4) {
        for (size_t i = 0; i < n; i++) {
            char cn[64];
            if (!cands[i])
                continue;
            normalize(cands[i], cn, sizeof(cn));
            if (!strncmp(cn, w, lw))
                return cands[i];
        }
    }
    return NULL;
}

const char *sw__fleet_near_field(const char *name)
{
    size_t nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    const char *known[64];
    size_t nk = 0;
    for (size_t i = 0; i < nf && nk < SW_ARRAY_LEN(known); i++)
        known[nk++] = fs[i].name;
    return sw__fleet_suggest(name, known, nk);
}
