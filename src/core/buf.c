/*
 * Bounded growable buffer. The ceiling is fixed at init so no input can grow a buffer without
 * limit; a failed append leaves the buffer unchanged.
 */
#include <slipway/core.h>

#include <ctype.h>

#include <string.h>

void sw_buf_init(struct sw_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

static int grow(struct sw_buf *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return SW_ERANGE;
        cap *= 2;
    }
    if (cap > b->max + 1)
        cap = b->max + 1;
    char *p = sw_realloc(b->data, cap);
    if (!p)
        return SW_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int sw_buf_append(struct sw_buf *b, const void *p, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return SW_ERANGE;
    int rc = grow(b, b->len + n + 1);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int sw_buf_puts(struct sw_buf *b, const char *s)
{
    return sw_buf_append(b, s, strlen(s));
}

int sw_buf_putc(struct sw_buf *b, char c)
{
    return sw_buf_append(b, &c, 1);
}

int sw_buf_vprintf(struct sw_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return SW_EINVAL;
    if ((size_t)n > b->max || b->len > b->max - (size_t)n)
        return SW_ERANGE;
    int rc = grow(b, b->len + (size_t)n + 1);
    if (rc)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int sw_buf_printf(struct sw_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = sw_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *sw_buf_cstr(const struct sw_buf *b)
{
    return b->data ? b->data : "";
}

void sw_buf_consume(struct sw_buf *b, size_t n)
{
    if (n >= b->len) {
        sw_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void sw_buf_reset(struct sw_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *sw_buf_steal(struct sw_buf *b)
{
    char *p = b->data;
    if (!p)
        p = sw_strdup("");
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}

void sw_buf_free(struct sw_buf *b)
{
    if (!b)
        return;
    sw_free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

/* The HTML entity of &, < and > (and of " when quot), else NULL: the one table of both escapers
 * below. */
static const char *entity(unsigned char c, bool quot)
{
    return c == '&'           ? "&amp;"
           : c == '<'         ? "&lt;"
           : c == '>'         ? "&gt;"
           : c == '"' && quot ? "&quot;"
                              : NULL;
}

int sw_buf_html(struct sw_buf *b, const char *s, size_t n)
{
    int rc = 0;
    for (size_t i = 0; s && i < n && !rc; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *ent = entity(c, true);
        if (ent)
            rc = sw_buf_puts(b, ent);
        else
            rc = sw_buf_putc(b, c < 0x20 && c != '\n' && c != '\t' ? ' ' : (char)c);
    }
    return rc;
}

int sw_buf_yaml_str(struct sw_buf *b, const char *s)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    int rc = sw_buf_putc(b, '"');
    for (; !rc && *u; u++) {
        if (*u == '"' || *u == '\\')
            rc = sw_buf_printf(b, "\\%c", *u);
        else if (*u == '\n')
            rc = sw_buf_puts(b, "\\n");
        else if (*u < 0x20 || *u == 0x7f)
            rc = sw_buf_printf(b, "\\x%02x", *u);
        else if (*u == 0xc2 && u[1] >= 0x80 && u[1] < 0xa0)
            rc = sw_buf_printf(b, "\\u%04x", (unsigned)*++u);
        else
            rc = sw_buf_putc(b, (char)*u);
    }
    return rc ? rc : sw_buf_putc(b, '"');
}

static bool md_word(unsigned char c)
{
    return isalnum(c) || c >= 0x80;
}

int sw_buf_md(struct sw_buf *b, const char *s, size_t n)
{
    int rc = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; s && i < n && !rc; i++) {
        unsigned char c = u[i];
        /* an underscore inside a word is no emphasis (CommonMark's flanking rule): kept, so
         * kv_cache_bytes reads as written */
        bool inner_ = c == '_' && i > 0 && i + 1 < n && md_word(u[i - 1]) && md_word(u[i + 1]);
        const char *ent = entity(c, false);
        if (ent)
            rc = sw_buf_puts(b, ent);
        else if (strchr("\\`*[]|~", c) || (c == '_' && !inner_))
            rc = sw_buf_printf(b, "\\%c", c);
        else
            rc = sw_buf_putc(b, c < 0x20 || c == 0x7f ? ' ' : (char)c);
    }
    return rc;
}

/* A Prometheus label value: backslash, `"` and LF escaped. */
static int prom_label(struct sw_buf *b, const char *s)
{
    int rc = 0;
    for (; !rc && s && *s; s++) {
        if (*s == '\\')
            rc = sw_buf_puts(b, "\\\\");
        else if (*s == '"')
            rc = sw_buf_puts(b, "\\\"");
        else if (*s == '\n')
            rc = sw_buf_puts(b, "\\n");
        else
            rc = sw_buf_putc(b, *s);
    }
    return rc;
}

int sw_buf_prom_sample(struct sw_buf *b, const char *name, const char *const *labels, double v)
{
    int rc = sw_buf_puts(b, name);
    for (size_t i = 0; labels && labels[i] && !rc; i += 2) {
        rc = sw_buf_printf(b, "%s%s=\"", i ? "," : "{", labels[i]);
        if (!rc)
            rc = prom_label(b, labels[i + 1]);
        if (!rc)
            rc = sw_buf_putc(b, '"');
    }
    if (!rc && labels && labels[0])
        rc = sw_buf_putc(b, '}');
    if (!rc)
        rc = sw_buf_printf(b, " %.17g\n", v);
    return rc;
}
