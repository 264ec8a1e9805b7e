/*
 * Real tier: `slipway deploy` and `slipway rollback` (include/slipway/rollout.h) against a real
 * test host (scripts/testhost.sh: systemd, journald, sshd on 169.254.22.2) running the pinned
 * llama-server natively as the endpoint's systemd service, one test per fault:
 *   (a) a good deploy of a new shape commits (and a second tag is made);
 *   (b) a gate failure (a fleet known_bad rule) touches nothing: the live files byte-identical,
 *       the same main pid, NRestarts unchanged, nothing staged;
 *   (c) crash loop: an engine binary whose libraries are not where it looks: exits at once,
 *       systemd restarts it; detected from the unit state, rolled back, the old shape serves;
 *   (d) the engine dies mid-boot (its model is not on the host): classified from the journal as
 *       the engine printed it, rolled back;
 *   (e) health 200 with a dead generation path (a default grammar llama-server cannot parse:
 *       /health answers 200, every chat request fails): failed, rolled back;
 *   (f) the rollback target itself broken (its payload removed from the host after it was
 *       committed): reported, the unit left stopped, not crash-looping; then `slipway rollback`
 *       by hand once the payload is back;
 *   (g) an engine that exits 0 (llama-server --version): a failure, rolled back;
 *   (h) slipway SIGKILLed right after it stopped the old unit: the next deploy takes the dead
 *       process's lock over and converges.
 * The tests share one host (booted by the first, taken down by the group's teardown and
 * swthost's exit and signal hooks): none is about a host's first boot, and each finds it with no
 * trace of slipway (swro_up_shared removes the units, env files, rollout state and locks the
 * last one left, as a fresh host has none) and makes its own baseline deploy on it. Each prints
 * its measured downtime ("DOWNTIME fault=... ms=...").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swrollout.h"
#include "swthost.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT "slipway-ro.service"

static const struct swro_site site = {"sw-ro-a", "169.254.22.2", "ro-a", "ro"};

/* The fleet: endpoint `ro` on the host, native llama-server, ctx and the rest given. extra:
 * endpoint-level YAML lines (4-space indented) or "". */
static void write_fleet(struct swro *f, int ctx, const char *binary, const char *payload,
                        const char *extra)
{
    swro_write_fleet(
        f, &(struct swro_fleet){.ctx = ctx, .binary = binary, .payload = payload, .extra = extra});
}

static void print_result(const char *fault, const json_t *j)
{
    const json_t *dt = json_object_get(j, "downtime_ms");
    print_message("%s: outcome=%s step=%s class=%s\n  %s\n  rollback: %s\n", fault,
                  swro_str(j, "outcome"), swro_str(j, "failed_step"), swro_str(j, "fail_class"),
                  swro_str(j, "fail_msg"), swro_str(j, "rollback"));
    if (json_is_integer(dt))
        print_message("DOWNTIME fault=%s ms=%lld\n", fault, (long long)json_integer_value(dt));
    else
        print_message("DOWNTIME fault=%s ms=- (%s)\n", fault,
                      json_is_true(json_object_get(j, "stopped")) ? "not serving"
                                                                  : "never stopped");
}

/* A committed deploy of the baseline shape: ctx 512, the pinned build, /models/chat.gguf. */
static void baseline(struct swro *f, const char *payload)
{
    write_fleet(f, 512, "/opt/llama/bin/llama-server", payload ? payload : "/models/chat.gguf", "");
    swro_must_commit(f, "baseline deploy");
}

