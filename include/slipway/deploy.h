/*
 * deploy: run an engine as a supervised local child and prove it serves.
 *
 *   - sw_child_*:   fork/exec in its own session and process group, stdout+stderr to a log file,
 *                   stdin from /dev/null, the engine's stray LLAMA_ARG_* variables removed from
 *                   its environment, optionally PR_SET_PDEATHSIG(SIGKILL) and an address-space
 *                   limit; a watchdog process that kills the group if slipway dies before it
 *                   hands the child over (so a SIGKILL to slipway mid-boot leaves no orphan, also
 *                   for --detach, where PDEATHSIG cannot be used); stop = SIGTERM to the group, a
 *                   grace period, SIGKILL; reaping.
 *   - sw_pidfile_*: the record `down` trusts: pid, pgid, the kernel's start time of the process
 *                   and the boot id, its executable and argv as /proc showed them once it ran,
 *                   host/port/url, log; written atomically as soon as the engine runs. Before
 *                   signalling anything, `down` checks that the pid still names that process
 *                   (start time, boot id, executable, argv) and that the file and its directory
 *                   are the caller's alone (owned by the euid, not group/world-writable, not
 *                   symbolic links), so neither a reused pid nor a forged record is obeyed.
 *   - sw_port_*:    is host:port free, and if not, which process holds it (/proc/net/tcp*).
 *   - sw_deploy_up: preflight (port, payload, stale pid file), spawn, wait for readiness while
 *                   watching the child, classify a failed boot from its log, prove liveness with
 *                   a real one-token generation.
 *   - sw_deploy_endpoint: `slipway up` in one call: the endpoint rendered by its engine adapter
 *                   (or a verbatim llama-server argv the adapter normalizes), planned by
 *                   sw_plan_endpoint, preflighted, booted with sw_deploy_up, recorded in the
 *                   ledger, given its pid file, its report diffed against the prediction.
 *
 * What it deliberately does not do: build argv (engine), plan memory (plan), print anything
 * (the CLI does), or manage remote hosts and unit files (later: ssh transport, systemd).
 */
#ifndef SLIPWAY_DEPLOY_H
#define SLIPWAY_DEPLOY_H

#include <slipway/core.h>
#include <slipway/engine.h>
#include <slipway/plan.h>

#include <signal.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Processes as the kernel knows them.
 */
struct sw_proc_id {
    pid_t pid;
    uint64_t start_ticks; /* /proc/PID/stat field 22: clock ticks after boot */
    char boot_id[40];     /* /proc/sys/kernel/random/boot_id */
    char state;           /* R S D Z T ... ; 0 when the process does not exist */
    pid_t pgid;
};
/* Read /proc/PID. SW_ENOENT when there is no such process. */
int sw_proc_identify(pid_t pid, struct sw_proc_id *out, struct sw_err *e);
/* argv of a process joined by spaces ("" for a kernel thread or a zombie). */
int sw_proc_cmdline(pid_t pid, char *out, size_t n);
/* argv exactly as /proc/PID/cmdline holds it: each argument NUL-terminated, *len bytes in all.
 * SW_ENOENT when there is no such process, SW_ERANGE when it does not fit in n. */
int sw_proc_args(pid_t pid, char *out, size_t n, size_t *len);
/* The executable the kernel runs for pid (readlink /proc/PID/exe; " (deleted)" appended by the
 * kernel when the file was removed). SW_ENOENT when gone or not readable (another user's). */
int sw_proc_exe(pid_t pid, char *out, size_t n);
/* This boot's id. */
int sw_proc_boot_id(char *out, size_t n);

/* "exited with status 1" / "killed by signal 9 (Killed)". Returns buf. */
const char *sw_wait_status_str(int status, char *buf, size_t n);

/* ---------------------------------------------------------------------------------------------
 * A supervised child.
 */
