/*
 * Internals of the import module shared by its files: the endpoint being built (its values as
 * YAML text, each with where it came from), the notes, and one entry per room: import.c (the
 * endpoints, notes and the YAML writer), import_argv.c (an engine command line through the
 * engine's flag table), import_unit.c (a systemd unit and its EnvironmentFile), import_env.c (an
 * env file alone), import_write.c (the fleet text, the merge into a fleet, the checked write).
 */
#ifndef SLIPWAY_IMPORT_INTERNAL_H
#define SLIPWAY_IMPORT_INTERNAL_H

#include <slipway/core.h>
#include <slipway/fleet.h>
#include <slipway/import.h>

#define SW__IMP_VALUES_MAX 4096u

/* One value of an endpoint: a dotted key ("shape.seqs", "env_file.map.MAXLEN", "args[]",
 * "payload.mounts[]"), its YAML text (a scalar already quoted, or a flow collection) and where it
 * came from (the comment). */
struct sw__imp_kv {
    const char *key;
    const char *val;
    const char *from;
};

/* A variable of the env file the command line read (its name, value and line). */
struct sw__imp_var {
    const char *name;
    const char *value;
    int line;
};

struct sw__imp_ep {
    const char *name;
    const char *engine; /* "llama.cpp", "vllm", "sglang" */
    struct sw__imp_kv *kv;
    size_t n_kv, cap_kv;
    /* the env file the endpoint imports through env_file.map (NULL: none) */
    const char *env_where; /* its name in comments */
    struct sw__imp_var *vars;
    size_t n_vars;
    bool *var_used; /* n_vars: read by the command line */
    /* the engine's command line as imported (for the round trip) */
    const char **argv;
    size_t argc, arg0;
    /* container mounts, to carry the engine's container paths back to the host's */
    const char **mnt_host, **mnt_cont;
    size_t n_mnt;
};

struct sw__imp {
    struct sw_region r;
    struct sw__imp_ep **eps;
    size_t n_eps, cap_eps;
    size_t cap_notes, cap_names;
    /* every position of the next unit import is this instead (a llama-swap model's cmd line) */
    const char *where_override;
};

struct sw__imp *sw__imp(struct sw_import *im);
/* A new endpoint named name (a copy). NULL on OOM (or a second endpoint of the same name: e). */
struct sw__imp_ep *sw__imp_ep_new(struct sw_import *im, const char *name, struct sw_err *e);
/* Set key to the YAML text val (copied) with its provenance; a key set again is replaced (list
 * keys, ending in "[]", append). 0 or SW_ENOMEM/SW_ERANGE. */
int sw__imp_set(struct sw_import *im, struct sw__imp_ep *ep, const char *key, const char *val,
                const char *from);
/* The same with val a plain string (quoted for YAML here). */
int sw__imp_set_str(struct sw_import *im, struct sw__imp_ep *ep, const char *key, const char *s,
                    const char *from);
/* Is key set? */
const struct sw__imp_kv *sw__imp_get(const struct sw__imp_ep *ep, const char *key);
/* s as a YAML scalar (plain when that reads back as the same string, else double-quoted), in the
 * import's region. NULL on OOM. */
const char *sw__imp_yaml(struct sw_import *im, const char *s);
/* A string in the import's region (printf). NULL on OOM. */
char *sw__imp_printf(struct sw_import *im, const char *fmt, ...) SW_PRINTF(2, 3);
/* A note at where (may be NULL): what was not imported and why. */
int sw__imp_note(struct sw_import *im, const char *where, const char *fmt, ...) SW_PRINTF(3, 4);
/* The endpoints' YAML into im->yaml (called once the endpoints are built). */
int sw__imp_emit(struct sw_import *im);

/* import_argv.c: the engine command line argv[arg0..argc) of engine ("llama.cpp", "vllm",
 * "sglang") into ep. raw (may be NULL) is the same line with every env-file variable's value
 * replaced by a marker (sw__imp_marker), word for word, so a value read from the env file is
 * imported through env_file.map. where: "unit:line" or "<argv>". Validates the line through the
 * engine's own parser first: a malformed value is an error naming the flag and where. */
int sw__imp_argv(struct sw_import *im, struct sw__imp_ep *ep, const char *const *argv, size_t argc,
                 size_t arg0, const char *const *raw, const char *where, struct sw_err *e);
/* The marker an env variable's value is replaced by to trace it ("@SWENV.NAME@"). */
#define SW__IMP_MARK_OPEN  "@SWENV."
#define SW__IMP_MARK_CLOSE '@'
/* llama-swap's ${PORT} macro, as the import carries it through a command line. */
#define SW__IMP_PORT_MARK "@SWPORT@"
/* The engine's fleet name for the unit scanner's engine. */
const char *sw__imp_engine_name(int unit_engine);
/* The host path of a container path through ep's mounts; NULL when no mount covers it. */
const char *sw__imp_host_path(struct sw_import *im, const struct sw__imp_ep *ep, const char *p);

#endif
