/*
 * fleet: the fleet-file loader, env-file parsing and import, shape vocabulary, and the examples.
 *
 * Data-driven: every tests/data/fleet/bad-*.yaml must fail with exactly the errors listed in its
 * sibling .expect file (FILE:LINE:COL: message start), and every good-*.yaml must load.
 * Header lines "# env: KEY=VALUE" in a .yaml set the caller's environment for that case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>

#include "swtest.h"

#include "fleet/fleet_internal.h" /* sw__fleet_suggest */

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Helpers: a fake caller environment, in-memory env files, error collection.
 */
struct fakeenv {
    const char *kv[16]; /* "KEY=VALUE" */
    size_t n;
};

static const char *fake_getenv(void *ctx, const char *name)
{
    const struct fakeenv *fe = ctx;
    size_t nl = strlen(name);
    for (size_t i = 0; fe && i < fe->n; i++)
        if (!strncmp(fe->kv[i], name, nl) && fe->kv[i][nl] == '=')
            return fe->kv[i] + nl + 1;
    return NULL;
}

struct memfiles {
    const char *name[8];
    const char *text[8];
    size_t n;
};

static int mem_read(void *ctx, const char *path, size_t max, char **data, size_t *len,
                    struct sw_err *e)
{
    const struct memfiles *m = ctx;
    for (size_t i = 0; i < m->n; i++) {
        if (!strcmp(m->name[i], path)) {
            *len = strlen(m->text[i]);
            if (*len > max)
                return sw_err_set(e, SW_ERANGE, "too big");
            *data = sw_strdup(m->text[i]);
            return *data ? 0 : sw_err_set(e, SW_ENOMEM, "oom");
        }
    }
    return sw_err_at(e, SW_ENOENT, path, 0, 0, "cannot open: No such file or directory");
}

struct errs {
    char msg[64][1200];
    int n;
};

static void collect(void *ctx, const struct sw_err *e)
{
    struct errs *es = ctx;
    if (es->n >= 64)
        return;
    sw_err_format(e, es->msg[es->n], sizeof(es->msg[0]));
    es->n++;
}

static bool any_error(const struct errs *es, const char *needle)
{
    for (int i = 0; i < es->n; i++)
        if (strstr(es->msg[i], needle))
            return true;
    return false;
}

static void dump_errs(const struct errs *es)
{
    for (int i = 0; i < es->n; i++)
        print_message("  got: %s\n", es->msg[i]);
}

/* Load from memory with no caller environment and the given env files. */
static int load_mem(const char *yaml, struct memfiles *mf, struct fakeenv *fe, struct errs *es,
                    struct sw_fleet **out)
{
    struct sw_fleet_opts o = {.getenv = fake_getenv,
                              .getenv_ctx = fe,
                              .read = mf ? mem_read : NULL,
                              .read_ctx = mf,
                              .on_error = es ? collect : NULL,
                              .on_error_ctx = es};
    struct sw_err e;
    return sw_fleet_load_mem("mem/fleet.yaml", yaml, strlen(yaml), &o, out, &e);
}

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* ---------------------------------------------------------------------------------------------
 * Data-driven cases.
 */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t list_cases(const char *prefix, char ***out)
{
    DIR *d = opendir(swt_src("tests/data/fleet"));
    assert_non_null(d);
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, prefix, strlen(prefix)) || l < 6 ||
            strcmp(de->d_name + l - 5, ".yaml"))
            continue;
        names = realloc(names, (n + 1) * sizeof(*names));
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_str);
    *out = names;
    return n;
}

/* Errors are compared with the file part reduced to its base name. */
static void collect_base(void *ctx, const struct sw_err *e)
{
    struct sw_err b = *e;
    snprintf(b.where, sizeof(b.where), "%s", base(e->where));
    collect(ctx, &b);
}

static void test_bad_cases(void **state)
{
    char **names;
    size_t n = list_cases("bad-", &names);
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s", swt_src("tests/data/fleet"));
        size_t pl = strlen(path);
        snprintf(path + pl, sizeof(path) - pl, "/%s", names[i]);
        /* the caller's environment for this case */
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(sw_read_file(path, 1 << 20, &text, &len, NULL), 0);
        struct fakeenv fe = {0};
        char envbuf[8][256];
        for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            if (!strncmp(l, "# env: ", 7) && fe.n < 8) {
                size_t k = strcspn(l + 7, "\n");
                snprintf(envbuf[fe.n], sizeof(envbuf[0]), "%.*s", (int)k, l + 7);
                fe.kv[fe.n] = envbuf[fe.n];
                fe.n++;
            }
        }
        sw_free(text);
        struct errs es = {0};
        struct sw_fleet_opts o = {.getenv = fake_getenv,
                                  .getenv_ctx = &fe,
                                  .on_error = collect_base,
                                  .on_error_ctx = &es};
        struct sw_fleet *f = (struct sw_fleet *)&o; /* must be reset to NULL */
        struct sw_err e;
        int rc = sw_fleet_load(path, &o, &f, &e);
        if (rc == 0)
            fail_msg("%s loaded but must fail", names[i]);
        assert_null(f);
        assert_true(e.line > 0 || e.where[0]);
        /* the expectations */
        char xp[4096];
        snprintf(xp, sizeof(xp), "%.*s.expect", (int)(strlen(path) - 5), path);
        assert_int_equal(sw_read_file(xp, 1 << 20, &text, &len, NULL), 0);
        int want = 0;
        for (char *l = text; l && *l;) {
            char *nl = strchr(l, '\n');
            if (nl)
                *nl = '\0';
            if (*l && *l != '#') {
                want++;
                bool found = false;
                for (int k = 0; k < es.n && !found; k++)
                    found = !strncmp(es.msg[k], l, strlen(l));
                if (!found) {
                    dump_errs(&es);
                    fail_msg("%s: expected error not reported: %s", names[i], l);
                }
            }
            l = nl ? nl + 1 : NULL;
        }
        sw_free(text);
        if (es.n != want) {
            dump_errs(&es);
            fail_msg("%s: %d errors reported, %d expected", names[i], es.n, want);
        }
        free(names[i]);
    }
    free(names);
}

static void test_good_cases(void **state)
{
    char **names;
    size_t n = list_cases("good-", &names);
    assert_true(n >= 2);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", swt_src("tests/data/fleet"), names[i]);
        struct errs es = {0};
        struct sw_fleet_opts o = {
            .getenv = sw_fleet_no_environ, .on_error = collect, .on_error_ctx = &es};
        struct sw_fleet *f = NULL;
        struct sw_err e;
        if (sw_fleet_load(path, &o, &f, &e)) {
            dump_errs(&es);
            fail_msg("%s must load", names[i]);
        }
        assert_int_equal(es.n, 0);
        json_t *j = sw_fleet_to_json(f);
        assert_non_null(j);
        json_decref(j);
        sw_fleet_free(f);
        free(names[i]);
    }
    free(names);
}

/* ---------------------------------------------------------------------------------------------
 * The operator's fleet, value by value.
 */
