/*
 * Fuzz the SGLang boot-log parser (shares the failure classifier with vLLM's).
 */
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/sglang.h>

#include <slipway/engine.h>

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
    /* and through the engine table, which also decides whether the log is sglang's at all */
    const struct sw_engine *eng = sw_engine_find("sglang");
    json_t *o = NULL;
    struct sw_boot_status st;
    if (eng && eng->bootlog(buf, size, "fuzz", NULL, &o, &st, NULL) == 0)
        json_decref(o);
    free(buf);
    return 0;
}