struct sw_spawn_opts {
    const char *const *argv;    /* argv[0]: a path, or a name looked up in PATH */
    const char *const *env_add; /* NAME=VALUE set over the inherited environment; may be NULL */
    size_t n_env_add;
    const char *log_path;       /* stdout+stderr (created 0600, truncated); NULL = /dev/null */
    const char *cwd;            /* NULL: inherit */
    uint64_t rlimit_as;         /* RLIMIT_AS in bytes; 0 = none */
    const char *cgroup_procs;   /* a cgroup's cgroup.procs: the child joins it before exec
                                 * (a memory limit on the engine alone); NULL = none */
    bool die_with_parent;       /* PR_SET_PDEATHSIG(SIGKILL): only while slipway supervises */
    bool watchdog;              /* kill the group if slipway dies before sw_child_release */
    unsigned watchdog_grace_ms; /* SIGTERM -> SIGKILL delay of the watchdog (0: 3000) */
};

/* Fields are read-only for callers. */
struct sw_child {
    pid_t pid;  /* 0 when none */
    pid_t pgid; /* == pid */
    uint64_t start_ticks;
    char boot_id[40];
    char exe[4096]; /* the resolved argv[0] */
    bool exited;    /* reaped */
    int status;     /* wait(2) status once exited */
    double t_start; /* sw_now_s() at spawn */
    int wd_fd;      /* write end of the watchdog's pipe, -1 when none */
    pid_t wd_pid;
};

/* Start a child. On success c is filled and the child runs; SW_ENOENT when argv[0] cannot be
 * found or executed (the message says which), SW_EIO for system failures. */
int sw_child_spawn(const struct sw_spawn_opts *o, struct sw_child *c, struct sw_err *e);
/* Non-blocking check: 1 exited (reaped now or before), 0 running, negative on error. */
int sw_child_poll(struct sw_child *c);
/* Stop it: SIGTERM to its group, up to grace_ms, then SIGKILL to the group; reap; kill what is
 * left in the group (a debugger ggml started to print a backtrace, say). Safe when already
 * exited. Also dismisses the watchdog. */
int sw_child_stop(struct sw_child *c, unsigned grace_ms, struct sw_err *e);
/* Hand the child over (detach): the watchdog stands down and exits; the child keeps running. */
void sw_child_release(struct sw_child *c);

/* ---------------------------------------------------------------------------------------------
 * Pid files.
 */
#define SW_PIDFILE_MAX_ARGS 256
#define SW_PIDFILE_ARGS_MAX 32768

struct sw_pidfile {
    char endpoint[128];
    char engine[32];
    pid_t pid, pgid;
    uint64_t start_ticks;
    char boot_id[40];
    char exe[4096];     /* /proc/PID/exe once it ran */
    char cmdline[8192]; /* argv joined by spaces, for people */
    /* argv as /proc/PID/cmdline held it once it ran (each argument NUL-terminated), at most
     * SW_PIDFILE_MAX_ARGS arguments; args_len 0 when the record has none (nothing is then
     * signalled). In the file: "argv": [strings]. */
    char args[SW_PIDFILE_ARGS_MAX];
    size_t args_len;
    char host[256];
    unsigned port;
    char url[320];
    char log[4096];
    int64_t started_unix;
    pid_t supervisor; /* the foreground slipway supervising it; 0 when detached */
};

/* Fill the identity of a running process from /proc: pid, pgid, start time, boot id, exe, argv
 * (the other fields are left alone). SW_ENOENT when it is gone, SW_ERANGE when its argv is too
 * long to record. */
int sw_pidfile_identify(pid_t pid, struct sw_pidfile *p, struct sw_err *e);
/* Write atomically (temp file + fsync + rename), mode 0644, as JSON, into a directory that must
 * be safe (sw_deploy_check_dir). */
int sw_pidfile_write(const char *path, const struct sw_pidfile *p, struct sw_err *e);
/* Read and validate. The directory must be safe (sw_deploy_check_dir) and the file a regular
 * file (opened without following a symbolic link) owned by the euid and not group/world-
 * writable: SW_EIO naming the path and what is wrong otherwise. SW_ENOENT when there is no file,
 * SW_EPARSE naming what is wrong in it. */
int sw_pidfile_read(const char *path, struct sw_pidfile *p, struct sw_err *e);