static struct sw_fleet *load_example(const char *rel, struct fakeenv *fe)
{
    struct errs es = {0};
    struct sw_fleet_opts o = {.getenv = fe ? fake_getenv : sw_fleet_no_environ,
                              .getenv_ctx = fe,
                              .on_error = collect,
                              .on_error_ctx = &es};
    struct sw_fleet *f = NULL;
    struct sw_err e;
    if (sw_fleet_load(swt_src(rel), &o, &f, &e)) {
        dump_errs(&es);
        fail_msg("%s must load", rel);
    }
    return f;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static void test_operator_example(void **state)
{
    struct sw_fleet *f = load_example("examples/operator.yaml", NULL);
    assert_int_equal(f->n_hosts, 2);
    assert_int_equal(f->n_endpoints, 5);
    assert_int_equal(f->n_profiles, 2);

    const struct sw_fleet_host *ds = sw_fleet_host(f, "dankserver");
    assert_non_null(ds);
    assert_int_equal(ds->transport, SW_FLEET_SSH);
    assert_int_equal(ds->n_devices, 3);
    const struct sw_fleet_device *r0 = sw_fleet_device(ds, "r9700-0");
    assert_int_equal(r0->memory_total.v, 32ull << 30);
    assert_int_equal(r0->memory_usable.v, (uint64_t)llround(31.86 * 1073741824.0));
    assert_int_equal(sw_fleet_device(ds, "cuda-24g")->memory_total.v, 24576ull << 20);
    const struct sw_fleet_device *gfx = sw_fleet_device(sw_fleet_host(f, "Dankclaw"), "gfx1151");
    assert_true(gfx->unified_memory.set && gfx->unified_memory.v);
    assert_int_equal(gfx->memory_usable.v, 114ull << 30);
    assert_false(gfx->memory_total.set);

    /* the fork profile: constants as the log states them, the arena slope as calibrated */
    const struct sw_fleet_profile *p = sw_fleet_profile(f, "tiered-expert-offload");
    assert_int_equal(p->base, SW_FLEET_VLLM);
    const struct sw_fleet_const *k = sw_fleet_profile_const(p, "reserve_per_token");
    assert_true(k->q.value == 9920.0);
    assert_string_equal(k->q.unit, "B/token");
    k = sw_fleet_profile_const(p, "overhead");
    assert_true(fabs(k->q.value - 7.60 * 1073741824.0) < 1.0);
    assert_string_equal(k->q.unit, "B");
    assert_true(fabs(sw_fleet_profile_const(p, "overhead_precise")->q.value - 5.25 * 1073741824.0) <
                1.0);
    k = sw_fleet_profile_const(p, "overhead_step");
    assert_true(fabs(k->q.value - 0.22 * 1073741824.0) < 1.0);
    k = sw_fleet_profile_const(p, "overhead_per");
    assert_true(k->q.value == 1024.0);
    assert_string_equal(k->q.unit, "token");
    assert_true(sw_fleet_profile_const(p, "overhead_threshold")->q.value == 4096.0);
    assert_true(fabs(sw_fleet_profile_const(p, "slot")->q.value - 2.34375 * 1048576.0) < 1e-3);
    assert_true(fabs(sw_fleet_profile_const(p, "usable")->q.value - 31.86 * 1073741824.0) < 1.0);
    assert_non_null(sw_fleet_profile_const(p, "weights"));
    assert_non_null(sw_fleet_profile_const(p, "non_torch"));
    assert_non_null(sw_fleet_profile_const(p, "graphs"));

    /* frank-primary: the shape comes from frank-primary.env */
    const struct sw_fleet_endpoint *fp = sw_fleet_endpoint(f, "frank-primary");
    assert_int_equal(fp->engine, SW_FLEET_VLLM);
    assert_ptr_equal(fp->profile, p);
    assert_int_equal(fp->n_devices, 2);
    assert_int_equal(fp->shape.max_model_len.v, 200704);
    assert_true(ends_with(fp->shape.max_model_len.at.file, "examples/frank-primary.env"));
    assert_int_equal(fp->shape.max_model_len.at.line, 4);
    assert_int_equal(fp->shape.max_model_len.at.col, 8);
    assert_int_equal(fp->shape.seqs.v, 3);
    assert_int_equal(fp->shape.kv_cache_bytes.v, 3150000000ull);
    assert_int_equal(fp->shape.max_num_batched_tokens.v, 1024);
    assert_int_equal(fp->shape.tensor_parallel.v, 2);
    assert_string_equal(fp->shape.kv_cache_dtype.v, "fp8");
    assert_false(fp->shape.decode_context_parallel.set);
    assert_int_equal(fp->listen_port.v, 7770);
    assert_int_equal(fp->payload.shards.v, 131);
    assert_int_equal(fp->payload.n_mounts, 1);
    assert_string_equal(fp->payload.mounts[0].container_path, "/models");
    assert_non_null(sw_fleet_endpoint_frozen(fp, "image"));
    assert_non_null(sw_fleet_endpoint_frozen(fp, "quantization"));
    assert_null(sw_fleet_endpoint_frozen(fp, "seqs"));
    const struct sw_fleet_knob *kb = sw_fleet_endpoint_knob(fp, "max_num_seqs");
    assert_non_null(kb);
    assert_true(kb->is_range);
    assert_int_equal(kb->min.u, 2);
    assert_int_equal(kb->max.u, 6);
    /* SEQS 2 is known bad; the deployed SEQS 3 is not */
    assert_int_equal(fp->n_known_bad, 1);
    const struct sw_fleet_rule *rule = &fp->known_bad[0];
    assert_string_equal(rule->failure, "compile_constraint");
    assert_non_null(strstr(rule->text, "Constraints violated"));
    assert_false(sw_fleet_rule_matches(rule, &fp->shape));
    struct sw_fleet_shape s2 = fp->shape;
    struct sw_fleet_value two = {.type = SW_FLEET_V_COUNT, .set = true, .u = 2};
    assert_int_equal(sw_fleet_shape_set(&s2, "seqs", &two, NULL), 0);
    assert_true(sw_fleet_rule_matches(rule, &s2));
    /* measured facts and boots */
    assert_true(sw_fleet_endpoint_fact(fp, "kv_price_fp8_200704")->q.value == 7892.0);
    assert_int_equal(fp->n_boots, 11);
    const struct sw_fleet_boot *b = &fp->boots[3];
    assert_int_equal(b->shape.max_model_len.v, 200704);
    assert_int_equal(b->shape.kv_cache_bytes.v, 3146000000ull);
    assert_string_equal(b->outcome, "serving");
    assert_int_equal(json_integer_value(json_object_get(b->printed, "kv_cache_tokens")), 398658);
    assert_int_equal(json_integer_value(json_object_get(b->printed, "arena_slots")), 6496);
    struct sw_fleet_shape full = fp->shape;
    sw_fleet_shape_overlay(&full, &fp->boots[0].shape);
    assert_int_equal(full.seqs.v, 4);
    assert_int_equal(full.tensor_parallel.v, 2); /* not in the boot: the endpoint's */
    /* the inline architecture is kept as JSON */
    assert_int_equal(json_integer_value(json_object_get(fp->arch, "num_hidden_layers")), 48);
    assert_int_equal(json_integer_value(json_object_get(fp->arch, "num_key_value_heads")), 2);

    /* frank-small: llama.cpp, env file, projector, band, measured non-KV cost */
    const struct sw_fleet_endpoint *fs = sw_fleet_endpoint(f, "frank-small");
    assert_int_equal(fs->engine, SW_FLEET_LLAMACPP);
    assert_int_equal(fs->shape.ctx_size.v, 540672);
    assert_int_equal(fs->shape.seqs.v, 3);
    assert_int_equal(fs->shape.ctx_size.v / fs->shape.seqs.v, 180224);
    assert_string_equal(fs->shape.cache_type_k.v, "f16");
    assert_string_equal(fs->shape.cache_type_v.v, "q8_0");
    assert_int_equal(fs->shape.n_gpu_layers.v, SW_FLEET_ALL);
    assert_true(fs->shape.kv_unified.set && !fs->shape.kv_unified.v);
    assert_string_equal(fs->payload.mmproj.v, "/home/dank/models/MiMo-V2.6-Distill-Qwen-9B-GGUF/"
                                              "mmproj-MiMo-V2.6-Distill-Qwen-9B-f16.gguf");
    assert_int_equal(fs->free_band.min.v, 2ull << 30);
    assert_int_equal(fs->free_band.max.v, 3ull << 30);
    const struct sw_fleet_fact *nk = sw_fleet_endpoint_fact(fs, "non_kv_cost");
    assert_true(nk->q.value == 7390.0 * 1048576.0);
    assert_string_equal(nk->device->name, "cuda-24g");
    assert_int_equal(fs->n_boots, 3);
    assert_int_equal(fs->boots[1].free.v, 1153ull << 20);
    assert_string_equal(fs->boots[1].outcome, "rejected");
    assert_true(fs->boots[1].mmproj.v);
    /* the YAML alias gives frank-large the same architecture */
    const struct sw_fleet_endpoint *fl = sw_fleet_endpoint(f, "frank-large");
    assert_true(json_equal(fl->arch, fs->arch));
    assert_int_equal(fl->shape.spec_tokens.v, 2);
    assert_string_equal(fl->shape.spec_method.v, "mtp");
    assert_true(fabs(fl->shape.gpu_memory_utilization.v - 0.45) < 1e-12);
    assert_false(sw_fleet_endpoint(f, "frank-primary-sglang")->enabled);
    /* frank-large on the ROCmFPX fork: its profile declares the fork's tensor type */
    const struct sw_fleet_endpoint *fx = sw_fleet_endpoint(f, "frank-large-rocmfpx");
    assert_non_null(fx);
    assert_int_equal(fx->engine, SW_FLEET_LLAMACPP);
    assert_ptr_equal(fx->profile, sw_fleet_profile(f, "rocmfpx"));
    assert_int_equal(fx->profile->n_gguf_types, 1);
    assert_int_equal(fx->profile->gguf_types[0].id, 115);
    assert_string_equal(fx->profile->gguf_types[0].name, "Q8_0_ROCMFPX");
    assert_int_equal(fx->shape.ctx_size.v, 262144);
    assert_int_equal(fx->shape.seqs.v, 1);
    assert_int_equal(fx->shape.spec_tokens.v, 4);
    assert_int_equal(json_integer_value(json_object_get(fx->arch, "num_key_value_heads")), 4);

    /* harness: contextWindow 262144, 0.70, 32768, compaction on frank-small (180224 there) */
    assert_int_equal(f->harness.context_window.v, 262144);
    assert_true(fabs(f->harness.compaction_ratio.v - 0.70) < 1e-12);
    assert_int_equal(f->harness.summary_budget.v, 32768);
    assert_ptr_equal(f->harness.compaction_endpoint, fs);
    assert_int_equal(sw_fleet_client_window(f, fs)->v, 180224);
    assert_int_equal(sw_fleet_client_window(f, fp)->v, 262144);

    /* positions: a YAML value, an imported value, an alias spelling */
    struct sw_fleet_at at;
    assert_int_equal(sw_fleet_pos(f, "endpoints.frank-small.shape.cache_type_v", &at), 0);
    assert_true(ends_with(at.file, "examples/operator.yaml"));
    assert_true(at.line > 0 && at.col > 0);
    assert_int_equal(sw_fleet_pos(f, "endpoints.frank-small.shape.seqs", &at), 0);
    assert_true(ends_with(at.file, "examples/frank-small.env"));
    assert_int_equal(at.line, 6);
    assert_int_equal(sw_fleet_pos(f, "endpoints.frank-small.shape.parallel", &at), 0);
    assert_int_equal(at.line, 6);
    assert_int_equal(sw_fleet_pos(f, "hosts.dankserver.devices.r9700-1.memory_usable", &at), 0);
    assert_int_equal(sw_fleet_pos(f, "endpoints.nope.shape.seqs", &at), SW_ENOENT);
    struct sw_err e;
    sw_fleet_err_at(&e, SW_EGATE, &fs->shape.seqs.at, "%s", "too many slots");
    char buf[1200];
    sw_err_format(&e, buf, sizeof(buf));
    assert_non_null(strstr(buf, "frank-small.env:6:10: too many slots"));

    /* the image is frozen but the log gives no digest: warned, not refused */
    assert_int_equal(f->n_warnings, 2);
    assert_non_null(strstr(f->warnings[0].msg, "not pinned by digest"));

    json_t *j = sw_fleet_to_json(f);
    assert_non_null(j);
    json_t *eps = json_object_get(j, "endpoints");
    assert_int_equal(json_array_size(eps), 5);
    json_decref(j);
    sw_fleet_free(f);
}

static void test_local_example(void **state)
{
    struct sw_fleet *f = load_example("examples/local.yaml", NULL);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "local");
    assert_non_null(ep);
    assert_int_equal(ep->engine, SW_FLEET_LLAMACPP);
    assert_string_equal(ep->listen_address.v, "127.0.0.1");
    assert_int_equal(ep->listen_port.v, 18080);
    assert_int_equal(ep->host->transport, SW_FLEET_LOCAL);
    assert_string_equal(ep->devices[0]->name, "cpu");
    assert_non_null(strstr(ep->payload.path.v, ".cache/slipway/models/"));
    assert_int_equal(f->n_warnings, 0);
    sw_fleet_free(f);
}

