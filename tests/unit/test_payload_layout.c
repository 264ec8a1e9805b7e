/*
 * payload/layout: complete and incomplete payloads built in temporary directories: a sharded
 * index missing a shard, a shard of the wrong size (short and long), shards without an index,
 * GGUF split sets missing a part or inconsistent, the projector when vision is promised, a draft
 * model as one model.safetensors and as index + shards, MTP layers declared without tensors (and
 * shipped: Qwen3-Next "mtp.*", DeepSeek-V3 "model.layers.N" past the decoder, GGUF "nextn").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/payload.h>

#include "swtest.h"
#include "test_payload_build.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct sw_payload_issue *issue(const struct sw_payload_layout *l,
                                            enum sw_payload_issue_kind k)
{
    for (size_t i = 0; i < l->n_issues; i++)
        if (l->issues[i].kind == k)
            return &l->issues[i];
    return NULL;
}

static void dump(const struct sw_payload_layout *l)
{
    for (size_t i = 0; i < l->n_issues; i++)
        print_message("  issue %s: %s\n", sw_payload_issue_name(l->issues[i].kind),
                      l->issues[i].msg);
}

static void check(const char *dir, const struct sw_payload_layout_opts *o,
                  struct sw_payload_layout *l)
{
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_payload_layout_check(dir, o, l, &e);
    if (rc)
        fail_msg("layout_check: %s", e.msg);
}

#define CONFIG                                                                                     \
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\","                          \
    "\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":2,"                        \
    "\"num_key_value_heads\":2,\"vocab_size\":128,\"intermediate_size\":128"

static void write_config(const char *dir, const char *extra)
{
    char c[1024];
    snprintf(c, sizeof(c), CONFIG "%s}", extra ? extra : "");
    swt_write_str(swt_join(dir, "config.json"), c);
}

/* Two shards + their index. */
static void sharded(const char *dir, const char *extra_cfg, const char *t2)
{
    write_config(dir, extra_cfg);
    pb_st1(swt_join(dir, "model-00001-of-00002.safetensors"), "model.layers.0.w", 64, 0);
    pb_st1(swt_join(dir, "model-00002-of-00002.safetensors"), t2, 32, 0);
    char ix[1024];
    snprintf(ix, sizeof(ix),
             "{\"metadata\":{\"total_size\":384},\"weight_map\":{"
             "\"model.layers.0.w\":\"model-00001-of-00002.safetensors\","
             "\"%s\":\"model-00002-of-00002.safetensors\"}}",
             t2);
    swt_write_str(swt_join(dir, "model.safetensors.index.json"), ix);
}

static void test_index_complete_and_broken(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_layout l;
    sharded(dir, NULL, "lm_head.weight");
    check(dir, NULL, &l);
    dump(&l);
    assert_int_equal(l.n_issues, 0);
    assert_int_equal(l.format, SW_PAYLOAD_FMT_SAFETENSORS_INDEX);
    assert_int_equal(l.n_weight_files, 2);
    assert_int_equal(l.n_tensors, 2);
    json_t *j = sw_payload_layout_to_json(&l);
    assert_true(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    sw_payload_layout_free(&l);

    /* a shard missing */
    unlink(swt_join(dir, "model-00002-of-00002.safetensors"));
    check(dir, NULL, &l);
    const struct sw_payload_issue *is = issue(&l, SW_PAYLOAD_ISSUE_SHARD_MISSING);
    assert_non_null(is);
    assert_string_equal(is->file, "model-00002-of-00002.safetensors");
    assert_non_null(strstr(is->msg, "missing"));
    sw_payload_layout_free(&l);

    /* a shard cut short: 8 + header + data says how much */
    size_t want =
        pb_st1(swt_join(dir, "model-00002-of-00002.safetensors"), "lm_head.weight", 32, -16);
    check(dir, NULL, &l);
    is = issue(&l, SW_PAYLOAD_ISSUE_SHARD_SIZE);
    assert_non_null(is);
    char num[32];
    snprintf(num, sizeof(num), "= %zu", want);
    assert_non_null(strstr(is->msg, num));
    assert_non_null(strstr(is->msg, "16 bytes missing"));
    sw_payload_layout_free(&l);

    /* a shard too long */
    pb_st1(swt_join(dir, "model-00002-of-00002.safetensors"), "lm_head.weight", 32, 3);
    check(dir, NULL, &l);
    is = issue(&l, SW_PAYLOAD_ISSUE_SHARD_SIZE);
    assert_non_null(is);
    assert_non_null(strstr(is->msg, "3 bytes too many"));
    sw_payload_layout_free(&l);

    /* a shard that is an HTML page */
    swt_write_str(swt_join(dir, "model-00002-of-00002.safetensors"),
                  "<!DOCTYPE html><html><body>403</body></html>");
    check(dir, NULL, &l);
    is = issue(&l, SW_PAYLOAD_ISSUE_SHARD_BAD);
    assert_non_null(is);
    assert_non_null(strstr(is->msg, "an HTML page"));
    sw_payload_layout_free(&l);

    /* a shard without the tensor the index maps to it */
    pb_st1(swt_join(dir, "model-00002-of-00002.safetensors"), "other.weight", 32, 0);
    check(dir, NULL, &l);
    is = issue(&l, SW_PAYLOAD_ISSUE_SHARD_BAD);
    assert_non_null(is);
    assert_non_null(strstr(is->msg, "lm_head.weight"));
    sw_payload_layout_free(&l);

    /* a malformed index */
    swt_write_str(swt_join(dir, "model.safetensors.index.json"), "{\"weight_map\": 3}");
    check(dir, NULL, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_INDEX));
    sw_payload_layout_free(&l);
    swt_tmpdir_free(dir);
}