/* (a) a good deploy of a new shape commits. */
static void test_good_deploy_commits(void **state)
{
    struct swro *f = *state;
    swro_up_shared(f, &site);
    baseline(f, NULL);
    assert_true(swro_serves(f));
    write_fleet(f, 1024, "/opt/llama/bin/llama-server", "/models/chat.gguf", "");
    int st = 0;
    /* the battery without concurrency and speed (their timing on a tiny random model on a shared
     * CPU is not what this test is about) and without worst_case: its half-window filler
     * prompt comes out at 2.25x its token target on this SPM test vocabulary (1152 tokens for
     * 512), so it cannot size its prompt here (a probe finding, see docs/rollout.md) */
    json_t *j = swro_run(f, &st, "deploy", "--no-worst-case", "--probe-only",
                         "readiness,liveness,models,chat,stream,metrics,over_length", NULL);
    print_result("good", j);
    if (st != 0)
        fail_msg("deploy exit %d: %s %s\n%s", st, swro_str(j, "fail_class"),
                 swro_str(j, "fail_msg"), swro_str(j, "journal"));
    assert_string_equal(swro_str(j, "outcome"), "committed");
    assert_true(json_is_integer(json_object_get(j, "downtime_ms")));
    assert_non_null(strstr(swro_str(j, "tag"), "ro-"));
    assert_non_null(strstr(swro_str(j, "tag"), "-2"));
    char tag[160];
    snprintf(tag, sizeof(tag), "%s", swro_str(j, "tag"));
    assert_true(json_integer_value(json_object_get(j, "attempt")) > 0);
    /* the battery ran, and passed */
    const json_t *pr = json_object_get(j, "probe");
    assert_true(json_integer_value(json_object_get(pr, "passed")) >= 5);
    assert_int_equal(json_integer_value(json_object_get(pr, "failed")), 0);
    json_decref(j);
    assert_true(swro_live_has(f, "-c 1024"));
    assert_true(swro_serves(f));
    swro_nothing_staged(f);
    char *lg = swth_must(
        &f->h, "grep -c -- '-c 1024' /var/lib/slipway/rollout/slipway-ro/last-good/" UNIT);
    assert_string_equal(lg, "1\n");
    free(lg);
    /* the ledger beside the fleet holds that tag as the endpoint's last-good */
    j = swro_run(f, &st, "history", NULL);
    assert_int_equal(st, 0);
    char *hist = json_dumps(j, 0);
    if (!strstr(hist, tag) || !strstr(hist, "\"last_good\": true"))
        fail_msg("history does not show %s as last-good: %s", tag, hist);
    free(hist);
    json_decref(j);
    /* the dry run of the same fleet: identical, nothing touched */
    j = swro_run(f, &st, "deploy", "--dry-run", NULL);
    assert_int_equal(st, 0);
    assert_string_equal(swro_str(j, "outcome"), "dry_run");
    assert_true(
        json_is_true(json_object_get(json_array_get(json_object_get(j, "diff"), 0), "identical")));
    json_decref(j);
}

