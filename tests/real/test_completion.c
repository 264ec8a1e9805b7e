/*
 * Shell completion and man pages, generated from the CLI's tables (src/cli/cmd_completion.c,
 * scripts/man.sh), held to the binary's own list of verbs (`slipway help --list --json`), so a
 * verb added later is checked without an edit here:
 *   - bash: after sourcing the script `complete -p slipway` names the function; every verb
 *     completes from its prefix; every verb and sub-verb completes each of its options after
 *     "--"; a sub-verb completes from its prefix; an option's value completes file names; a
 *     positional word of a verb that takes an ENDPOINT completes the endpoints of the fleet
 *     (--fleet on the line, else $SLIPWAY_FLEET, else ./fleet.yaml), file names when none fits;
 *   - zsh (through bashcompinit): the function is registered and indexes like bash;
 *   - man: scripts/man.sh (the build's step) writes one page per verb, slipway(1) and
 *     slipway-fleet(5) (from docs/fleet.md); each renders with `man --warnings -l` and nothing on
 *     stderr; a verb's page names every option, the fleet page has the format's sections.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <slipway/core.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir;
static json_t *verbs; /* help --list --json's "verbs" */

static int setup(void **state)
{
    (void)state;
    struct swt_run r;
    dir = swt_tmpdir();
    swt_slipway(&r, "help", "--list", "--json", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    verbs = json_incref(json_object_get(j, "verbs"));
    json_decref(j);
    swt_run_free(&r);
    assert_true(json_array_size(verbs) > 20);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(verbs);
    swt_tmpdir_free(dir);
    return 0;
}

/* Run a shell script text with the completion sourced; its stdout in r (caller frees). */
static void shell(const char *sh, const char *script, struct swt_run *r)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/t.%s", dir, sh);
    swt_write_str(path, script);
    char envpath[8400];
    snprintf(envpath, sizeof(envpath), "PATH=%.4000s:%s", SW_BUILD_DIR, getenv("PATH"));
    char home[4300];
    snprintf(home, sizeof(home), "HOME=%s", dir);
    const char *bash[] = {"env", envpath, home, "bash", "--norc", "--noprofile", path, NULL};
    const char *zsh[] = {"env", envpath, home, "zsh", "-f", path, NULL};
    swt_run(!strcmp(sh, "bash") ? bash : zsh, NULL, 60, r);
    if (r->status)
        fail_msg("%s %s: exit %d: %s", sh, path, r->status, r->err);
}

/* Append shell words to s. */
static void cat(char *s, size_t n, const char *fmt, ...) SW_PRINTF(3, 4);
static void cat(char *s, size_t n, const char *fmt, ...)
{
    size_t o = strlen(s);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s + o, n - o, fmt, ap);
    va_end(ap);
}

