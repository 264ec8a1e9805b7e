/*
 * host: the machines an endpoint runs on, reached through one small transport table.
 *
 * Two transports: `local` (this machine: argv executed directly) and `ssh` (the OpenSSH client,
 * /usr/bin/ssh, never a library). ssh runs with the user's own ~/.ssh/config, keys only
 * (BatchMode=yes), host keys checked strictly against the fleet's known_hosts or the user's
 * (StrictHostKeyChecking=yes: an unknown or a changed host key is an error naming the host and the
 * known_hosts file, never accepted), one ControlMaster connection per host kept for 60 s in
 * slipway's private run directory, and a ConnectTimeout. A remote command is built from an argv,
 * every word single-quoted, so no word is ever read by the remote shell; the remote login shell
 * must be a POSIX shell.
 *
 * Every operation has a deadline: on expiry the whole local process group is killed (and a remote
 * command runs under coreutils `timeout` a little longer, so nothing it started survives either);
 * stdout and stderr are captured up to a bound. Failures are classified (struct sw_host_result
 * .fail): unreachable, auth refused, host key unknown or changed, the command failed (its exit
 * code), the deadline.
 *
 * Operations on top of run: copy a local file atomically with its mode (temp name in the target
 * directory, sync, chmod, rename; nothing left on failure), systemctl verbs for the system or the
 * --user manager, `systemctl show` parsed, a unit's journal since a cursor (or followed live),
 * and facts (memory, free disk of paths, GPU devices and driver tools, systemd/podman/docker
 * versions, whether paths exist, whether an image is present by digest).
 *
 * What it deliberately does not do: decide what a gap means for an endpoint (the CLI's `hosts
 * check` does), render units (render), hold passwords or key material (a key is a path), or
 * accept a host key on first use.
 */
#ifndef SLIPWAY_HOST_H
#define SLIPWAY_HOST_H

#include <slipway/core.h>
#include <slipway/fleet.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How an operation ended. */
enum sw_host_fail {
    SW_HOST_OK = 0,          /* ran, exit 0 (or a follow stopped by its callback) */
    SW_HOST_UNREACHABLE = 1, /* connection refused, timed out, no route, no name, closed */
    SW_HOST_AUTH = 2,        /* the server refused our keys */
    SW_HOST_HOSTKEY = 3,     /* host key unknown or changed: refused, never accepted */
    SW_HOST_EXIT = 4,        /* the command ran and failed: exit_code / term_signal */
    SW_HOST_DEADLINE = 5,    /* the deadline passed: the process group was killed */
    SW_HOST_LOCAL = 6,       /* this side failed: spawn, pipe, memory, a bad argument */
};
/* "ok", "unreachable", "auth", "hostkey", "exit", "deadline", "local". */
const char *sw_host_fail_name(enum sw_host_fail f);

enum sw_host_kind { SW_HOST_KIND_LOCAL = 1, SW_HOST_KIND_SSH = 2 };

/* What a host is. Strings are borrowed for the duration of sw_host_open (it copies them). */
struct sw_host_cfg {
    const char *name; /* for messages: the fleet's host name */
    enum sw_host_kind kind;
    /* ssh only */
    const char *address;        /* host name or address (never starting with '-') */
    unsigned port;              /* 0: ssh's default (the user's config, else 22) */
    const char *user;           /* NULL: ssh's default */
    const char *identity_file;  /* NULL: ssh's default keys; else -i FILE -o IdentitiesOnly=yes */
    const char *known_hosts;    /* NULL: the user's; else -o UserKnownHostsFile=FILE */
    unsigned connect_timeout_s; /* 0: 5 */
    const char *ssh_binary;     /* NULL: /usr/bin/ssh */
    const char *control_dir;    /* NULL: sw_run_dir()/ssh (created 0700) */
};

struct sw_host_ops;

/* An open host. Fields are read-only for callers; control_path is where the ssh master's
 * socket lives (empty for local). */
struct sw_host {
    char name[128];
    enum sw_host_kind kind;
    char address[256];
    unsigned port;
    char user[128];
    char identity_file[1024];
    char known_hosts[1024];
    unsigned connect_timeout_s;
    char ssh_binary[256];
    char control_path[108];
    const struct sw_host_ops *ops; /* opaque: the transport */
};

/* Prepare a host (no connection is made yet). Errors: SW_EINVAL for a bad cfg (no address, an
 * address starting with '-', a control path too long for a unix socket). */
int sw_host_open(struct sw_host *h, const struct sw_host_cfg *cfg, struct sw_err *e);
/* The same from a fleet host (its transport; connect timeout from connect_timeout_s, 0: 5). */
int sw_host_open_fleet(struct sw_host *h, const struct sw_fleet_host *fh,
                       unsigned connect_timeout_s, struct sw_err *e);
