/*
 * The rollout real tests' shared fixture (see swrollout.h). Test support: it fails the running
 * cmocka test on what it cannot do, it does not return errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swrollout.h"
#include "swhttpd.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int swro_setup(void **state)
{
    struct swro *r = calloc(1, sizeof(*r));
    *state = r;
    return r ? 0 : -1;
}

int swro_teardown(void **state)
{
    struct swro *r = *state;
    swro_close(r);
    free(r);
    return 0;
}

void swro_up(struct swro *r, const struct swro_site *site)
{
    swro_up_binds(r, site, NULL);
}

/* r's paths, names and port for site, its host already up in r->h. */
static void fixture_ready(struct swro *r, const struct swro_site *site)
{
    snprintf(r->addr, sizeof(r->addr), "%s", site->addr);
    snprintf(r->fleet_host, sizeof(r->fleet_host), "%s", site->fleet_host);
    snprintf(r->endpoint, sizeof(r->endpoint), "%s", site->endpoint);
    snprintf(r->unit, sizeof(r->unit), "slipway-%s.service", site->endpoint);
    r->dir = swt_tmpdir();
    snprintf(r->fleet, sizeof(r->fleet), "%s", swt_join(r->dir, "fleet.yaml"));
    r->port = swt_free_port();
    r->deadline_s = 600;
}

void swro_up_binds(struct swro *r, const struct swro_site *site, const char *more)
{
    swt_need(swth_missing()[0] == '\0', "%s", swth_missing());
    swt_need(swth_gm.model[0] != '\0', "no chat model: %s", swth_gm.missing);
    char bind[4200];
    snprintf(bind, sizeof(bind), "%s:/models", swth_gm.dir);
    const char *binds[] = {bind, more, NULL};
    assert_int_equal(swth_up(site->host, site->addr, binds, &r->h), 0);
    print_message("host %s up at %s in %ld ms\n", site->host, site->addr, r->h.boot_ms);
    fixture_ready(r, site);
}

/* The group's one host (swro_up_shared), while it is up. */
static struct swth_host shared;

/* Everything slipway leaves on a host, gone: its units stopped and their files removed with any
 * staged or temporary file beside them and any link to them (.wants), its env files, rollout
 * state and locks; systemd
 * reloaded and its failed units forgotten. The journal stays (slipway reads it from a cursor it
 * takes before each deploy). */
#define SWRO_RESET                                                                                 \
    "systemctl stop 'slipway-*' && rm -rf /etc/systemd/system/slipway-* "                          \
    "/etc/systemd/system/*/slipway-* /etc/systemd/system/.slipway-copy* /etc/slipway "             \
    "/var/lib/slipway /run/slipway && "                                                            \
    "systemctl daemon-reload && systemctl reset-failed && "                                        \
    "! systemctl list-units --all --plain --no-legend 'slipway-*' | grep -q ."

void swro_up_shared(struct swro *r, const struct swro_site *site)
{
    swro_up_shared_binds(r, site, NULL);
}

void swro_up_shared_binds(struct swro *r, const struct swro_site *site, const char *more)
{
    if (shared.up && !strcmp(shared.name, site->host)) {
        struct swt_run run;
        int rc = swth_ssh(&shared, SWRO_RESET, NULL, 60, &run);
        if (!rc && run.status == 0) {
            swt_run_free(&run);
            r->h = shared;
            print_message("host %s kept from the last test, slipway's state removed\n",
                          shared.name);
            fixture_ready(r, site);
            return;
        }
        print_message("host %s could not be reset (exit %d: %s%s): booting it again\n", shared.name,
                      rc ? -1 : run.status, run.out ? run.out : "", run.err ? run.err : "");
        swt_run_free(&run);
    }
    if (shared.up)
        swth_down(&shared);
    swro_up_binds(r, site, more);
    swth_mux_on(&r->h); /* the tests' many short checks over one connection */
    shared = r->h;
}

int swro_shared_teardown(void **state)
{
    struct swro *r = *state;
    if (r->dir)
        swt_tmpdir_free(r->dir);
    free(r);
    return 0;
}

