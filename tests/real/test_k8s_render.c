/*
 * slipway render --target k8s: every rendered object validates against the Kubernetes API
 * schemas (the npm package kubernetes-models, installed offline-cached by scripts/k8s-schemas.sh,
 * run through tests/support/k8s-validate.js; an invalid Deployment is refused by the same helper
 * as the control). The YAML stream parses back (libfyaml) to exactly the validated objects. GPU
 * resources per vendor, /dev/shm sized like the container's shm, secrets only as secretKeyRef (the
 * key's value appears nowhere), a liveness probe that generates one token, a startupProbe sized
 * from the ledger's measured boot (else the stated default), and a shape the gates reject
 * (the operator's frank-primary with the seed ledger) is not rendered at all.
 * kubectl's own client-side dry run is tests/real/test_k8s_kubectl.c (against a discovery
 * server of the test's own; it does not validate schemas). A LeaderWorkerSet (a CRD) is checked from the CRD's facts by the
 * same helper, its pod templates by kubernetes-models.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swledger.h"
#include "swtest.h"

#include <slipway/core.h>

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *dir;
static char fleet[4200], node_path[4300], validator[4200];

static int setup(void **state)
{
    struct swt_run r;
    dir = swt_tmpdir();
    *state = dir;
    snprintf(fleet, sizeof(fleet), "%s", swt_src("tests/data/k8s/fleet.yaml"));
    snprintf(validator, sizeof(validator), "%s", swt_src("tests/support/k8s-validate.js"));
    setenv("SMALL_API_KEY", "sekrit-value-do-not-print", 1);
    const char *node[] = {"node", "--version", NULL};
    swt_run(node, NULL, 30, &r);
    swt_need(r.status == 0, "node (scripts/deps.sh) to run the Kubernetes schema validation");
    swt_run_free(&r);
    const char *sch[] = {swt_src("scripts/k8s-schemas.sh"), NULL};
    swt_run(sch, NULL, 600, &r);
    swt_need(r.status == 0, "the kubernetes-models npm package (scripts/k8s-schemas.sh): %s",
             r.err);
    snprintf(node_path, sizeof(node_path), "NODE_PATH=%.*s", (int)strcspn(r.out, "\n"), r.out);
    swt_run_free(&r);
    return 0;
}

static json_t *render(const char *ep, const char *ledger)
{
    struct swt_run r;
    if (ledger)
        swt_slipway(&r, "render", "--target", "k8s", ep, "--fleet", fleet, "--ledger", ledger,
                    "--json", NULL);
    else
        swt_slipway(&r, "render", "--target", "k8s", ep, "--fleet", fleet, "--json", NULL);
    if (r.status)
        fail_msg("render %s: %s %s", ep, r.out, r.err);
    assert_null(strstr(r.out, "sekrit"));
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    return j;
}

static void validate(const json_t *objects, int want)
{
    struct swt_run r;
    char *text = sw_json_dumps(objects, JSON_COMPACT);
    const char *argv[] = {"env", node_path, "node", validator, NULL};
    swt_run(argv, text, 120, &r);
    sw_free(text);
    if (r.status != want)
        fail_msg("k8s-validate exit %d (want %d): %s%s", r.status, want, r.out, r.err);
    swt_run_free(&r);
}

static const json_t *kind(const json_t *objs, const char *k)
{
    size_t i;
    json_t *o;
    json_array_foreach(objs, i,
                       o) if (!strcmp(json_string_value(json_object_get(o, "kind")), k)) return o;
    fail_msg("no %s", k);
    return NULL;
}

static const json_t *container(const json_t *objs)
{
    const json_t *dep = kind(objs, "Deployment");
    return json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(dep, "spec"), "template"), "spec"),
            "containers"),
        0);
}

static const json_t *volume(const json_t *objs, const char *name)
{
    const json_t *dep = kind(objs, "Deployment");
    size_t i;
    json_t *v;
    json_array_foreach(
        json_object_get(
            json_object_get(json_object_get(json_object_get(dep, "spec"), "template"), "spec"),
            "volumes"),
        i, v) if (!strcmp(json_string_value(json_object_get(v, "name")), name)) return v;
    fail_msg("no volume %s", name);
    return NULL;
}

/* A parsed YAML node as JSON: a quoted scalar is a string, a plain one a number or a boolean
 * (the renderer quotes every string). */