/* (b) a gate failure touches nothing. */
static void test_gate_failure_touches_nothing(void **state)
{
    struct swro *f = *state;
    swro_up_shared(f, &site);
    baseline(f, NULL);
    char *before =
        swth_must(&f->h, "sha256sum /etc/systemd/system/" UNIT " /etc/slipway/slipway-ro.env");
    char pid0[64], nr0[64];
    swth_show(&f->h, UNIT, "MainPID", pid0, sizeof(pid0));
    swth_show(&f->h, UNIT, "NRestarts", nr0, sizeof(nr0));
    write_fleet(f, 2048, "/opt/llama/bin/llama-server", "/models/chat.gguf",
                "    known_bad:\n"
                "      - when: ctx_size == 2048\n"
                "        failure: oom\n"
                "        text: \"died at kv_alloc (planted)\"\n");
    int st = 0;
    json_t *j = swro_run(f, &st, "deploy", NULL);
    print_result("gate", j);
    assert_int_equal(st, 1);
    assert_string_equal(swro_str(j, "outcome"), "gate_failed");
    assert_string_equal(swro_str(j, "fail_class"), "gate:known_bad");
    assert_false(json_is_true(json_object_get(j, "stopped")));
    json_decref(j);
    char *after =
        swth_must(&f->h, "sha256sum /etc/systemd/system/" UNIT " /etc/slipway/slipway-ro.env");
    assert_string_equal(before, after);
    free(before);
    free(after);
    char pid1[64], nr1[64];
    swth_show(&f->h, UNIT, "MainPID", pid1, sizeof(pid1));
    swth_show(&f->h, UNIT, "NRestarts", nr1, sizeof(nr1));
    assert_string_equal(pid0, pid1);
    assert_string_equal(nr0, nr1);
    swro_nothing_staged(f);
    assert_true(swro_serves(f));

    /* one deploy per endpoint: a lock held by another machine's deploy refuses this one before
     * anything is staged */
    assert_int_equal(
        swth_put(&f->h, "/run/slipway/slipway-ro.lock", "host=elsewhere boot=0 pid=1 start=1\n"),
        0);
    write_fleet(f, 1024, "/opt/llama/bin/llama-server", "/models/chat.gguf", "");
    j = swro_run(f, &st, "deploy", NULL);
    assert_int_equal(st, 1);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    if (!msg || !strstr(msg, "host=elsewhere"))
        fail_msg("a held lock: %s", msg ? msg : "(no error message)");
    json_decref(j);
    after = swth_must(&f->h, "sha256sum /etc/systemd/system/" UNIT " /etc/slipway/slipway-ro.env");
    before = swth_must(&f->h, "sha256sum /var/lib/slipway/rollout/slipway-ro/last-good/" UNIT
                              " /var/lib/slipway/rollout/slipway-ro/last-good/slipway-ro.env");
    print_message("live vs last-good after the refused deploy:\n%s%s", after, before);
    assert_non_null(strstr(after, strtok(before, " ")));
    free(after);
    free(before);
    swro_nothing_staged(f);
    free(swth_must(&f->h, "rm -f /run/slipway/slipway-ro.lock"));
}

/* A failed deploy after the stop: rolled back, the old shape serves, the cause named. */
static void expect_rolled_back(struct swro *f, const char *fault, json_t *j, int st,
                               const char *cls)
{
    print_result(fault, j);
    if (strcmp(swro_str(j, "outcome"), "rolled_back"))
        fail_msg("%s: outcome %s (%s: %s)\njournal:\n%s", fault, swro_str(j, "outcome"),
                 swro_str(j, "fail_class"), swro_str(j, "fail_msg"), swro_str(j, "journal"));
    assert_int_equal(st, 1);
    if (cls && strcmp(swro_str(j, "fail_class"), cls))
        fail_msg("%s: class %s (wanted %s): %s\njournal:\n%s", fault, swro_str(j, "fail_class"),
                 cls, swro_str(j, "fail_msg"), swro_str(j, "journal"));
    assert_true(json_is_true(json_object_get(j, "serving")));
    assert_true(json_is_integer(json_object_get(j, "downtime_ms")));
    assert_true(swro_live_has(f, "-c 512"));
    assert_true(swro_live_has(f, "/opt/llama/bin/llama-server -m /models/chat.gguf"));
    assert_true(swro_serves(f));
    swro_nothing_staged(f);
}

/* (c) crash loop: the binary cannot load its libraries; detected from the unit's state. */
static void test_crash_loop_rolls_back(void **state)
{
    struct swro *f = *state;
    swro_up_shared(f, &site);
    baseline(f, NULL);
    /* the real llama-server with one NEEDED library renamed to one that is nowhere (same
     * length, so the ELF stays valid): the loader exits 127 before the engine prints a line
     * (the operator's missing-library crash loop) */
    free(swth_must(&f->h,
                   "mkdir -p /opt/broken/bin && cp /opt/llama/bin/llama-server /opt/broken/bin/ "
                   "&& perl -0777 -pi -e 's/libllama-server-impl\\.so\\0/"
                   "libllama-server-gone.so\\0/' /opt/broken/bin/llama-server"));
    struct swt_run r;
    assert_int_equal(swth_ssh(&f->h, "/opt/broken/bin/llama-server --version", NULL, 30, &r), 0);
    print_message("the broken binary on the host: exit %d: %.300s\n", r.status, r.err);
    assert_int_equal(r.status, 127);
    assert_non_null(strstr(r.err, "error while loading shared libraries"));
    swt_run_free(&r);
    write_fleet(f, 512, "/opt/broken/bin/llama-server", "/models/chat.gguf", "");
    int st = 0;
    json_t *j = swro_run(f, &st, "deploy", "--no-worst-case", NULL);
    expect_rolled_back(f, "crash_loop", j, st, "crash_loop");
    json_decref(j);
}

