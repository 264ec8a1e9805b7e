/*
 * Import (module `import`): the fleet the operator already runs, read from what he already has
 * (a systemd unit running an engine natively or through `podman run`/`docker run`, its
 * EnvironmentFile, an engine command line, a KEY=VALUE env file) and written as a fleet file in
 * which every value carries a YAML comment naming where it came from (file:line).
 *
 * It reuses the readers that exist: the unit scanner of the lint (sw_unit_parse: systemd's lines,
 * its word splitting and $VAR/${VAR} expansion, the container and the engine in it), the env-file
 * parser of the fleet (sw_fleet_envfile_parse) and the engines' flag tables (memory.h "Engine
 * command lines as flag tables"): it parses nothing itself. A value that comes from a variable of
 * the env file is not copied: the endpoint imports it through `env_file.map`, so the env file
 * stays the place the operator edits. A secret (a KEY/TOKEN/SECRET/PASS-like name, a value that
 * looks like a key) never enters the fleet: it stays in the env file, and the fleet references it
 * (`{from_env: NAME}`). What cannot be imported is said line by line (struct sw_import_note),
 * never guessed.
 *
 * What it does not do: deploy, install or change anything on a host; guess hosts' devices, the
 * model's architecture or a profile (the `--into` fleet holds those); edit a fleet's comments
 * (a merge replaces whole keys of an endpoint, each named).
 */
#ifndef SLIPWAY_IMPORT_H
#define SLIPWAY_IMPORT_H

#include <slipway/core.h>

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SW_IMPORT_NOTES_MAX 512

/* One line of what the import did not (or could not) carry, at the position it is about. */
struct sw_import_note {
    char where[256]; /* "frank-primary.service:12", "<argv>" */
    char msg[512];
};

/* What the caller says beyond the files. Every field may be NULL/0. */
struct sw_import_opts {
    const char *endpoint; /* the endpoint's name; NULL: from the unit's or env file's name */
    const char *host;     /* the fleet host it runs on (`host:`); NULL: none written */
    const char *env_file; /* the unit's EnvironmentFile as a local copy (when the unit's path is
                             the host's, e.g. /etc/frank/frank-primary.env) */
    const char *out_dir;  /* where the fleet is written (env_file paths are made relative to it);
                             NULL: the current directory */
    const char *engine;   /* import env: the engine that reads the file (NULL: from its keys) */
};

/*
 * An import's result: the endpoints' YAML (each value with its provenance comment), the notes,
 * and the endpoints' names. Owned; free with sw_import_free.
 */
struct sw_import {
    struct sw_buf yaml; /* the `endpoints:` entries, indented two spaces (no `endpoints:` line) */
    struct sw_import_note *notes;
    size_t n_notes;
    char **names; /* the endpoints written */
    size_t n_names;
    void *priv_; /* opaque */
};

void sw_import_init(struct sw_import *im);
void sw_import_free(struct sw_import *im);

/* A systemd unit file (and its drop-ins beside it) whose ExecStart runs llama-server, vLLM or
 * SGLang natively or in a podman/docker container; its EnvironmentFile= is read (o->env_file
 * when given, else the path the unit names) and $VAR/${VAR} expanded as systemd does. A file that
 * is not a unit, or a unit that runs no engine, is an error naming its line. */
int sw_import_unit(struct sw_import *im, const char *path, const struct sw_import_opts *o,
                   struct sw_err *e);
/* The same over a unit's text (name: the file's name in comments and notes). */
int sw_import_unit_text(struct sw_import *im, const char *name, const char *text, size_t len,
                        const char *env_name, const char *env_text, size_t env_len,
                        const struct sw_import_opts *o, struct sw_err *e);
/* An engine command line: `llama-server ...`, `vllm serve ...`,
 * `python -m vllm.entrypoints.openai.api_server ...`, `python -m sglang.launch_server ...`. */