/* ---------------------------------------------------------------------------------------------
 * good-features.yaml: aliases, merge keys, knob forms, rules, secrets, imports.
 */
static void test_features(void **state)
{
    struct fakeenv fe = {.kv = {"PORT=9001"}, .n = 1};
    struct sw_fleet *f = load_example("tests/data/fleet/good-features.yaml", &fe);
    const struct sw_fleet_endpoint *big = sw_fleet_endpoint(f, "big");
    /* merge key and engine spellings */
    assert_int_equal(big->shape.max_model_len.v, 131072);
    assert_string_equal(big->shape.kv_cache_dtype.v, "fp8");
    assert_int_equal(big->shape.seqs.v, 4);
    assert_int_equal(big->shape.kv_cache_bytes.v, 6100000000ull);
    assert_int_equal(big->shape.max_num_batched_tokens.v, 2048);
    assert_true(fabs(big->shape.gpu_memory_utilization.v - 0.92) < 1e-12);
    assert_int_equal(big->shape.spec_tokens.v, 2);
    /* anchors across devices */
    const struct sw_fleet_host *h = big->host;
    assert_int_equal(h->port.v, 2222);
    assert_int_equal(sw_fleet_device(h, "r1")->bandwidth.v, 640000000000ull);
    assert_true(big->image_pinned);
    assert_int_equal(big->api_key.kind, SW_FLEET_SECRET_ENV);
    assert_string_equal(big->api_key.ref, "BIG_API_KEY");
    assert_int_equal(big->n_env, 3);
    assert_int_equal(big->env[1].secret.kind, SW_FLEET_SECRET_FILE);
    assert_null(big->env[1].value);
    assert_string_equal(big->env[2].value, "INFO");
    assert_int_equal(big->payload.source, SW_FLEET_PAYLOAD_LOCAL);
    assert_string_equal(big->payload.repo.v, "Qwen/Qwen3-Next-80B-A3B-Instruct");
    assert_int_equal(big->payload.n_files, 2);
    /* knobs of each form */
    const struct sw_fleet_knob *k = sw_fleet_endpoint_knob(big, "kv_cache_bytes");
    assert_int_equal(k->type, SW_FLEET_V_BYTES);
    assert_int_equal(k->min.u, 2000000000ull);
    k = sw_fleet_endpoint_knob(big, "env.VLLM_USE_V1");
    assert_int_equal(k->n_values, 2);
    assert_string_equal(k->values[1].s, "1");
    k = sw_fleet_endpoint_knob(big, "gpu_memory_utilization");
    assert_true(k->min.f == 0.5 && k->max.f == 0.95);
    assert_non_null(sw_fleet_endpoint_knob(big, "arg.--enforce-eager"));
    assert_non_null(sw_fleet_endpoint_frozen(big, "mnbt"));
    /* rules: expression with && and alias spelling, map with >= and a set */
    assert_int_equal(big->n_known_bad, 2);
    const struct sw_fleet_rule *r0 = &big->known_bad[0], *r1 = &big->known_bad[1];
    assert_int_equal(r0->n_conds, 2);
    assert_string_equal(r0->conds[0].field->name, "seqs");
    struct sw_fleet_shape s = big->shape;
    struct sw_fleet_value v = {.type = SW_FLEET_V_COUNT, .set = true, .u = 2};
    assert_false(sw_fleet_rule_matches(r0, &s));
    sw_fleet_shape_set(&s, "seqs", &v, NULL);
    assert_true(sw_fleet_rule_matches(r0, &s));
    struct sw_fleet_value auto_ = {.type = SW_FLEET_V_STR, .set = true, .s = "auto"};
    assert_int_equal(sw_fleet_shape_set(&s, "kv_cache_dtype", &auto_, NULL), 0);
    assert_false(sw_fleet_rule_matches(r0, &s));
    assert_int_equal(r1->conds[0].op, SW_FLEET_GE);
    assert_int_equal(r1->conds[1].op, SW_FLEET_IN);
    v.u = 262144;
    sw_fleet_shape_set(&s, "max_model_len", &v, NULL);
    v.u = 5;
    sw_fleet_shape_set(&s, "seqs", &v, NULL);
    assert_true(sw_fleet_rule_matches(r1, &s));
    v.u = 4;
    sw_fleet_shape_set(&s, "seqs", &v, NULL);
    assert_false(sw_fleet_rule_matches(r1, &s));
    /* both forms compile to the one rule language, which sw_fleet_rule_matches evaluates */
    assert_string_equal(r0->expr_text, "seqs == 2 && kv_cache_dtype == \"fp8\"");
    assert_string_equal(r1->expr_text, "max_model_len >= 245760 && (seqs == 3 || seqs == 5)");
    assert_non_null(r0->expr);
    assert_true(sw_rule_eval(r1->expr, &s) == sw_fleet_rule_matches(r1, &s));
    v.u = 3;
    sw_fleet_shape_set(&s, "seqs", &v, NULL);
    assert_true(sw_rule_eval(r1->expr, &s));
    /* facts, boots, arch, profile terms */
    assert_string_equal(sw_fleet_endpoint_fact(big, "non_kv_cost")->date, "2026-10-01");
    assert_string_equal(sw_fleet_endpoint_fact(big, "decode")->q.unit, "token/s");
    assert_string_equal(big->boots[0].failure, "oom");
    assert_true(json_is_null(json_object_get(big->arch, "rope_scaling")));
    assert_true(json_is_false(json_object_get(big->arch, "tie_word_embeddings")));
    assert_true(json_is_real(json_object_get(big->arch, "rms_norm_eps")));
    assert_true(json_is_string(json_object_get(big->arch, "name")));
    assert_int_equal(json_array_size(json_object_get(big->arch, "layer_types")), 4);
    assert_non_null(big->profile->terms);

    /* small: engine alias, llama.cpp spellings, the import rule */
    const struct sw_fleet_endpoint *sm = sw_fleet_endpoint(f, "small");
    assert_int_equal(sm->engine, SW_FLEET_LLAMACPP);
    assert_string_equal(sm->shape.flash_attn.v, "on");
    assert_int_equal(sm->shape.ctx_size.v, 540672); /* the env file beats the YAML default */
    assert_int_equal(sm->shape.seqs.v, 3);          /* quoted '3' in the file */
    assert_null(sm->payload.mmproj.v);              /* MMPROJ_FILE= is a declared opt-out */
    assert_true(sm->payload.mmproj.off);
    assert_int_equal(sm->listen_port.v, 9001); /* ${PORT:-8082} with PORT=9001 */
    assert_false(sm->shape.ubatch_size.set);   /* optional key, absent */
    assert_int_equal(sm->n_env, 1);
    assert_string_equal(sm->env[0].name, "GGML_CUDA_ENABLE_UNIFIED_MEMORY");
    assert_int_equal(sm->n_imports, 6);
    assert_int_equal(sm->imports[0].from, SW_FLEET_FROM_FILE);
    assert_int_equal(sm->imports[4].from, SW_FLEET_FROM_DEFAULT);
    const struct sw_fleet_envfile_var *uv = sw_fleet_envfile_get(sm->env_file, "UNUSED_BY_SLIPWAY");
    assert_string_equal(uv->value, "/srv/models/other dir/x.gguf");
    assert_true(sw_fleet_envfile_get(sm->env_file, "CTX_SIZE")->exported);
    assert_int_equal(f->harness.summary_budget.v, 32000);
    assert_int_equal(sw_fleet_client_window(f, big)->v, 131072);
    assert_int_equal(f->n_warnings, 0);
    sw_fleet_free(f);
}

