/*
 * Fuzz the safetensors header parser: any byte string, taken as a whole file, must parse or fail
 * with an error; never crash, leak or read out of bounds.
 */
#include <slipway/hf.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        sw_core_init();
        init = 1;
    }
    struct sw_st_file f;
    struct sw_err e;
    if (sw_st_parse_buffer(data, size, "fuzz", &f, &e) == 0)
        sw_st_file_free(&f);
    /* The header alone, with an unknown file size. */
    if (size > 0 && sw_st_parse_header((const char *)data, size, 0, "fuzz", &f, &e) == 0)
        sw_st_file_free(&f);
    return 0;
}
