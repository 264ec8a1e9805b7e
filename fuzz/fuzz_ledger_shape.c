/*
 * Fuzz shape canonicalization: any JSON must canonicalize or fail with a message, and what comes
 * out must be a fixed point (canonicalizing the canonical object gives the same text and hash):
 * the hash is stored, so a canonical form that drifted on a second pass would split one shape
 * into two rows.
 */
#include <slipway/ledger.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        sw_core_init();
        init = true;
    }
    json_error_t je;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!j)
        return 0;
    struct sw_err e;
    json_t *c1 = NULL, *c2 = NULL;
    char *t1 = NULL, *t2 = NULL;
    char h1[SW_LEDGER_HASH_LEN + 1], h2[SW_LEDGER_HASH_LEN + 1];
    if (!sw_ledger_shape_canon(j, &c1, &t1, h1, &e)) {
        if (sw_ledger_shape_canon(c1, &c2, &t2, h2, &e) || strcmp(t1, t2) || strcmp(h1, h2))
            abort();
        char sum[256];
        sw_ledger_shape_summary(c1, sum, sizeof(sum));
    } else if (!e.msg[0]) {
        abort(); /* every refusal says why */
    }
    json_decref(c1);
    json_decref(c2);
    sw_free(t1);
    sw_free(t2);
    json_decref(j);
    return 0;
}
