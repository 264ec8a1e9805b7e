/*
 * The relational lint of systemd service units (module `unit`): a scanner of systemd's unit
 * syntax (sw_unit_parse) that also reads what the service runs (its Exec command lines, a
 * podman/docker container and the inference engine inside it, the paths the engine receives), and
 * laws over the relationships between those values (sw_unit_lint): the stop timeout against the
 * container's stop grace, the start-limit keys' section, Restart= against the engine's exit
 * semantics, the engine's paths against the container's mounts, the image's digest, secrets on a
 * command line, and what `systemd-analyze verify` says about the file.
 *
 * It works on any unit file from its text alone (plus the text of its EnvironmentFile when the
 * caller has it, and of its drop-ins), and reads lines as systemd does: a UTF-8 byte order mark
 * skipped, a line ended by LF, CR, CR LF or LF CR. It needs nothing from the render. It does not
 * install, start or read a unit on a host, and it does not model every systemd key: only those
 * the laws read.
 */
#ifndef SLIPWAY_UNIT_LINT_H
#define SLIPWAY_UNIT_LINT_H

#include <slipway/core.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SW_UNIT_TEXT_MAX (1u << 20) /* a unit (or environment file) larger than this is refused */

/*
 * A unit is read from parts: the unit file (part 0), then its drop-ins in the order systemd
 * applies them (foo.service.d/NAME.conf, lexically by file name): a later assignment overrides an
 * earlier one, a list key appends, an empty assignment resets the list. Every line number in a
 * parsed unit and in the lint's findings is a position: the line itself in part 0, and
 * part * SW_UNIT_PART_LINES + line in a drop-in (sw_unit_pos splits it), so a unit without
 * drop-ins numbers its lines as they are.
 */
#define SW_UNIT_PART_LINES (1 << 21) /* above the lines SW_UNIT_TEXT_MAX bytes can hold */
#define SW_UNIT_PARTS_MAX  64        /* the unit and at most 63 drop-ins */

struct sw_unit_part {
    const char *where; /* the file's name in messages (a path) */
    const char *text;
    size_t len;
};

/* One `Key=Value` assignment, in file order (the parts in order). `reset` is set on assignments
 * a later empty assignment of the same key in the same section cleared (systemd's list reset). */
struct sw_unit_entry {
    const char *section; /* "Unit", "Service", ... */
    const char *key;
    const char *value; /* continuation lines joined with a space; trimmed */
    int line;          /* the position of the key (1-based line; see SW_UNIT_PART_LINES) */
    bool reset;
};

/* Exec prefixes (systemd.service(5) "Command lines"). */
enum {
    SW_UNIT_EXEC_IGNORE = 1u << 0,    /* '-': a failure exit is ignored */
    SW_UNIT_EXEC_ARGV0 = 1u << 1,     /* '@': the second word is argv[0] (dropped from argv here) */
    SW_UNIT_EXEC_FULLPRIV = 1u << 2,  /* '+' */
    SW_UNIT_EXEC_NOAMBIENT = 1u << 3, /* '!' or '!!' */
    SW_UNIT_EXEC_NOENV = 1u << 4,     /* ':': no $VAR expansion */
};

/* One ExecStart/ExecStartPre/ExecStartPost/ExecStop/ExecStopPost/ExecReload line (not reset). */
struct sw_unit_cmd {
    const char *key;
    int line;
    unsigned prefix; /* SW_UNIT_EXEC_* */
    char **argv;     /* split by systemd's rules, $VAR and ${VAR} expanded; argv[argc] == NULL */
    size_t argc;
    char **raw; /* the same words without expansion (what the file itself holds) */
    size_t n_raw;
};

struct sw_unit_mount {
    const char *host; /* the host side (a path, or a named volume) */
    const char *cont; /* the container side, absolute */
    bool ro;
};

/* A `podman run` / `docker run` found in an Exec line (directly or inside `sh -c '...'`). */
struct sw_unit_container {
    bool found;
    const char *tool; /* "podman" or "docker" */
    const char *key;  /* the Exec key it was found in */
    int line;
    bool via_shell;    /* inside `sh -c` */
    const char *name;  /* --name, or NULL */
    const char *image; /* or NULL when the line names none */
    struct sw_unit_mount *mounts;
    size_t n_mounts;
    const char **devices; /* --device values as given */
    size_t n_devices;
    const char **env; /* -e/--env values as given ("KEY=VALUE" or "KEY") */
    size_t n_env;
    const char **env_files;
    size_t n_env_files;
    int64_t stop_timeout_s; /* --stop-timeout, -1 when absent */
    const char *entrypoint; /* --entrypoint, or NULL: the engine's program when given */
    const char **argv;      /* the words after the image (the engine's command or arguments) */
    size_t argc;
};

