/*
 * Fuzz the vLLM boot-log parser and its failure classifier: any bytes must parse (possibly into an
 * empty report) without crashing or reading past the input.
 */
#include <slipway/engine_vllm.h>
#include <slipway/vllm.h>

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
    /* An exact-size heap copy so ASan sees any read past the end. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct sw_vllm_bootlog r;
    if (sw_vllm_bootlog_parse(buf, size, &r, NULL) == 0) {
        json_t *j = sw_vllm_bootlog_json(&r);
        json_decref(j);
    }
    /* and through the engine table, which also decides whether the log is vllm's at all */
    const struct sw_engine *eng = sw_engine_find("vllm");
    json_t *o = NULL;
    struct sw_boot_status st;
    if (eng && eng->bootlog(buf, size, "fuzz", NULL, &o, &st, NULL) == 0)
        json_decref(o);
    free(buf);
    return 0;
}
