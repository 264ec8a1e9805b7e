/*
 * Fuzz the llama.cpp boot-log parser: any bytes must parse (never crash, never read past the
 * input, never emit invalid JSON), and a report must diff as a match against itself.
 */
#include <slipway/engine.h>

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        sw_core_init();
        init = true;
    }
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    struct sw_bootlog_hints h = {.exited = size & 1, .exit_code = 1, .exit_signal = 0};
    json_t *o = NULL, *d = NULL;
    struct sw_boot_status st;
    struct sw_err e;
    if (eng->bootlog((const char *)data, size, "fuzz", (size & 2) ? &h : NULL, &o, &st, &e))
        return 0; /* only ENOMEM can fail */
    char *text = json_dumps(o, JSON_COMPACT);
    if (!text)
        abort(); /* a message or a type name that is not valid UTF-8 */
    free(text);
    if (eng->diff(o, o, NULL, &d, &e) == 0) {
        if (!json_is_true(json_object_get(d, "match")))
            abort();
        json_decref(d);
    }
    if (st.failed != json_is_object(json_object_get(o, "failure")))
        abort();
    json_decref(o);
    return 0;
}