static json_t *to_json(struct fy_node *n)
{
    if (fy_node_is_mapping(n)) {
        json_t *o = json_object();
        void *it = NULL;
        struct fy_node_pair *p;
        while ((p = fy_node_mapping_iterate(n, &it)))
            json_object_set_new(o, fy_node_get_scalar0(fy_node_pair_key(p)),
                                to_json(fy_node_pair_value(p)));
        return o;
    }
    if (fy_node_is_sequence(n)) {
        json_t *a = json_array();
        void *it = NULL;
        struct fy_node *x;
        while ((x = fy_node_sequence_iterate(n, &it)))
            json_array_append_new(a, to_json(x));
        return a;
    }
    const char *s = fy_node_get_scalar0(n);
    if (fy_node_get_style(n) == FYNS_DOUBLE_QUOTED)
        return json_string(s);
    if (!strcmp(s, "true") || !strcmp(s, "false"))
        return json_boolean(!strcmp(s, "true"));
    return json_integer(strtoll(s, NULL, 10));
}

static void test_schemas(void **state)
{
    (void)state;
    static const char *const eps[] = {"small-nv", "big-amd"};
    for (size_t i = 0; i < 2; i++) {
        json_t *j = render(eps[i], NULL);
        json_t *objs = json_object_get(j, "objects");
        assert_int_equal(json_array_size(objs), 3);
        validate(objs, 0);

        /* the YAML stream is the same objects */
        struct swt_run r;
        swt_slipway(&r, "render", "--target", "k8s", eps[i], "--fleet", fleet, NULL);
        assert_int_equal(r.status, 0);
        /* one document per "---" line (the stream's separator) */
        size_t n = 0;
        char *doc = r.out;
        while (doc && *doc) {
            assert_int_equal(strncmp(doc, "---\n", 4), 0);
            doc += 4;
            char *next = strstr(doc, "\n---\n");
            size_t len = next ? (size_t)(next - doc) + 1 : strlen(doc);
            struct fy_document *fyd = fy_document_build_from_string(NULL, doc, len);
            assert_non_null(fyd);
            json_t *back = to_json(fy_document_root(fyd));
            assert_non_null(back);
            assert_true(json_equal(back, json_array_get(objs, n)));
            json_decref(back);
            fy_document_destroy(fyd);
            n++;
            doc = next ? next + 1 : NULL;
        }
        assert_int_equal(n, 3);
        swt_run_free(&r);
        json_decref(j);
    }
    /* the control: an invalid object is refused by the same validator */
    json_t *bad = json_pack("[{s:s,s:s,s:{s:s},s:{s:s,s:{},s:{}}}]", "apiVersion", "apps/v1",
                            "kind", "Deployment", "metadata", "name", "x", "spec", "replicas",
                            "one", "selector", "template");
    validate(bad, 1);
    json_decref(bad);
}