/* ---------------------------------------------------------------------------------------------
 * The import rule: environment > env file > fleet file; empty is an error unless opted out.
 */
static const char *rule_yaml = "hosts:\n"
                               "  h: {transport: local, devices: {cpu: {kind: cpu}}}\n"
                               "endpoints:\n"
                               "  e:\n"
                               "    host: h\n"
                               "    engine: llama.cpp\n"
                               "    shape: {ctx_size: 1000, seqs: 1}\n"
                               "    payload: {path: /m, mmproj: /m/default-proj.gguf}\n"
                               "    env_file:\n"
                               "      path: e.env\n"
                               "      map: {CTX_SIZE: shape.ctx_size, PARALLEL: shape.seqs,\n"
                               "            MMPROJ_FILE: payload.mmproj, MAXLEN: shape.ctx_size}\n"
                               "      opt_out: [MMPROJ_FILE]\n";

/* The text form of `when` is read by the one rule grammar: `and` and a lone `=` are && and ==,
 * each value is read in its field's units and choices, and an error points at its token inside
 * the text (line:col in the fleet file), not at the start of the rule. */
static const char rule_text_yaml[] = "hosts:\n"
                                     "  box:\n"
                                     "    transport: local\n"
                                     "    devices:\n"
                                     "      gpu0: {kind: R9700, vendor: amd, memory_total: 32GiB}\n"
                                     "endpoints:\n"
                                     "  x:\n"
                                     "    host: box\n"
                                     "    engine: vllm\n"
                                     "    known_bad:\n"
                                     "%s";

