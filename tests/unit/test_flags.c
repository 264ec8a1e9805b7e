/*
 * The engines' flag tables (memory.h "Engine command lines as flag tables"): every spelling in
 * one row only, and every row that is rendered reads back what it rendered (the round trip): for
 * llama.cpp each SW_LLAMACPP_RENDERED row set in a launch, rendered by the adapter and parsed by
 * the law's reader; for vLLM and SGLang each rendered row set in a fleet endpoint, rendered and
 * read back through the same table. The expectations are this file's own, not the tables'.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/engine.h>
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/fleet.h>
#include <slipway/memory.h>

#include "swtest.h"

#include <string.h>

/* Each spelling of a table in one row only, each spelling a flag. */
static void unique_spellings(const struct sw_flag_table *t)
{
    for (size_t i = 0; i < t->n_rows; i++) {
        const char *p = t->rows[i].names;
        assert_non_null(p);
        while (*p) {
            char name[128];
            size_t l = strcspn(p, "|");
            assert_true(l > 1 && l < sizeof(name));
            memcpy(name, p, l);
            name[l] = '\0';
            if (name[0] != '-')
                fail_msg("%s: a spelling that is not a flag", name);
            if (sw_flags_find(t, name) != &t->rows[i])
                fail_msg("%s: in two rows", name);
            p += l + (p[l] == '|');
        }
    }
}

static void test_unique(void **state)
{
    unique_spellings(&sw_llamacpp_flags);
    unique_spellings(&sw_vllm_flags);
    unique_spellings(&sw_sglang_flags);
    /* a spelling is found whole, never as a part of another */
    assert_null(sw_flags_find(&sw_llamacpp_flags, "--ctx"));
    assert_non_null(sw_flags_find(&sw_llamacpp_flags, "--ctx-size"));
}

/* ---------------------------------------------------------------------------------------------
 * llama.cpp: the launch's field, rendered, parsed.
 */