enum sw_pid_verdict {
    SW_PID_ALIVE,    /* the recorded process is running */
    SW_PID_GONE,     /* no process has that pid (or only its zombie) */
    SW_PID_REUSED,   /* the pid names another process now: never signal it */
    SW_PID_MISMATCH, /* the pid runs and started when recorded, but its executable or argv is
                      * not the record's (or the record has no argv): forged or corrupt; never
                      * signal it, keep the file for a human */
};
/* Compare the record with /proc: pid, boot id, start time, then executable and argv. why (may
 * be NULL) explains every verdict but ALIVE. */
enum sw_pid_verdict sw_pidfile_check(const struct sw_pidfile *p, char *why, size_t n);

struct sw_stop_report {
    enum sw_pid_verdict verdict;
    bool signalled; /* SIGTERM was sent */
    bool killed;    /* SIGKILL was needed */
    double waited_s;
    char why[512];
};
/* `down` for one pid file: read it (sw_pidfile_read's refusals), check, SIGTERM the group, wait
 * grace_ms, SIGKILL, wait; remove the pid file when the process is gone (also for GONE and
 * REUSED records, which are stale). Every signal is sent only after the same proof
 * (sw_pidfile_check says ALIVE, or the leader is gone and only its group is left). Returns 0
 * when nothing slipway started is left running; SW_EMISMATCH (r->verdict MISMATCH, nothing
 * signalled, the file kept) for a record that does not describe the process; SW_ETIMEDOUT when
 * it survived SIGKILL. */
int sw_pidfile_stop(const char *path, unsigned grace_ms, struct sw_stop_report *r,
                    struct sw_err *e);

/* The directory for pid files and logs: $SLIPWAY_RUN_DIR, else $XDG_RUNTIME_DIR/slipway, else
 * $HOME/.local/state/slipway/run (never a predictable shared /tmp name); created 0700 when
 * missing, then required safe (sw_deploy_check_dir). */
int sw_deploy_run_dir(char *out, size_t n, struct sw_err *e);
/* Is dir a place for pid files: lstat says a real directory (not a symbolic link), owned by the
 * euid, without group/other write permission? 0, or SW_EIO naming the path and what is wrong. */