static void test_unindexed_and_none(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_layout l;
    struct sw_err e;
    check(dir, NULL, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_NO_WEIGHTS));
    sw_payload_layout_free(&l);
    /* shards named as a set with no index */
    write_config(dir, NULL);
    pb_st1(swt_join(dir, "model-00001-of-00002.safetensors"), "a", 4, 0);
    check(dir, NULL, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_INDEX));
    sw_payload_layout_free(&l);
    /* safetensors without config.json */
    unlink(swt_join(dir, "config.json"));
    unlink(swt_join(dir, "model-00001-of-00002.safetensors"));
    pb_st1(swt_join(dir, "model.safetensors"), "a", 4, 0);
    check(dir, NULL, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_CONFIG));
    assert_int_equal(l.n_issues, 1);
    sw_payload_layout_free(&l);
    assert_int_equal(sw_payload_layout_check(swt_join(dir, "nope"), NULL, &l, &e), SW_ENOENT);
    swt_write_str(swt_join(dir, "x.txt"), "x");
    assert_int_equal(sw_payload_layout_check(swt_join(dir, "x.txt"), NULL, &l, &e), SW_EINVAL);
    swt_tmpdir_free(dir);
}

static void test_draft_shapes(void **state)
{
    struct sw_payload_layout_opts o = {.draft = true};
    struct sw_payload_layout l;
    /* one model.safetensors */
    char *a = swt_tmpdir();
    write_config(a, NULL);
    pb_st1(swt_join(a, "model.safetensors"), "model.embed_tokens.weight", 16, 0);
    check(a, &o, &l);
    dump(&l);
    assert_int_equal(l.n_issues, 0);
    assert_int_equal(l.format, SW_PAYLOAD_FMT_SAFETENSORS);
    sw_payload_layout_free(&l);
    /* the file itself given */
    check(swt_join(a, "model.safetensors"), &o, &l);
    assert_int_equal(l.n_issues, 0);
    assert_int_equal(l.n_weight_files, 1);
    sw_payload_layout_free(&l);
    /* index + shards */
    char *b = swt_tmpdir();
    sharded(b, NULL, "lm_head.weight");
    check(b, &o, &l);
    assert_int_equal(l.n_issues, 0);
    assert_int_equal(l.format, SW_PAYLOAD_FMT_SAFETENSORS_INDEX);
    sw_payload_layout_free(&l);
    /* several unindexed files is neither shape */
    pb_st1(swt_join(a, "extra.safetensors"), "x", 4, 0);
    check(a, &o, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_INDEX));
    sw_payload_layout_free(&l);
    swt_tmpdir_free(a);
    swt_tmpdir_free(b);
}

