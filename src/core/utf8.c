/*
 * UTF-8 repair: text that came from elsewhere (a server's body, an error message that quotes it)
 * made into well-formed UTF-8 before it reaches JSON (jansson refuses anything else) or a
 * terminal. Each byte that does not begin a well-formed sequence (a stray continuation byte, an
 * overlong form, a surrogate, a code point past U+10FFFF, a sequence cut short, a NUL) becomes
 * U+FFFD, and the caller learns how many there were so it can say so.
 *
 * What it deliberately does not do: guess another encoding (Latin-1...), normalise, or remove
 * control characters (a JSON encoder escapes them; a terminal view writes through sw_fput_term).
 */
#include <slipway/core.h>

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

void sw_fput_term(FILE *f, const char *s, unsigned flags)
{
    if (!s)
        return;
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        size_t k = sw_utf8_seq(u + i, len - i);
        if (!k) {
            fprintf(f, "\\x%02x", u[i]);
            i++;
        } else if (k == 1 && ((u[i] < 0x20 && u[i] != '\t') || u[i] == 0x7f)) {
            if (u[i] == '\n' && (flags & SW_TERM_LINES))
                fputc('\n', f);
            else if (u[i] == '\n')
                fputs("\\n", f);
            else
                fprintf(f, "\\x%02x", u[i]);
            i++;
        } else if (k == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0) {
            fprintf(f, "\\u%04x", (unsigned)u[i + 1]);
            i += 2;
        } else {
            fwrite(u + i, 1, k, f);
            i += k;
        }
    }
}
