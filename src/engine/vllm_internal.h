/*
 * Internal to engine/: the failure classifier shared by the vLLM and SGLang boot-log parsers.
 */
#ifndef SW_ENGINE_VLLM_INTERNAL_H
#define SW_ENGINE_VLLM_INTERNAL_H

#include <slipway/engine_vllm.h>
#include <slipway/vllm.h>

/* A size such as "50.00 MiB", "10.28 GiB", "0 bytes", "1.5 GB" at p; bytes or false. */
bool sw__bootlog_size(const char *p, const char *end, uint64_t *out);
/* Classify failures over the whole log (lines are 1-based); fills out->failure. */
void sw__bootlog_classify(const char *text, size_t len, struct sw_vllm_bootlog *out);
/* vllm_adapter.c: shared with the SGLang adapter (same report fields, same OpenAI error body). */
int sw__vllm_diff(const json_t *predicted, const json_t *printed, const json_t *precision,
                  json_t **out, struct sw_err *e);
int sw__openai_error_shape(int status, const char *body, size_t len, struct sw_engine_error *out);

#endif