static void test_mtp(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_layout l;
    struct sw_payload_mtp m;
    struct sw_err e;
    /* declared (Qwen3-Next spelling), not shipped */
    sharded(dir, ",\"mtp_num_hidden_layers\":1", "lm_head.weight");
    check(dir, NULL, &l);
    const struct sw_payload_issue *is = issue(&l, SW_PAYLOAD_ISSUE_MTP_NOT_SHIPPED);
    assert_non_null(is);
    swt_has_all("is->msg", is->msg, "mtp_num_hidden_layers", "must not be enabled", NULL);
    sw_payload_layout_free(&l);
    assert_int_equal(sw_payload_mtp_check(dir, &m, &e), 0);
    assert_int_equal(m.declared, 1);
    assert_int_equal(m.tensors, 0);
    assert_true(m.weights_read);
    assert_false(sw_payload_ships_mtp(&m));

    /* shipped as mtp.* */
    sharded(dir, ",\"mtp_num_hidden_layers\":1", "mtp.fc.weight");
    assert_int_equal(sw_payload_mtp_check(dir, &m, &e), 0);
    assert_int_equal(m.tensors, 1);
    assert_true(sw_payload_ships_mtp(&m));
    /* named by the index even when its shard is missing: shipped, the shard is the problem */
    unlink(swt_join(dir, "model-00002-of-00002.safetensors"));
    check(dir, NULL, &l);
    assert_null(issue(&l, SW_PAYLOAD_ISSUE_MTP_NOT_SHIPPED));
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_SHARD_MISSING));
    sw_payload_layout_free(&l);

    /* DeepSeek-V3 spelling: num_nextn_predict_layers, the layer after the decoder's */
    sharded(dir, ",\"num_nextn_predict_layers\":1", "model.layers.2.eh_proj.weight");
    assert_int_equal(sw_payload_mtp_check(dir, &m, &e), 0);
    assert_int_equal(m.declared, 1);
    assert_int_equal(m.tensors, 1);
    sharded(dir, ",\"num_nextn_predict_layers\":1", "model.layers.1.mlp.weight");
    assert_int_equal(sw_payload_mtp_check(dir, &m, &e), 0);
    assert_int_equal(m.tensors, 0);
    /* nothing declared: nothing to ship, no issue */
    sharded(dir, NULL, "lm_head.weight");
    assert_int_equal(sw_payload_mtp_check(dir, &m, &e), 0);
    assert_int_equal(m.declared, 0);
    assert_false(sw_payload_ships_mtp(&m));
    /* declared in a VLM's text_config, single file */
    char *v = swt_tmpdir();
    swt_write_str(swt_join(v, "config.json"),
                  "{\"model_type\":\"x\",\"text_config\":{\"num_hidden_layers\":2,"
                  "\"mtp_num_hidden_layers\":1}}");
    pb_st1(swt_join(v, "model.safetensors"), "model.language_model.layers.0.w", 4, 0);
    check(v, NULL, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_MTP_NOT_SHIPPED));
    sw_payload_layout_free(&l);
    /* GGUF: <arch>.nextn_predict_layers with and without blk.N.nextn.* */
    pb_gguf(swt_join(v, "g.gguf"), "glm4moe",
            (const char *const[]){"token_embd.weight", "blk.1.nextn.eh_proj.weight"}, 2, 0, 0, 0,
            1);
    assert_int_equal(sw_payload_mtp_check(swt_join(v, "g.gguf"), &m, &e), 0);
    assert_int_equal(m.declared, 1);
    assert_int_equal(m.tensors, 1);
    assert_non_null(strstr(m.source, "glm4moe.nextn_predict_layers"));
    pb_gguf(swt_join(v, "g.gguf"), "glm4moe", (const char *const[]){"token_embd.weight"}, 1, 0, 0,
            0, 1);
    assert_int_equal(sw_payload_mtp_check(swt_join(v, "g.gguf"), &m, &e), 0);
    assert_false(sw_payload_ships_mtp(&m));
    /* an empty directory: nothing to answer from */
    char *empty = swt_tmpdir();
    assert_int_equal(sw_payload_mtp_check(empty, &m, &e), SW_ENOENT);
    swt_tmpdir_free(empty);
    swt_tmpdir_free(v);
    swt_tmpdir_free(dir);
}

static void test_mtp_names(void **state)
{
    assert_true(sw_payload_is_mtp_tensor("mtp.fc.weight", 48));
    assert_true(sw_payload_is_mtp_tensor("model.mtp_layers.0.input_layernorm.weight", 36));
    assert_true(sw_payload_is_mtp_tensor("model.layers.61.eh_proj.weight", 61));
    assert_false(sw_payload_is_mtp_tensor("model.layers.60.eh_proj.weight", 61));
    assert_false(sw_payload_is_mtp_tensor("model.layers.61.eh_proj.weight", -1));
    assert_true(sw_payload_is_mtp_tensor("blk.46.nextn.eh_proj.weight", -1));
    assert_false(sw_payload_is_mtp_tensor("model.layers.x.w", 2));
    assert_false(sw_payload_is_mtp_tensor("lm_head.weight", 2));
    assert_false(sw_payload_is_mtp_tensor(NULL, 2));
}

