/*
 * memory/llamacpp_compute: an ESTIMATE of llama.cpp's compute buffer (the `sched_reserve: ...
 * compute buffer size` lines). llama.cpp sizes it by building the worst-case prompt graph
 * (n_tokens = min(n_ctx, n_ubatch)) and letting ggml-alloc pack its intermediate tensors
 * (llama_context::sched_reserve, ggml_gallocr_reserve); there is no closed formula, so this is a
 * model of the largest set of tensors alive at once, calibrated against real boots of the pinned
 * llama-server (see docs/llamacpp-law.md for the method and the measured error).
 *
 * The terms (f32 activations of T = n_tokens rows):
 *   - the KQ mask of each KV cache: n_kv x T, f16 with flash attention, f32 without
 *     (src/llama-graph.cpp build_attn_inp_kq_mask);
 *   - without flash attention, the attention scores of the widest layer: n_kv x T x n_head f32;
 *   - the widest layer's working set, per token: the residual, Q and K before and after rope,
 *     V and the attention output (attention layers); the FFN's gate/up pair; the experts' routed
 *     copies; a recurrent layer's projections and state update;
 *   - the logits of the outputs (n_outputs x n_vocab), at the end of the graph, when the layers'
 *     activations are free again.
 * What it does not do: replay ggml-alloc.
 */
#include <slipway/memory.h>

#include <math.h>

const char *const sw_llamacpp_compute_method =
    "peak of the prompt graph's live tensors: KQ masks (n_kv x n_ubatch) + max(FFN phase, "
    "attention phase with the n_kv x n_ubatch x n_head scores when flash attention is off, "
    "logits); per-token terms fitted on the pinned llama-server's CPU boots";

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/*
 * Per-token f32 elements alive at the two candidate peaks of one layer:
 *   attention without flash attention: 3 E + 2 q + 2 k (residual and norm, Q and K before and
 *     after rope, V and the attention output); fits 9 llama-shaped boots to 0.1%;
 *   the FFN phase (with or without flash attention): 3.654 F + 0.93 E + 0.711 q + 0.091 k,
 *     a least-squares fit on 9 llama-shaped boots (E 1536..8192, F 4096..28672), within 7%;
 *     MoE uses k_used x F_exp for F plus the routed copy of the input and the router logits;
 *   recurrent mixers (from the tiny test-llama-archs boots only): Mamba ~ 6 d_inner; Mamba-2 ~
 *     0.8 x (the in-projection + 3 x the conv channels + d_inner); gated delta net ~ 4 x the conv
 *     channels; MiniMax lightning attention ~ 15 E;
 *   MLA (absorbed): 3 E + 2 q + 2 k + n_head x v_head_dim with q, k the latent widths, with or
 *     without flash attention.
 * q, k are the widest layer's n_head x head_dim and n_head_kv x head_dim.
 */
static double ffn_phase(double F, double E, double q, double k)
{
    return 3.654 * F + 0.93 * E + 0.711 * q + 0.091 * k;
}

uint64_t sw_llamacpp_compute_estimate(const struct sw_arch *a, const struct sw_llamacpp_report *r,
                                      uint32_t n_tokens, uint32_t n_outputs, bool flash_attn)
{
    const double T = n_tokens;
    const double E = a->n_embd;
    double ffn = 0, att = 0;
    uint64_t heads_max = 0;

    for (uint32_t il = 0; il < a->n_layer; il++) {
        const struct sw_arch_layer *L = &a->layers[il];
        double q = (double)L->n_head * L->head_dim_k;
        double k = (double)L->n_head_kv * L->head_dim_k;
        if (L->attn != SW_ATTN_NONE) {
            if (a->mla.on)
                att = fmax(att, 3 * E + 2 * q + 2 * k + (double)L->n_head * a->mla.head_dim_v);
            else
                att = fmax(att, 3 * E + 2 * q + 2 * k);
            if (L->n_head > heads_max)
                heads_max = L->n_head;
        }
        if (L->n_ff)
            ffn = fmax(ffn, ffn_phase(L->n_ff, E, q, k));
        if (L->n_expert_used && L->n_ff_exp)
            ffn = fmax(ffn, ffn_phase((double)L->n_expert_used * L->n_ff_exp, E, q, k) + E +
                                2.0 * a->moe.n_expert);
        if (L->recr != SW_RECR_NONE) {
            const struct sw_arch_ssm *s = &a->ssm;
            double conv = (double)s->d_inner + 2.0 * s->n_group * s->d_state;
            double in = 2.0 * s->d_inner + 2.0 * s->n_group * s->d_state + s->dt_rank;
            double rec;
            switch (L->recr) {
            case SW_RECR_MAMBA:
                rec = 6.0 * s->d_inner;
                break;
            case SW_RECR_MAMBA2:
                rec = 0.8 * (in + 3 * conv + s->d_inner);
                break;
            case SW_RECR_GDN:
                rec = 4 * conv;
                break;
            case SW_RECR_LINEAR:
                rec = 15 * E;
                break;
            default: /* short conv, KDA, RWKV: no larger than the attention/FFN phases seen */
                rec = 0;
                break;
            }
            ffn = fmax(ffn, rec);
        }
    }

    uint64_t mask = 0, kv_max = 0;
    for (uint32_t i = 0; i < r->n_kv; i++) {
        if (!r->kv[i].layers)
            continue;
        mask += (uint64_t)r->kv[i].cells * n_tokens * (flash_attn ? 2 : 4);
        kv_max = max_u64(kv_max, r->kv[i].cells);
    }
    double peak = 4 * T * ffn;
    if (!flash_attn)
        peak = fmax(peak, 4 * T * att + (double)kv_max * T * (double)heads_max * 4);
    else
        peak = fmax(peak, 4 * T * att * (a->mla.on ? 1.0 : 0.5));
    /* the logits come last, when the layers' activations are free again */
    peak = fmax(peak, (double)n_outputs * (double)a->n_vocab * 4 + 4 * T * E);
    return mask + (uint64_t)peak;
}