enum sw_unit_engine {
    SW_UNIT_ENGINE_NONE = 0,
    SW_UNIT_ENGINE_LLAMACPP,
    SW_UNIT_ENGINE_VLLM,
    SW_UNIT_ENGINE_SGLANG
};

/* A path the engine receives: model, draft, projector, template, LoRA, tokenizer. */
struct sw_unit_path {
    const char *role; /* "model", "draft model", "projector", "chat template", "LoRA", ... */
    const char *flag; /* the option that carries it ("-m", "--model-path", "serve (positional)") */
    const char *path;
};

/*
 * A parsed unit. Every string and array is owned by the unit (one arena) and freed by
 * sw_unit_free; nothing points into the caller's text.
 */
struct sw_unit {
    const char *where; /* the name given to sw_unit_parse (a path, "<stdin>") */
    const char *text;  /* a copy of the text, for `systemd-analyze verify` */
    size_t len;
    struct sw_unit_part *parts; /* n_parts copies: parts[0] is where/text/len, then drop-ins */
    size_t n_parts;
    struct sw_unit_entry *entries;
    size_t n_entries;
    struct sw_unit_cmd *cmds;
    size_t n_cmds;
    /* Lines systemd would warn about and skip (no '=', no section, an unterminated [), a CR that
     * ends a line inside it, CR LF line ends (a warning): each is reported by the lint as law
     * "syntax". */
    struct {
        int line;
        const char *msg;
        bool warning;
    } * notes;
    size_t n_notes;
    /* The environment Exec lines see: Environment= then the EnvironmentFile text ("KEY=VALUE"). */
    const char **env;
    size_t n_env;
    struct sw_unit_container ctr;
    /* The engine (in the container, or ExecStart's own program) and the Exec line naming it. */
    enum sw_unit_engine engine;
    int engine_line;
    /* The engine's command line as the scan read it (expanded; NULL-ended): argv[0] the program
     * (`llama-server`, `vllm`, `python3`) or, for an image whose entrypoint is the engine, its
     * first argument; engine_arg0 the index of the first word after the launcher (`vllm serve`,
     * `python -m MODULE`), so engine_argv[engine_arg0..] are the engine's flags and positionals. */
    const char **engine_argv;
    size_t engine_argc, engine_arg0;
    struct sw_unit_path *paths;
    size_t n_paths;
    /* The container's stop grace: `podman stop -t N` / `--time N` in ExecStop (podman's default
     * 10 s when stopped without one), else --stop-timeout; -1 when no container is stopped. */
    int64_t stop_grace_s;
    int stop_grace_line;
    char
        stop_grace_how[96]; /* "podman stop -t 120", "podman's default 10 s", "--stop-timeout 30" */
    /* ExecStart's main process is `podman wait` / `docker wait` (it exits 0 whatever the
     * container did): its line, 0 when not. */
    int wait_line;
    void *arena_; /* opaque */
};

/*
 * Parse text[0..len) (a unit file) named `where` in messages; env_file (may be NULL) is the text
 * of its EnvironmentFile, whose assignments override Environment= as systemd does. *out is freed
 * with sw_unit_free. Errors: SW_ERANGE (larger than SW_UNIT_TEXT_MAX, a line past 64 KiB, more
 * than 65536 assignments or words), SW_EPARSE (a NUL byte, naming its line), SW_ENOMEM. Lines
 * systemd itself skips are not errors: they are kept in notes.
 */
int sw_unit_parse(const char *text, size_t len, const char *where, const char *env_file,
                  struct sw_unit **out, struct sw_err *e);
/* The same over a unit and its drop-ins (parts[0] the unit; 1 <= n <= SW_UNIT_PARTS_MAX). An
 * error names the part it is in. */
int sw_unit_parse_parts(const struct sw_unit_part *parts, size_t n, const char *env_file,
                        struct sw_unit **out, struct sw_err *e);
