/*
 * Fuzz the manifest reader: any bytes, parsed as JSON and read as a payload manifest, must load or
 * fail with an error naming where; a manifest that loads must survive to_json -> from_json with
 * the same files (paths stay safe relative paths, hashes stay 64 lowercase hex).
 */
#include <slipway/payload.h>

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
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!j)
        return 0;
    struct sw_payload_manifest m, back;
    struct sw_err e;
    if (sw_payload_manifest_from_json(j, "fuzz", &m, &e) == 0) {
        for (size_t i = 0; i < m.n_files; i++) {
            if (!sw_payload_path_ok(m.files[i].path))
                abort();
            size_t hl = strlen(m.files[i].sha256);
            if (hl != 0 && hl != 64)
                abort();
        }
        json_t *out = sw_payload_manifest_to_json(&m);
        if (out) {
            if (sw_payload_manifest_from_json(out, "fuzz2", &back, &e) != 0)
                abort();
            if (back.n_files != m.n_files)
                abort();
            for (size_t i = 0; i < m.n_files; i++) {
                const struct sw_payload_file *a = &m.files[i];
                const struct sw_payload_file *b = sw_payload_manifest_find(&back, a->path);
                if (!b || b->size_known != a->size_known || b->size != a->size ||
                    strcmp(b->sha256, a->sha256) || b->lfs != a->lfs)
                    abort();
            }
            sw_payload_manifest_free(&back);
            json_decref(out);
        }
        sw_payload_manifest_free(&m);
    }
    json_decref(j);
    return 0;
}