/* ssh: ask the master to exit (`ssh -O exit`); no-op for local or when no master runs. */
void sw_host_disconnect(struct sw_host *h);
/* ssh: the pid of the running master (`ssh -O check`), 0 when none. */
pid_t sw_host_master_pid(struct sw_host *h);
/* "local" or "ssh root@127.0.0.1:2222" into out. */
const char *sw_host_describe(const struct sw_host *h, char *out, size_t n);

/* Default bound of captured stdout / stderr. */
#define SW_HOST_OUT_MAX (4u << 20)

/* What an operation did. out/err are NUL-terminated (sw_malloc; sw_host_result_free). */
struct sw_host_result {
    enum sw_host_fail fail;
    int exit_code;   /* the command's exit code, -1 when it did not exit */
    int term_signal; /* local transport: the signal that ended it, 0 none */
    char *out;
    size_t out_len;
    bool out_truncated;
    char *err;
    size_t err_len;
    bool err_truncated;
    double seconds; /* wall time of the operation */
};
void sw_host_result_free(struct sw_host_result *r);

/* Called with each complete stdout line (without '\n') while a command runs; return nonzero to
 * stop it (the process group is killed and the result is SW_HOST_OK). */
typedef int (*sw_host_line_fn)(void *ctx, const char *line, size_t len);

struct sw_host_run_opts {
    int64_t deadline_ms;     /* 0: 30 s */
    size_t max_out;          /* per stream; 0: SW_HOST_OUT_MAX */
    const char *stdin_path;  /* a local file fed to the command's stdin; NULL: /dev/null */
    sw_host_line_fn on_line; /* stdout lines (then not kept in out) */
    void *ctx;
};

/*
 * Run argv (argv[0] searched in PATH) on the host. 0 when it exited 0 (or on_line stopped it);
 * else r->fail says why and the return is SW_ENET (unreachable, auth), SW_EMISMATCH (host key),
 * SW_ECHILD (exit), SW_ETIMEDOUT (deadline), or SW_EIO/SW_ENOMEM/SW_EINVAL (local), with e naming
 * the host, the command's argv[0] and the class. r is always filled (free it).
 */
int sw_host_run(struct sw_host *h, const char *const *argv, const struct sw_host_run_opts *o,
                struct sw_host_result *r, struct sw_err *e);

/* The remote command line for argv: every word single-quoted (' as '\''), space-separated.
 * Into b (appended). */
int sw_host_quote_argv(const char *const *argv, struct sw_buf *b);

/* Copy local file `src` to `dst` on the host, atomically, with `mode` (e.g. 0644): a temp name in
 * dst's directory, sync, chmod, rename, sync of the directory; the temp removed on any failure. */
int sw_host_copy(struct sw_host *h, const char *src, const char *dst, unsigned mode,
                 int64_t deadline_ms, struct sw_host_result *r, struct sw_err *e);

/* systemctl [--user] VERB [UNIT]. verb: start stop restart daemon-reload enable disable
 * (daemon-reload takes no unit: pass NULL). */
int sw_host_systemctl(struct sw_host *h, bool user, const char *verb, const char *unit,
                      int64_t deadline_ms, struct sw_host_result *r, struct sw_err *e);

/* `systemctl show UNIT -p ActiveState,SubState,...` parsed. Strings are "" when absent. */
struct sw_host_unit {
    char load_state[32];   /* loaded, not-found, masked ... */
    char active_state[32]; /* active, inactive, failed, activating ... */
    char sub_state[32];    /* running, dead, exited, auto-restart ... */
    char result[32];       /* success, exit-code, signal, timeout ... */
    uint64_t n_restarts;
    int64_t main_pid;         /* 0: none */
    int64_t exec_main_status; /* exit code or signal number */
    int64_t exec_main_code;   /* CLD_EXITED (1), CLD_KILLED (2), CLD_DUMPED (3); 0 none */
    char active_enter[64];    /* ActiveEnterTimestamp as printed ("" when never) */
};
/* The properties sw_host_unit_show asks for, comma-separated. */
#define SW_HOST_UNIT_PROPS                                                                         \
    "ActiveState,SubState,NRestarts,MainPID,ExecMainStatus,ExecMainCode,ActiveEnterTimestamp,"     \
    "LoadState,Result"
/* Parse `systemctl show` output (KEY=VALUE lines; unknown keys ignored). SW_EPARSE naming the
 * line for a line without '=' or a number that is not one. */
int sw_host_unit_parse(const char *text, size_t len, struct sw_host_unit *u, struct sw_err *e);
int sw_host_unit_show(struct sw_host *h, bool user, const char *unit, int64_t deadline_ms,
                      struct sw_host_unit *u, struct sw_err *e);

