/*
 * memory/llamacpp_report: the llama.cpp law's prediction as JSON (the `report` object that
 * engine/llamacpp's boot-log parser also prints for a real boot) and as the lines llama-server
 * prints.
 *
 * The lines are printed as llama.cpp's format strings print them: the `size = ` lines of
 * llama_kv_cache and llama_memory_recurrent cast bytes/MiB to float and print "%7.2f"
 * (src/llama-kv-cache.cpp, src/llama-memory-recurrent.cpp); the buffer lines divide in double and
 * print "%8.2f" (llama_model_base::load_tensors, llama_context::output_reserve, sched_reserve).
 *
 * What it does not do: parse logs or compare a prediction with a boot: engine/llamacpp's boot-log
 * parser reads what was printed (struct sw_bootlog_report) and its differ compares the two JSON
 * reports field by field, to the printed precision.
 */
#include <slipway/memory.h>

#include <stdio.h>
#include <string.h>

const char *sw_llamacpp_mib_f(uint64_t bytes, char *out, size_t n)
{
    float mib = (float)bytes / (1024.0f * 1024.0f);
    snprintf(out, n, "%.2f", (double)mib);
    return out;
}

const char *sw_llamacpp_mib_d(uint64_t bytes, char *out, size_t n)
{
    snprintf(out, n, "%.2f", (double)bytes / 1024.0 / 1024.0);
    return out;
}

json_t *sw_llamacpp_report_to_json(const struct sw_llamacpp_report *r)
{
    json_t *j = json_object(), *kvs = json_array();
    int bad = 0; /* any failed set: jansson drops the key, so the object would be short */
    if (!j || !kvs)
        goto fail;
    bad |= sw_json_set_int(j, "n_ctx", r->n_ctx);
    bad |= sw_json_set_int(j, "n_ctx_seq", r->n_ctx_seq);
    bad |= sw_json_set_int(j, "n_seq_max", r->n_seq_max);
    bad |= sw_json_set_bool(j, "kv_unified", r->kv_unified);
    for (uint32_t i = 0; i < r->n_kv; i++) {
        const struct sw_llamacpp_kv *k = &r->kv[i];
        json_t *o = json_object();
        if (!o)
            goto fail;
        bad |= sw_json_set_int(o, "cells", k->cells);
        bad |= sw_json_set_int(o, "layers", k->layers);
        bad |= sw_json_set_int(o, "seqs", k->seqs);
        bad |= sw_json_set_int(o, "streams", k->streams);
        bad |= sw_json_set_str(o, "k_type", sw_kv_type_name(k->k_type));
        bad |= sw_json_set_str(o, "v_type", sw_kv_type_name(k->v_type));
        bad |= sw_json_set_int(o, "k_bytes", (int64_t)k->k_bytes);
        bad |= sw_json_set_int(o, "v_bytes", (int64_t)k->v_bytes);
        bad |= sw_json_set_bool(o, "swa", k->swa);
        bad |= json_array_append_new(kvs, o);
    }
    bad |= sw_json_set_new(j, "kv_caches", kvs);
    kvs = NULL;
    if (r->has_recurrent) {
        json_t *o = json_object();
        if (!o)
            goto fail;
        bad |= sw_json_set_int(o, "cells", r->recurrent.cells);
        bad |= sw_json_set_int(o, "layers", r->recurrent.layers);
        bad |= sw_json_set_int(o, "r_bytes", (int64_t)r->recurrent.r_bytes);
        bad |= sw_json_set_int(o, "s_bytes", (int64_t)r->recurrent.s_bytes);
        bad |= sw_json_set_new(j, "recurrent", o);
    } else {
        bad |= sw_json_set_new(j, "recurrent", json_null());
    }
    if (r->model_known)
        bad |= sw_json_set_int(j, "model_bytes", (int64_t)r->model_bytes);
    else
        bad |= sw_json_set_new(j, "model_bytes", json_null());
    bad |= sw_json_set_int(j, "output_bytes", (int64_t)r->output_bytes);
    if (r->compute_known)
        bad |= sw_json_set_int(j, "compute_bytes", (int64_t)r->compute_bytes);
    else
        bad |= sw_json_set_new(j, "compute_bytes", json_null());
    if (bad)
        goto fail;
    return j;
fail:
    json_decref(j);
    json_decref(kvs);
    return NULL;
}

