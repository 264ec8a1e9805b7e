/*
 * Fuzz the GGUF header reader (sw_gguf_parse_mem): any bytes must parse or fail cleanly, without
 * a crash, a leak, undefined behaviour or an allocation out of proportion to the input. A parsed
 * header is also walked through the getters and the JSON summary, so they see hostile values too.
 * The same bytes are read again with a fork type declared (id 115, the ROCmFPX Q8_0 geometry), so
 * a declared type's size arithmetic sees hostile shapes (corpus seed fork_type_115), and a third
 * time as a remote reader holds them: the first half only, header-only, against the whole size
 * (sw_gguf_parse_head), where a `need` must lie past the bytes held and within the file.
 */
#include <slipway/gguf.h>

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        sw_core_init();
        init = true;
    }
    static const struct sw_ggml_type fork[] = {{115, "Q8_0_ROCMFPX", 32, 33}};
    const struct sw_gguf_types x = {fork, 1, "fuzz"};
    for (int pass = 0; pass < 3; pass++) {
        struct sw_gguf *g = NULL;
        struct sw_err e;
        if (pass == 2) {
            const struct sw_gguf_read_opts ho = {.header_only = true};
            uint64_t need = 0;
            if (sw_gguf_parse_head(data, size / 2, size, "fuzz.gguf", &ho, &need, &g, &e)) {
                if (need && (need <= size / 2 || need > size))
                    abort();
                continue;
            }
        } else if (sw_gguf_parse_mem_types(data, size, "fuzz.gguf", pass ? &x : NULL, &g, &e)) {
            continue;
        }
        uint64_t u, pl[8];
        double f;
        const char *s;
        sw_gguf_arch_u64(g, "block_count", &u);
        sw_gguf_arch_f64(g, "rope.freq_base", &f);
        sw_gguf_arch_per_layer(g, "attention.head_count_kv", pl, 8);
        sw_gguf_get_str(g, "general.name", &s);
        for (uint64_t i = 0; i < g->n_kv && i < 64; i++) {
            sw_gguf_find(g, g->kv[i].key.s);
            sw_gguf_get_u64(g, g->kv[i].key.s, &u);
            sw_gguf_key_err(g, g->kv[i].key.s, "u64", SW_EPARSE, &e);
        }
        for (uint64_t i = 0; i < g->n_tensors && i < 64; i++) {
            sw_gguf_tensor(g, g->tensors[i].name.s);
            sw_gguf_type(g, g->tensors[i].type);
        }
        json_t *j = sw_gguf_to_json(g, true);
        json_decref(j);
        sw_gguf_free(g);
    }
    return 0;
}
