/*
 * Fuzz the KV fit with boot figures: a JSON array of [max_model_len, kv_bytes, tokens,
 * concurrency?] (max_model_len kept <= 8192 and S <= 16 so one input is a small search). Any
 * figures must fit or be found inconsistent, never crash; and the fit's defining property must
 * hold: every solution reproduces every fitted boot, so predicting a fitted boot gives exactly
 * its printed tokens.
 */
#include <slipway/calib.h>

#include <math.h>
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
    json_t *j = json_loadb((const char *)data, size, 0, &je);
    if (!json_is_array(j)) {
        json_decref(j);
        return 0;
    }
    static struct sw_calib_kv_fit f;
    memset(&f, 0, sizeof(f));
    snprintf(f.klass, sizeof(f.klass), "fuzz");
    snprintf(f.kv_dtype, sizeof(f.kv_dtype), "fp8");
    f.tp = 1;
    size_t i;
    json_t *p;
    json_array_foreach(j, i, p)
    {
        if (f.n_points >= 8 || !json_is_array(p) || json_array_size(p) < 3)
            break;
        struct sw_calib_kv_point *q = &f.pts[f.n_points];
        memset(q, 0, sizeof(*q));
        q->boot_id = (int64_t)i + 1;
        q->max_model_len = (int64_t)json_integer_value(json_array_get(p, 0));
        q->kv_bytes = (uint64_t)json_integer_value(json_array_get(p, 1));
        q->tokens = (int64_t)json_integer_value(json_array_get(p, 2));
        const json_t *c = json_array_get(p, 3);
        if (json_is_number(c) && json_number_value(c) >= 0 && json_number_value(c) < 1e9) {
            q->has_conc = true;
            q->conc = json_number_value(c);
        }
        if (q->max_model_len > 8192)
            q->max_model_len = 8192;
        f.n_points++;
    }
    json_decref(j);
    struct sw_err e;
    if (sw_calib_kv_fit(&f, NULL, 16, 2, &e) == 0 && f.consistent) {
        for (int k = 0; k < f.n_points; k++) {
            const struct sw_calib_kv_point *q = &f.pts[k];
            struct sw_calib_kv_pred pr;
            if (!q->kv_bytes)
                continue;
            if (sw_calib_kv_predict(&f, q->max_model_len, q->kv_bytes, &pr, &e))
                abort();
            if (pr.tokens.lo != q->tokens || pr.tokens.hi != q->tokens)
                abort();
        }
        struct sw_calib_kv_pred pr;
        uint64_t lo, hi;
        bool ex;
        (void)sw_calib_kv_predict(&f, 4096, 1000000000ull, &pr, &e);
        (void)sw_calib_kv_need(&f, 3000, 3, &lo, &hi, &ex, &e);
    }
    sw_calib_kv_fit_release(&f);
    return 0;
}