static void test_contents(void **state)
{
    (void)state;
    json_t *j = render("small-nv", NULL);
    const json_t *objs = json_object_get(j, "objects");
    const json_t *c = container(objs);
    const json_t *lim = json_object_get(json_object_get(c, "resources"), "limits");
    assert_int_equal(json_integer_value(json_object_get(lim, "nvidia.com/gpu")), 1);
    assert_null(json_object_get(lim, "amd.com/gpu"));
    /* runtime.shm_size 2GiB: the podman run line's --shm-size, as a memory-backed emptyDir */
    const json_t *shm = json_object_get(volume(objs, "dshm"), "emptyDir");
    assert_string_equal(json_string_value(json_object_get(shm, "medium")), "Memory");
    assert_string_equal(json_string_value(json_object_get(shm, "sizeLimit")), "2Gi");
    /* the argv is the plan's, in the container's view */
    assert_string_equal(json_string_value(json_array_get(json_object_get(c, "command"), 0)),
                        "llama-server");
    char *args = sw_json_dumps(json_object_get(c, "args"), JSON_COMPACT);
    assert_non_null(strstr(args, "\"/models/MiMo-V2.6-Distill-Qwen-9B-GGUF/"));
    assert_non_null(strstr(args, "\"-c\",\"131072\",\"-np\",\"2\""));
    sw_free(args);
    /* the key: a secretKeyRef, read by the liveness probe from the environment */
    const json_t *env0 = json_array_get(json_object_get(c, "env"), 0);
    assert_string_equal(json_string_value(json_object_get(env0, "name")), "LLAMA_API_KEY");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(env0, "valueFrom"), "secretKeyRef"), "name")),
        "small-nv-secrets");
    const char *live = json_string_value(json_array_get(
        json_object_get(json_object_get(json_object_get(c, "livenessProbe"), "exec"), "command"),
        2));
    assert_non_null(strstr(live, "/completion"));
    assert_non_null(strstr(live, "\"n_predict\":1"));
    assert_non_null(strstr(live, "$LLAMA_API_KEY"));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(c, "readinessProbe"), "httpGet"), "path")),
        "/health");
    /* no boot measured: the stated default (600 s x 1.5 / 10 s) */
    const json_t *sp = json_object_get(c, "startupProbe");
    assert_int_equal(json_integer_value(json_object_get(sp, "failureThreshold")), 90);
    assert_null(json_object_get(sp, "initialDelaySeconds"));
    json_decref(j);

    /* a boot of 200 s in the ledger sizes it: 30 x 10 s */
    char doc[4300], led[4300];
    snprintf(doc, sizeof(doc), "%s/boot.json", dir);
    snprintf(led, sizeof(led), "%s/k8s.sqlite", dir);
    swt_write_str(doc, "{\"id\": \"k8s-test\", \"boots\": [{\"ref\": \"b1\", \"endpoint\": "
                       "\"small-nv\", \"engine\": \"llama.cpp\", \"shape\": {\"engine\": "
                       "\"llama.cpp\", \"model\": {\"name\": \"MiMo\"}}, \"duration_ms\": 200000, "
                       "\"source\": \"test\"}]}\n");
    struct swt_run r;
    swt_slipway(&r, "ledger", "import", doc, "--ledger", led, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    j = render("small-nv", led);
    sp = json_object_get(container(json_object_get(j, "objects")), "startupProbe");
    assert_int_equal(json_integer_value(json_object_get(sp, "failureThreshold")), 30);
    json_decref(j);

    /* vLLM on two AMD cards: amd.com/gpu 2, the render's 16 GiB shm for tensor parallel, a
     * python3 completion as liveness */
    j = render("big-amd", NULL);
    objs = json_object_get(j, "objects");
    c = container(objs);
    lim = json_object_get(json_object_get(c, "resources"), "limits");
    assert_int_equal(json_integer_value(json_object_get(lim, "amd.com/gpu")), 2);
    shm = json_object_get(volume(objs, "dshm"), "emptyDir");
    assert_string_equal(json_string_value(json_object_get(shm, "sizeLimit")), "16Gi");
    const json_t *lc =
        json_object_get(json_object_get(json_object_get(c, "livenessProbe"), "exec"), "command");
    assert_string_equal(json_string_value(json_array_get(lc, 0)), "python3");
    assert_non_null(strstr(json_string_value(json_array_get(lc, 2)), "/v1/completions"));
    assert_non_null(strstr(json_string_value(json_array_get(lc, 2)), "'max_tokens':1"));
    json_decref(j);
}

static void test_gates_first(void **state)
{
    (void)state;
    char led[4300], out[4300];
    struct swt_run r;
    snprintf(led, sizeof(led), "%s/seed.sqlite", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    assert_int_equal(mkdir(out, 0755), 0);
    swl_cli_import_seed(led);
    swt_slipway(&r, "render", "--target", "k8s", "frank-primary", "--fleet",
                swt_src("examples/operator.yaml"), "--ledger", led, "--out", out, "--json", NULL);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_false(json_object_get(j, "rendered")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "check"), "verdict")),
                        "fail");
    assert_null(json_object_get(j, "objects"));
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(swt_count_entries(out), 0); /* nothing written */
}

/* The operator's frank-small (a test copy given the pinned image and mount Kubernetes needs; the
 * log names neither): its compaction window fails and his fleet waiver accepts it, so it renders,
 * objects valid against the API schemas, the Deployment annotated with the waiver and the document
 * listing it; the day after the waiver's end it is refused (exit 2, the fleet line named) and
 * nothing is written. */
