/*
 * Test helpers for real test hosts: a machine with its own systemd (PID 1), journald and sshd,
 * booted by scripts/testhost.sh (systemd-nspawn on an overlay of a cached Debian rootfs) with a
 * NETWORK OF ITS OWN: a veth pair, this machine at 169.254.N.1 and the host at 169.254.N.2 (the
 * address a test gives). The host's 127.0.0.1 is its own, as on a real remote machine: an engine
 * bound there is reached only through the host (slipway's route, or swth_ssh), and a server on
 * this machine's loopback is invisible from inside it. The pinned llama.cpp build is bound
 * read-only at /opt/llama inside it.
 *
 * Every host brought up here is registered: swth_down runs for it from the test's own teardown,
 * and again (if still up) at exit and on SIGINT/SIGTERM/SIGABRT/SIGSEGV, so a failing test does
 * not leave a host behind. A SIGKILLed test process leaves the host; the next `up` of the same
 * name stops it first, and `scripts/testhost.sh list` shows it.
 *
 * Usage:
 *     swt_need(swth_missing()[0] == '\0', "%s", swth_missing());
 *     struct swth_host h;
 *     assert_int_equal(swth_up("th-a", "169.254.2.2", NULL, &h), 0);
 *     struct swt_run r;
 *     swth_ssh(&h, "systemctl is-system-running", NULL, 20, &r);
 *     ...
 *     swth_down(&h);
 *
 * Commands run over plain OpenSSH (BatchMode, the host's generated key, StrictHostKeyChecking=yes
 * against the known_hosts `up` printed); this is test support, not slipway's ssh transport.
 */
#ifndef SWTHOST_H
#define SWTHOST_H

#include "swtest.h"

#include <stdbool.h>
#include <sys/types.h>

struct swth_host {
    char name[32];
    char addr[32];    /* the host's own address, 169.254.N.2 (ssh and a direct route go here) */
    char gateway[32]; /* this machine's side of the link, 169.254.N.1 */
    pid_t pid;        /* systemd-nspawn on this machine */
    pid_t leader;     /* the host's PID 1 (systemd), as this machine sees it */
    char root[4096];  /* its root directory on this machine */
    char key[4096];   /* ssh private key authorized for root@addr */
    char known_hosts[4096]; /* known_hosts file holding the host's key (only) */
    char known_hosts_line[1024];
    long boot_ms; /* unpack + boot + sshd answering, as the script measured it */
    bool up;
    char mux[4200]; /* swth_ssh's ControlPath (swth_mux_on); "" when each call connects anew */
};

/* What a test host needs that this machine lacks (root, systemd-nspawn, ssh, mmdebstrap or the
 * cached rootfs, the pinned llama.cpp), for swt_need; "" when nothing is missing. */
const char *swth_missing(void);
/* The same for the podman runtime (podman, runc, and `scripts/testhost.sh image` built). */
const char *swth_podman_missing(void);
/* The test image `scripts/testhost.sh image` builds (tagged :test), and its digest on this machine
 * ("sha256:...", which the hosts see too: they share the store) into buf; fails the test when
 * podman cannot say. */
#define SWTH_IMAGE "localhost/slipway-llama"
void swth_image_digest(char *buf, size_t n);

/* scripts/testhost.sh up NAME ADDR (169.254.N.2, N unique per test binary) [--bind-ro B]... (binds: NULL-terminated "PATH[:DEST]" list,
 * may be NULL), bounded by 180 s. Fills h and registers the host for swth_down at exit or on a
 * fatal signal. Returns 0, or -1 with the script's stderr printed. */
int swth_up(const char *name, const char *addr, const char *const *binds, struct swth_host *h);
/* The ssh masters slipway keeps for ControlPersist (their title names the control socket under
 * run_dir, the SLIPWAY_RUN_DIR the test gave slipway) ended: a host's power-off otherwise waits
 * on their session. Bounded (50 rounds of SIGTERM, 100 ms apart). */