int swro_group_teardown(void **state)
{
    swth_down(&shared);
    return swth_group_teardown(state);
}

void swro_close(struct swro *r)
{
    swth_down(&r->h);
    if (r->dir)
        swt_tmpdir_free(r->dir);
    r->dir = NULL;
}

int swro_fleet_head(const struct swro *r, const char *device, char *out, size_t n)
{
    return snprintf(out, n,
                    "version: 1\n"
                    "hosts:\n"
                    "  %s:\n"
                    "    transport: {kind: ssh, address: %s, user: root, identity_file: %s, "
                    "known_hosts: %s}\n"
                    "    devices:\n"
                    "      %s\n"
                    "endpoints:\n",
                    r->fleet_host, r->addr, r->h.key, r->h.known_hosts, device);
}

void swro_write_fleet(struct swro *r, const struct swro_fleet *spec)
{
    const char *extra = spec->extra ? spec->extra : "";
    snprintf(r->listen, sizeof(r->listen), "%s", spec->listen ? spec->listen : "127.0.0.1");
    char text[8192];
    int h = swro_fleet_head(r, "cpu: {kind: cpu, vendor: cpu}", text, sizeof(text));
    assert_true(h > 0 && (size_t)h < sizeof(text));
    int n =
        h + snprintf(text + h, sizeof(text) - (size_t)h,
                     "  %s:\n"
                     "    host: %s\n"
                     "    engine: llama.cpp\n"
                     "    binary: %s\n"
                     "    runtime: native\n"
                     "    listen: %s:%d\n"
                     "    alias: %s-tiny\n"
                     "    payload:\n"
                     "      path: %s\n"
                     "      quantization: f32\n"
                     "    shape:\n"
                     "      ctx_size: %d\n"
                     "      seqs: 1\n"
                     "      n_gpu_layers: 0\n"
                     "%s"
                     "    service:\n"
                     "      restart_sec: 1s\n"
                     "%s"
                     "%s"
                     "%s",
                     r->endpoint, r->fleet_host,
                     spec->binary ? spec->binary : "/opt/llama/bin/llama-server", r->listen,
                     r->port, r->endpoint, spec->payload ? spec->payload : "/models/chat.gguf",
                     spec->ctx, spec->shape ? spec->shape : "", spec->service ? spec->service : "",
                     extra, strstr(extra, "args:") ? "" : "    args: [--metrics]\n");
    if (n < 0 || (size_t)n >= sizeof(text))
        fail_msg("the fleet file for %s does not fit %zu bytes", r->endpoint, sizeof(text));
    swt_write_str(r->fleet, text);
}

json_t *swro_run(struct swro *r, int *status, const char *verb, ...)
{
    /* slipway VERB ENDPOINT --fleet FILE, every verb alike */
    const char *argv[32] = {swt_bin(), verb, r->endpoint, "--fleet", r->fleet, "--json"};
    va_list ap;
    va_start(ap, verb);
    swt_argv_va(argv, 6, 32, ap);
    va_end(ap);
    return swt_run_json(argv, r->deadline_s, status);
}

const char *swro_str(const json_t *j, const char *k)
{
    const char *s = json_string_value(json_object_get(j, k));
    return s ? s : "";
}

void swro_print_steps(const json_t *j)
{
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(j, "steps"), i, s)
    {
        print_message("  %-11s %-4s %7.0f ms  %.300s\n", swro_str(s, "step"),
                      json_is_true(json_object_get(s, "ok")) ? "ok" : "FAIL",
                      json_number_value(json_object_get(s, "ms")), swro_str(s, "detail"));
    }
}

void swro_must_commit(struct swro *r, const char *what)
{
    int st = 0;
    json_t *j = swro_run(r, &st, "deploy", "--no-worst-case", "--probe-only",
                         "readiness,liveness,models,chat", NULL);
    if (st != 0 || strcmp(swro_str(j, "outcome"), "committed")) {
        swro_print_steps(j);
        fail_msg("%s: exit %d, %s: %s %s\njournal:\n%s", what, st, swro_str(j, "outcome"),
                 swro_str(j, "fail_class"), swro_str(j, "fail_msg"), swro_str(j, "journal"));
    }
    json_decref(j);
}

