/*
 * bench/roof_hf: the decode roofline of a vLLM or SGLang plan (a Hugging Face checkpoint). The
 * same ceiling as roof.c's (bandwidth over the bytes one decoded token reads), with the bytes from
 * the engine's own view:
 *   - weights by role: the endpoint's inline `arch` `weights` when declared, else the safetensors
 *     headers of the checkpoint directory when it is on this machine (tensor names: the embedding
 *     table, the lm head, routed experts); every weight but the embedding table (one row a token;
 *     a tied head reads the whole table), routed experts at num_experts_per_tok / num_experts;
 *   - KV per context token by the engine's law: vLLM's per-layer specs of every pipeline stage
 *     (sw_vllm_specs: K+V or the MLA latent, per-token scales, a fork's extra bytes, KV heads per
 *     TP rank), a sliding-window or chunked-local layer capped at its window; SGLang's cell (its
 *     KV bytes a token over the KV layers of one rank), the sliding layers' share capped at the
 *     window (SGLang stores them whole; attention reads the window);
 *   - recurrent state per sequence: vLLM's mamba specs' state, SGLang's mamba state per request.
 * Tensor parallel: each rank reads its share (weights / tp; KV and state are already per rank in
 * both laws, an MLA latent replicated) at its own device's bandwidth, so the figures are per rank
 * and the bandwidth the slowest device's. Pipeline stages run one after another for one sequence:
 * their bytes add up.
 *
 * What it deliberately does not do: the draft (MTP / EAGLE) layers' reads, activations, or a
 * quantized checkpoint's dequantization cost.
 */
#include "bench_internal.h"

#include <slipway/fleet.h>
#include <slipway/hf.h>
#include <slipway/plan.h>
#include <slipway/sglang.h>
#include <slipway/vllm.h>

#include <dirent.h>
#include <stdio.h>
#include <string.h>

struct hf_weights {
    uint64_t total, embd, output, experts;
};

static int declared_field(const json_t *w, const char *k, uint64_t *out, const char *where,
                          struct sw_err *e)
{
    const json_t *v = json_object_get(w, k);
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v) && sw_parse_bytes(json_string_value(v), out, NULL) == 0)
        return 0;
    return sw_err_set(e, SW_EPARSE, "%s: arch.weights.%s must be a byte count", where, k);
}

/* The endpoint's inline `arch` `weights` ({total} or by role). 1 when declared, 0 when not. */
static int declared_weights(const struct sw_fleet_endpoint *ep, struct hf_weights *w, char *src,
                            size_t srcn, struct sw_err *e)
{
    const json_t *d = ep->arch ? json_object_get(ep->arch, "weights") : NULL;
    if (!json_is_object(d))
        return 0;
    char where[300];
    snprintf(where, sizeof(where), "%s:%d:%d: %s", ep->arch_at.file ? ep->arch_at.file : "fleet",
             ep->arch_at.line, ep->arch_at.col, ep->name);
    static const char *const roles[] = {"attn", "ffn", "ssm", "norm", "other"};
    uint64_t sum = 0, x, total = 0;
    int rc = declared_field(d, "embd", &w->embd, where, e);
    if (!rc)
        rc = declared_field(d, "output", &w->output, where, e);
    if (!rc)
        rc = declared_field(d, "experts", &w->experts, where, e);
    if (!rc)
        rc = declared_field(d, "total", &total, where, e);
    sum = w->embd + w->output + w->experts;
    for (size_t i = 0; !rc && i < SW_ARRAY_LEN(roles); i++) {
        x = 0;
        rc = declared_field(d, roles[i], &x, where, e);
        sum += x;
    }
    if (rc)
        return rc;
    w->total = total ? total : sum;
    if (!w->total || w->embd + w->output + w->experts > w->total)
        return sw_err_set(e, SW_EPARSE,
                          "%s: arch.weights: a total (or the roles' bytes) at least embd + "
                          "output + experts",
                          where);
    snprintf(src, srcn, "declared (%s arch.weights)", ep->name);
    return 1;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* Every *.safetensors header in dir, the tensors' bytes by role from their names. 1 when found. */
static int checkpoint_weights(const char *dir, struct hf_weights *w, char *src, size_t srcn,
                              struct sw_err *e)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return 0;
    int rc = 0, files = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d)) != NULL) {
        if (!ends_with(de->d_name, ".safetensors"))
            continue;
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct sw_st_file f;
        rc = sw_st_read(path, &f, e);
        if (rc)
            break;
        files++;
        for (size_t i = 0; i < f.n_tensors; i++) {
            const struct sw_st_tensor *t = &f.tensors[i];
            uint64_t b = t->end - t->begin;
            w->total += b;
            if (strstr(t->name, "embed_tokens") || strstr(t->name, "word_embeddings") ||
                strstr(t->name, ".wte."))
                w->embd += b;
            else if (strstr(t->name, "lm_head"))
                w->output += b;
            else if (strstr(t->name, ".experts.") && !strstr(t->name, "shared_expert"))
                w->experts += b;
        }
        sw_st_file_free(&f);
    }
    closedir(d);
    if (rc)
        return rc;
    if (!files || !w->total)
        return 0;
    snprintf(src, srcn, "checkpoint (%d safetensors file%s in %.200s)", files,
             files == 1 ? "" : "s", dir);
    return 1;
}