/* (d) the engine dies mid-boot: its model is not on the host; classified from the journal. */
static void test_engine_dies_mid_boot(void **state)
{
    struct swro *f = *state;
    swro_up_shared(f, &site);
    baseline(f, NULL);
    write_fleet(f, 1024, "/opt/llama/bin/llama-server", "/models/missing.gguf", "");
    int st = 0;
    json_t *j = swro_run(f, &st, "deploy", "--no-worst-case", NULL);
    expect_rolled_back(f, "mid_boot", j, st, "missing_payload");
    assert_non_null(strstr(swro_str(j, "journal"), "missing.gguf"));
    json_decref(j);
}

/* (e) /health 200, generation dead: a chat template that demands a system prompt on requests
 * but lets llama-server's own boot checks through (its verify renders one user message "test",
 * its -lv 4 example starts with a system message): /health answers 200, every chat request
 * without a system prompt fails (HTTP 400 from the template's raise_exception). */
static const char bad_template[] =
    "{%- if messages[0]['role'] != 'system' and messages[0]['content'] is string and "
    "messages[0]['content'] | length > 4 -%}"
    "{{ raise_exception('a system prompt is required') }}{%- endif -%}\n"
    "{%- for m in messages -%}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant\n{% endif -%}\n";

static void test_dead_generation(void **state)
{
    struct swro *f = *state;
    swro_up_shared(f, &site);
    baseline(f, NULL);
    assert_int_equal(swth_put(&f->h, "/srv/tpl.jinja", bad_template), 0);
    write_fleet(f, 1024, "/opt/llama/bin/llama-server", "/models/chat.gguf",
                "    args: [--metrics, --jinja, --chat-template-file, /srv/tpl.jinja]\n");
    int st = 0;
    json_t *j = swro_run(f, &st, "deploy", "--no-worst-case", NULL);
    expect_rolled_back(f, "dead_generation", j, st, "dead_generation");
    assert_non_null(strstr(swro_str(j, "fail_msg"), "a system prompt is required"));
    json_decref(j);
}

/* (g) an engine that exits 0 is a failure, not a clean stop: llama-server given --version
 * prints its build and exits 0 (Restart=on-failure does not restart it). */
static void test_exit0_is_a_failure(void **state)
{
    struct swro *f = *state;
    swro_up_shared(f, &site);
    baseline(f, NULL);
    write_fleet(f, 1024, "/opt/llama/bin/llama-server", "/models/chat.gguf",
                "    args: [--metrics, --version]\n");
    int st = 0;
    json_t *j = swro_run(f, &st, "deploy", "--no-worst-case", NULL);
    expect_rolled_back(f, "exit0", j, st, "exit0");
    json_decref(j);
}

/* (h) slipway killed (SIGKILL) right after it stopped the old unit: the host holds the new files
 * and a lock of a dead process; the next deploy takes the lock over and converges. */
