/*
 * engine/sglang: the SGLang adapter over the law in slipway/sglang.h: `python -m
 * sglang.launch_server` command lines parsed into the law's options and planned, argv +
 * environment rendered for a fleet endpoint, and SGLang boot logs parsed into the boot-log struct
 * vLLM's parser fills (slipway/engine_vllm.h).
 *
 * What it does not do: the pool arithmetic (memory/sglang, slipway/sglang.h) or launch anything.
 */
#ifndef SLIPWAY_ENGINE_SGLANG_H
#define SLIPWAY_ENGINE_SGLANG_H

#include <slipway/core.h>
#include <slipway/engine.h>
#include <slipway/engine_vllm.h>
#include <slipway/sglang.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fleet_endpoint;

/* SGLang's flags, one row each (engine/sglang_flags.c): read into struct sw_sglang_opts and
 * struct sw_engine_argv (engine_vllm.h), rendered from a fleet endpoint in the rows' order. */
extern const struct sw_flag_table sw_sglang_flags;

/* `python -m sglang.launch_server --model-path DIR [flags]` (or `sglang serve`), verbatim, read
 * through sw_sglang_flags into o and line (OUT); flags the law does not model in `ignored`. */
int sw_sglang_read_argv(int argc, char **argv, struct sw_sglang_opts *o,
                        struct sw_engine_argv *line, char *ignored, size_t ignored_n,
                        struct sw_err *e);
/* A command line the adapter rendered (sw_sglang_render_endpoint: its program first, python3 -m
 * sglang.launch_server or the endpoint's binary), read as sw_sglang_read_argv reads one. */
int sw_sglang_read_cmd(const struct sw_engine_cmd *c, struct sw_sglang_opts *o,
                       struct sw_engine_argv *line, struct sw_err *e);
/* The same, for the model directory alone (OUT: points into argv). */
int sw_sglang_parse_argv(int argc, char **argv, struct sw_sglang_opts *o, const char **model_dir,
                         char *ignored, size_t ignored_n, struct sw_err *e);
int sw_sglang_plan_argv(int argc, char **argv, const struct sw_sglang_opts *facts,
                        struct sw_sglang_report *r, struct sw_err *e);

/* Argv + environment for a fleet endpoint (engine sglang); see sw_vllm_render_endpoint. An
 * endpoint with an api_key is refused: SGLang takes the key only on argv. */
int sw_sglang_render_endpoint(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out,
                              struct sw_err *e);

/* Parse an SGLang boot log into the shared boot-log struct (engine "sglang"). */
int sw_sglang_bootlog_parse(const char *text, size_t len, struct sw_vllm_bootlog *out,
                            struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