static void test_rule_text(void **state)
{
    (void)state;
    char yaml[2048];
    struct errs es = {0};
    struct sw_fleet *f = NULL;
    snprintf(yaml, sizeof(yaml), rule_text_yaml,
             "      - when: maxlen = 180k and kv_cache_dtype = fp8\n"
             "        text: t\n"
             "      - {when: \"seqs >= 2 && seqs < 4\", note: n}\n"
             "      - {when: kv_cache_bytes >= 6 GiB, note: a unit after a space}\n");
    assert_int_equal(load_mem(yaml, NULL, NULL, &es, &f), 0);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "x");
    assert_int_equal(ep->n_known_bad, 3);
    assert_int_equal(ep->known_bad[2].conds[0].v.u, 6ull << 30);
    const struct sw_fleet_rule *r = &ep->known_bad[0];
    assert_int_equal(r->n_conds, 2);
    assert_string_equal(r->conds[0].field->name, "max_model_len");
    assert_int_equal(r->conds[0].op, SW_FLEET_EQ);
    assert_int_equal(r->conds[0].v.u, 180000);
    assert_string_equal(r->conds[1].v.s, "fp8");
    assert_int_equal(r->conds[1].at.line, 11); /* each condition at its key */
    assert_int_equal(r->conds[1].at.col, 33);
    assert_string_equal(r->expr_text, "max_model_len == 180000 && kv_cache_dtype == \"fp8\"");
    assert_string_equal(ep->known_bad[1].expr_text, "seqs >= 2 && seqs < 4");
    struct sw_fleet_shape s = ep->shape;
    struct sw_fleet_value v = {.type = SW_FLEET_V_COUNT, .set = true, .u = 180000};
    struct sw_fleet_value fp8 = {.type = SW_FLEET_V_STR, .set = true, .s = "fp8"};
    sw_fleet_shape_set(&s, "max_model_len", &v, NULL);
    assert_false(sw_fleet_rule_matches(r, &s));
    sw_fleet_shape_set(&s, "kv_cache_dtype", &fp8, NULL);
    assert_true(sw_fleet_rule_matches(r, &s));
    sw_fleet_free(f);

    /* errors at the offending token: a bad choice, a typo, a missing condition */
    snprintf(yaml, sizeof(yaml), rule_text_yaml,
             "      - when: seqs = 2 and kv_cache_dtype = fp9\n"
             "        text: t\n"
             "      - {when: \"seqs == 2 and sqs == 3\", text: t}\n"
             "      - when: seqs == 2 &&\n"
             "        text: t\n"
             "      - when: max_model_len >= 10 xyz\n"
             "        text: t\n"
             "      - when: seqs == 2 || seqs == 3\n"
             "        text: t\n"
             "      - when: >-\n"
             "          seqs == 2 &&\n"
             "          bogus == 1\n"
             "        text: t\n");
    es.n = 0;
    assert_int_not_equal(load_mem(yaml, NULL, NULL, &es, &f), 0);
    assert_null(f);
    if (!any_error(&es, "mem/fleet.yaml:11:45: endpoints.x.known_bad[0].when") ||
        !any_error(&es, "mem/fleet.yaml:13:31: endpoints.x.known_bad[1].when: 'sqs' is not a "
                        "shape field (did you mean 'seqs'?)") ||
        !any_error(&es, "mem/fleet.yaml:14:27: endpoints.x.known_bad[2].when: expected") ||
        !any_error(&es, "mem/fleet.yaml:16:35: endpoints.x.known_bad[3].when: unexpected 'xyz'") ||
        !any_error(&es, "mem/fleet.yaml:18:15: endpoints.x.known_bad[4].when joins its "
                        "conditions with && (or and) only") ||
        /* folded over lines, the text is not the source: the scalar's own position */
        !any_error(&es, "mem/fleet.yaml:21:1: endpoints.x.known_bad[5].when: 'bogus'")) {
        dump_errs(&es);
        fail();
    }
}