/* One journal entry (journalctl -o json). Strings owned by the entry list. */
struct sw_host_journal_entry {
    char *cursor;         /* __CURSOR */
    uint64_t realtime_us; /* __REALTIME_TIMESTAMP */
    int priority;         /* PRIORITY, -1 absent */
    char *message;        /* MESSAGE (a byte array decoded; NULL when null) */
};
struct sw_host_journal {
    struct sw_host_journal_entry *v;
    size_t n;
    char *cursor; /* the last entry's cursor (or the one given), NULL when none */
};
/* Parse one JSON line of journalctl -o json into *out (caller frees with
 * sw_host_journal_entry_free). SW_EPARSE when it is not an object with __CURSOR. */
int sw_host_journal_parse_line(const char *line, size_t len, struct sw_host_journal_entry *out,
                               struct sw_err *e);
void sw_host_journal_entry_free(struct sw_host_journal_entry *en);
/* Parse many lines (journalctl's output); blank lines skipped. */
int sw_host_journal_parse(const char *text, size_t len, struct sw_host_journal *j,
                          struct sw_err *e);
void sw_host_journal_free(struct sw_host_journal *j);
/* The unit's journal after `cursor` (NULL: from the start), at most `max_entries` (0: 1000,
 * the newest). user: the --user journal. */
int sw_host_journal_read(struct sw_host *h, bool user, const char *unit, const char *cursor,
                         size_t max_entries, int64_t deadline_ms, struct sw_host_journal *j,
                         struct sw_err *e);
/* Follow the unit's journal after `cursor` (NULL: new entries only): each entry to fn until fn
 * returns nonzero (0 returned) or the deadline (SW_ETIMEDOUT). */
typedef int (*sw_host_journal_fn)(void *ctx, const struct sw_host_journal_entry *en);
int sw_host_journal_follow(struct sw_host *h, bool user, const char *unit, const char *cursor,
                           int64_t deadline_ms, sw_host_journal_fn fn, void *ctx, struct sw_err *e);

/* A path's facts. For a missing path, the filesystem figures are those of its nearest existing
 * parent. A path without '/' is looked up as a command (`command -v`). */
struct sw_host_path {
    char *path;     /* as asked */
    char *resolved; /* the command's path (for a bare name), else NULL */
    bool exists, is_dir, is_exec;
    uint64_t fs_size, fs_avail; /* bytes of the filesystem holding it (df -B1) */
    char *fs_target;            /* its mount point */
};
/* A systemd manager as `systemctl [--user] show -p Version` found it. `systemctl --version`
 * answers without any manager; this asks the one endpoints' units are run by, so a host whose
 * PID 1 is not systemd, or whose bus is gone, is told apart from one that can run a service. */
struct sw_host_manager {
    bool asked;     /* the script asked (systemctl is installed) */
    bool reached;   /* it answered (exit 0) */
    char said[256]; /* when not reached: what systemctl printed, lines joined by spaces, bytes
                     * outside printable ASCII as '?' ("Failed to connect to bus: Host is down") */
};

struct sw_host_facts {
    uint64_t mem_total, mem_available; /* bytes, /proc/meminfo */
    int systemd_version;               /* 252; 0 when no systemctl */
    char podman_version[64];           /* "4.3.1"; "" absent */
    char docker_version[64];           /* "20.10.24+dfsg1"; "" absent */
    char kernel[128];                  /* uname -r */
    bool dev_kfd;                      /* /dev/kfd (AMD ROCm) */
    size_t n_dri;                      /* /dev/dri/renderD* nodes */
    size_t n_nvidia;                   /* /dev/nvidia[0-9]* nodes */
    bool nvidia_smi, rocm_smi, amd_smi;
    struct sw_host_path *paths;
    size_t n_paths;
    /* the system and the user manager (not asked when there is no systemctl) */
    struct sw_host_manager systemd_system, systemd_user;
};
/* Gather facts about the host and about `paths` (may be 0) in one command. */
int sw_host_facts(struct sw_host *h, const char *const *paths, size_t n_paths, int64_t deadline_ms,
                  struct sw_host_facts *f, struct sw_err *e);
/* Parse the facts script's output (what sw_host_facts runs; exposed for recorded outputs). */
int sw_host_facts_parse(const char *text, size_t len, const char *const *paths, size_t n_paths,
                        struct sw_host_facts *f, struct sw_err *e);
void sw_host_facts_free(struct sw_host_facts *f);
/* The shell script sw_host_facts runs (`sh -c SCRIPT sh PATH...`). */
extern const char sw_host_facts_script[];