json_t *sw_llamacpp_plan_to_json(const struct sw_llamacpp_plan *p)
{
    json_t *j = json_object(), *devs = json_array(), *warns = json_array(), *budget = json_object();
    json_t *server = json_object();
    int bad = 0; /* any failed set: jansson drops the key, so the object would be short */
    uint64_t tot[6] = {0}, tot_x[5] = {0};
    if (!j || !devs || !warns || !budget || !server)
        goto fail;
    bad |= sw_json_set_new(j, "report", sw_llamacpp_report_to_json(&p->report));
    for (int d = 0; d < p->n_dev; d++) {
        const struct sw_llamacpp_device *x = &p->dev[d];
        json_t *o = json_object();
        if (!o)
            goto fail;
        bad |= sw_json_set_str(o, "device", x->name);
        bad |= sw_json_set_int(o, "weights", (int64_t)x->weights);
        bad |= sw_json_set_int(o, "kv", (int64_t)x->kv);
        bad |= sw_json_set_int(o, "recurrent", (int64_t)x->recurrent);
        bad |= sw_json_set_int(o, "compute", (int64_t)x->compute);
        bad |= sw_json_set_int(o, "output", (int64_t)x->output);
        if (p->has_draft) {
            bad |= sw_json_set_int(o, "draft_weights", (int64_t)x->draft_weights);
            bad |= sw_json_set_int(o, "draft_kv", (int64_t)x->draft_kv);
            bad |= sw_json_set_int(o, "draft_compute", (int64_t)x->draft_compute);
            tot_x[0] += x->draft_weights;
            tot_x[1] += x->draft_kv;
            tot_x[2] += x->draft_compute;
        }
        if (p->has_projector) {
            bad |= sw_json_set_int(o, "projector_weights", (int64_t)x->projector_weights);
            bad |= sw_json_set_int(o, "projector_compute", (int64_t)x->projector_compute);
            tot_x[3] += x->projector_weights;
            tot_x[4] += x->projector_compute;
        }
        bad |= sw_json_set_int(o, "total", (int64_t)x->total);
        if (x->memory) {
            bad |= sw_json_set_int(o, "memory", (int64_t)x->memory);
            bad |= sw_json_set_int(o, "free", (int64_t)x->memory - (int64_t)x->total);
        }
        bad |= json_array_append_new(devs, o);
        tot[0] += x->weights;
        tot[1] += x->kv;
        tot[2] += x->recurrent;
        tot[3] += x->compute;
        tot[4] += x->output;
        tot[5] += x->total;
    }
    bad |= sw_json_set_new(budget, "devices", devs);
    devs = NULL;
    bad |= sw_json_set_new(budget, "total",
                           json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "weights", (json_int_t)tot[0],
                                     "kv", (json_int_t)tot[1], "recurrent", (json_int_t)tot[2],
                                     "compute", (json_int_t)tot[3], "output", (json_int_t)tot[4],
                                     "total", (json_int_t)tot[5]));
    json_t *bt = json_object_get(budget, "total");
    if (p->has_draft) {
        bad |= sw_json_set_int(bt, "draft_weights", (int64_t)tot_x[0]);
        bad |= sw_json_set_int(bt, "draft_kv", (int64_t)tot_x[1]);
        bad |= sw_json_set_int(bt, "draft_compute", (int64_t)tot_x[2]);
        json_t *dr = json_object();
        bad |= sw_json_set_new(dr, "report", sw_llamacpp_report_to_json(&p->draft));
        bad |= sw_json_set_str(dr, "from", p->draft_from);
        bad |= sw_json_set_new(j, "draft", dr);
    }
    if (p->has_projector) {
        bad |= sw_json_set_int(bt, "projector_weights", (int64_t)tot_x[3]);
        bad |= sw_json_set_int(bt, "projector_compute", (int64_t)tot_x[4]);
        json_t *pr = json_object();
        bad |= sw_json_set_str(pr, "from", p->projector_from);
        bad |= sw_json_set_new(j, "projector", pr);
    }
    bad |= sw_json_set_new(j, "budget", budget);
    budget = NULL;
    bad |= sw_json_set_int(server, "n_slots", p->n_slots);
    bad |= sw_json_set_int(server, "n_ctx_slot", p->n_ctx_slot);
    bad |= sw_json_set_int(server, "n_batch", p->report.n_batch);
    bad |= sw_json_set_int(server, "n_ubatch", p->report.n_ubatch);
    bad |= sw_json_set_bool(server, "flash_attn", p->flash_attn);
    bad |= sw_json_set_new(j, "server", server);
    server = NULL;
    bad |= sw_json_set_str(j, "compute_method", p->compute_method);
    for (int i = 0; i < p->n_warn; i++)
        bad |= json_array_append_new(warns, json_string(p->warn[i]));
    bad |= sw_json_set_new(j, "warnings", warns);
    warns = NULL;
    if (bad)
        goto fail;
    return j;