static void test_import_rule(void **state)
{
    /* MAXLEN and CTX_SIZE both map to ctx_size: refused */
    struct memfiles mf = {.name = {"mem/e.env"}, .text = {"CTX_SIZE=4096\nPARALLEL=2\n"}, .n = 1};
    struct errs es = {0};
    struct sw_fleet *f = NULL;
    assert_int_not_equal(load_mem(rule_yaml, &mf, NULL, &es, &f), 0);
    assert_true(any_error(&es, "shape.ctx_size is already imported from CTX_SIZE"));

    char yaml[2048];
    snprintf(yaml, sizeof(yaml), "%s", rule_yaml);
    memcpy(strstr(yaml, ", MAXLEN: shape.ctx_size}"), "}                        ", 25);
    /* file over default */
    es.n = 0;
    assert_int_equal(load_mem(yaml, &mf, NULL, &es, &f), 0);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "e");
    assert_int_equal(ep->shape.ctx_size.v, 4096);
    assert_int_equal(ep->shape.seqs.v, 2);
    assert_string_equal(ep->shape.ctx_size.at.file, "mem/e.env");
    /* MMPROJ_FILE absent everywhere: the default stays, with a warning */
    assert_string_equal(ep->payload.mmproj.v, "/m/default-proj.gguf");
    assert_int_equal(f->n_warnings, 1);
    assert_non_null(strstr(f->warnings[0].msg, "keeps its fleet-file value"));
    sw_fleet_free(f);

    /* environment over file */
    struct fakeenv fe = {.kv = {"CTX_SIZE=8192"}, .n = 1};
    assert_int_equal(load_mem(yaml, &mf, &fe, &es, &f), 0);
    ep = sw_fleet_endpoint(f, "e");
    assert_int_equal(ep->shape.ctx_size.v, 8192);
    assert_string_equal(ep->shape.ctx_size.at.file, "environment variable CTX_SIZE");
    assert_int_equal(ep->shape.seqs.v, 2);
    assert_int_equal(ep->imports[0].from, SW_FLEET_FROM_ENVIRON);
    sw_fleet_free(f);

    /* an explicit empty value: error in the file, error in the environment */
    struct memfiles mf2 = {.name = {"mem/e.env"}, .text = {"CTX_SIZE=\nPARALLEL=2\n"}, .n = 1};
    es.n = 0;
    assert_int_equal(load_mem(yaml, &mf2, NULL, &es, &f), SW_EPARSE);
    assert_null(f);
    assert_true(any_error(&es, "mem/e.env:1:10: CTX_SIZE is set but empty in the env file"));
    struct fakeenv fe2 = {.kv = {"PARALLEL="}, .n = 1};
    es.n = 0;
    assert_int_equal(load_mem(yaml, &mf, &fe2, &es, &f), SW_EPARSE);
    assert_true(any_error(&es, "environment variable PARALLEL: PARALLEL is set but empty"));
    /* ... unless the key is an opt-out: empty means off, and the default does not come back */
    struct fakeenv fe3 = {.kv = {"MMPROJ_FILE="}, .n = 1};
    assert_int_equal(load_mem(yaml, &mf, &fe3, &es, &f), 0);
    ep = sw_fleet_endpoint(f, "e");
    assert_null(ep->payload.mmproj.v);
    assert_true(ep->payload.mmproj.off);
    assert_int_equal(f->n_warnings, 0);
    sw_fleet_free(f);
    /* a bad value from the environment names the variable */
    struct fakeenv fe4 = {.kv = {"PARALLEL=0"}, .n = 1};
    es.n = 0;
    assert_int_not_equal(load_mem(yaml, &mf, &fe4, &es, &f), 0);
    assert_true(
        any_error(&es, "environment variable PARALLEL: endpoints.e.shape.seqs must be >= 1"));
    /* a typo in the map is warned with the key it probably meant */
    char typo[2048];
    snprintf(typo, sizeof(typo), "%s", yaml);
    memcpy(strstr(typo, "PARALLEL:"), "PARALLLE:", 9);
    assert_int_equal(load_mem(typo, &mf, NULL, NULL, &f), 0);
    assert_true(f->n_warnings >= 1);
    assert_non_null(strstr(f->warnings[0].msg, "did you mean PARALLEL?"));
    sw_fleet_free(f);
    /* a missing env file is an error at the path */
    struct memfiles none = {0};
    es.n = 0;
    assert_int_not_equal(load_mem(yaml, &none, NULL, &es, &f), 0);
    assert_true(any_error(&es, "mem/fleet.yaml:10:13: endpoints.e.env_file cannot be imported"));
}

/* ---------------------------------------------------------------------------------------------
 * Env-file syntax.
 */
static struct sw_fleet_envfile *envp(const char *text, struct fakeenv *fe, struct sw_err *e)
{
    struct sw_fleet_envfile *ef = NULL;
    sw_err_clear(e);
    int rc = sw_fleet_envfile_parse("t.env", text, strlen(text), fake_getenv, fe, &ef, e);
    assert_true((rc == 0) == (ef != NULL));
    return ef;
}

static void env_ok(const char *text, struct fakeenv *fe, const char *key, const char *want)
{
    struct sw_err e;
    struct sw_fleet_envfile *ef = envp(text, fe, &e);
    if (!ef)
        fail_msg("env file must parse: %s (%s)", text, e.msg);
    const struct sw_fleet_envfile_var *v = sw_fleet_envfile_get(ef, key);
    if (!v || strcmp(v->value, want))
        fail_msg("%s: %s = '%s', want '%s'", text, key, v ? v->value : "(unset)", want);
    sw_fleet_envfile_free(ef);
}

static void env_bad(const char *text, struct fakeenv *fe, int line, int col, const char *needle)
{
    struct sw_err e;
    struct sw_fleet_envfile *ef = envp(text, fe, &e);
    if (ef)
        fail_msg("env file must be refused: %s", text);
    if (e.line != line || e.col != col || !strstr(e.msg, needle))
        fail_msg("%s: got %d:%d: %s; want %d:%d: ...%s...", text, e.line, e.col, e.msg, line, col,
                 needle);
}