/* The active weights of one token on one rank. */
static void active_weights(const struct hf_weights *w, const struct sw_hf_config *c, int tp,
                           struct sw_bench_roof *r)
{
    double active = (double)w->total;
    if (w->output > 0) /* an untied head: the table is read one row a token */
        active -= (double)w->embd;
    if (w->experts > 0 && c->num_experts > 0 && c->num_experts_per_tok > 0 &&
        c->num_experts_per_tok < c->num_experts)
        active -=
            (double)w->experts * (1.0 - (double)c->num_experts_per_tok / (double)c->num_experts);
    r->weight_bytes = active / tp;
    r->total_weight_bytes = (double)w->total;
}

static int vllm_kv(const struct sw_hf_config *c, const struct sw_vllm_opts *o,
                   struct sw_bench_roof *r, struct sw_err *e)
{
    struct sw_vllm_spec *specs = sw_calloc(SW_VLLM_MAX_SPECS, sizeof(*specs));
    if (!specs)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = 0, pp = o->pp > 0 ? o->pp : 1;
    for (int stage = 0; stage < pp && !rc; stage++) {
        int n = 0;
        rc = sw_vllm_specs(c, o, stage, specs, &n, e);
        for (int i = 0; !rc && i < n && i < SW_VLLM_MAX_SPECS; i++) {
            struct sw_vllm_spec s = specs[i];
            if (s.draft || s.kind == SW_VLLM_ENCODER_ONLY)
                continue;
            /* one token's page: the real bytes, not the hybrid alignment's padding */
            s.block_size = 1;
            s.page_size_padded = 0;
            double b = (double)sw_vllm_page_bytes(&s);
            int64_t win = s.kind == SW_VLLM_SLIDING   ? s.sliding_window
                          : s.kind == SW_VLLM_CHUNKED ? s.chunk_size
                                                      : 0;
            if (s.kind == SW_VLLM_MAMBA) {
                r->state_bytes += b;
            } else if (win > 0) {
                r->kv_swa_bytes_per_token += b;
                if (win > r->swa_window)
                    r->swa_window = win;
            } else {
                r->kv_bytes_per_token += b;
            }
        }
    }
    sw_free(specs);
    return rc;
}

static void sglang_kv(const struct sw_hf_config *c, const struct sw_sglang_report *s,
                      struct sw_bench_roof *r)
{
    if (s->kv_layers <= 0)
        return;
    double per_layer = (double)s->cell_bytes / (double)s->kv_layers;
    int64_t n_swa =
        sw_hf_count_kind(c, SW_HF_LAYER_SLIDING) + sw_hf_count_kind(c, SW_HF_LAYER_CHUNKED);
    if (n_swa > s->kv_layers || c->sliding_window <= 0)
        n_swa = 0;
    r->kv_bytes_per_token = per_layer * (double)(s->kv_layers - n_swa);
    r->kv_swa_bytes_per_token = per_layer * (double)n_swa;
    r->swa_window = n_swa ? c->sliding_window : 0;
    r->state_bytes = (double)s->mamba_cache_per_req;
}

int sw__bench_roof_hf(const struct sw_plan *p, struct sw_bench_roof *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = p->ep;
    bool vllm = p->vllm && p->vllm_opts;
    if (!vllm && !(p->sglang && p->sglang_opts))
        return sw_err_set(e, SW_EUNSUPPORTED, "roofline: %s: the plan has no vLLM or SGLang law",
                          ep->name);
    int tp = vllm ? p->vllm_opts->tp : p->sglang_opts->tp;
    if (tp < 1)
        tp = 1;
    struct sw_hf_config *c = sw_calloc(1, sizeof(*c));
    if (!c)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    char src[700];
    int rc = sw_endpoint_hf_config(ep, c, src, sizeof(src), e);
    if (rc)
        goto out;
    struct hf_weights w;
    memset(&w, 0, sizeof(w));
    int got = declared_weights(ep, &w, r->weights_from, sizeof(r->weights_from), e);
    if (got == 0) {
        memset(&w, 0, sizeof(w));
        got =
            checkpoint_weights(ep->payload.path.v, &w, r->weights_from, sizeof(r->weights_from), e);
    }
    if (got < 0) {
        rc = got;
        goto out;
    }
    if (!got) {
        rc = sw_err_set(e, SW_ENOENT,
                        "roofline: the weights of %s are not known (no safetensors in %s here, no "
                        "`weights` in its arch)",
                        ep->name, ep->payload.path.v ? ep->payload.path.v : "(no payload path)");
        goto out;
    }
    active_weights(&w, c, tp, r);
    if (vllm)
        rc = vllm_kv(c, p->vllm_opts, r, e);
    else
        sglang_kv(c, p->sglang, r);
    if (rc)
        goto out;
    r->ranks = tp;
    r->known = true;
out:
    sw_free(c);
    return rc;
}
