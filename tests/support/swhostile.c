/*
 * swhostile: the attacks of swhostile.h as swhttpd routes. Plain malloc (like swhttpd), so a
 * test's allocation-failure injection does not reach it.
 */
#include "swhostile.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void health_ok(struct swh *s)
{
    swh_reply(s, "GET", "/health", 200, NULL, "{\"status\":\"ok\"}");
}

void swx_invalid_utf8(struct swh *s)
{
    /* a stray continuation byte, an overlong '/', a lone lead byte, a cut 3-byte sequence */
    swh_reply(s, "GET", "/health", 200, "text/plain", "ok \x80 \xc0\xaf \xff \xe2\x82");
    /* a 200 reply that is not JSON: the parser's message quotes the bytes near the error */
    swh_reply(s, "POST", "/v1/chat/completions", 200, NULL, "\xfe\xfe{\"id\": \"\xc3(\"}");
}

/* ---- a gzip bomb, built by hand (no compression library) ---- */

struct bits {
    unsigned char *p;
    size_t n, cap;
    unsigned acc, nacc;
};

static void put_bits(struct bits *b, unsigned v, unsigned n) /* LSB first */
{
    for (unsigned i = 0; i < n; i++) {
        b->acc |= ((v >> i) & 1u) << b->nacc;
        if (++b->nacc == 8) {
            b->p[b->n++] = (unsigned char)b->acc;
            b->acc = b->nacc = 0;
        }
    }
}

static void put_code(struct bits *b, unsigned code, unsigned n) /* Huffman codes MSB first */
{
    for (unsigned i = n; i-- > 0;)
        put_bits(b, (code >> i) & 1u, 1);
}

static uint32_t crc32_zeros(size_t n)
{
    uint32_t t[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++)
        c = t[c & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

void swx_gzip_bomb(struct swh *s, size_t inflated)
{
    size_t copies = inflated > 1 ? (inflated - 1) / 258 : 0;
    size_t total = 1 + copies * 258; /* one literal zero, then copies of 258 at distance 1 */
    struct bits b = {0};
    b.cap = 64 + copies * 2;
    b.p = calloc(1, b.cap);
    assert_non_null(b.p);
    static const unsigned char gz[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    memcpy(b.p, gz, sizeof(gz));
    b.n = sizeof(gz);
    put_bits(&b, 1, 1);    /* BFINAL */
    put_bits(&b, 1, 2);    /* BTYPE 01: fixed Huffman */
    put_code(&b, 0x30, 8); /* literal 0 */
    for (size_t i = 0; i < copies; i++) {
        put_code(&b, 0xc5, 8); /* length symbol 285: 258 bytes */
        put_code(&b, 0, 5);    /* distance code 0: 1 byte back */
    }
    put_code(&b, 0, 7); /* end of block (256) */
    if (b.nacc)
        put_bits(&b, 0, 8 - b.nacc);
    uint32_t crc = crc32_zeros(total), isz = (uint32_t)total;
    for (int i = 0; i < 4; i++)
        b.p[b.n++] = (unsigned char)(crc >> (8 * i));
    for (int i = 0; i < 4; i++)
        b.p[b.n++] = (unsigned char)(isz >> (8 * i));
    char head[256];
    int h = snprintf(head, sizeof(head),
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     "Content-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n",
                     b.n);
    struct swh_step steps[] = {{.op = SWH_SEND, .data = head, .len = (size_t)h},
                               {.op = SWH_SEND, .data = (const char *)b.p, .len = b.n},
                               {.op = SWH_END}};
    swh_script(s, "GET", "/health", steps);
    swh_script(s, "POST", "/v1/chat/completions", steps);
    free(b.p);
}

/* ---- an auth error that quotes the header ---- */

static int echo_auth(void *ud, int fd, const struct swh_request *rq)
{
    (void)ud;
    char auth[512] = "";
    swh_request_header(rq, "authorization", auth, sizeof(auth));
    const char *tok = strncmp(auth, "Bearer ", 7) ? auth : auth + 7;
    /* the token also as a URL would carry it (%XX for what is not unreserved) */
    char pct[1600] = "";
    size_t o = 0;
    for (const char *c = tok; *c && o + 4 < sizeof(pct); c++) {
        unsigned char u = (unsigned char)*c;
        if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') ||
            u == '-' || u == '.' || u == '_' || u == '~')
            pct[o++] = (char)u;
        else
            o += (size_t)snprintf(pct + o, sizeof(pct) - o, "%%%02X", u);
    }
    pct[o] = '\0';
    char body[4096];
    int bl = snprintf(body, sizeof(body),
                      "{\"error\":{\"message\":\"Incorrect API key provided. You sent "
                      "'Authorization: %s' (also seen as ?key=%s)\","
                      "\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
                      auth, pct);
    char msg[4400];
    int ml = snprintf(msg, sizeof(msg),
                      "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                      "Content-Length: %d\r\n\r\n%s",
                      bl, body);
    return write(fd, msg, (size_t)ml) == ml ? 0 : 1;
}

void swx_echo_auth(struct swh *s)
{
    health_ok(s);
    struct swh_step steps[] = {{.op = SWH_CALL, .fn = echo_auth}, {.op = SWH_END}};
    swh_script(s, "GET", "/v1/models", steps);
    swh_script(s, "POST", "/v1/chat/completions", steps);
}

void swx_big_header(struct swh *s, size_t bytes)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Big: ";
    static const char tail[] = "\r\nContent-Length: 2\r\n\r\n{}";
    size_t n = bytes > 8 ? bytes - 8 : 1;
    struct swh_step steps[] = {{.op = SWH_SEND, .data = head, .len = sizeof(head) - 1},
                               {.op = SWH_REPEAT, .data = "a", .len = 1, .count = n},
                               {.op = SWH_SEND, .data = tail, .len = sizeof(tail) - 1},
                               {.op = SWH_END}};
    swh_script(s, "GET", "/health", steps);
}

void swx_c1_completion(struct swh *s)
{
    health_ok(s);
    swh_reply(s, "POST", "/v1/chat/completions", 200, NULL,
              "{\"id\":\"x\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{"
              "\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
              "\"OK\\u009b31mRED\\u0085\\u001b]0;pwned\\u0007\"},\"finish_reason\":\"length\"}],"
              "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}");
}

/* ---- silence ---- */

void swx_silent_start(struct swx_silent *q)
{
    q->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(q->fd >= 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(q->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(q->fd, 64), 0);
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(q->fd, (struct sockaddr *)&a, &al), 0);
    q->port = ntohs(a.sin_port);
    snprintf(q->url, sizeof(q->url), "http://127.0.0.1:%d", q->port);
}

void swx_silent_stop(struct swx_silent *q)
{
    if (q->fd >= 0)
        close(q->fd);
    q->fd = -1;
}
