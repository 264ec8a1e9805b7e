/*
 * `kubectl apply --dry-run=client` on what `slipway render --target k8s` writes, without a
 * cluster.
 *
 * kubectl maps every object's apiVersion/kind to a REST resource through the API server's
 * discovery, even in client dry-run (kubectl 1.32 with no server: "unable to recognize"), and it
 * fetches each object to compute the apply patch. So the test serves discovery itself: swhttpd on
 * 127.0.0.1 answers /api, /apis and the resource lists of the groups slipway renders (core v1,
 * apps/v1, leaderworkerset.x-k8s.io/v1), and 404 for each object (nothing exists yet). What this
 * proves: kubectl (the real binary: Debian's kubernetes-client, or any kubectl on PATH) reads the
 * rendered YAML stream, every object names a kind of those groups, a namespaced one gets the
 * default namespace, and the objects kubectl would send (`-o json`) are exactly the ones render
 * printed as JSON (nothing lost or retyped by the YAML). What it does not: the schema check is
 * `--validate=false` (kubectl's validation downloads /openapi/v2 from the server, and no Debian
 * package carries a current one: golang-k8s-kube-openapi-dev's testdata is Kubernetes 1.13, which
 * has no startupProbe); the schemas are test_k8s_render's (kubernetes-models). The control: an
 * object of a kind the discovery does not list is refused by kubectl.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swhttpd.h"
#include "swtest.h"

#include <slipway/core.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *dir;
static char fleet[4200], kubeconfig[4200], cache[4200];
static struct swh *api;

static const char api_versions[] =
    "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":"
    "[{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"127.0.0.1\"}]}";
static const char api_groups[] =
    "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":["
    "{\"name\":\"apps\",\"versions\":[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}],"
    "\"preferredVersion\":{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}},"
    "{\"name\":\"leaderworkerset.x-k8s.io\",\"versions\":[{\"groupVersion\":"
    "\"leaderworkerset.x-k8s.io/v1\",\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":"
    "\"leaderworkerset.x-k8s.io/v1\",\"version\":\"v1\"}}]}";
#define RES(name, single, kind)                                                                    \
    "{\"name\":\"" name "\",\"singularName\":\"" single "\",\"namespaced\":true,\"kind\":\"" kind  \
    "\",\"verbs\":[\"create\",\"get\",\"list\",\"patch\",\"update\",\"delete\"]}"
static const char core_v1[] =
    "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":[" RES(
        "services", "service", "Service") "," RES("persistentvolumeclaims", "persistentvolumeclaim",
                                                  "PersistentVolumeClaim") "]}";
static const char apps_v1[] =
    "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"apps/v1\","
    "\"resources\":[" RES("deployments", "deployment", "Deployment") "]}";
static const char lws_v1[] = "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":"
                             "\"leaderworkerset.x-k8s.io/v1\",\"resources\":[" RES(
                                 "leaderworkersets", "leaderworkerset", "LeaderWorkerSet") "]}";
static const char not_found[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
                                "\"Failure\",\"reason\":\"NotFound\",\"code\":404}";

static int setup(void **state)
{
    (void)state;
    struct swt_run r;
    const char *ver[] = {"kubectl", "version", "--client", NULL};
    swt_run(ver, NULL, 60, &r);
    swt_need(r.status == 0, "kubectl (Debian's kubernetes-client, scripts/deps.sh): %s", r.err);
    swt_run_free(&r);
    dir = swt_tmpdir();
    snprintf(fleet, sizeof(fleet), "%s", swt_src("tests/data/k8s/fleet.yaml"));
    snprintf(cache, sizeof(cache), "%s", swt_join(dir, "kube-cache"));
    setenv("SMALL_API_KEY", "sekrit-value-do-not-print", 1);
    api = swh_start();
    swh_reply(api, "GET", "/api", 200, NULL, api_versions);
    swh_reply(api, "GET", "/apis", 200, NULL, api_groups);
    swh_reply(api, "GET", "/api/v1", 200, NULL, core_v1);
    swh_reply(api, "GET", "/apis/apps/v1", 200, NULL, apps_v1);
    swh_reply(api, "GET", "/apis/leaderworkerset.x-k8s.io/v1", 200, NULL, lws_v1);
    char cfg[1024];
    snprintf(cfg, sizeof(cfg),
             "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: "
             "http://127.0.0.1:%d\ncontexts:\n- name: local\n  context: {cluster: local}\n"
             "current-context: local\nusers: []\n",
             swh_port(api));
    snprintf(kubeconfig, sizeof(kubeconfig), "%s", swt_join(dir, "kubeconfig"));
    swt_write_str(kubeconfig, cfg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    swh_stop(api);
    swt_tmpdir_free(dir);
    return 0;
}

static void kubectl(const char *file, struct swt_run *r)
{
    const char *argv[] = {"kubectl",
                          "--kubeconfig",
                          kubeconfig,
                          "--cache-dir",
                          cache,
                          "apply",
                          "--dry-run=client",
                          "--validate=false",
                          "-o",
                          "json",
                          "-f",
                          file,
                          NULL};
    swt_run(argv, NULL, 120, r);
}

/* The REST path kubectl GETs for an object in the default namespace. */
static void object_path(const json_t *o, char *out, size_t n)
{
    const char *k = json_string_value(json_object_get(o, "kind"));
    const char *nm = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
    const char *p = !strcmp(k, "Deployment")        ? "/apis/apps/v1/namespaces/default/deployments"
                    : !strcmp(k, "LeaderWorkerSet") ? "/apis/leaderworkerset.x-k8s.io/v1/"
                                                      "namespaces/default/leaderworkersets"
                    : !strcmp(k, "Service")         ? "/api/v1/namespaces/default/services"
                    : !strcmp(k, "PersistentVolumeClaim")
                        ? "/api/v1/namespaces/default/persistentvolumeclaims"
                        : NULL;
    if (!p)
        fail_msg("a kind the test does not serve: %s", k);
    snprintf(out, n, "%s/%s", p, nm);
}