void swth_end_masters(const char *run_dir);
/* scripts/testhost.sh down NAME (SIGTERM, bounded wait, SIGKILL, the directory removed), and the
 * host unregistered. Safe to call twice and on a host that never came up. Returns the script's
 * exit status (0 when done). */
int swth_down(struct swth_host *h);
/* The same by a power-off (SIGTERM to nspawn), as `testhost.sh down` without --kill. */
int swth_down_graceful(struct swth_host *h);
/* swth_ssh's calls to h share one ssh connection from now on (OpenSSH's ControlMaster, its socket
 * beside h's known_hosts, the master ended by swth_down or swth_mux_off): a call costs a session,
 * not a handshake (about 0.3 s each on a loaded 2-core machine). For a test whose checks are many
 * short commands; not for one that freezes the host or checks ssh itself (a frozen host hangs
 * the master instead of refusing the connection). Copies of h made afterwards share it too. */
void swth_mux_on(struct swth_host *h);
/* The shared connection ended (ssh -O exit) and h back to one connection a call. */
void swth_mux_off(struct swth_host *h);
/* Run `sh -c CMD` as root on the host over ssh, stdin_text on its stdin (may be NULL), killed
 * after deadline_s. r as swt_run (free with swt_run_free); ssh's own failure is status 255. */
int swth_ssh(const struct swth_host *h, const char *cmd, const char *stdin_text,
             unsigned deadline_s, struct swt_run *r);
/* ssh CMD on the host must exit 0 (else the test fails with its output): its stdout (free()). */
char *swth_must(const struct swth_host *h, const char *cmd);
/* `systemctl show -p PROP --value UNIT` on the host, its first line into buf (swth_must). */
void swth_show(const struct swth_host *h, const char *unit, const char *prop, char *buf, size_t n);
/* Write text to PATH on the host (temp file + rename, mode 0644) over ssh. Returns 0 or -1. */
int swth_put(const struct swth_host *h, const char *path, const char *text);
/* Poll `sh -c CMD` over ssh until it exits 0 or deadline_s passes. Returns 0 when it did; the
 * last run's output stays in r (may be NULL). */
int swth_wait(const struct swth_host *h, const char *cmd, unsigned deadline_s, struct swt_run *r);
/* Hosts (and their nspawn pids) the script still knows (`scripts/testhost.sh list`) whose name
 * matches: the teardown check. Returns how many are left (0 when none). */
int swth_left(const char *name);

/* The tiny chat model for services on test hosts, in a fresh temporary directory made readable for
 * the hosts' bind mounts (0755 dir, 0644 file): dir gets the directory (always; remove it with
 * swt_tmpdir_free), model the GGUF path ("" when it could not be made: missing says why). */
void swth_model(char *dir, size_t dn, char *model, size_t mn, char *missing, size_t xn);

/* One test host's case: the host, a temporary directory holding the fleet file and the ledger, and
 * a free port for the endpoint. swth_fx_setup and swth_fx_teardown are its cmocka fixtures (the
 * teardown takes the host down and removes the directory). */
struct swth_fx {
    struct swth_host h;
    char *dir;
    char fleet[4200]; /* dir/fleet.yaml */
    char led[4200];   /* dir/led_name */
    int port;
};
int swth_fx_setup(void **state);
int swth_fx_teardown(void **state);
/* After the prerequisites (test hosts, the group's chat model: swt_need), f's host `name` up at
 * addr with binds (NULL-terminated, may be NULL), then f's directory, paths and port. */
void swth_fx_up(struct swth_fx *f, const char *name, const char *addr, const char *const *binds,
                const char *led_name);

/* The chat model of a cmocka test group: made once by swth_group_setup (swth_model), removed by
 * swth_group_teardown (cmocka's group fixtures). model is "" when it could not be made, and
 * missing then says why (a test swt_need()s it). */
struct swth_group_model {
    char dir[4096];
    char model[4096];
    char missing[8700];
};
extern struct swth_group_model swth_gm;
int swth_group_setup(void **state);
int swth_group_teardown(void **state);

#endif
