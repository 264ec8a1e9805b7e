/*
 * swhostile: a hostile OpenAI-style endpoint for tests, made of swhttpd routes (plus one raw
 * socket that never answers). Each function puts one attack on a server from swh_start(), on the
 * paths `slipway probe` asks (GET /health, GET /v1/models, POST /v1/chat/completions):
 *  - invalid UTF-8 in a body (stray continuation bytes, an overlong form, a cut sequence),
 *  - a gzip bomb nobody asked for (Content-Encoding: gzip, small on the wire, huge inflated),
 *  - an auth error whose body quotes the Authorization header it received (the API key),
 *  - a header line of a megabyte,
 *  - a chat completion whose text holds C1 controls (U+009B CSI, U+0085) and an ESC sequence,
 *  - silence: a socket that completes connections (the kernel's accept queue) and never reads
 *    nor writes a byte.
 * What it deliberately does not do: play a whole engine (see swllama for a real one); every
 * other path is swhttpd's 404.
 */
#ifndef SWHOSTILE_H
#define SWHOSTILE_H

#include "swhttpd.h"

#include <stddef.h>

/* GET /health: 200 with a body of invalid UTF-8; POST /v1/chat/completions: 200 with a body of
 * invalid UTF-8 where JSON should be. */
void swx_invalid_utf8(struct swh *s);
/* GET /health and POST /v1/chat/completions: 200, Content-Encoding: gzip, a gzip member that
 * inflates to `inflated` zero bytes (built here: fixed-Huffman copies of 258 bytes, 13 bits
 * each, so 100 MB is about 630 KB on the wire). */
void swx_gzip_bomb(struct swh *s, size_t inflated);
/* GET /health 200; GET /v1/models and POST /v1/chat/completions: 401 with an OpenAI error whose
 * message quotes the request's Authorization header as received, and its token in a URL-encoded
 * and base64 form too. */
void swx_echo_auth(struct swh *s);
/* GET /health: 200 whose headers hold one line of `bytes` bytes. */
void swx_big_header(struct swh *s, size_t bytes);
/* GET /health 200; POST /v1/chat/completions: a valid one-token completion whose content is
 * "OK" followed by U+009B "31m", U+0085, ESC "]0;pwned" BEL and a NUL escape. */
void swx_c1_completion(struct swh *s);

/* A listening socket on 127.0.0.1 that never accepts: connections complete and hear nothing. */
struct swx_silent {
    int fd;
    int port;
    char url[64];
};
void swx_silent_start(struct swx_silent *q);
void swx_silent_stop(struct swx_silent *q);

#endif
