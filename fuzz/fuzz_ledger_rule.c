/*
 * Fuzz known-bad rule expressions: any text must parse or fail with a message and an offset
 * inside the text; a parsed rule must evaluate (against a shape with every kind of value) without
 * crashing.
 */
#include <slipway/ledger.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *canon;
    if (!canon) {
        sw_core_init();
        json_error_t je;
        json_t *shape = json_loads(
            "{\"engine\":\"vllm\",\"engine_profile\":\"fork\",\"model\":{\"name\":\"Q\","
            "\"quant\":\"fp8\"},\"tp\":2,\"ctx\":262144,\"slots\":2,\"ctk\":\"f16\",\"ctv\":"
            "\"q8_0\",\"kv_bytes\":\"3.15e9\",\"util\":0.98,\"flags\":{\"a\":true,\"b\":\"32x64\","
            "\"c\":[1,2],\"d\":{\"e\":1.5}}}",
            0, &je);
        struct sw_err e;
        if (!shape || sw_ledger_shape_canon(shape, &canon, NULL, NULL, &e))
            abort();
        json_decref(shape);
    }
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct sw_ledger_rule *r = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    if (!sw_ledger_rule_parse(s, &r, &e)) {
        sw_ledger_rule_eval(r, canon);
        sw_ledger_rule_free(r);
    } else if (!e.msg[0] || e.offset > (int64_t)size) {
        abort();
    }
    free(s);
    return 0;
}