struct lrow {
    const char *names, *read, *write;
    size_t at, from;
};
#define ROW(n, rd, field, d, wr, src)                                                              \
    {n, #rd, #wr, offsetof(struct sw_llamacpp_args, field), offsetof(struct sw_engine_launch, src)},
static const struct lrow lrows[] = {SW_LLAMACPP_RENDERED(ROW)};
#undef ROW

/* The launch with the row's field set to what the row is tried with (case 0; case 1: its other
 * form, where it has one). */
static void set_launch(const struct lrow *r, int c, struct sw_engine_launch *l)
{
    char *p = (char *)l + r->from;
    if (!strcmp(r->write, "STR") || !strcmp(r->write, "HOST")) {
        const char *v = !strcmp(r->read, "cache")   ? "q8_0"
                        : !strcmp(r->read, "fa")    ? "off"
                        : !strcmp(r->read, "path")  ? "/m/sample.gguf"
                        : !strcmp(r->write, "HOST") ? "10.1.2.3"
                                                    : "sample-name";
        *(const char **)p = v;
    } else if (!strcmp(r->write, "U64")) {
        *(uint64_t *)p = 7;
    } else if (!strcmp(r->write, "UINT")) {
        *(unsigned *)p = 7;
    } else if (!strcmp(r->write, "IS1") || !strcmp(r->write, "IS0")) {
        *(int *)p = !strcmp(r->write, "IS1");
    } else if (!strcmp(r->write, "LAYERS")) {
        *(int64_t *)p = c ? 5 : INT64_MAX;
    } else if (!strcmp(r->write, "THREADS") || !strcmp(r->write, "VERBOSITY")) {
        *(int *)p = c ? -1 : 7; /* -1: the adapter's verbosity */
    } else {
        fail_msg("%s: a write kind this test does not know (%s)", r->names, r->write);
    }
}

/* What the parse must hold for the row after case c. */
static void check_args(const struct lrow *r, int c, const struct sw_llamacpp_args *a)
{
    const char *p = (const char *)a + r->at;
    if (!strcmp(r->read, "path")) {
        assert_string_equal(p, "/m/sample.gguf");
    } else if (!strcmp(r->read, "text")) {
        const char *want = !strcmp(r->write, "HOST")             ? "10.1.2.3"
                           : !strcmp(r->write, "STR")            ? "sample-name"
                           : c && !strcmp(r->write, "VERBOSITY") ? "4" /* the adapter's */
                                                                 : "7";
        assert_non_null(*(const char *const *)p);
        assert_string_equal(*(const char *const *)p, want);
    } else if (!strcmp(r->read, "ctx") || !strcmp(r->read, "slots") || !strcmp(r->read, "min1")) {
        assert_int_equal(*(const int64_t *)p, 7);
    } else if (!strcmp(r->read, "unified") || !strcmp(r->read, "split")) {
        assert_int_equal(a->kv_unified, !strcmp(r->read, "unified"));
        assert_true(a->kv_unified_set);
    } else if (!strcmp(r->read, "on")) {
        assert_true(*(const bool *)p);
    } else if (!strcmp(r->read, "cache")) {
        assert_int_equal(*(const int *)p, SW_KV_Q8_0);
    } else if (!strcmp(r->read, "fa")) {
        assert_int_equal(*(const int *)p, SW_FA_OFF);
    } else if (!strcmp(r->read, "layers")) {
        assert_int_equal(*(const int64_t *)p, c ? 5 : -2);
    } else {
        fail_msg("%s: a read kind this test does not know (%s)", r->names, r->read);
    }
}

/* The rendered command line holds flag exactly once. */
static void rendered_once(const struct sw_engine_cmd *cmd, const char *flag)
{
    size_t seen = 0;
    for (size_t k = 0; k < cmd->argc; k++)
        seen += !strcmp(cmd->argv[k], flag);
    if (seen != 1)
        fail_msg("%s: rendered %zu times", flag, seen);
}

static void test_llamacpp_round_trip(void **state)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(lrows); i++) {
        const struct lrow *r = &lrows[i];
        char flag[64];
        snprintf(flag, sizeof(flag), "%.*s", (int)strcspn(r->names, "|"), r->names);
        /* -ngl: all, and a count; -lv: given, and the adapter's own */
        int cases = !strcmp(r->write, "LAYERS") || !strcmp(r->write, "VERBOSITY") ? 2 : 1;
        for (int c = 0; c < cases; c++) {
            struct sw_engine_launch l = {.model = "m.gguf",
                                         .n_gpu_layers = -1,
                                         .swa_full = -1,
                                         .kv_unified = -1,
                                         .verbosity = -1};
            struct sw_engine_cmd cmd;
            struct sw_llamacpp_args a;
            struct sw_err e;
            set_launch(r, c, &l);
            if (sw_engine_llamacpp_render(&l, &cmd, &e))
                fail_msg("%s: render: %s", flag, e.msg);
            rendered_once(&cmd, flag);
            sw_llamacpp_args_init(&a);
            if (sw_llamacpp_args_parse(&a, (int)cmd.argc, (const char *const *)cmd.argv, &e))
                fail_msg("%s: parse of its render: %s", flag, e.msg);
            check_args(r, c, &a);
            sw_engine_cmd_free(&cmd);
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * vLLM and SGLang: the endpoint's field, rendered, read back through the same table.
 */
static struct sw_fleet *hf_fleet(void)
{
    static const char fleet[] = SWT_FLEET_ONE_GPU "  v:\n"
                                                  "    host: h\n"
                                                  "    devices: [g0]\n"
                                                  "    engine: vllm\n"
                                                  "    payload: {path: /srv/models/m}\n"
                                                  "  s:\n"
                                                  "    host: h\n"
                                                  "    devices: [g0]\n"
                                                  "    engine: sglang\n"
                                                  "    payload: {path: /srv/models/m}\n";
    return swt_fleet_text("rt.yaml", fleet);
}

/* The endpoint with the row's source set; what the row's field must read back as (a number, or
 * text). A row with its own writer (SW_FLAG_W_FN) is set by its flag. */
static void set_endpoint(const struct sw_flag *f, const char *flag, struct sw_fleet_endpoint *ep,
                         double *num, const char **text)
{
    char *p = (char *)ep + f->from;
    *num = 0;
    *text = NULL;
    switch (f->write) {
    case SW_FLAG_W_FLEET_U64:
        ((struct sw_fleet_u64 *)p)->set = true;
        ((struct sw_fleet_u64 *)p)->v = 2;
        *num = 2;
        break;
    case SW_FLAG_W_FLEET_F64:
        ((struct sw_fleet_f64 *)p)->set = true;
        ((struct sw_fleet_f64 *)p)->v = 0.5;
        *num = 0.5;
        break;
    case SW_FLAG_W_FLEET_STR:
        ((struct sw_fleet_str *)p)->v = "fp8";
        *text = "fp8";
        break;
    case SW_FLAG_W_FLEET_IS:
        ((struct sw_fleet_bool *)p)->set = true;
        ((struct sw_fleet_bool *)p)->v = f->arg != 0;
        *num = (double)f->arg;
        break;
    case SW_FLAG_W_FN:
        if (!strcmp(flag, "--revision")) {
            ep->payload.path.v = NULL;
            ep->payload.repo.v = "org/model";
            ep->payload.revision.v = "main";
        } else if (!strcmp(flag, "--speculative-config") ||
                   !strcmp(flag, "--speculative-algorithm") ||
                   !strcmp(flag, "--speculative-num-draft-tokens")) {
            ep->shape.spec_method.v = "mtp";
            ep->shape.spec_tokens.set = true;
            ep->shape.spec_tokens.v = 3;
            *num = 3;
        }
        break;
    default:
        fail_msg("%s: a write kind this test does not know (%d)", flag, (int)f->write);
    }
}

static double number_at(const struct sw_flag *f, const void *field)
{
    switch (f->type) {
    case SW_FLAG_INT:
        return *(const int *)field;
    case SW_FLAG_BOOL:
        return *(const bool *)field;
    case SW_FLAG_I64:
        return (double)*(const int64_t *)field;
    case SW_FLAG_U64:
        return (double)*(const uint64_t *)field;
    case SW_FLAG_F64:
        return *(const double *)field;
    default:
        return -1;
    }
}

static void hf_round_trip(const struct sw_flag_table *t, const char *endpoint, bool sglang)
{
    struct sw_fleet *fl = hf_fleet();
    for (size_t i = 0; i < t->n_rows; i++) {
        const struct sw_flag *f = &t->rows[i];
        char flag[64], ign[1024];
        double num;
        const char *text;
        struct sw_fleet_endpoint ep = *sw_fleet_endpoint(fl, endpoint);
        struct sw_engine_cmd cmd;
        struct sw_engine_argv line;
        struct sw_vllm_opts vo;
        struct sw_sglang_opts so;
        struct sw_err e;
        void *target = sglang ? (void *)&so : (void *)&vo;
        if (f->write == SW_FLAG_W_NONE)
            continue;
        sw_flag_name(f, flag, sizeof(flag));
        set_endpoint(f, flag, &ep, &num, &text);
        int rc = sglang ? sw_sglang_render_endpoint(&ep, &cmd, &e)
                        : sw_vllm_render_endpoint(&ep, &cmd, &e);
        if (rc)
            fail_msg("%s: render: %s", flag, e.msg);
        rendered_once(&cmd, flag);
        sw_vllm_opts_init(&vo);
        sw_sglang_opts_init(&so);
        rc = sglang ? sw_sglang_read_argv((int)cmd.argc, cmd.argv, &so, &line, ign, sizeof(ign), &e)
                    : sw_vllm_read_argv((int)cmd.argc, cmd.argv, &vo, &line, ign, sizeof(ign), &e);
        if (rc)
            fail_msg("%s: read back: %s", flag, e.msg);
        void *field = sw_flag_field(f, target, &line);
        if (f->type == SW_FLAG_TEXT || f->type == SW_FLAG_CHARS) {
            const char *got = f->type == SW_FLAG_TEXT ? *(const char **)field : field;
            const char *want = text                      ? text
                               : !strcmp(flag, "--host") ? "127.0.0.1"
                               : !strcmp(flag, "--port") ? (sglang ? "30000" : "8000")
                               : !strcmp(flag, "--speculative-algorithm") ? "NEXTN"
                                                                          : "/srv/models/m";
            assert_non_null(got);
            if (strcmp(got, want))
                fail_msg("%s: read back '%s', rendered '%s'", flag, got, want);
        } else if (f->type != SW_FLAG_NONE) {
            if (number_at(f, field) != num)
                fail_msg("%s: read back %g, rendered %g", flag, number_at(f, field), num);
        } else if (f->read == NULL && !strstr(ign, flag)) {
            fail_msg("%s: rendered, but not read back nor noted (%s)", flag, ign);
        }
        if (!strcmp(flag, "--speculative-config")) {
            assert_string_equal(vo.spec_method, "mtp");
            assert_int_equal(vo.num_speculative_tokens, 3);
        }
        sw_engine_cmd_free(&cmd);
    }
    sw_fleet_free(fl);
}

static void test_vllm_round_trip(void **state)
{
    hf_round_trip(&sw_vllm_flags, "v", false);
}

static void test_sglang_round_trip(void **state)
{
    hf_round_trip(&sw_sglang_flags, "s", true);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unique),
        cmocka_unit_test(test_llamacpp_round_trip),
        cmocka_unit_test(test_vllm_round_trip),
        cmocka_unit_test(test_sglang_round_trip),
    };
    return cmocka_run_group_tests_name("flags", tests, NULL, NULL);
}