void sw_unit_free(struct sw_unit *u);
/* The file a position (an entry's, a command's, a finding's line) is in, and *line (may be NULL)
 * its line there; 0 (the file as a whole) is part 0's. */
const char *sw_unit_pos(const struct sw_unit *u, int pos, int *line);

/* The value of the last (not reset) `key` in `section`, NULL when absent; *line (may be NULL)
 * gets its line. */
const char *sw_unit_get(const struct sw_unit *u, const char *section, const char *key, int *line);
/* The value of VAR in the unit's environment, NULL when unset. */
const char *sw_unit_env(const struct sw_unit *u, const char *var);
/* "llama.cpp", "vLLM", "SGLang" or "none". */
const char *sw_unit_engine_name(enum sw_unit_engine e);
/* A systemd time span ("90", "90s", "2min 30s", "500ms", "infinity") in milliseconds; infinity
 * gives INT64_MAX. SW_EPARSE on anything else. */
int sw_unit_timespan_ms(const char *s, int64_t *ms);

/* The laws' ids: stable strings, one per law. */
#define SW_UNIT_LAW_STOP_TIMEOUT "stop-timeout"
#define SW_UNIT_LAW_START_LIMIT  "start-limit"
#define SW_UNIT_LAW_RESTART      "restart"
#define SW_UNIT_LAW_PATH         "path"
#define SW_UNIT_LAW_IMAGE        "image-digest"
#define SW_UNIT_LAW_SECRET       "secret"
#define SW_UNIT_LAW_VERIFY       "verify"
#define SW_UNIT_LAW_SYNTAX       "syntax"
#define SW_UNIT_LAW_MEMORY       "memory-limit"

enum sw_unit_severity { SW_UNIT_ERROR = 0, SW_UNIT_WARNING = 1 };

struct sw_unit_finding {
    const char *law; /* one of SW_UNIT_LAW_* (static) */
    enum sw_unit_severity severity;
    int line;       /* a position (sw_unit_pos); 0 when about the file as a whole */
    char msg[1024]; /* names the relationship and both values; never a secret's value */
};

struct sw_unit_report {
    struct sw_unit_finding *v;
    size_t n;
    size_t cap_; /* opaque */
};

struct sw_unit_lint_opts {
    /* Run `systemd-analyze verify` on a copy of the text in a private temporary directory (the
     * file keeps the name of `where`, so its unit type is right). Any line it prints is a
     * finding; its absence is a finding too. Off: nothing is executed. */
    bool verify;
    const char *systemd_analyze; /* the program; NULL: "systemd-analyze" from PATH */
    unsigned verify_timeout_ms;  /* 0: 20 s */
    /* Optional: true when path exists where the unit runs (for a container, the host side of the
     * mount the path lies under). NULL: existence is not checked. sw_unit_exists_local checks
     * this machine. */
    bool (*exists)(void *ctx, const char *path);
    void *exists_ctx;
};

/* Check u against every law; findings are appended to r (sorted by line, stable), which the
 * caller initialises to {0} and frees with sw_unit_report_free. Returns 0 (findings are not
 * errors), SW_ENOMEM, or SW_EIO when the verify step could not be set up at all (temp dir). */
int sw_unit_lint(const struct sw_unit *u, const struct sw_unit_lint_opts *o,
                 struct sw_unit_report *r, struct sw_err *e);
void sw_unit_report_free(struct sw_unit_report *r);
/* lstat-free existence check on this machine (stat(2) succeeds). ctx unused. */
bool sw_unit_exists_local(void *ctx, const char *path);

/*
 * Read the unit file at path (and env_file when not NULL), parse and lint it. A missing,
 * unreadable, non-regular or binary file is an error naming it (SW_ENOENT, SW_EIO, SW_EINVAL,
 * SW_EPARSE); so is text that is not a unit (an HTML page, a JSON body), while a first line
 * `[Unit]` is a unit. The drop-ins beside it (path.d/NAME.conf, at most SW_UNIT_PARTS_MAX - 1) are
 * read after it, as systemd applies them; given a drop-in (NAME.d/X.conf), the unit NAME beside
 * its directory is read with all of its drop-ins, or, when there is none, the drop-in alone
 * (u->parts say which files were read). *u (may be NULL) gets the parsed unit (sw_unit_free).
 */
int sw_unit_lint_file(const char *path, const char *env_file, const struct sw_unit_lint_opts *o,
                      struct sw_unit_report *r, struct sw_unit **u, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