int sw_import_argv(struct sw_import *im, int argc, char **argv, const struct sw_import_opts *o,
                   struct sw_err *e);
/* A KEY=VALUE env file of the operator's shapes (MAXLEN, SEQS, KV_BYTES, MNBT, CTX_SIZE,
 * PARALLEL, ...): an endpoint fragment that imports the keys it knows through env_file.map;
 * every other key is a note. o->endpoint names the endpoint (else the file's base name). */
int sw_import_env(struct sw_import *im, const char *path, const struct sw_import_opts *o,
                  struct sw_err *e);

/*
 * A fleet host over its transport (src/host: ssh or local): the system manager's service units
 * whose ExecStart runs an engine (llama-server, vLLM, SGLang, or podman/docker run), each read
 * remotely with its EnvironmentFile and imported as a unit is (positions "HOST:/path:line"). The
 * env file's values the fleet imports go to a local copy beside the fleet (out_dir/HOST-UNIT.env,
 * mode 0600) holding only its non-secret lines: the secrets stay on the host. The payloads'
 * metadata is then read where they are by the plan (sw_plan_payload_on_host). fleet_path is the
 * fleet that holds the host. No engine unit on the host is an error naming the host.
 */
int sw_import_host(struct sw_import *im, const char *fleet_path, const char *host,
                   const struct sw_import_opts *o, struct sw_err *e);

/*
 * A llama-swap config (its documented form: `models:` each with `cmd`, `env`, `ttl`, `proxy`,
 * `checkEndpoint`, `aliases`...; `groups:`; `macros:`): each model whose cmd runs llama-server,
 * vLLM or SGLang (natively or in podman/docker run) becomes an endpoint named by its model ID,
 * its cmd read as a unit's command line (macros expanded, ${PORT} left to the fleet's
 * listen.port); what the fleet has no place for (ttl, groups, proxy...) is a note. A file that is
 * not such a config is an error naming its line.
 */
int sw_import_llama_swap(struct sw_import *im, const char *path, const struct sw_import_opts *o,
                         struct sw_err *e);
/* The same over the config's text (path: its name in comments and errors). */
int sw_import_llama_swap_text(struct sw_import *im, const char *path, const char *text, size_t len,
                              const struct sw_import_opts *o, struct sw_err *e);

/*
 * The fleet text: a new fleet (`version: 1`, `endpoints:` with im's entries) when into is NULL,
 * else into's text with im's endpoints merged in: a new endpoint is appended to `endpoints:`; an
 * endpoint that exists keeps every key the import does not write, and each key it writes
 * replaces the old one (a note names the old lines). *out (sw_free) is the whole text.
 */
int sw_import_fleet_text(struct sw_import *im, const char *into_path, char **out, struct sw_err *e);
/*
 * Write the fleet to out_path through a temporary file and a rename, only after the text loads
 * as a fleet (sw_fleet_load_mem, no environment); nothing is written otherwise. out_path may be
 * into_path (a merge in place).
 */
int sw_import_write(struct sw_import *im, const char *into_path, const char *out_path,
                    struct sw_err *e);

/*
 * The round trip: load the written fleet at fleet_path, render each imported endpoint (the unit
 * slipway would install, sw_unit_render_endpoint) and compare the engine's command line it runs
 * with the one imported, flag by flag through the engine's flag table (a value compared as a
 * number when both sides are numbers: 3.15e9 is 3150000000). Each difference is a note
 * ("round trip: ..."); *n_diff (may be NULL) gets their count. An endpoint the render refuses is
 * a note too (its reason). Returns 0, or an error when the fleet does not load.
 */
int sw_import_roundtrip(struct sw_import *im, const char *fleet_path, size_t *n_diff,
                        struct sw_err *e);

/* {"endpoints": [...], "notes": [{"where", "msg"}], "yaml": TEXT}. New reference; NULL on OOM. */
json_t *sw_import_json(const struct sw_import *im);

#ifdef __cplusplus
}
#endif
#endif