/* kubectl's object minus what apply adds (the namespace, the last-applied annotation). */
static void strip_apply(json_t *o)
{
    json_t *md = json_object_get(o, "metadata");
    json_object_del(md, "namespace");
    json_t *an = json_object_get(md, "annotations");
    json_object_del(an, "kubectl.kubernetes.io/last-applied-configuration");
    if (an && !json_object_size(an))
        json_object_del(md, "annotations");
}

static void dry_run(const char *ep, const char *nodes, const char *want_kind)
{
    struct swt_run r;
    char out[4400];
    snprintf(out, sizeof(out), "%s", swt_join(dir, nodes ? "lws" : ep));
    if (mkdir(out, 0755))
        fail_msg("mkdir %s", out);
    if (nodes)
        swt_slipway(&r, "render", "--target", "k8s", ep, "--fleet", fleet, "--nodes", nodes,
                    "--out", out, "--json", NULL);
    else
        swt_slipway(&r, "render", "--target", "k8s", ep, "--fleet", fleet, "--out", out, "--json",
                    NULL);
    if (r.status)
        fail_msg("render %s: %s %s", ep, r.out, r.err);
    json_t *doc = swt_json_out(&r);
    swt_run_free(&r);
    const json_t *objs = json_object_get(doc, "objects");
    const char *file = json_string_value(json_object_get(doc, "written"));
    assert_non_null(file);
    size_t i;
    json_t *o;
    char path[1024];
    json_array_foreach(objs, i, o)
    {
        object_path(o, path, sizeof(path));
        swh_reply(api, "GET", path, 404, NULL, not_found);
    }
    kubectl(file, &r);
    if (r.status)
        fail_msg("kubectl apply --dry-run=client %s: exit %d: %s %s", file, r.status, r.out, r.err);
    json_t *list = swt_json_out(&r);
    swt_run_free(&r);
    json_t *items = json_object_get(list, "items");
    assert_int_equal(json_array_size(items), json_array_size(objs));
    bool saw_kind = false;
    json_array_foreach(items, i, o)
    {
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(o, "metadata"), "namespace")),
            "default");
        strip_apply(o);
        if (!json_equal(o, json_array_get(objs, i))) {
            char *a = sw_json_dumps(o, JSON_COMPACT),
                 *b = sw_json_dumps(json_array_get(objs, i), JSON_COMPACT);
            fail_msg("kubectl read object %zu as\n%s\nrender printed\n%s", i, a, b);
        }
        saw_kind |= !strcmp(json_string_value(json_object_get(o, "kind")), want_kind);
        /* kubectl asked the server for this object (the apply patch's current state) */
        object_path(json_array_get(objs, i), path, sizeof(path));
        assert_true(swh_hits(api, path) >= 1);
    }
    assert_true(saw_kind);
    json_decref(list);
    json_decref(doc);
}

static void test_deployment_llama(void **state)
{
    (void)state;
    dry_run("small-nv", NULL, "Deployment");
}

static void test_deployment_vllm(void **state)
{
    (void)state;
    dry_run("big-amd", NULL, "Deployment");
}

static void test_leaderworkerset(void **state)
{
    (void)state;
    dry_run("big-amd", "2", "LeaderWorkerSet");
    dry_run("big-amd-2n", NULL, "LeaderWorkerSet"); /* the fleet's `nodes: 2` */
}

/* The control: a kind the API does not serve is refused, so the runs above could fail. */
static void test_unknown_kind_refused(void **state)
{
    (void)state;
    struct swt_run r;
    const char *file = swt_join(dir, "bad.yaml");
    swt_write_str(file, "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: x}\nspec: {}\n");
    kubectl(file, &r);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "Deploymnet"));
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deployment_llama),
        cmocka_unit_test(test_deployment_vllm),
        cmocka_unit_test(test_leaderworkerset),
        cmocka_unit_test(test_unknown_kind_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