static const char *const T3[] = {"token_embd.weight", "blk.0.attn_q.weight", "output.weight"};

static void test_gguf_split(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_layout l;
    struct sw_payload_layout_opts o = {.gguf = "m-00001-of-00003.gguf"};
    pb_gguf(swt_join(dir, "m-00001-of-00003.gguf"), "llama", T3, 1, 0, 3, 3, 0);
    pb_gguf(swt_join(dir, "m-00002-of-00003.gguf"), "llama", T3 + 1, 1, 1, 3, 0, 0);
    pb_gguf(swt_join(dir, "m-00003-of-00003.gguf"), "llama", T3 + 2, 1, 2, 3, 0, 0);
    check(dir, &o, &l);
    dump(&l);
    assert_int_equal(l.n_issues, 0);
    assert_int_equal(l.format, SW_PAYLOAD_FMT_GGUF_SPLIT);
    assert_int_equal(l.n_weight_files, 3);
    assert_int_equal(l.n_tensors, 3);
    sw_payload_layout_free(&l);
    /* found without being named */
    check(dir, NULL, &l);
    assert_int_equal(l.n_issues, 0);
    assert_int_equal(l.n_weight_files, 3);
    sw_payload_layout_free(&l);
    /* a part missing */
    unlink(swt_join(dir, "m-00002-of-00003.gguf"));
    check(dir, &o, &l);
    const struct sw_payload_issue *is = issue(&l, SW_PAYLOAD_ISSUE_GGUF_SPLIT);
    assert_non_null(is);
    assert_non_null(strstr(is->msg, "part 2 of 3 is missing"));
    sw_payload_layout_free(&l);
    /* the first part missing, found from the others */
    pb_gguf(swt_join(dir, "m-00002-of-00003.gguf"), "llama", T3 + 1, 1, 1, 3, 0, 0);
    unlink(swt_join(dir, "m-00001-of-00003.gguf"));
    check(dir, NULL, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_GGUF_SPLIT));
    sw_payload_layout_free(&l);
    /* inconsistent: a part claims another number */
    pb_gguf(swt_join(dir, "m-00001-of-00003.gguf"), "llama", T3, 1, 0, 3, 3, 0);
    pb_gguf(swt_join(dir, "m-00002-of-00003.gguf"), "llama", T3 + 1, 1, 2, 3, 0, 0);
    check(dir, &o, &l);
    is = issue(&l, SW_PAYLOAD_ISSUE_GGUF_SPLIT);
    assert_non_null(is);
    assert_non_null(strstr(is->msg, "inconsistent split set"));
    sw_payload_layout_free(&l);
    /* a part that is an HTML page */
    swt_write_str(swt_join(dir, "m-00001-of-00003.gguf"), "<html>403</html>");
    check(dir, &o, &l);
    is = issue(&l, SW_PAYLOAD_ISSUE_GGUF_BAD);
    assert_non_null(is);
    assert_non_null(strstr(is->msg, "HTML"));
    sw_payload_layout_free(&l);
    swt_tmpdir_free(dir);
}