static void test_envfile(void **state)
{
    struct fakeenv fe = {.kv = {"HOME=/home/dank", "FROMENV=e", "EMPTY="}, .n = 3};
    env_ok("A=1\n", &fe, "A", "1");
    env_ok("# comment\n\n   \nA=1 # trailing comment\n", &fe, "A", "1");
    env_ok("export A=1\n", &fe, "A", "1");
    env_ok("A=a#b\n", &fe, "A", "a#b");
    env_ok("A='x $B `c` \\n'\n", &fe, "A", "x $B `c` \\n");
    env_ok("A=\"a \\\"q\\\" \\$ \\\\ \\x\"\n", &fe, "A", "a \"q\" $ \\ \\x");
    env_ok("A=pre'mid'\"end\"\n", &fe, "A", "premidend");
    env_ok("A=\r\n", &fe, "A", "");
    env_ok("B=2\nA=$B/x\n", &fe, "A", "2/x");
    env_ok("B=2\nA=\"${B}y\"\n", &fe, "A", "2y");
    env_ok("A=$FROMENV\n", &fe, "A", "e");
    env_ok("FROMENV=file\nA=$FROMENV\n", &fe, "A", "e"); /* the environment wins */
    env_ok("A=${NOPE-dflt}\n", &fe, "A", "dflt");
    env_ok("A=${EMPTY-dflt}\n", &fe, "A", "");
    env_ok("A=${EMPTY:-dflt}\n", &fe, "A", "dflt");
    env_ok("A=cost$\n", &fe, "A", "cost$");
    env_ok("A=~/models/x.gguf\n", &fe, "A", "/home/dank/models/x.gguf");
    env_ok("A=a\\ b\n", &fe, "A", "a b");
    env_ok("A=3.15e9\nB=x\n", &fe, "B", "x");

    env_bad("A=$(cat /etc/passwd)\n", &fe, 1, 3, "command substitution $(...) is refused");
    env_bad("X=1\nA=\"x$(id)\"\n", &fe, 2, 5, "command substitution");
    env_bad("A=`id`\n", &fe, 1, 3, "backticks is refused");
    env_bad("A=\"a`id`\"\n", &fe, 1, 5, "backticks");
    env_bad("A=$((1+2))\n", &fe, 1, 3, "arithmetic");
    env_bad("A=${B:=x}\n", &fe, 1, 3, "only ${NAME}, ${NAME-word} and ${NAME:-word}");
    env_bad("A=${B\n", &fe, 1, 3, "unterminated ${");
    env_bad("A=$UNSET\n", &fe, 1, 3,
            "$UNSET is set neither earlier in the file nor in the "
            "environment");
    env_bad("A=$1\n", &fe, 1, 3, "special parameter $1");
    env_bad("A = 1\n", &fe, 1, 2, "no spaces around '='");
    env_bad("A =1\n", &fe, 1, 2, "no spaces around '='");
    env_bad("export A\n", &fe, 1, 9, "has no '=VALUE'");
    env_bad("A=two words\n", &fe, 1, 7, "unquoted space in the value of A");
    env_bad("A=x;rm -rf /\n", &fe, 1, 4, "shell operator ';'");
    env_bad("A=x|y\n", &fe, 1, 4, "shell operator '|'");
    env_bad("A=1\nB=2\nA=3\n", &fe, 3, 1, "A is set twice (first on line 1)");
    env_bad("A='open\n", &fe, 1, 3, "unterminated single quote");
    env_bad("A=\"open\n", &fe, 1, 3, "unterminated double quote");
    env_bad("A=x\\\nB=y\n", &fe, 1, 4, "line continuation");
    env_bad("1A=x\n", &fe, 1, 1, "expected KEY=VALUE");
    env_bad(": \"${MAXLEN:=262144}\"\n", &fe, 1, 1, "expected KEY=VALUE");
    env_bad("A=~root/x\n", &fe, 1, 3, "~user paths are not supported");
    env_bad("A=1\nB=${A-$C}\n", &fe, 2, 7, "must be plain text");

    /* a NUL byte: this is not a text file */
    struct sw_err e;
    struct sw_fleet_envfile *ef = NULL;
    assert_int_equal(sw_fleet_envfile_parse("t.env", "A=1\nB=\0x\n", 8, fake_getenv, &fe, &ef, &e),
                     SW_EPARSE);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 3);
    /* positions of values */
    ef = envp("# c\n  export  KEY=\"v\"\n", &fe, &e);
    assert_non_null(ef);
    assert_int_equal(ef->vars[0].line, 2);
    assert_int_equal(ef->vars[0].col, 15);
    sw_fleet_envfile_free(ef);
    /* the example env files parse */
    assert_int_equal(sw_fleet_envfile_load(swt_src("examples/frank-primary.env"),
                                           sw_fleet_no_environ, NULL, &ef, &e),
                     0);
    assert_string_equal(sw_fleet_envfile_get(ef, "KV_BYTES")->value, "3.15e9");
    sw_fleet_envfile_free(ef);
}

/* ---------------------------------------------------------------------------------------------
 * Quantities, suggestions, the shape vocabulary.
 */
static void qty(const char *s, double want, const char *unit)
{
    double v;
    char u[64];
    struct sw_err e;
    if (sw_fleet_parse_qty(s, &v, u, sizeof(u), &e))
        fail_msg("'%s' must parse: %s", s, e.msg);
    if (fabs(v - want) > 1e-9 * fabs(want) || strcmp(u, unit))
        fail_msg("'%s' = %.17g '%s', want %.17g '%s'", s, v, u, want, unit);
}

static void test_qty(void **state)
{
    qty("9190 B/token", 9190, "B/token");
    qty("7.60GiB", 7.60 * 1073741824.0, "B");
    qty("2.344 MiB", 2.344 * 1048576.0, "B");
    qty("0.22GiB/1024 tokens", 0.22 * 1073741824.0 / 1024, "B/token");
    qty("0.22 GiB per 1024 tokens", 0.22 * 1073741824.0 / 1024, "B/token");
    qty("4096 tokens", 4096, "token");
    qty("106.8 tok/s", 106.8, "token/s");
    qty("180k tokens", 180000, "token");
    qty("176Ki", 180224, "");
    qty("3.15e9", 3.15e9, "");
    qty("200,704", 200704, "");
    qty("1.99x", 1.99, "x");
    qty("644GB/s", 644e9, "B/s");
    qty("-1.5 GiB", -1.5 * 1073741824.0, "B");
    qty("70%", 70, "%");
    double v;
    char u[32];
    assert_int_not_equal(sw_fleet_parse_qty("GiB", &v, u, sizeof(u), NULL), 0);
    assert_int_not_equal(sw_fleet_parse_qty("1 B/", &v, u, sizeof(u), NULL), 0);
    assert_int_not_equal(sw_fleet_parse_qty("1 B/x/y", &v, u, sizeof(u), NULL), 0);
    assert_int_not_equal(sw_fleet_parse_qty("1 B$", &v, u, sizeof(u), NULL), 0);
    assert_int_not_equal(sw_fleet_parse_qty("1e999999", &v, u, sizeof(u), NULL), 0);
}

