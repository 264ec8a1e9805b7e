/*
 * Fuzz body sniffing: the first byte picks the file name (so the kind: safetensors, GGUF, JSON,
 * other, document), the next 4 bytes a "size the file will have" for the head check, the rest is
 * the body. Every path (head judgement while streaming, whole-body judgement through model/hf,
 * model/gguf and jansson, the safe quoting of first bytes) must return a verdict; never crash,
 * leak or read out of bounds. A rejected body must say why and quote printable ASCII only.
 */
#include <slipway/payload.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {"model-00001-of-00002.safetensors", "model.gguf", "config.json",
                                    "tokenizer.model", "README.md"};

static void check_verdict(int rc, const struct sw_payload_sniff *s)
{
    if (rc != 0 && rc != SW_EMISMATCH && rc != SW_ENOMEM)
        abort();
    if (rc == SW_EMISMATCH && (s->body == SW_PAYLOAD_BODY_OK || !s->msg[0]))
        abort();
    for (const char *p = s->head; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        sw_core_init();
        init = 1;
    }
    if (size < 5)
        return 0;
    const char *name = names[data[0] % (sizeof(names) / sizeof(names[0]))];
    uint32_t claimed = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
                       (uint32_t)data[4] << 24;
    const uint8_t *body = data + 5;
    size_t n = size - 5;
    struct sw_payload_sniff s;
    struct sw_err e;
    /* a copy of exactly n bytes, so ASan sees any read past the body */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
        return 0;
    memcpy(copy, body, n);
    check_verdict(sw_payload_sniff_head(name, copy, n, claimed, &s, &e), &s);
    check_verdict(sw_payload_sniff_head(name, copy, n < 4096 ? n : 4096, n, &s, &e), &s);
    check_verdict(sw_payload_sniff_mem(name, copy, n, &s, &e), &s);
    char q[64];
    sw_payload_quote(copy, n, claimed % 100, q, (claimed >> 8) % sizeof(q) + 1);
    free(copy);
    return 0;
}