static bool has_word(const char *line, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = strstr(line, w); p; p = strstr(p + 1, w))
        if ((p == line || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
            return true;
    return false;
}

/* The line of out that starts with key (borrowed into buf). */
static const char *line_of(const char *out, const char *key, char *buf, size_t n)
{
    const char *p = strstr(out, key);
    if (!p)
        fail_msg("no line '%s' in: %s", key, out);
    snprintf(buf, n, "%.*s", (int)strcspn(p, "\n"), p);
    return buf;
}

static void test_bash(void **state)
{
    (void)state;
    struct swt_run r;
    char comp[4200];
    snprintf(comp, sizeof(comp), "%s/slipway.bash", dir);
    swt_slipway(&r, "completion", "bash", "--out", comp, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);

    static char script[1 << 18];
    snprintf(script, sizeof(script),
             "source '%s'\n"
             "complete -p slipway\n"
             "c() { local k=$1; shift; COMP_WORDS=(\"$@\"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 "
             "));\n"
             "  _slipway; echo \"$k: ${COMPREPLY[*]}\"; }\n"
             "T='%s/ep'; mkdir -p \"$T\"\n"
             "cd '%s'\n",
             comp, dir, SW_SOURCE_DIR);
    size_t i;
    json_t *v;
    json_array_foreach(verbs, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        char words[160];
        snprintf(words, sizeof(words), "%s", name);
        if (!strchr(name, ' ')) /* the verb from its first two letters */
            cat(script, sizeof(script), "c 'P %s' slipway '%.2s'\n", name, name);
        else
            cat(script, sizeof(script), "c 'P %s' slipway %.*s '%.1s'\n", name,
                (int)strcspn(name, " "), name, strchr(name, ' ') + 1);
        cat(script, sizeof(script), "c 'O %s' slipway %s --\n", name, words);
    }
    /* an option's value: file names; a positional word of an ENDPOINT verb: the endpoints */
    cat(script, sizeof(script), "c V slipway report --md CMake\n");
    cat(script, sizeof(script), "c E slipway render --fleet examples/operator.yaml frank-s\n");
    cat(script, sizeof(script), "c Q slipway render --fleet=examples/operator.yaml frank-s\n");
    /* no --fleet: $SLIPWAY_FLEET, else ./fleet.yaml (none in the source dir: file names) */
    cat(script, sizeof(script),
        "SLIPWAY_FLEET=examples/operator.yaml c S slipway deploy frank-pr\n");
    cat(script, sizeof(script), "c D slipway status frank-pr\n");
    cat(script, sizeof(script),
        "(cd examples && cp operator.yaml \"$T/fleet.yaml\" && cp *.env \"$T/\" && cd \"$T\" && "
        "c L slipway ladder frank-s)\n");
    cat(script, sizeof(script), "c N slipway render --nod\n");
    shell("bash", script, &r);
    char buf[4096];
    assert_non_null(strstr(r.out, "complete -o filenames -F _slipway slipway\n"));
    json_array_foreach(verbs, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        char key[200];
        const char *last = strrchr(name, ' ') ? strrchr(name, ' ') + 1 : name;
        snprintf(key, sizeof(key), "P %s: ", name);
        if (!has_word(line_of(r.out, key, buf, sizeof(buf)) + strlen(key), last))
            fail_msg("'%s' does not complete to %s: %s", name, last, buf);
        snprintf(key, sizeof(key), "O %s: ", name);
        const char *ol = line_of(r.out, key, buf, sizeof(buf));
        size_t k;
        json_t *o;
        json_array_foreach(json_object_get(v, "options"), k, o)
        {
            char opt[96];
            snprintf(opt, sizeof(opt), "--%s", json_string_value(json_object_get(o, "name")));
            if (!has_word(ol + strlen(key), opt))
                fail_msg("%s: option %s is not completed: %s", name, opt, ol);
        }
        assert_true(has_word(ol + strlen(key), "--json"));
        assert_true(has_word(ol + strlen(key), "--help"));
    }
    assert_string_equal(line_of(r.out, "V: ", buf, sizeof(buf)), "V: CMakeLists.txt");
    assert_string_equal(line_of(r.out, "E: ", buf, sizeof(buf)), "E: frank-small");
    assert_string_equal(line_of(r.out, "Q: ", buf, sizeof(buf)), "Q: frank-small");
    assert_string_equal(line_of(r.out, "S: ", buf, sizeof(buf)),
                        "S: frank-primary frank-primary-sglang");
    assert_string_equal(line_of(r.out, "D: ", buf, sizeof(buf)), "D: ");
    assert_string_equal(line_of(r.out, "L: ", buf, sizeof(buf)), "L: frank-small");
    assert_string_equal(line_of(r.out, "N: ", buf, sizeof(buf)), "N: --nodes");
    swt_run_free(&r);
}

static void test_zsh(void **state)
{
    (void)state;
    struct swt_run r;
    const char *which[] = {"sh", "-c", "command -v zsh", NULL};
    swt_run(which, NULL, 10, &r);
    swt_need(r.status == 0, "zsh (scripts/deps.sh) for the zsh completion");
    swt_run_free(&r);
    char comp[4200], script[10000];
    snprintf(comp, sizeof(comp), "%s/slipway.zsh", dir);
    swt_slipway(&r, "completion", "zsh", "--out", comp, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    /* bashcompinit sets COMP_WORDS from zsh's 1-based words and COMP_CWORD = CURRENT - 1 */
    snprintf(script, sizeof(script),
             "source '%s'\n"
             "print -r -- \"comps: $_comps[slipway]\"\n"
             "COMP_WORDS=(slipway render --n); COMP_CWORD=2; _slipway\n"
             "print -r -- \"N: ${COMPREPLY[*]}\"\n",
             comp);
    shell("zsh", script, &r);
    assert_non_null(strstr(r.out, "comps: _bash_complete -o filenames -F _slipway\n"));
    char buf[512];
    /* zsh filters by the prefix itself: the word must be offered */
    assert_true(has_word(line_of(r.out, "N: ", buf, sizeof(buf)) + 3, "--nodes"));
    swt_run_free(&r);
}

static void test_man(void **state)
{
    (void)state;
    struct swt_run r;
    const char *need[] = {"sh", "-c", "command -v scdoc && command -v man", NULL};
    swt_run(need, NULL, 10, &r);
    swt_need(r.status == 0, "scdoc and man-db (scripts/deps.sh) for the man pages");
    swt_run_free(&r);
    char out[4200];
    snprintf(out, sizeof(out), "%s/man", dir);
    const char *gen[] = {swt_src("scripts/man.sh"), swt_bin(), out, NULL};
    swt_run(gen, NULL, 120, &r);
    if (r.status)
        fail_msg("scripts/man.sh: %s", r.err);
    swt_run_free(&r);
    size_t i, pages = 0;
    json_t *v;
    json_array_foreach(verbs, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        char page[4400], top[64];
        snprintf(top, sizeof(top), "%.*s", (int)strcspn(name, " "), name);
        snprintf(page, sizeof(page), "%s/man1/slipway-%s.1", out, top);
        if (access(page, R_OK))
            fail_msg("%s has no man page (%s)", name, page);
        /* groff's warnings go to stderr; C locale: plain ASCII hyphens */
        const char *man[] = {"env",        "LC_ALL=C", "MANWIDTH=100", "man",
                             "--warnings", "-l",       page,           NULL};
        swt_run(man, NULL, 60, &r);
        if (r.status || r.err[0])
            fail_msg("man -l %s: exit %d: %s", page, r.status, r.err);
        if (!strchr(name, ' '))
            pages++;
        char title[96];
        snprintf(title, sizeof(title), "slipway-%s", top);
        assert_non_null(strstr(r.out, title));
        size_t k;
        json_t *o;
        json_array_foreach(json_object_get(v, "options"), k, o)
        {
            char opt[96];
            snprintf(opt, sizeof(opt), "--%s", json_string_value(json_object_get(o, "name")));
            if (!strstr(r.out, opt))
                fail_msg("man page of %s does not name %s", name, opt);
        }
        swt_run_free(&r);
    }
    assert_true(pages > 20);
    char index[4400];
    snprintf(index, sizeof(index), "%s/man1/slipway.1", out);
    const char *man[] = {"env", "LC_ALL=C", "man", "--warnings", "-l", index, NULL};
    swt_run(man, NULL, 60, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    json_array_foreach(verbs, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (!strchr(name, ' ') && !strstr(r.out, name))
            fail_msg("slipway(1) does not list %s", name);
    }
    swt_run_free(&r);
    /* the fleet file format's page, made from docs/fleet.md */
    char fleet5[4400];
    snprintf(fleet5, sizeof(fleet5), "%s/man5/slipway-fleet.5", out);
    const char *man5[] = {"env",        "LC_ALL=C", "MANWIDTH=100", "man",
                          "--warnings", "-l",       fleet5,         NULL};
    swt_run(man5, NULL, 60, &r);
    if (r.status || r.err[0])
        fail_msg("man -l %s: exit %d: %s", fleet5, r.status, r.err);
    static const char *const sections[] = {"\nTOP LEVEL\n", "\nHOSTS\n",    "\nENDPOINTS\n",
                                           "\nHARNESS\n",   "memory_total", "max_num_seqs"};
    for (size_t k = 0; k < SW_ARRAY_LEN(sections); k++)
        if (!strstr(r.out, sections[k]))
            fail_msg("slipway-fleet(5) lacks %s", sections[k]);
    assert_null(strstr(r.out, "sw_fleet_load")); /* the C API part is left out */
    swt_run_free(&r);
    char bash[4400];
    snprintf(bash, sizeof(bash), "%s/completion/slipway", out);
    assert_int_equal(access(bash, R_OK), 0);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bash),
        cmocka_unit_test(test_zsh),
        cmocka_unit_test(test_man),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
