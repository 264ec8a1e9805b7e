/*
 * Secrets kept out of what slipway shows or stores: every occurrence of a token (an API key, a Hub
 * token) in a text, and of the forms a server or a library is likely to echo it in, becomes "***".
 * One routine for every place evidence or an error message is printed, logged or recorded (probe,
 * fetch, the Hub), so a new transform is added once.
 *
 * The forms: the token itself (which covers "Bearer TOKEN" and "Authorization: Bearer TOKEN"), its
 * JSON-escaped spelling (a body quoting the header inside a JSON string), its percent-encoded
 * spelling (upper- and lower-case hex: a URL or a form echoed back) and its base64 (an
 * Authorization header echoed encoded).
 *
 * What it deliberately does not do: guess at secrets it was not given (no entropy scanning), or
 * redact a token shorter than 4 bytes (it would shred ordinary text: such a token is not a secret
 * worth the name, and the callers refuse nothing because of it).
 */
#include <slipway/core.h>

#include <string.h>

#define MASK     "***"
#define MASK_LEN 3u
#define FORM_MAX 1024u /* a token longer than this is matched literally only */

/* Replace every occurrence of pat[0..pl) in s[0..*len) by MASK, shifting the rest left. */
static size_t mask_all(char *s, size_t *len, const char *pat, size_t pl)
{
    size_t hits = 0;
    if (pl < MASK_LEN + 1 || pl > *len)
        return 0;
    size_t i = 0;
    while (i + pl <= *len) {
        if (memcmp(s + i, pat, pl)) {
            i++;
            continue;
        }
        memcpy(s + i, MASK, MASK_LEN);
        memmove(s + i + MASK_LEN, s + i + pl, *len - i - pl);
        *len -= pl - MASK_LEN;
        i += MASK_LEN;
        hits++;
    }
    return hits;
}

static size_t json_form(const char *t, size_t tl, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < tl && o + 2 < FORM_MAX; i++) {
        if (t[i] == '"' || t[i] == '\\' || t[i] == '/')
            out[o++] = '\\';
        out[o++] = t[i];
    }
    return o;
}

static size_t pct_form(const char *t, size_t tl, char *out, const char *hex)
{
    size_t o = 0;
    for (size_t i = 0; i < tl && o + 3 < FORM_MAX; i++) {
        unsigned char c = (unsigned char)t[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    return o;
}

static size_t b64_form(const char *t, size_t tl, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < tl && o + 4 < FORM_MAX; i += 3) {
        unsigned v = (unsigned char)t[i] << 16;
        if (i + 1 < tl)
            v |= (unsigned char)t[i + 1] << 8;
        if (i + 2 < tl)
            v |= (unsigned char)t[i + 2];
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = i + 1 < tl ? a[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < tl ? a[v & 63] : '=';
    }
    return o;
}

size_t sw_redact_mem(char *s, size_t *len, const char *secret)
{
    if (!s || !len || !secret)
        return 0;
    size_t tl = strlen(secret);
    if (tl < SW_REDACT_MIN)
        return 0;
    size_t hits = mask_all(s, len, secret, tl);
    if (tl * 3 >= FORM_MAX)
        return hits;
    char form[FORM_MAX];
    size_t fl = json_form(secret, tl, form);
    if (fl != tl)
        hits += mask_all(s, len, form, fl);
    fl = pct_form(secret, tl, form, "0123456789ABCDEF");
    if (fl != tl) {
        hits += mask_all(s, len, form, fl);
        fl = pct_form(secret, tl, form, "0123456789abcdef");
        hits += mask_all(s, len, form, fl);
    }
    fl = b64_form(secret, tl, form);
    hits += mask_all(s, len, form, fl);
    /* without its padding, as some servers print it */
    while (fl && form[fl - 1] == '=')
        fl--;
    hits += mask_all(s, len, form, fl);
    return hits;
}

size_t sw_redact(char *s, const char *secret)
{
    if (!s)
        return 0;
    size_t len = strlen(s);
    size_t hits = sw_redact_mem(s, &len, secret);
    s[len] = '\0';
    return hits;
}
