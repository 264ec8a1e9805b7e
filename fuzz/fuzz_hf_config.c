/*
 * Fuzz the config.json reader: any text must parse into a config or fail with a positioned error.
 */
#include <slipway/hf.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    static struct sw_hf_config c; /* large: keep it off the stack */
    if (!init) {
        sw_core_init();
        init = 1;
    }
    struct sw_err e;
    sw_hf_config_parse((const char *)data, size, "fuzz", &c, &e);
    return 0;
}