static void test_projector(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_layout l;
    pb_gguf(swt_join(dir, "model.gguf"), "gemma3", T3, 3, 0, 0, 0, 0);
    pb_gguf(swt_join(dir, "mmproj-F16.gguf"), "clip",
            (const char *const[]){"v.patch_embd.weight", "mm.input_projection.weight"}, 2, 0, 0, 0,
            0);
    struct sw_payload_layout_opts o = {
        .gguf = "model.gguf", .mmproj = "mmproj-F16.gguf", .vision = true};
    check(dir, &o, &l);
    dump(&l);
    assert_int_equal(l.n_issues, 0);
    assert_true(l.has_projector);
    assert_int_equal(l.format, SW_PAYLOAD_FMT_GGUF);
    sw_payload_layout_free(&l);
    /* the lone model GGUF is found; the projector is not taken for a model */
    check(dir, NULL, &l);
    assert_int_equal(l.n_issues, 0);
    assert_int_equal(l.n_weight_files, 1);
    sw_payload_layout_free(&l);
    /* vision promised, no projector named */
    struct sw_payload_layout_opts o2 = {.gguf = "model.gguf", .vision = true};
    check(dir, &o2, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_PROJECTOR));
    sw_payload_layout_free(&l);
    /* the projector missing */
    unlink(swt_join(dir, "mmproj-F16.gguf"));
    check(dir, &o, &l);
    const struct sw_payload_issue *is = issue(&l, SW_PAYLOAD_ISSUE_PROJECTOR);
    assert_non_null(is);
    assert_non_null(strstr(is->msg, "missing"));
    sw_payload_layout_free(&l);
    /* the projector is a text model */
    pb_gguf(swt_join(dir, "mmproj-F16.gguf"), "llama", T3, 3, 0, 0, 0, 0);
    check(dir, &o, &l);
    is = issue(&l, SW_PAYLOAD_ISSUE_PROJECTOR);
    assert_non_null(is);
    assert_non_null(strstr(is->msg, "not a projector"));
    sw_payload_layout_free(&l);
    /* safetensors VLM: the vision tower is in the weights */
    char *v = swt_tmpdir();
    write_config(v, NULL);
    const char *names[] = {"model.visual.patch_embed.proj.weight", "lm_head.weight"};
    unsigned ns[] = {8, 8};
    pb_st(swt_join(v, "model.safetensors"), names, ns, 2, 0);
    struct sw_payload_layout_opts ov = {.vision = true};
    check(v, &ov, &l);
    assert_int_equal(l.n_issues, 0);
    assert_true(l.has_projector);
    sw_payload_layout_free(&l);
    pb_st1(swt_join(v, "model.safetensors"), "lm_head.weight", 8, 0);
    check(v, &ov, &l);
    assert_non_null(issue(&l, SW_PAYLOAD_ISSUE_PROJECTOR));
    sw_payload_layout_free(&l);
    swt_tmpdir_free(v);
    swt_tmpdir_free(dir);
}

/* Every allocation failure on the GGUF path (split set, projector) frees what it took. The
 * safetensors path parses JSON with jansson, whose parser crashes on a failed allocation
 * (json_loadb under an injected failure: SIGSEGV in its lexer), so it is not tortured here. */
struct layout_run {
    const char *dir;
    const struct sw_payload_layout_opts *o;
};

static int layout_once(void *arg)
{
    const struct layout_run *r = arg;
    struct sw_payload_layout l;
    struct sw_err e;
    int rc = sw_payload_layout_check(r->dir, r->o, &l, &e);
    if (rc == 0)
        sw_payload_layout_free(&l);
    return rc;
}

static void test_layout_alloc_failures(void **state)
{
    char *dir = swt_tmpdir();
    pb_gguf(swt_join(dir, "m-00001-of-00002.gguf"), "llama", T3, 2, 0, 2, 3, 1);
    pb_gguf(swt_join(dir, "m-00002-of-00002.gguf"), "llama", T3 + 2, 1, 1, 2, 0, 0);
    pb_gguf(swt_join(dir, "mmproj.gguf"), "clip", (const char *const[]){"v.w"}, 1, 0, 0, 0, 0);
    struct sw_payload_layout_opts o = {.mmproj = "mmproj.gguf", .vision = true};
    struct layout_run r = {dir, &o};
    assert_true(swt_torture("payload layout (GGUF split + projector)", layout_once, &r, SW_ENOMEM) >
                3);
    swt_tmpdir_free(dir);
}

static void test_cli_layout(void **state)
{
    char *dir = swt_tmpdir();
    struct swt_run r;
    sharded(dir, ",\"num_nextn_predict_layers\":1", "lm_head.weight");
    swt_slipway(&r, "fetch", dir, "--verify-only", "--json", NULL);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    json_t *lay = json_object_get(j, "layout");
    assert_string_equal(json_string_value(json_object_get(lay, "format")), "safetensors_index");
    assert_false(json_is_true(json_object_get(json_object_get(lay, "mtp"), "ships")));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(lay, "issues"), 0), "kind")),
                        "mtp_not_shipped");
    json_decref(j);
    swt_run_free(&r);
    sharded(dir, NULL, "lm_head.weight");
    swt_slipway(&r, "fetch", dir, "--verify-only", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "layout: safetensors_index, 2 weight files"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_complete_and_broken),
        cmocka_unit_test(test_unindexed_and_none),
        cmocka_unit_test(test_draft_shapes),
        cmocka_unit_test(test_mtp),
        cmocka_unit_test(test_mtp_names),
        cmocka_unit_test(test_gguf_split),
        cmocka_unit_test(test_projector),
        cmocka_unit_test(test_layout_alloc_failures),
        cmocka_unit_test(test_cli_layout),
    };
    return cmocka_run_group_tests_name("payload_layout", tests, NULL, NULL);
}
