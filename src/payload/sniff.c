/*
 * payload/sniff: is a body what its file name says it is?
 *
 * Two depths. The head check looks only at the first bytes (a download's first chunk): a GGUF
 * magic, a safetensors length prefix bounded by the size the file will have and followed by '{',
 * JSON for a .json, and for every kind the stand-ins a bare download saves in place of the file:
 * an HTML page, a git-lfs pointer, an XML storage error, a JSON error body ({"error": ...}).
 * The whole-file check then hands the structure to the readers that own it: model/gguf parses
 * the GGUF header, model/hf parses the safetensors header with its size law, jansson the JSON.
 * Descriptions of what the first bytes look like come from core's sw_sniff (one wording), the
 * verdict class from sw_sniff_kind.
 *
 * What it deliberately does not do: read tensor data, hash (verify.c), or judge a set of files
 * together (layout.c).
 */
#include <slipway/gguf.h>
#include <slipway/hf.h>
#include <slipway/payload.h>

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "payload/payload_internal.h"

/* A .json larger than this is checked by its head only (the biggest tokenizer.json files are
 * about 30 MB). */
#define JSON_FULL_MAX (256u << 20)
/* A file of another kind is parsed as a possible JSON error body only when this small. */
#define ERROR_BODY_MAX (64u << 10)

static const char *const body_names[SW_PAYLOAD_BODY__N] = {
    [SW_PAYLOAD_BODY_OK] = "ok",
    [SW_PAYLOAD_BODY_EMPTY] = "empty",
    [SW_PAYLOAD_BODY_HTML] = "html",
    [SW_PAYLOAD_BODY_LFS_POINTER] = "lfs_pointer",
    [SW_PAYLOAD_BODY_JSON_ERROR] = "json_error",
    [SW_PAYLOAD_BODY_XML] = "xml",
    [SW_PAYLOAD_BODY_TRUNCATED] = "truncated",
    [SW_PAYLOAD_BODY_MALFORMED] = "malformed",
    [SW_PAYLOAD_BODY_WRONG_KIND] = "wrong_kind",
};

const char *sw_payload_body_name(enum sw_payload_body b)
{
    return (unsigned)b < SW_PAYLOAD_BODY__N ? body_names[b] : "?";
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    if (a < b)
        return false;
    for (size_t i = 0; i < b; i++)
        if (tolower((unsigned char)s[a - b + i]) != suf[i])
            return false;
    return true;
}

enum sw_payload_ftype sw_payload_ftype_of(const char *path)
{
    if (!path)
        return SW_PAYLOAD_FT_OTHER;
    if (ends_with(path, ".safetensors"))
        return SW_PAYLOAD_FT_SAFETENSORS;
    if (ends_with(path, ".gguf"))
        return SW_PAYLOAD_FT_GGUF;
    if (ends_with(path, ".json"))
        return SW_PAYLOAD_FT_JSON;
    if (ends_with(path, ".md") || ends_with(path, ".html") || ends_with(path, ".htm"))
        return SW_PAYLOAD_FT_DOC;
    return SW_PAYLOAD_FT_OTHER;
}

const char *sw_payload_ftype_name(enum sw_payload_ftype k)
{
    switch (k) {
    case SW_PAYLOAD_FT_SAFETENSORS:
        return "safetensors";
    case SW_PAYLOAD_FT_GGUF:
        return "GGUF";
    case SW_PAYLOAD_FT_JSON:
        return "JSON";
    case SW_PAYLOAD_FT_DOC:
        return "document";
    case SW_PAYLOAD_FT_OTHER:
        break;
    }
    return "payload";
}