static void test_killed_after_stop_converges(void **state)
{
    struct swro *f = *state;
    swro_up_shared(f, &site);
    baseline(f, NULL);
    write_fleet(f, 1024, "/opt/llama/bin/llama-server", "/models/chat.gguf", "");
    swt_slipway_kill_at("stop ", false, "deploy", "ro", "--fleet", f->fleet, "--no-worst-case",
                        NULL);
    char *lock = swth_must(&f->h, "cat /run/slipway/slipway-ro.lock");
    print_message("killed after the stop; the lock left: %s", lock);
    free(lock);
    int st = 0;
    json_t *j = swro_run(f, &st, "deploy", "--no-worst-case", "--probe-only",
                         "readiness,liveness,models,chat,stream,metrics,over_length", NULL);
    print_result("killed_after_stop", j);
    if (st != 0)
        fail_msg("the deploy after the kill: exit %d: %s %s", st, swro_str(j, "outcome"),
                 swro_str(j, "fail_msg"));
    assert_string_equal(swro_str(j, "outcome"), "committed");
    json_decref(j);
    assert_true(swro_live_has(f, "-c 1024"));
    assert_true(swro_serves(f));
    swro_nothing_staged(f);
}

/* (f) the rollback target itself broken: reported, nothing worse left behind. */
static void test_rollback_target_broken(void **state)
{
    struct swro *f = *state;
    swro_up_shared(f, &site);
    free(swth_must(&f->h, "mkdir -p /srv/models && cp /models/chat.gguf /srv/models/a.gguf"));
    baseline(f, "/srv/models/a.gguf");
    free(swth_must(&f->h, "mv /srv/models/a.gguf /srv/models/a.gguf.away"));
    write_fleet(f, 1024, "/opt/llama/bin/llama-server", "/models/missing.gguf", "");
    int st = 0;
    json_t *j = swro_run(f, &st, "deploy", "--no-worst-case", NULL);
    print_result("rollback_target_broken", j);
    assert_int_equal(st, 1);
    assert_string_equal(swro_str(j, "outcome"), "rollback_failed");
    assert_string_equal(swro_str(j, "fail_class"), "missing_payload");
    assert_non_null(strstr(swro_str(j, "rollback"), "failed too"));
    assert_false(json_is_true(json_object_get(j, "serving")));
    json_decref(j);
    /* nothing worse: stopped, not restarting, nothing staged; the files are the last-good's */
    char v[64], nr0[64], nr1[64];
    swth_show(&f->h, UNIT, "ActiveState", v, sizeof(v));
    assert_true(!strcmp(v, "inactive") || !strcmp(v, "failed"));
    swth_show(&f->h, UNIT, "NRestarts", nr0, sizeof(nr0));
    sleep(3);
    swth_show(&f->h, UNIT, "NRestarts", nr1, sizeof(nr1));
    assert_string_equal(nr0, nr1);
    swth_show(&f->h, UNIT, "ActiveState", v, sizeof(v));
    assert_true(!strcmp(v, "inactive") || !strcmp(v, "failed"));
    assert_true(swro_live_has(f, "/srv/models/a.gguf"));
    swro_nothing_staged(f);
    /* the payload back, and `slipway rollback` by hand: the last-good serves again */
    free(swth_must(&f->h, "mv /srv/models/a.gguf.away /srv/models/a.gguf"));
    j = swro_run(f, &st, "rollback", NULL);
    print_result("manual_rollback", j);
    assert_int_equal(st, 0);
    assert_string_equal(swro_str(j, "outcome"), "restored");
    json_decref(j);
    assert_true(swro_serves(f));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_deploy_commits, swro_setup, swro_shared_teardown),
        cmocka_unit_test_setup_teardown(test_gate_failure_touches_nothing, swro_setup,
                                        swro_shared_teardown),
        cmocka_unit_test_setup_teardown(test_crash_loop_rolls_back, swro_setup,
                                        swro_shared_teardown),
        cmocka_unit_test_setup_teardown(test_engine_dies_mid_boot, swro_setup,
                                        swro_shared_teardown),
        cmocka_unit_test_setup_teardown(test_dead_generation, swro_setup, swro_shared_teardown),
        cmocka_unit_test_setup_teardown(test_rollback_target_broken, swro_setup,
                                        swro_shared_teardown),
        cmocka_unit_test_setup_teardown(test_exit0_is_a_failure, swro_setup, swro_shared_teardown),
        cmocka_unit_test_setup_teardown(test_killed_after_stop_converges, swro_setup,
                                        swro_shared_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swro_group_teardown);
}