static void test_shape_fields(void **state)
{
    size_t n;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&n);
    assert_true(n >= 25);
    for (size_t i = 0; i < n; i++) {
        /* every field and alias finds itself, and reads back from an empty shape as unset */
        assert_ptr_equal(sw_fleet_shape_field(fs[i].name), &fs[i]);
        for (size_t a = 0; a < SW_ARRAY_LEN(fs[i].aliases) && fs[i].aliases[a]; a++)
            assert_ptr_equal(sw_fleet_shape_field(fs[i].aliases[a]), &fs[i]);
        struct sw_fleet_shape s = {0};
        struct sw_fleet_value v;
        assert_int_equal(sw_fleet_shape_get(&s, fs[i].name, &v), 0);
        assert_false(v.set);
        assert_int_equal(v.type, fs[i].type);
        assert_true(fs[i].engines != 0);
        assert_non_null(fs[i].doc);
    }
    /* docs/fleet.md lists every field and alias (a field added without its doc fails here) */
    char *doc = NULL;
    size_t dl = 0;
    assert_int_equal(sw_read_file(swt_src("docs/fleet.md"), 1 << 20, &doc, &dl, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        char cell[96];
        snprintf(cell, sizeof(cell), "`%s`", fs[i].name);
        if (!strstr(doc, cell))
            fail_msg("docs/fleet.md does not document shape field %s", fs[i].name);
        for (size_t a = 0; a < SW_ARRAY_LEN(fs[i].aliases) && fs[i].aliases[a]; a++) {
            snprintf(cell, sizeof(cell), "`%s`", fs[i].aliases[a]);
            if (!strstr(doc, cell))
                fail_msg("docs/fleet.md does not document alias %s", fs[i].aliases[a]);
        }
    }
    sw_free(doc);
    assert_ptr_equal(sw_fleet_shape_field("max_num_seqs"), sw_fleet_shape_field("seqs"));
    assert_ptr_equal(sw_fleet_shape_field("shape.parallel"), sw_fleet_shape_field("seqs"));
    assert_null(sw_fleet_shape_field("nope"));
    struct sw_fleet_shape s = {0};
    struct sw_fleet_value v = {.type = SW_FLEET_V_STR, .set = true, .s = "fp9"};
    struct sw_err e;
    assert_int_equal(sw_fleet_shape_set(&s, "kv_cache_dtype", &v, &e), SW_EINVAL);
    char fp8[] = "fp8"; /* the stored pointer is the static choice, not the caller's buffer */
    v.s = fp8;
    assert_int_equal(sw_fleet_shape_set(&s, "kv_cache_dtype", &v, &e), 0);
    assert_ptr_not_equal(s.kv_cache_dtype.v, fp8);
    assert_string_equal(s.kv_cache_dtype.v, "fp8");
    v = (struct sw_fleet_value){.type = SW_FLEET_V_COUNT, .set = true, .u = 0};
    assert_int_equal(sw_fleet_shape_set(&s, "seqs", &v, &e), SW_ERANGE);
    v = (struct sw_fleet_value){.type = SW_FLEET_V_REAL, .set = true, .f = 1.5};
    assert_int_equal(sw_fleet_shape_set(&s, "gpu_memory_utilization", &v, &e), SW_ERANGE);
    assert_int_equal(sw_fleet_shape_set(&s, "seqs", &v, &e), SW_EINVAL);
    assert_int_equal(sw_fleet_shape_set(&s, "nope", &v, &e), SW_ENOENT);
    json_t *j = sw_fleet_shape_to_json(&s);
    assert_string_equal(json_string_value(json_object_get(j, "kv_cache_dtype")), "fp8");
    json_decref(j);
    /* suggestions are what make an unknown key worth reporting */
    static const char *const c[] = {"max_model_len", "max_num_seqs", "context_window"};
    assert_string_equal(sw__fleet_suggest("max_num_seq", c, 3), "max_num_seqs");
    assert_string_equal(sw__fleet_suggest("--max-model-len", c, 3), "max_model_len");
    assert_string_equal(sw__fleet_suggest("contextWindow", c, 3), "context_window");
    assert_null(sw__fleet_suggest("banana", c, 3));
}

/* ---------------------------------------------------------------------------------------------
 * Hostile YAML the fuzzer might not find quickly.
 */
static void test_hostile(void **state)
{
    struct errs es = {0};
    struct sw_fleet *f = NULL;
    /* deep nesting */
    char deep[4096];
    size_t k = 0;
    for (int i = 0; i < 200; i++)
        deep[k++] = '[';
    for (int i = 0; i < 200; i++)
        deep[k++] = ']';
    deep[k] = '\0';
    assert_int_not_equal(load_mem(deep, NULL, NULL, &es, &f), 0);
    assert_null(f);
    /* recursive alias, unknown alias, a key that is a mapping, NUL in a scalar */
    assert_int_not_equal(load_mem("a: &x [*x]\n", NULL, NULL, &es, &f), 0);
    assert_int_not_equal(load_mem("a: *nope\n", NULL, NULL, &es, &f), 0);
    assert_int_not_equal(load_mem("? {a: 1}\n: 2\n", NULL, NULL, &es, &f), 0);
    static const char nul[] = "hosts:\n  h: {transport: \"lo\\0cal\"}\n";
    assert_int_not_equal(load_mem(nul, NULL, NULL, &es, &f), 0);
    /* an HTML page saved as the fleet file */
    es.n = 0;
    assert_int_not_equal(load_mem("<html><body>403 Forbidden</body></html>\n", NULL, NULL, &es, &f),
                         0);
    assert_true(es.n >= 1);
    /* too large */
    size_t big = SW_FLEET_MAX_FILE + 1;
    char *huge = malloc(big + 1);
    memset(huge, '#', big);
    huge[big] = '\0';
    assert_int_equal(load_mem(huge, NULL, NULL, NULL, &f), SW_EPARSE);
    free(huge);
    /* the error cap */
    char many[20000];
    k = (size_t)snprintf(many, sizeof(many), "hosts:\n  h:\n    transport: local\n");
    for (int i = 0; i < 300; i++)
        k += (size_t)snprintf(many + k, sizeof(many) - k, "    bad%d: 1\n", i);
    es.n = 0;
    struct sw_fleet_opts o = {
        .getenv = sw_fleet_no_environ, .on_error = collect, .on_error_ctx = &es, .max_errors = 5};
    struct sw_err e;
    assert_int_equal(sw_fleet_load_mem("m.yaml", many, k, &o, &f, &e), SW_EPARSE);
    assert_int_equal(es.n, 5);
    assert_non_null(strstr(e.msg, "(and 299 more errors)"));
}

/* ---------------------------------------------------------------------------------------------
 * Allocation failure at every allocation of a load: no crash, no leak (ASan), always SW_ENOMEM
 * (never mistaken for a mistake in the file), and nothing returned.
 */
static void torture(const char *rel, struct fakeenv *fe)
{
    char *text = NULL;
    size_t len = 0;
    const char *path = swt_src(rel);
    char pathcopy[4096];
    snprintf(pathcopy, sizeof(pathcopy), "%s", path);
    assert_int_equal(sw_read_file(pathcopy, 1 << 22, &text, &len, NULL), 0);
    long n;
    for (n = 1; n < 200000; n++) {
        struct sw_fleet_opts o = {.getenv = fe ? fake_getenv : sw_fleet_no_environ,
                                  .getenv_ctx = fe};
        struct sw_fleet *f = (struct sw_fleet *)&o;
        struct sw_err e;
        long before = sw_alloc_count();
        sw_alloc_fail_at(n);
        int rc = sw_fleet_load_mem(pathcopy, text, len, &o, &f, &e);
        json_t *j = rc ? NULL : sw_fleet_to_json(f);
        sw_alloc_fail_at(0);
        long used = sw_alloc_count() - before;
        if (rc) {
            if (rc != SW_ENOMEM)
                fail_msg("%s: allocation %ld failed and the load said %s: %s", rel, n,
                         sw_strerror(rc), e.msg);
            assert_null(f);
            continue;
        }
        json_decref(j);
        sw_fleet_free(f);
        if (used < n) /* the injected failure was never reached: every point was tried */
            break;
    }
    sw_free(text);
    print_message("  %s: %ld allocation points, each failed once\n", rel, n - 1);
    assert_true(n > 50);
}

static void test_torture(void **state)
{
    torture("examples/operator.yaml", NULL);
    struct fakeenv fe = {.kv = {"PORT=9001"}, .n = 1};
    torture("tests/data/fleet/good-features.yaml", &fe);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_cases),
        cmocka_unit_test(test_good_cases),
        cmocka_unit_test(test_operator_example),
        cmocka_unit_test(test_local_example),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_rule_text),
        cmocka_unit_test(test_import_rule),
        cmocka_unit_test(test_envfile),
        cmocka_unit_test(test_qty),
        cmocka_unit_test(test_shape_fields),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_torture),
    };
    return cmocka_run_group_tests_name("fleet", tests, NULL, NULL);
}