int sw_deploy_check_dir(const char *dir, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Ports.
 */
/* 0 when host:port can be bound now; SW_EBUSY when it is in use, with the holder named when
 * /proc tells ("127.0.0.1:8080 is in use by pid 1234 (llama-server)"); SW_EINVAL for a host that
 * is not a numeric address or "localhost". */
int sw_port_check(const char *host, unsigned port, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Boot a local endpoint and prove it serves.
 */
struct sw_up_progress {
    enum sw_boot_phase phase; /* read from the log so far */
    double elapsed_s;
    int health_status; /* last /health status, 0 when nothing answered */
    const char *what;  /* "starting", "loading", "liveness" */
};

/* A boot's progress as a terminal bar (deploy/bar.c): sw_deploy_bar_update is an on_progress
 * callback whose ctx is a struct sw_deploy_bar (its first member may stand for a larger ctx).
 * The caller inits `bar` (sw_progress_init), sets `on`, and finishes the bar. */
struct sw_deploy_bar {
    struct sw_progress bar;
    char label[96];
    bool on; /* draw (a terminal, not --json) */
};
void sw_deploy_bar_update(void *ctx, const struct sw_up_progress *p);

struct sw_up_opts {
    const struct sw_engine *engine;
    const struct sw_engine_cmd *cmd; /* rendered argv/env */
    const char *host;                /* where it listens (for the URL and the port check) */
    unsigned port;
    const char *payload; /* model file: preflight and failure hints; may be NULL */
    const char *log_path;
    /* the record, written as soon as the engine runs (so `down` finds it even when slipway and
     * its watchdog are killed mid-boot), removed when the boot fails; NULL: none */
    const char *pid_file;
    const char *endpoint;        /* a name for messages and the pid file */
    const char *api_key;         /* for the liveness request (Authorization: Bearer) */
    bool detach;                 /* the child must outlive slipway: no PDEATHSIG */
    bool preflight;              /* check port and payload before starting */
    bool liveness;               /* prove it with a one-token generation */
    unsigned boot_timeout_s;     /* 0: 900; readiness AND the one-token proof, from the start */
    unsigned grace_ms;           /* 0: 10000 */
    uint64_t rlimit_as;          /* 0: none */
    const char *cgroup_procs;    /* sw_spawn_opts.cgroup_procs; NULL: none */
    volatile sig_atomic_t *stop; /* set by a signal handler: stop the child, SW_EINTR */
    void (*on_progress)(void *ctx, const struct sw_up_progress *p);
    void *ctx;
};

struct sw_up_result {
    struct sw_child child; /* running when sw_deploy_up returned 0 */
    char url[320];
    bool started, ready, live;
    struct sw_boot_status status; /* from the log (failure set when the boot failed) */
    json_t *bootlog;              /* the engine's bootlog object (report, precision, failure) */
    char liveness[512];           /* evidence: status, tokens, finish_reason, text, ms */
    double boot_s;                /* spawn -> ready */
    double liveness_ms;
};

/*
 * 0: the child runs, answered readiness and (if asked) a real generation.
 * SW_ECHILD: the boot failed; r->status.failure says how (the child is gone).
 * SW_EBUSY / SW_EEXIST: preflight refused (port in use / already running), nothing started;
 * r->status.failure is set for a port in use.
 * SW_EGATE: preflight found the payload missing or not a model; r->status.failure set.
 * SW_EINTR: *stop was set; the child was stopped.
 * Other codes: system failures. On every non-zero return no child is left running.
 * Free r->bootlog with json_decref (sw_up_result_free).
 */
int sw_deploy_up(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e);
void sw_up_result_free(struct sw_up_result *r);

/* Re-read the child's log into r->bootlog/r->status (after it exited, say). */
int sw_deploy_read_log(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * `slipway up` in one call: an endpoint from its fleet (or a verbatim llama-server command line),
 * planned (sw_plan_endpoint over the very argv it is launched with), preflighted (the plan against
 * the fleet's declared device memory, a live pid file), booted with sw_deploy_up, recorded in the
 * ledger, given its pid file, and its printed report diffed against the prediction.
 */
struct sw_deploy_req {
    const char *fleet;       /* FLEET.yaml, or NULL for the verbatim form */
    const char *fleet_text;  /* the fleet as this text (positions and relative paths by `fleet`)
                                instead of the file: a shape read earlier (serve's rollback) */
    const char *endpoint;    /* the endpoint to boot; NULL: the only enabled one */
    const char *const *argv; /* the verbatim form: llama-server -m MODEL.gguf ... */
    size_t argc;
    const char *name;           /* for the pid file and log; NULL: endpoint, alias or
                                   llama-server-PORT */
    const char *pid_file, *log; /* NULL: RUN_DIR/NAME.pid, RUN_DIR/NAME.log */
    const char *ledger;         /* for record; NULL: sw_ledger_default_path */
    const char *api_key;        /* the verbatim form's LLAMA_API_KEY (environment only) */
    unsigned port;              /* a fleet endpoint on this port instead of its own (serve's
                                   blue/green deploy boots the new shape beside the old); 0: its own */
    bool detach, preflight, liveness, dry_run, record;
    unsigned timeout_s, grace_ms; /* 0: 900 s, 10000 ms */
    uint64_t limit_as;
    volatile sig_atomic_t *stop;
    void (*on_progress)(void *ctx, const struct sw_up_progress *p);
    /* A line for people while it runs: "removing stale pid file ...", the command being
     * started (kind "start"), "recorded as boot N in PATH" (kind "recorded"), "boot not
     * recorded: ..." (kind "record_failed"). May be NULL. */
    void (*on_note)(void *ctx, const char *kind, const char *text);
    void (*on_fleet_error)(void *ctx, const struct sw_err *e); /* each fleet-file error */
    void *ctx;
};

struct sw_deploy_res {
    struct sw_fleet *fleet;
    const struct sw_fleet_endpoint *ep; /* NULL for the verbatim form */
    const struct sw_engine *engine;
    struct sw_engine_cmd cmd; /* what is started */
    struct sw_engine_launch launch;
    struct sw_plan plan; /* over cmd; plan.predicted NULL when it could not be made */
    char why_none[256];  /* why there is no prediction */
    char unfit[600];     /* the plan does not fit a declared device: how ("" when it fits) */
    char where[640];     /* fleet position of the payload, "" for the verbatim form */
    char name[128], pid_path[4096], log_path[4096];
    char binary[4096]; /* the program's path launch.binary may point to (one per result: serve
                          boots several at once from its threads) */
    struct sw_up_opts up_opts; /* as given to sw_deploy_up (for sw_deploy_read_log) */
    struct sw_up_result up;
    bool attempted; /* sw_deploy_up ran: a non-zero return is the boot's failure (up.status) */
    json_t *diff;   /* predicted vs printed, NULL when there is no prediction */
};

/*
 * 0: dry_run planned (nothing started) or the endpoint serves (r->up.child runs, the pid file is
 * written; the caller serves in the foreground or sw_child_release()s it). Before the boot:
 * load/render errors, SW_EGATE (the plan does not fit a declared device, with preflight),
 * SW_EEXIST (a live pid file). With r->attempted: sw_deploy_up's codes (SW_ECHILD ...), the boot
 * recorded when asked. Free r with sw_deploy_res_free in every case.
 */
int sw_deploy_endpoint(const struct sw_deploy_req *q, struct sw_deploy_res *r, struct sw_err *e);
void sw_deploy_res_free(struct sw_deploy_res *r);

/* ---------------------------------------------------------------------------------------------
 * The local loop (deploy/local.c): the answers `up`, `status` and the local runners of ladder and
 * tune share.
 */
/* The program `up` runs for a llama.cpp endpoint on this machine: `declared` (the endpoint's
 * `binary:` as the launch resolved it) when given; else "llama-server" when $PATH has one; else
 * the pinned build's absolute path (sw_engine_llamacpp_find_server); else "llama-server" (spawn
 * then names what is missing). Returns declared, "llama-server" or out. *how (may be NULL):
 * "binary:", "$PATH", "pinned build" or "not found". */
const char *sw_deploy_llamacpp_program(const char *declared, char *out, size_t n, const char **how);
/* A rendered command line made to run what `up` would run: argv[0] "llama-server" of a
 * llama.cpp endpoint without `binary:` replaced by sw_deploy_llamacpp_program's answer (other
 * engines and a declared binary are left as rendered). *how as above. */
int sw_deploy_local_program(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *cmd,
                            const char **how, struct sw_err *e);
/* RUN_DIR/NAME.pid, where `up` keeps endpoint NAME's record ('/' and ' ' as '_'). */
int sw_deploy_pid_path(const char *name, char *out, size_t n, struct sw_err *e);

/* What `up`'s record of an endpoint says now. */
struct sw_up_record {
    char pid_file[4096];
    bool present;    /* the file exists */
    bool unreadable; /* ... but sw_pidfile_read refused it (why says how): proves nothing */
    enum sw_pid_verdict verdict; /* sw_pidfile_check's, when present and readable */
    char why[512];               /* every verdict but ALIVE, and unreadable, explained */
    struct sw_pidfile rec;
};
/* Read and check RUN_DIR/NAME.pid under the pid-file rules (sw_pidfile_read, sw_pidfile_check).
 * 0 whatever it says (r->present false: no file); errors: the run directory's. */
int sw_deploy_up_record(const char *name, struct sw_up_record *r, struct sw_err *e);

struct sw_local_clear_opts {
    bool stop_running; /* stop the endpoint's own `up` process (its pid file's proofs) */
    unsigned grace_ms; /* SIGTERM -> SIGKILL for that stop (0: 10000) */
};
struct sw_local_clear {
    char pid_file[4096];
    pid_t pid; /* the `up` process found running (0: none) */
    char url[320];
    bool stopped; /* it was stopped */
    double stop_s;
};
/* Before a local runner boots ep on its own address: the endpoint's `up` record naming a live
 * process is stopped (o->stop_running) or refused (SW_EEXIST naming the pid, the pid file,
 * `slipway down NAME` and --stop-running); then the address must be free: SW_EBUSY naming its
 * holder otherwise. Nothing is booted here. */
int sw_deploy_local_clear(const struct sw_fleet_endpoint *ep, const struct sw_local_clear_opts *o,
                          struct sw_local_clear *r, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