static void test_waived(void **state)
{
    (void)state;
    char *text = NULL, out[4300], fl[4300];
    size_t n = 0;
    struct sw_err e;
    struct swt_run r;
    assert_int_equal(sw_read_file(swt_src("examples/operator.yaml"), 1u << 22, &text, &n, &e), 0);
    const char *eng = "  frank-small:\n    host: dankserver\n    devices: [cuda-24g]\n"
                      "    engine: llama.cpp\n";
    const char *quant = "      quantization: Q5_K_M\n";
    char *a = strstr(text, eng), *b = strstr(text, quant);
    assert_true(a && b && a < b);
    a += strlen(eng);
    b += strlen(quant);
    struct sw_buf y;
    sw_buf_init(&y, 1u << 22);
    sw_buf_append(&y, text, (size_t)(a - text));
    sw_buf_printf(&y,
                  "    image: ghcr.io/ggml-org/llama.cpp@sha256:%064d\n"
                  "    runtime: {kind: podman}\n    listen: 0.0.0.0:8080\n",
                  7);
    sw_buf_append(&y, a, (size_t)(b - a));
    sw_buf_printf(&y, "      mounts: [{host: /home/dank/models, container: /home/dank/models, "
                      "readonly: true}]\n");
    sw_buf_append(&y, b, n - (size_t)(b - text));
    snprintf(fl, sizeof(fl), "%s/waived.yaml", dir);
    swt_write(fl, sw_buf_cstr(&y), y.len);
    sw_buf_free(&y);
    sw_free(text);
    static const char *const envs[] = {"frank-primary.env", "frank-small.env"};
    for (size_t i = 0; i < 2; i++) {
        char src[64], dst[4300];
        snprintf(src, sizeof(src), "examples/%s", envs[i]);
        snprintf(dst, sizeof(dst), "%s/%s", dir, envs[i]);
        assert_int_equal(sw_read_file(swt_src(src), 1u << 20, &text, &n, &e), 0);
        swt_write(dst, text, n);
        sw_free(text);
    }
    setenv("SLIPWAY_TODAY", "2026-12-07", 1);
    swt_slipway(&r, "render", "--target", "k8s", "frank-small", "--fleet", fl, "--json", NULL);
    if (r.status)
        fail_msg("render frank-small: %s %s", r.out, r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    const json_t *objs = json_object_get(j, "objects");
    validate(objs, 0);
    const json_t *w = json_array_get(json_object_get(j, "waivers"), 0);
    assert_string_equal(json_string_value(json_object_get(w, "gate")), "window");
    assert_non_null(strstr(json_string_value(json_object_get(w, "reason")), "183,501"));
    const char *an = json_string_value(json_object_get(
        json_object_get(json_object_get(kind(objs, "Deployment"), "metadata"), "annotations"),
        "slipway.dev/waivers"));
    assert_non_null(an);
    assert_non_null(strstr(an, "window until 2027-"));
    json_decref(j);
    /* the day after the waiver's end: refused, nothing written */
    snprintf(out, sizeof(out), "%s/waived-out", dir);
    assert_int_equal(mkdir(out, 0755), 0);
    setenv("SLIPWAY_TODAY", "2099-01-01", 1);
    swt_slipway(&r, "render", "--target", "k8s", "frank-small", "--fleet", fl, "--out", out, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "waived.yaml:"));
    assert_non_null(strstr(r.err, "waiver for gate window on frank-small expired on 2027-"));
    swt_run_free(&r);
    unsetenv("SLIPWAY_TODAY");
    assert_int_equal(swt_count_entries(out), 0);
}

/* A vLLM endpoint split across nodes: a LeaderWorkerSet in place of the Deployment, validated
 * (its own fields from the CRD's facts, each pod template by kubernetes-models), the YAML the
 * same objects; the leader runs the Ray head then the plan's argv unchanged, each worker joins
 * the head; GPUs per pod = the world / nodes; the Service reaches the leader only. Refused: a
 * llama.cpp endpoint on 2 nodes, a world that does not split over the nodes, --nodes without
 * --target k8s. */