const char *sw_payload_quote(const void *vp, size_t n, size_t max, char *out, size_t outn)
{
    const unsigned char *p = vp;
    size_t o = 0;
    if (!outn)
        return out;
    size_t i;
    for (i = 0; i < n && i < max; i++) {
        char tmp[5];
        unsigned char c = p[i];
        if (c == '"' || c == '\\')
            snprintf(tmp, sizeof(tmp), "\\%c", c);
        else if (c == '\n')
            snprintf(tmp, sizeof(tmp), "\\n");
        else if (c == '\r')
            snprintf(tmp, sizeof(tmp), "\\r");
        else if (c == '\t')
            snprintf(tmp, sizeof(tmp), "\\t");
        else if (c >= 0x20 && c < 0x7f)
            snprintf(tmp, sizeof(tmp), "%c", c);
        else
            snprintf(tmp, sizeof(tmp), "\\x%02x", c);
        size_t tl = strlen(tmp);
        if (o + tl + 4 > outn) /* keep room for "..." and NUL */
            break;
        memcpy(out + o, tmp, tl);
        o += tl;
    }
    if (i < n && o + 4 <= outn) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

/* ---------------------------------------------------------------------------------------------
 * Verdicts
 */
static int reject(struct sw_payload_sniff *s, enum sw_payload_body b, const char *where,
                  struct sw_err *e, const char *fmt, ...) SW_PRINTF(5, 6);

static int reject(struct sw_payload_sniff *s, enum sw_payload_body b, const char *where,
                  struct sw_err *e, const char *fmt, ...)
{
    va_list ap;
    s->body = b;
    va_start(ap, fmt);
    vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
    va_end(ap);
    return sw_err_at(e, SW_EMISMATCH, where, 0, 0, "%s", s->msg);
}

/* A stand-in's description in core's words + the kind it should have been + its first bytes. */
static int reject_standin(struct sw_payload_sniff *s, enum sw_payload_body b, const char *where,
                          const void *buf, size_t n, struct sw_err *e)
{
    char what[160];
    sw_sniff(buf, n, what, sizeof(what));
    return reject(s, b, where, e, "%s, not a %s file; it starts \"%s\"", what,
                  sw_payload_ftype_name(s->ftype), s->head);
}

/* The head of a JSON error body: '{' then (blanks) "error" as the first key. */
static bool head_is_error_object(const unsigned char *p, size_t n)
{
    size_t i = 0;
    if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
        i = 3;
    while (i < n && isspace(p[i]))
        i++;
    if (i >= n || p[i] != '{')
        return false;
    i++;
    while (i < n && isspace(p[i]))
        i++;
    return n - i >= 7 && !memcmp(p + i, "\"error\"", 7);
}

/* A parsed JSON value is an error body: an object with an "error" member and at most a few
 * others (the Hub's {"error": "..."}, an API's {"error": {"message": ...}, "status": 403}).
 * msg gets the error's text. */
static bool json_is_error_body(json_t *j, char *msg, size_t n)
{
    if (!json_is_object(j) || json_object_size(j) > 4)
        return false;
    json_t *err = json_object_get(j, "error");
    if (!err)
        return false;
    const char *text = NULL;
    if (json_is_string(err))
        text = json_string_value(err);
    else if (json_is_object(err) && json_is_string(json_object_get(err, "message")))
        text = json_string_value(json_object_get(err, "message"));
    if (text)
        sw_payload_quote(text, strlen(text), 200, msg, n);
    else
        snprintf(msg, n, "(not a string)");
    return true;
}

static int reject_json_error(struct sw_payload_sniff *s, const char *where, const char *text,
                             struct sw_err *e)
{
    return reject(s, SW_PAYLOAD_BODY_JSON_ERROR, where, e,
                  "a JSON error body (error: \"%s\"), not a %s file; it starts \"%s\"", text,
                  sw_payload_ftype_name(s->ftype), s->head);
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void begin(struct sw_payload_sniff *s, const char *where, const void *buf, size_t n,
                  uint64_t size)
{
    memset(s, 0, sizeof(*s));
    s->ftype = sw_payload_ftype_of(where);
    s->size = size;
    sw_payload_quote(buf, n, 40, s->head, sizeof(s->head));
}

int sw_payload_sniff_head(const char *where, const void *vbuf, size_t n, uint64_t file_size,
                          struct sw_payload_sniff *s, struct sw_err *e)
{
    const unsigned char *p = vbuf;
    if (!where)
        where = "<body>";
    begin(s, where, p, n, file_size);
    enum sw_sniff_kind sk = sw_sniff_kind(p, n);
    if (s->ftype == SW_PAYLOAD_FT_DOC)
        return 0;
    if (n == 0 && file_size == 0) {
        if (s->ftype == SW_PAYLOAD_FT_OTHER)
            return 0; /* an empty __init__.py or added_tokens.txt is a file */
        return reject(s, SW_PAYLOAD_BODY_EMPTY, where, e, "empty (0 bytes), not a %s file",
                      sw_payload_ftype_name(s->ftype));
    }
    /* A safetensors length prefix can look like text ('{' = a 123-byte header): judge the
     * prefix before the stand-ins. */
    if (s->ftype == SW_PAYLOAD_FT_SAFETENSORS && n >= 9) {
        uint64_t hl = le64(p);
        bool fits = file_size ? hl <= file_size - SW_MIN(file_size, 8) : true;
        if (hl >= 2 && hl <= SW_ST_HEADER_CEILING && fits && p[8] == '{')
            return 0;
    }
    switch (sk) {
    case SW_SNIFF_HTML:
        return reject_standin(s, SW_PAYLOAD_BODY_HTML, where, p, n, e);
    case SW_SNIFF_LFS:
        return reject_standin(s, SW_PAYLOAD_BODY_LFS_POINTER, where, p, n, e);
    case SW_SNIFF_XML:
        return reject_standin(s, SW_PAYLOAD_BODY_XML, where, p, n, e);
    default:
        break;
    }
    if (head_is_error_object(p, n)) {
        /* parse it when the whole body is here, to quote its message */
        char text[256];
        snprintf(text, sizeof(text), "...");
        if (file_size && n >= file_size && n <= ERROR_BODY_MAX) {
            json_t *j = json_loadb((const char *)p, n, JSON_DECODE_ANY, NULL);
            bool is_err = j && json_is_error_body(j, text, sizeof(text));
            json_decref(j);
            if (is_err || s->ftype != SW_PAYLOAD_FT_JSON)
                return reject_json_error(s, where, text, e);
        } else if (s->ftype != SW_PAYLOAD_FT_JSON) {
            /* weights or a tokenizer never start with {"error": a .json might (a config
             * with an "error" field), so a .json is judged once it is whole */
            return reject_json_error(s, where, text, e);
        }
    }
    switch (s->ftype) {
    case SW_PAYLOAD_FT_GGUF:
        if (sk == SW_SNIFF_GGUF)
            return 0;
        if (n < 4 && !memcmp(p, "GGUF", n) && (!file_size || file_size < 4))
            return reject(s, SW_PAYLOAD_BODY_TRUNCATED, where, e,
                          "truncated GGUF file: only %zu bytes", n);
        if (n < 4 && !memcmp(p, "GGUF", n))
            return 0; /* more is coming */
        return reject_standin(s, SW_PAYLOAD_BODY_WRONG_KIND, where, p, n, e);
    case SW_PAYLOAD_FT_SAFETENSORS: {
        if (n < 8) {
            if (file_size && file_size < 8)
                return reject(s, SW_PAYLOAD_BODY_TRUNCATED, where, e,
                              "%llu bytes: too short for a safetensors file; it starts \"%s\"",
                              (unsigned long long)file_size, s->head);
            return 0; /* the prefix is not here yet */
        }
        if (sk == SW_SNIFF_GGUF || sk == SW_SNIFF_JSON)
            return reject_standin(s, SW_PAYLOAD_BODY_WRONG_KIND, where, p, n, e);
        uint64_t hl = le64(p);
        if (file_size && hl > file_size - 8)
            return reject(
                s, sk == SW_SNIFF_TEXT ? SW_PAYLOAD_BODY_WRONG_KIND : SW_PAYLOAD_BODY_MALFORMED,
                where, e,
                "safetensors header length %llu exceeds the file (%llu bytes); it "
                "starts \"%s\"",
                (unsigned long long)hl, (unsigned long long)file_size, s->head);
        if (hl > SW_ST_HEADER_CEILING)
            return reject(
                s, sk == SW_SNIFF_TEXT ? SW_PAYLOAD_BODY_WRONG_KIND : SW_PAYLOAD_BODY_MALFORMED,
                where, e,
                "safetensors header length %llu exceeds the %llu MiB ceiling; it "
                "starts \"%s\"",
                (unsigned long long)hl, (unsigned long long)(SW_ST_HEADER_CEILING >> 20), s->head);
        if (hl < 2)
            return reject(s, SW_PAYLOAD_BODY_MALFORMED, where, e,
                          "safetensors header length %llu cannot hold a JSON object",
                          (unsigned long long)hl);
        if (n > 8 && p[8] != '{')
            return reject(s, SW_PAYLOAD_BODY_MALFORMED, where, e,
                          "safetensors header does not start with '{' at byte 8; it starts "
                          "\"%s\"",
                          s->head);
        return 0;
    }
    case SW_PAYLOAD_FT_JSON:
        if (sk == SW_SNIFF_JSON)
            return 0;
        return reject_standin(s, SW_PAYLOAD_BODY_WRONG_KIND, where, p, n, e);
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Whole bodies
 */
static enum sw_payload_body body_for_rc(int rc)
{
    return rc == SW_ETRUNC ? SW_PAYLOAD_BODY_TRUNCATED : SW_PAYLOAD_BODY_MALFORMED;
}

/* jansson says a body stopped mid-value with "premature end of input" (inside a string) or
 * "... near end of file" (between tokens): both read as cut short. */
static int judge_json(struct sw_payload_sniff *s, const char *where, const char *text, size_t n,
                      struct sw_err *e)
{
    json_error_t je;
    /* duplicate keys are not what a stand-in looks like (Python's json keeps the last one):
     * model/hf judges them when it reads the config */
    json_t *j = json_loadb(text, n, JSON_DECODE_ANY, &je);
    if (!j) {
        bool cut = strstr(je.text, "premature end of input") || strstr(je.text, "end of file");
        return reject(s, cut ? SW_PAYLOAD_BODY_TRUNCATED : SW_PAYLOAD_BODY_MALFORMED, where, e,
                      "%s JSON at line %d column %d: %s", cut ? "truncated" : "invalid", je.line,
                      je.column, je.text);
    }
    char msg[256];
    int rc = 0;
    if (json_is_error_body(j, msg, sizeof(msg)))
        rc = reject_json_error(s, where, msg, e);
    json_decref(j);
    return rc;
}

int sw_payload_sniff_mem(const char *name, const void *buf, size_t n, struct sw_payload_sniff *s,
                         struct sw_err *e)
{
    if (!name)
        name = "<body>";
    int rc = sw_payload_sniff_head(name, buf, n, n, s, e);
    if (rc)
        return rc;
    struct sw_err pe;
    sw_err_clear(&pe);
    switch (s->ftype) {
    case SW_PAYLOAD_FT_SAFETENSORS: {
        struct sw_st_file f;
        rc = sw_st_parse_buffer(buf, n, name, &f, &pe);
        if (rc == SW_ENOMEM)
            return sw_err_set(e, rc, "out of memory");
        if (rc)
            return reject(s, body_for_rc(rc), name, e, "%s", pe.msg);
        sw_st_file_free(&f);
        break;
    }
    case SW_PAYLOAD_FT_GGUF: {
        struct sw_gguf *g = NULL;
        rc = sw_gguf_parse_mem(buf, n, name, &g, &pe);
        if (rc == SW_ENOMEM)
            return sw_err_set(e, rc, "out of memory");
        if (rc)
            return reject(s, body_for_rc(rc), name, e, "%s", pe.msg);
        sw_gguf_free(g);
        break;
    }
    case SW_PAYLOAD_FT_JSON:
        rc = judge_json(s, name, buf, n, e);
        if (rc)
            return rc;
        break;
    default:
        break;
    }
    s->complete = true;
    return 0;
}

/* What a structure parser (model/hf, model/gguf) said of the whole file, rc and its error pe: a
 * file it could not read (out of memory, I/O) is the caller's error, passed on; one it refused is
 * a body that is not of its kind, rejected with the parser's words. */
static int parsed(struct sw_payload_sniff *s, const char *path, int rc, const struct sw_err *pe,
                  struct sw_err *e)
{
    if (rc == SW_ENOMEM || rc == SW_EIO || rc == SW_ENOENT) {
        if (e)
            *e = *pe;
        return rc;
    }
    if (rc)
        return reject(s, body_for_rc(rc), path, e, "%s", pe->msg);
    return 0;
}

int sw_payload_sniff_file(const char *path, struct sw_payload_sniff *s, struct sw_err *e)
{
    int rc = 0;
    char *text = NULL;
    unsigned char head[SW_PAYLOAD_SNIFF_HEAD];
    memset(s, 0, sizeof(*s));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, path, 0, 0, "cannot open: %s",
                         strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = sw_err_at(e, SW_EIO, path, 0, 0, "not a readable regular file");
        goto out;
    }
    ssize_t got;
    do
        got = pread(fd, head, sizeof(head), 0);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
        rc = sw_err_at(e, SW_EIO, path, 0, 0, "read failed: %s", strerror(errno));
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    rc = sw_payload_sniff_head(path, head, (size_t)got, size, s, e);
    if (rc)
        goto out;
    struct sw_err pe;
    sw_err_clear(&pe);
    switch (s->ftype) {
    case SW_PAYLOAD_FT_SAFETENSORS: {
        struct sw_st_file f;
        rc = sw_st_read(path, &f, &pe);
        if (!rc)
            sw_st_file_free(&f);
        rc = parsed(s, path, rc, &pe, e);
        if (rc)
            goto out;
        break;
    }
    case SW_PAYLOAD_FT_GGUF: {
        struct sw_gguf *g = NULL;
        rc = sw_gguf_open_single(path, &g, &pe);
        sw_gguf_free(g);
        rc = parsed(s, path, rc, &pe, e);
        if (rc)
            goto out;
        break;
    }
    case SW_PAYLOAD_FT_JSON: {
        if (size > JSON_FULL_MAX)
            goto done; /* head checked only */
        size_t len = 0;
        rc = sw_read_file(path, JSON_FULL_MAX, &text, &len, e);
        if (!rc)
            rc = judge_json(s, path, text, len, e);
        if (rc)
            goto out;
        break;
    }
    default:
        break;
    }
    s->complete = true;
done:
    rc = 0;
out:
    sw_free(text);
    close(fd);
    return rc;
}
