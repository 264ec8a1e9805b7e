/*
 * Fuzz the SGLang boot-log parser (shares the failure classifier with vLLM's).
 */
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/sglang.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        sw_core_init();
        init = 1;
    }
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct sw_vllm_bootlog r;
    sw_sglang_bootlog_parse(buf, size, &r, NULL);
    json_decref(sw_vllm_bootlog_json(&r));
    free(buf);
    return 0;
}