/* Is `image` (name@sha256:...) present in `runtime`'s store ("podman" or "docker")? *present
 * false when the runtime says no; an error when the runtime is missing or the host unreachable. */
int sw_host_image_present(struct sw_host *h, const char *runtime, const char *image,
                          int64_t deadline_ms, bool *present, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * The way to an endpoint's HTTP server. sw_fleet_endpoint_addr (fleet) says which way it is;
 * this opens it. DIRECT: the URL as it is. HOST (bound to the host's loopback, or `listen.route:
 * host`): a forward over the host's ssh connection, from a unix socket in slipway's private ssh
 * directory (0700, the socket 0600: no other user of this machine reaches the engine through it)
 * to connect:port as the host sees it, requested from the host's ControlMaster (`ssh -O forward
 * -L SOCKET:ADDR:PORT`) and cancelled and unlinked on close. A client passes `unix_socket` to
 * net with `url` (struct sw_net_req.unix_socket), and the server sees the Host it would see on
 * its own machine. Nothing on this machine's own 127.0.0.1 is ever asked for a remote endpoint.
 *
 * The master lives while anything uses it (ControlPersist counts open channels); a proof that
 * starts after a quiet minute calls sw_host_route_refresh first, which brings the master and the
 * forward back when they are gone.
 */
struct sw_host_route {
    struct sw_fleet_addr addr;
    char url[300];         /* the URL a request names: addr.url */
    char unix_socket[108]; /* "" direct; else the forward's local end */
    char via[300];         /* "" direct; else "ssh root@host:22" (for messages) */
    /* private */
    struct sw_host *h;
    struct sw_host own;
    bool own_open;
    char spec[420]; /* SOCKET:ADDR:PORT as given to -L */
    bool fwd_open;
};
/* Open ep's route. h: the endpoint's host already open (borrowed; it must outlive the route), or
 * NULL to open it here. A DIRECT route touches nothing. A HOST route makes sure the master runs
 * (a `true` on the host, bounded by deadline_ms, 0: 30 s) and asks it for the forward. Errors:
 * the host's (unreachable, auth, host key), SW_EINVAL for a socket path ssh cannot take. r is
 * always safe to close. */
int sw_host_route_open(struct sw_host_route *r, const struct sw_fleet_endpoint *ep,
                       struct sw_host *h, int64_t deadline_ms, struct sw_err *e);
/* A HOST route again, after the master may have gone: no-op for DIRECT. */
int sw_host_route_refresh(struct sw_host_route *r, int64_t deadline_ms, struct sw_err *e);
/* Cancel the forward, unlink its socket, close a host opened here. Safe twice and on a route
 * that never opened. */
void sw_host_route_close(struct sw_host_route *r);
/* "http://127.0.0.1:8080" or "http://127.0.0.1:8080 on host dankserver (through ssh
 * root@dankserver)", into out. */
const char *sw_host_route_describe(const struct sw_host_route *r, char *out, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Whether a deploy tag can still be restored on its endpoint's host: the ONE test `slipway
 * history` and `slipway report` use (sw_host_restore_present has sw_ledger_present_sized_fn's
 * signature; pass it and the check as sw_ledger_history_opts {present_sized, ctx}).
 *
 * A local host is checked on this machine's filesystem, an ssh host over its transport (a stat
 * per path, connect bounded to 5 s), and podman's or docker's store for an image; for another
 * transport, or an ssh host that cannot be reached, sw_host_restore_check_open returns why not
 * ("not checked (remote host)", "not checked (the host could not be reached)"). A payload path is present when it exists and, for a regular file, still has the size
 * the asking tag's manifest recorded (sizes only: hashing a 60 GiB payload is `slipway fetch
 * --verify-only`'s job). An image is present when the runtime's store has that digest; a native
 * endpoint has no image store (SW_EUNSUPPORTED: restorability unknown).
 */
struct sw_host_restore_check {
    struct sw_host host; /* opaque below */
    bool host_open;
    const char *runtime; /* "podman"/"docker", NULL for native */
    bool remote;         /* an ssh host: paths are looked at there */
};

/* Prepare the check of ep's tags. Returns NULL when the host is checked here, else why not
 * (static text); c is usable either way and must be closed. */
const char *sw_host_restore_check_open(struct sw_host_restore_check *c,
                                       const struct sw_fleet_endpoint *ep);
/* kind "path" or "image"; size: the tag's recorded size of the path, -1 = none (not compared);
 * ctx is a struct sw_host_restore_check. */
int sw_host_restore_present(void *ctx, const char *kind, const char *what, int64_t size,
                            bool *present, struct sw_err *e);
void sw_host_restore_check_close(struct sw_host_restore_check *c);

#ifdef __cplusplus
}
#endif
#endif
