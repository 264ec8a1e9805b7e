/*
 * UTF-8 repair: text that came from elsewhere (a server's body, an error message that quotes it)
 * made into well-formed UTF-8 before it reaches JSON (jansson refuses anything else) or a
 * terminal. Each byte that does not begin a well-formed sequence (a stray continuation byte, an
 * overlong form, a surrogate, a code point past U+10FFFF, a sequence cut short, a NUL) becomes
 * U+FFFD, and the caller learns how many there were so it can say so.
 *
 * The same visible escapes serve a terminal (sw_fput_term) and one line of a line-based file
 * (sw_buf_line: a comment of a unit, an env file, a YAML export), where the text must neither end
 * the line nor continue it.
 *
 * What it deliberately does not do: guess another encoding (Latin-1...), normalise, or remove
 * control characters (a JSON encoder escapes them; a terminal view writes through sw_fput_term).
 */
#include <slipway/core.h>

#include <stdio.h>
#include <string.h>

/* Length of the well-formed sequence at s[0..n), 0 when there is none (RFC 3629 table 3-7). */
size_t sw_utf8_seq(const unsigned char *s, size_t n)
{
    if (!n)
        return 0;
    unsigned c = s[0];
    if (c >= 0x01 && c < 0x80)
        return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* past U+10FFFF */
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return need;
}

size_t sw_utf8_repair(const char *s, size_t len, char *out, size_t outn, size_t *replaced)
{
    static const char fffd[] = "\xef\xbf\xbd";
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0, bad = 0;
    if (replaced)
        *replaced = 0;
    if (!out || !outn)
        return 0;
    for (size_t i = 0; s && i < len;) {
        size_t k = sw_utf8_seq(u + i, len - i);
        const char *src = k ? s + i : fffd;
        size_t sl = k ? k : 3;
        if (o + sl >= outn)
            break; /* never a character cut in half */
        memcpy(out + o, src, sl);
        o += sl;
        i += k ? k : 1;
        if (!k)
            bad++;
    }
    out[o] = '\0';
    if (replaced)
        *replaced = bad;
    return o;
}

/* One piece of s at i as the visible writers show it: *esc (NUL-terminated, in the caller's
 * buffer) when the piece is escaped, else *raw (k bytes as they are). Returns the bytes of s the
 * piece covers. */
static size_t piece(const unsigned char *u, size_t len, size_t i, unsigned flags, bool bslash,
                    char esc[8], size_t *raw)
{
    size_t k = sw_utf8_seq(u + i, len - i);
    esc[0] = '\0';
    *raw = 0;
    if (!k) {
        snprintf(esc, 8, "\\x%02x", u[i]);
        return 1;
    }
    if (k == 1 && ((u[i] < 0x20 && u[i] != '\t') || u[i] == 0x7f)) {
        if (u[i] == '\n' && (flags & SW_TERM_LINES))
            *raw = 1;
        else if (u[i] == '\n')
            snprintf(esc, 8, "\\n");
        else if (u[i] == '\r' && bslash)
            snprintf(esc, 8, "\\r");
        else
            snprintf(esc, 8, "\\x%02x", u[i]);
        return 1;
    }
    if (k == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0) {
        snprintf(esc, 8, "\\u%04x", (unsigned)u[i + 1]);
        return 2;
    }
    if (k == 1 && u[i] == '\\' && bslash) {
        snprintf(esc, 8, "\\\\");
        return 1;
    }
    *raw = k;
    return k;
}

void sw_fput_term(FILE *f, const char *s, unsigned flags)
{
    if (!s)
        return;
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        char esc[8];
        size_t raw;
        size_t k = piece(u, len, i, flags, false, esc, &raw);
        if (raw)
            fwrite(u + i, 1, raw, f);
        else
            fputs(esc, f);
        i += k;
    }
}

int sw_buf_line(struct sw_buf *b, const char *s)
{
    if (!s)
        return 0;
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s);
    int rc = 0;
    for (size_t i = 0; i < len && !rc;) {
        char esc[8];
        size_t raw;
        size_t k = piece(u, len, i, 0, true, esc, &raw);
        rc = raw ? sw_buf_append(b, u + i, raw) : sw_buf_puts(b, esc);
        i += k;
    }
    return rc;
}