#define ONE_TOKEN                                                                                  \
    "{\"messages\":[{\"role\":\"user\",\"content\":\"Say "                                         \
    "OK.\"}],\"max_tokens\":1,\"temperature\":0}"

bool swro_generates_on(const struct swth_host *h, const char *addr, int port, unsigned timeout_s)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "curl -sS -m %u -o /dev/null -w '%%{http_code}' -H 'Content-Type: application/json' "
             "--data-binary '%s' http://%s:%d/v1/chat/completions",
             timeout_s, ONE_TOKEN, addr, port);
    struct swt_run r;
    if (swth_ssh(h, cmd, NULL, timeout_s + 10, &r))
        return false;
    bool ok = r.status == 0 && r.out && !strcmp(r.out, "200");
    swt_run_free(&r);
    return ok;
}

bool swro_generates(const char *addr, int port, unsigned timeout_s)
{
    char url[128], tm[16];
    snprintf(url, sizeof(url), "http://%s:%d/v1/chat/completions", addr, port);
    snprintf(tm, sizeof(tm), "%u", timeout_s);
    const char *argv[] = {"curl",
                          "-sS",
                          "-m",
                          tm,
                          "-o",
                          "/dev/null",
                          "-w",
                          "%{http_code}",
                          "-H",
                          "Content-Type: application/json",
                          "--data-binary",
                          ONE_TOKEN,
                          url,
                          NULL};
    struct swt_run r;
    if (swt_run(argv, NULL, timeout_s + 5, &r))
        return false;
    bool ok = r.out && !strcmp(r.out, "200");
    swt_run_free(&r);
    return ok;
}

bool swro_serves(const struct swro *r)
{
    if (!strcmp(r->listen, "0.0.0.0"))
        return swro_generates(r->addr, r->port, 60);
    return swro_generates_on(&r->h, r->listen[0] ? r->listen : "127.0.0.1", r->port, 60);
}

bool swro_live_has(const struct swro *r, const char *needle)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "cat /etc/systemd/system/%s", r->unit);
    char *out = swth_must(&r->h, cmd);
    bool has = strstr(out, needle) != NULL;
    free(out);
    return has;
}

void swro_nothing_staged(const struct swro *r)
{
    char *out = swth_must(&r->h, "ls -A /etc/systemd/system/ /etc/slipway/ | "
                                 "grep -c -e '\\.new$' -e '^\\.slipway-copy' -e '\\.rb$' || true");
    if (strcmp(out, "0\n")) {
        char *ls = swth_must(&r->h, "ls -lA /etc/systemd/system/ /etc/slipway/");
        print_message("left on the host:\n%s", ls);
        free(ls);
        free(out);
        fail_msg("%s: staged or temporary files left beside the live ones", r->h.name);
    }
    free(out);
    /* nor the first half of a commit (rollout/commit.c settles it under the lock) */
    out = swth_must(&r->h, "ls -d /var/lib/slipway/rollout/*/last-good.new "
                           "/var/lib/slipway/rollout/*/tags/.new 2>/dev/null || true");
    if (out[0])
        fail_msg("%s: a commit's first half left: %s", r->h.name, out);
    free(out);
}

static int forwards_left(const char *run_dir)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/ssh", run_dir);
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de = d ? readdir(d) : NULL; de; de = readdir(d))
        if (strstr(de->d_name, ".f"))
            n++;
    if (d)
        closedir(d);
    return n;
}

void swro_nothing_left_here(struct swh *decoy, const char *run_dir)
{
    assert_int_equal(swh_hits(decoy, NULL), 0);
    assert_int_equal(forwards_left(run_dir), 0);
    swh_stop(decoy);
    unsetenv("SLIPWAY_RUN_DIR");
}