fail:
    json_decref(j);
    json_decref(devs);
    json_decref(warns);
    json_decref(budget);
    json_decref(server);
    return NULL;
}

int sw_llamacpp_kv_line(struct sw_buf *out, const char *prefix, const struct sw_llamacpp_kv *k)
{
    char a[32], b[32], c[32];
    return sw_buf_printf(
               out,
               "%sllama_kv_cache: size = %7s MiB (%6u cells, %3u layers, %2u/%u seqs), K (%s): %7s "
               "MiB, V (%s): %7s MiB\n",
               prefix, sw_llamacpp_mib_f(k->k_bytes + k->v_bytes, a, sizeof(a)), k->cells,
               k->layers, k->seqs, k->streams, sw_kv_type_name(k->k_type),
               sw_llamacpp_mib_f(k->k_bytes, b, sizeof(b)), sw_kv_type_name(k->v_type),
               sw_llamacpp_mib_f(k->v_bytes, c, sizeof(c)))
               ? SW_ENOMEM
               : 0;
}

int sw_llamacpp_recurrent_line(struct sw_buf *out, const char *prefix,
                               const struct sw_llamacpp_recurrent *x)
{
    char a[32], b[32], c[32], d[32];
    return sw_buf_printf(out,
                         "%sllama_memory_recurrent: size = %7s MiB (%6u cells, %3u layers, %2u "
                         "seqs %2u rs_seq), R (f32): %7s MiB, S (f32): %7s MiB, P (f32): %7s "
                         "MiB\n",
                         prefix, sw_llamacpp_mib_f(x->r_bytes + x->s_bytes, a, sizeof(a)), x->cells,
                         x->layers, x->seqs, x->rs_seq, sw_llamacpp_mib_f(x->r_bytes, b, sizeof(b)),
                         sw_llamacpp_mib_f(x->s_bytes, c, sizeof(c)),
                         sw_llamacpp_mib_f(0, d, sizeof(d)))
               ? SW_ENOMEM
               : 0;
}

int sw_llamacpp_print_lines(const struct sw_llamacpp_report *r, struct sw_buf *out)
{
    char a[32];
    int rc = 0;
    rc |= sw_buf_printf(out, "llama_context: n_seq_max             = %u\n", r->n_seq_max);
    rc |= sw_buf_printf(out, "llama_context: n_ctx                 = %u\n", r->n_ctx);
    rc |= sw_buf_printf(out, "llama_context: n_ctx_seq             = %u\n", r->n_ctx_seq);
    rc |= sw_buf_printf(out, "llama_context: n_batch               = %u\n", r->n_batch);
    rc |= sw_buf_printf(out, "llama_context: n_ubatch              = %u\n", r->n_ubatch);
    rc |= sw_buf_printf(out, "llama_context: kv_unified            = %s\n",
                        r->kv_unified ? "true" : "false");
    rc |= sw_buf_printf(out, "llama_context:  output buffer size = %8s MiB\n",
                        sw_llamacpp_mib_d(r->output_bytes, a, sizeof(a)));
    for (uint32_t i = 0; i < r->n_kv; i++) {
        const struct sw_llamacpp_kv *k = &r->kv[i];
        if (r->n_kv > 1)
            rc |= sw_buf_printf(out, "llama_kv_cache_iswa: creating %s KV cache, size = %u cells\n",
                                k->swa ? "    SWA" : "non-SWA", k->cells);
        rc |= sw_llamacpp_kv_line(out, "", k);
    }
    if (r->has_recurrent)
        rc |= sw_llamacpp_recurrent_line(out, "", &r->recurrent);
    if (r->model_known)
        rc |= sw_buf_printf(out, "load_tensors: model buffer size (sum) = %8s MiB\n",
                            sw_llamacpp_mib_d(r->model_bytes, a, sizeof(a)));
    if (r->compute_known)
        rc |= sw_buf_printf(out, "sched_reserve: compute buffer size (sum, estimate) = %8s MiB\n",
                            sw_llamacpp_mib_d(r->compute_bytes, a, sizeof(a)));
    return rc ? SW_ENOMEM : 0;
}