static void test_lws(void **state)
{
    (void)state;
    struct swt_run r;
    swt_slipway(&r, "render", "--target", "k8s", "big-amd", "--fleet", fleet, "--nodes", "2",
                "--json", NULL);
    if (r.status)
        fail_msg("render --nodes 2: %s %s", r.out, r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    json_t *objs = json_object_get(j, "objects");
    validate(objs, 0);
    const json_t *lws = kind(objs, "LeaderWorkerSet");
    assert_string_equal(json_string_value(json_object_get(lws, "apiVersion")),
                        "leaderworkerset.x-k8s.io/v1");
    const json_t *t = json_object_get(json_object_get(lws, "spec"), "leaderWorkerTemplate");
    assert_int_equal(json_integer_value(json_object_get(t, "size")), 2);
    assert_string_equal(json_string_value(json_object_get(t, "restartPolicy")),
                        "RecreateGroupOnPodRestart");
    const json_t *lc = json_array_get(
        json_object_get(json_object_get(json_object_get(t, "leaderTemplate"), "spec"),
                        "containers"),
        0);
    const json_t *wc = json_array_get(
        json_object_get(json_object_get(json_object_get(t, "workerTemplate"), "spec"),
                        "containers"),
        0);
    const char *lsh = json_string_value(json_array_get(json_object_get(lc, "command"), 2));
    assert_non_null(strstr(lsh, "ray start --head --port=6379"));
    assert_non_null(strstr(lsh, "LWS_GROUP_SIZE"));
    assert_non_null(strstr(lsh, "exec \"$0\" \"$@\""));
    /* the plan's argv, unchanged, as the wrapper's arguments */
    char *args = sw_json_dumps(json_object_get(lc, "args"), JSON_COMPACT);
    assert_non_null(strstr(args, "[\"vllm\",\"serve\",\"/models/"));
    assert_non_null(strstr(args, "\"--tensor-parallel-size\",\"2\""));
    sw_free(args);
    assert_non_null(strstr(json_string_value(json_array_get(json_object_get(wc, "command"), 2)),
                           "ray start --address=\"$LWS_LEADER_ADDRESS:6379\" --block"));
    assert_null(json_object_get(wc, "livenessProbe"));
    assert_non_null(json_object_get(lc, "livenessProbe"));
    assert_non_null(json_object_get(lc, "startupProbe"));
    /* tp 2 over 2 nodes: one GPU per pod */
    for (int k = 0; k < 2; k++)
        assert_int_equal(json_integer_value(json_object_get(
                             json_object_get(json_object_get(k ? wc : lc, "resources"), "limits"),
                             "amd.com/gpu")),
                         1);
    const json_t *svc = kind(objs, "Service");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(svc, "spec"), "selector"),
                                          "slipway.dev/role")),
        "leader");
    /* tp 2 across 2 nodes works but is not what vLLM's docs advise: said */
    char *w = sw_json_dumps(json_object_get(j, "warnings"), JSON_COMPACT);
    assert_non_null(strstr(w, "tensor parallel spans nodes"));
    sw_free(w);
    json_decref(j);

    /* the control: an LWS with size 0 and no worker template is refused by the same check */
    json_t *bad = json_pack("[{s:s,s:s,s:{s:s},s:{s:{s:i}}}]", "apiVersion",
                            "leaderworkerset.x-k8s.io/v1", "kind", "LeaderWorkerSet", "metadata",
                            "name", "x", "spec", "leaderWorkerTemplate", "size", 0);
    validate(bad, 1);
    json_decref(bad);

    swt_slipway(&r, "render", "--target", "k8s", "small-nv", "--fleet", fleet, "--nodes", "2",
                NULL);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "LeaderWorkerSet of a vLLM endpoint"));
    swt_run_free(&r);
    swt_slipway(&r, "render", "--target", "k8s", "big-amd", "--fleet", fleet, "--nodes", "3", NULL);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "do not split evenly over 3 nodes"));
    swt_run_free(&r);
    swt_slipway(&r, "render", "big-amd", "--fleet", fleet, "--nodes", "2", NULL);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
}

/* The fleet's own `nodes: 2` (devices per node: tp 2 x pp 2 = 2 GPUs x 2 nodes): a
 * LeaderWorkerSet of 2 pods with 2 GPUs each and nothing to warn about, without --nodes; the same
 * count on the command line is accepted, another is a usage error naming the fleet's line. */
static void test_fleet_nodes(void **state)
{
    (void)state;
    struct swt_run r;
    json_t *j = render("big-amd-2n", NULL);
    json_t *objs = json_object_get(j, "objects");
    validate(objs, 0);
    const json_t *t = json_object_get(json_object_get(kind(objs, "LeaderWorkerSet"), "spec"),
                                      "leaderWorkerTemplate");
    assert_int_equal(json_integer_value(json_object_get(t, "size")), 2);
    for (int k = 0; k < 2; k++) {
        const json_t *c =
            json_array_get(json_object_get(json_object_get(json_object_get(t, k ? "workerTemplate"
                                                                                : "leaderTemplate"),
                                                           "spec"),
                                           "containers"),
                           0);
        assert_int_equal(
            json_integer_value(json_object_get(
                json_object_get(json_object_get(c, "resources"), "limits"), "amd.com/gpu")),
            2);
    }
    assert_int_equal(json_array_size(json_object_get(j, "warnings")), 0);
    json_decref(j);
    swt_slipway(&r, "render", "--target", "k8s", "big-amd-2n", "--fleet", fleet, "--nodes", "2",
                NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    swt_slipway(&r, "render", "--target", "k8s", "big-amd-2n", "--fleet", fleet, "--nodes", "4",
                NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "conflicts with the fleet's nodes: 2 ("));
    assert_non_null(strstr(r.err, "fleet.yaml:"));
    swt_run_free(&r);
    /* one host's systemd unit cannot serve it */
    swt_slipway(&r, "render", "big-amd-2n", "--fleet", fleet, NULL);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "spans 2 nodes"));
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schemas),     cmocka_unit_test(test_contents),
        cmocka_unit_test(test_gates_first), cmocka_unit_test(test_lws),
        cmocka_unit_test(test_fleet_nodes), cmocka_unit_test(test_waived),
    };
    return cmocka_run_group_tests(tests, setup, swt_tmpdir_teardown);
}
