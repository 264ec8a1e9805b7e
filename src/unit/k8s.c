/*
 * unit/k8s: an endpoint as a Deployment + Service + PVCs (include/slipway/unit_k8s.h). Built from
 * the systemd render of the same endpoint (its engine argv in the container's view, its image,
 * its timing) so the two never disagree about what runs; nothing here builds an argv.
 *
 * The liveness probe proves generation, the seed's lesson (health 200 with a dead engine):
 *   llama.cpp  curl POST /completion {"prompt": "ok", "n_predict": 1}; the API key, when there is
 *              one, reaches curl through `curl -K -` from printf (a shell builtin): never in an argv;
 *   vLLM/SGLang  python3 (in their images): GET /v1/models for the served name, then POST
 *              /v1/completions with max_tokens 1, the key read from the environment.
 *
 * Multi-node (opts.nodes > 1, vLLM): a LeaderWorkerSet whose leader runs the Ray head and then
 * the plan's argv unchanged, and whose workers join the head (vLLM's documented mechanism:
 * examples/online_serving/multi-node-serving.sh; tensor parallel within a node, pipeline
 * parallel across nodes is the split its docs advise).
 *
 * What it deliberately does not do: node selection, or guess a payload's size (the PVC request
 * is a stated default, said in an annotation).
 */
#include "render_internal.h"

#include <slipway/unit_k8s.h>

#include <ctype.h>
#include <string.h>

/* A DNS-1123 label from a name: lowercase, [a-z0-9-], no leading/trailing '-', <= 63. */
static void dns_name(const char *in, const char *suffix, char *out, size_t n)
{
    size_t o = 0;
    char tmp[256];
    snprintf(tmp, sizeof(tmp), "%s%s", in, suffix ? suffix : "");
    for (const char *p = tmp; *p && o + 1 < n && o < 63; p++) {
        char c = (char)tolower((unsigned char)*p);
        if (!isalnum((unsigned char)c))
            c = '-';
        if (c == '-' && (o == 0 || out[o - 1] == '-'))
            continue;
        out[o++] = c;
    }
    while (o && out[o - 1] == '-')
        o--;
    out[o] = 0;
    if (!o)
        snprintf(out, n, "endpoint");
}

/* "16Gi" / "512Mi" / bytes as a Kubernetes quantity. */
static void quantity(uint64_t v, char *out, size_t n)
{
    if (v && !(v % SW_GIB))
        snprintf(out, n, "%lluGi", (unsigned long long)(v / SW_GIB));
    else if (v && !(v % SW_MIB))
        snprintf(out, n, "%lluMi", (unsigned long long)(v / SW_MIB));
    else
        snprintf(out, n, "%llu", (unsigned long long)v);
}

static const char *argv_after(const struct sw_unit_render *r, const char *flag)
{
    for (size_t i = 0; i + 1 < r->engine_argc; i++)
        if (!strcmp(r->engine_argv[i], flag))
            return r->engine_argv[i + 1];
    return NULL;
}

static json_t *jarr_argv(char *const *v, size_t from, size_t n)
{
    json_t *a = json_array();
    for (size_t i = from; a && i < n; i++)
        if (json_array_append_new(a, json_string(v[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* The key's environment name in the container, or NULL when the endpoint has no api_key. */
static const char *key_env(const struct sw_fleet_endpoint *ep)
{
    if (ep->api_key.kind == SW_FLEET_SECRET_NONE)
        return NULL;
    return ep->engine == SW_FLEET_LLAMACPP ? "LLAMA_API_KEY"
           : ep->engine == SW_FLEET_VLLM   ? "VLLM_API_KEY"
                                           : "SGLANG_API_KEY";
}

static json_t *liveness_cmd(const struct sw_fleet_endpoint *ep, unsigned port)
{
    char s[2048];
    const char *k = key_env(ep);
    if (ep->engine == SW_FLEET_LLAMACPP) {
        /* -K -: curl reads its config (the header) from stdin; printf is a builtin */
        char pre[256] = "";
        if (k)
            snprintf(pre, sizeof(pre),
                     "printf 'header = \"Authorization: Bearer %%s\"\\n' \"$%s\" | ", k);
        snprintf(s, sizeof(s),
                 "%scurl -fsS -m 60 %s-H 'Content-Type: application/json' "
                 "-d '{\"prompt\":\"ok\",\"n_predict\":1}' http://127.0.0.1:%u/completion "
                 ">/dev/null",
                 pre, k ? "-K - " : "", port);
        return json_pack("[s,s,s]", "/bin/sh", "-c", s);
    }
    snprintf(s, sizeof(s),
             "import json,os,urllib.request as u\n"
             "b='http://127.0.0.1:%u'\n"
             "h={'Content-Type':'application/json'}\n"
             "k=os.environ.get('%s')\n"
             "if k: h['Authorization']='Bearer '+k\n"
             "m=json.load(u.urlopen(u.Request(b+'/v1/models',headers=h),timeout=30))"
             "['data'][0]['id']\n"
             "d=json.dumps({'model':m,'prompt':'ok','max_tokens':1}).encode()\n"
             "r=json.load(u.urlopen(u.Request(b+'/v1/completions',d,h),timeout=60))\n"
             "assert r['choices'][0]['text'] is not None\n",
             port, k ? k : "SLIPWAY_NO_KEY");
    return json_pack("[s,s,s]", "python3", "-c", s);
}

static int add(json_t *arr, json_t *x)
{
    return !x || json_array_append_new(arr, x) ? SW_ENOMEM : 0;
}

static json_t *env_list(const struct sw_fleet_endpoint *ep, const struct sw_unit_render *r,
                        const char *secret_name)
{
    json_t *env = json_array();
    int rc = env ? 0 : SW_ENOMEM;
    for (size_t i = 0; i < ep->n_env && !rc; i++) {
        const struct sw_fleet_envvar *v = &ep->env[i];
        if (v->secret.kind == SW_FLEET_SECRET_NONE)
            rc = add(env,
                     json_pack("{s:s,s:s}", "name", v->name, "value", v->value ? v->value : ""));
        else
            rc = add(env, json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", v->name, "valueFrom",
                                    "secretKeyRef", "name", secret_name, "key", v->name));
    }
    const char *k = key_env(ep);
    if (!rc && k)
        rc = add(env, json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", k, "valueFrom", "secretKeyRef",
                                "name", secret_name, "key", k));
    /* the device environment the unit sets (HIP/CUDA_VISIBLE_DEVICES) is the scheduler's job
     * here: the pod sees only the GPUs it was given */
    (void)r;
    if (rc) {
        json_decref(env);
        return NULL;
    }
    return env;
}

#define K8S_STR_(x) #x
#define K8S_STR(x)  K8S_STR_(x)

/* The leader: the Ray head, then wait (bounded by the startupProbe) until the group's every node
 * joined, then exec the engine's argv, passed as "$0" "$@" so no word of it is re-read by the
 * shell. */
static const char leader_sh[] = "ray start --head --port=" K8S_STR(
    SW_K8S_RAY_PORT) " && "
                     "until python3 -c \"import os,sys,ray; "
                     "ray.init(address='auto',logging_level='ERROR'); "
                     "sys.exit(sum(1 for n in ray.nodes() if n['Alive']) < "
                     "int(os.environ['LWS_GROUP_SIZE']))\"; "
                     "do sleep 5; done && exec \"$0\" \"$@\"";
/* A worker: join the head (LWS injects LWS_LEADER_ADDRESS) and stay in the foreground. */
static const char worker_sh[] =
    "exec ray start --address=\"$LWS_LEADER_ADDRESS:" K8S_STR(SW_K8S_RAY_PORT) "\" --block";

static int argv_int(const struct sw_unit_render *r, const char *flag, unsigned *v)
{
    const char *s = argv_after(r, flag);
    *v = 1;
    if (!s)
        return 0;
    char *end = NULL;
    unsigned long x = strtoul(s, &end, 10);
    if (!end || *end || !x || x > 4096)
        return SW_EINVAL;
    *v = (unsigned)x;
    return 0;
}

/* The LeaderWorkerSet in place of the Deployment: leader = the Deployment's container under the
 * Ray wrapper, worker = the same image, env, mounts and GPUs running a Ray worker. container and
 * vols are stolen. */
static json_t *lws_object(const char *name, json_t *container, json_t *vols, int64_t grace,
                          unsigned nodes)
{
    json_t *worker = json_deep_copy(container);
    json_t *cmd = json_pack("[s,s,s]", "/bin/sh", "-c", leader_sh);
    json_t *args = json_array();
    int rc = worker && cmd && args ? 0 : SW_ENOMEM;
    /* the leader's args: the whole engine argv ($0 is its program) */
    if (!rc)
        rc = json_array_extend(args, json_object_get(container, "command")) ||
                     json_array_extend(args, json_object_get(container, "args"))
                 ? SW_ENOMEM
                 : 0;
    if (!rc)
        rc = json_object_set(container, "command", cmd) || json_object_set(container, "args", args)
                 ? SW_ENOMEM
                 : 0;
    if (!rc) {
        /* a Ray worker serves no HTTP: no port, no probes */
        json_object_del(worker, "ports");
        json_object_del(worker, "startupProbe");
        json_object_del(worker, "readinessProbe");
        json_object_del(worker, "livenessProbe");
        json_object_del(worker, "args");
        rc = json_object_set_new(worker, "name", json_string("worker")) ||
                     json_object_set_new(worker, "command",
                                         json_pack("[s,s,s]", "/bin/sh", "-c", worker_sh))
                 ? SW_ENOMEM
                 : 0;
    }
    json_decref(cmd);
    json_decref(args);
    if (rc) {
        json_decref(worker);
        json_decref(container);
        json_decref(vols);
        return NULL;
    }
    return json_pack(
        "{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:{s:i,s:s,s:{s:I,s:s,"
        "s:{s:{s:{s:s,s:s}},s:{s:I,s:[o],s:O}},"
        "s:{s:{s:{s:s,s:s}},s:{s:I,s:[o],s:o}}}}}",
        "apiVersion", "leaderworkerset.x-k8s.io/v1", "kind", "LeaderWorkerSet", "metadata", "name",
        name, "labels", "app.kubernetes.io/name", name, "app.kubernetes.io/managed-by", "slipway",
        "spec", "replicas", 1, "startupPolicy", "LeaderCreated", "leaderWorkerTemplate", "size",
        (json_int_t)nodes, "restartPolicy", "RecreateGroupOnPodRestart", "leaderTemplate",
        "metadata", "labels", "app.kubernetes.io/name", name, "slipway.dev/role", "leader", "spec",
        "terminationGracePeriodSeconds", (json_int_t)grace, "containers", container, "volumes",
        vols, "workerTemplate", "metadata", "labels", "app.kubernetes.io/name", name,
        "slipway.dev/role", "worker", "spec", "terminationGracePeriodSeconds", (json_int_t)grace,
        "containers", worker, "volumes", vols);
}

/* One endpoint's objects on their way: what each step of sw_unit_render_k8s leaves for the
 * next. */
struct k8s {
    const struct sw_fleet_endpoint *ep;
    const struct sw_k8s_opts *o;
    struct sw_unit_render r;
    char name[64], secret[80];
    unsigned port;
    unsigned nodes;   /* the pods of the group (1: a Deployment) */
    unsigned nv, amd; /* GPUs each pod asks for, per vendor */
    int64_t boot;     /* the startupProbe's boot time, ms */
    int64_t thr;      /* its failure threshold, of PERIOD_S */
    json_t *objs, *warn;
    int arc; /* an append that failed for want of memory */
};

#define PERIOD_S 10 /* the startupProbe's period */

/* The render, the engine's port, the names, and the warnings of the listen address and the
 * render. */
static int k8s_start(struct k8s *k, const struct sw_fleet *f, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = k->ep;
    if (!ep->image.v)
        return sw_fleet_err_at(e, SW_EINVAL, &ep->at,
                               "%s: Kubernetes runs a container image and the endpoint has none: "
                               "set image: (pinned name@sha256:...)",
                               ep->name);
    int rc = sw_unit_render_endpoint(f, ep, &k->r, e);
    if (rc)
        return rc;
    const char *ps = argv_after(&k->r, "--port");
    k->port = ps ? (unsigned)strtoul(ps, NULL, 10) : 0;
    if (!k->port || k->port > 65535)
        return sw_err_set(e, SW_EINVAL, "%s: the engine's argv names no --port to serve on",
                          ep->name);
    dns_name(ep->name, NULL, k->name, sizeof(k->name));
    snprintf(k->secret, sizeof(k->secret), "%s-secrets", k->name);
    k->objs = json_array();
    k->warn = json_array();
    if (!k->objs || !k->warn)
        return SW_ENOMEM;
    const char *host = argv_after(&k->r, "--host");
    if (host && (!strcmp(host, "127.0.0.1") || !strcmp(host, "localhost")))
        k->arc |=
            add(k->warn, json_sprintf("the engine listens on %s only: the Service cannot reach it; "
                                      "set listen: 0.0.0.0:%u in the fleet",
                                      host, k->port));
    for (size_t i = 0; i < k->r.n_warnings; i++)
        k->arc |= add(k->warn, json_string(k->r.warnings[i]));
    return 0;
}

/* Across nodes (vLLM only): the plan's world split evenly over the pods, each asking for its
 * share of GPUs; what the split cannot give is a warning. */
static int k8s_nodes(struct k8s *k, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = k->ep;
    unsigned tp = 1, pp = 1, nodes = k->nodes;
    size_t fleet_world = ep->n_devices * (size_t)sw_fleet_endpoint_nodes(ep);
    if (ep->engine != SW_FLEET_VLLM)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "%s: serving across %u nodes is a LeaderWorkerSet of a vLLM endpoint "
                          "(vLLM's Ray cluster); this endpoint runs %s",
                          ep->name, nodes, sw_fleet_engine_name(ep->engine));
    if (argv_int(&k->r, "--tensor-parallel-size", &tp) ||
        argv_int(&k->r, "--pipeline-parallel-size", &pp))
        return sw_err_set(e, SW_EINVAL, "%s: the plan's parallel sizes are not numbers", ep->name);
    unsigned world = tp * pp;
    if (world % nodes)
        return sw_err_set(e, SW_EINVAL,
                          "%s: %u GPUs (tensor parallel %u x pipeline parallel %u) do not split "
                          "evenly over %u nodes",
                          ep->name, world, tp, pp, nodes);
    /* each pod asks for its share of the world, of the endpoint's vendor */
    if (k->nv)
        k->nv = world / nodes;
    if (k->amd)
        k->amd = world / nodes;
    if (!k->nv && !k->amd)
        k->arc |= add(k->warn, json_string("the endpoint names no nvidia or amd device: the pods "
                                           "ask for no GPU"));
    if (pp < nodes)
        k->arc |= add(k->warn, json_sprintf("tensor parallel spans nodes (pipeline parallel %u < "
                                            "%u nodes): vLLM's docs advise tensor parallel = GPUs "
                                            "per node and pipeline parallel = nodes",
                                            pp, nodes));
    if (world != fleet_world)
        k->arc |= add(k->warn, json_sprintf("the plan's world is %u GPUs but the fleet gives %zu "
                                            "devices: each of the %u pods asks for %u",
                                            world, fleet_world, nodes, world / nodes));
    for (size_t i = 0; i < ep->payload.n_mounts; i++)
        if (!ep->payload.mounts[i].readonly)
            k->arc |= add(k->warn, json_sprintf("mount %s is writable: its ReadWriteOnce claim "
                                                "cannot be shared by pods on %u nodes",
                                                ep->payload.mounts[i].container_path, nodes));
    return 0;
}

/* GPUs per vendor and the pods: the command line's count, else the fleet's `nodes:` (whose
 * devices are per node). */
static int k8s_gpus(struct k8s *k, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = k->ep;
    for (size_t i = 0; i < ep->n_devices; i++) {
        const char *v = ep->devices[i]->vendor.v;
        k->nv += v && !strcmp(v, "nvidia");
        k->amd += v && !strcmp(v, "amd");
    }
    k->nodes = k->o && k->o->nodes > 1 ? k->o->nodes : (unsigned)sw_fleet_endpoint_nodes(ep);
    return k->nodes > 1 ? k8s_nodes(k, e) : 0;
}

/* /dev/shm as an emptyDir in memory, and a PersistentVolumeClaim (into objs) per payload mount:
 * the pod's volumes and the container's mounts. */
static void k8s_volumes(struct k8s *k, json_t **vols, json_t **mounts)
{
    const struct sw_fleet_endpoint *ep = k->ep;
    struct sw__unit_defaults d;
    char q[64], lbl[256];
    sw__unit_defaults(ep->engine, &d);
    uint64_t shm = ep->runtime.shm_size.set ? ep->runtime.shm_size.v : d.shm_bytes;
    *vols = json_array();
    *mounts = json_array();
    quantity(shm, q, sizeof(q));
    k->arc |= add(*vols, json_pack("{s:s,s:{s:s,s:s}}", "name", "dshm", "emptyDir", "medium",
                                   "Memory", "sizeLimit", q));
    k->arc |= add(*mounts, json_pack("{s:s,s:s}", "name", "dshm", "mountPath", "/dev/shm"));
    for (size_t i = 0; i < ep->payload.n_mounts; i++) {
        const struct sw_fleet_mount *m = &ep->payload.mounts[i];
        char vol[32], pvc[96];
        snprintf(vol, sizeof(vol), "models-%zu", i);
        snprintf(lbl, sizeof(lbl), "%s-models-%zu", k->name, i);
        dns_name(lbl, NULL, pvc, sizeof(pvc));
        k->arc |= add(*vols, json_pack("{s:s,s:{s:s,s:b}}", "name", vol, "persistentVolumeClaim",
                                       "claimName", pvc, "readOnly", m->readonly));
        k->arc |= add(*mounts, json_pack("{s:s,s:s,s:b}", "name", vol, "mountPath",
                                         m->container_path, "readOnly", m->readonly));
        k->arc |=
            add(k->objs,
                json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{s:s}},s:{s:[s],s:{s:{s:s}}}}", "apiVersion",
                          "v1", "kind", "PersistentVolumeClaim", "metadata", "name", pvc, "labels",
                          "app.kubernetes.io/name", k->name, "annotations", "slipway.dev/size",
                          "the payload's size is not known here: " SW_K8S_DEFAULT_CACHE
                          " is a stated default; set it to the model cache's size",
                          "spec", "accessModes", m->readonly ? "ReadOnlyMany" : "ReadWriteOnce",
                          "resources", "requests", "storage", SW_K8S_DEFAULT_CACHE));
    }
    if (!ep->payload.n_mounts)
        k->arc |= add(k->warn, json_string("the payload has no mounts: no model cache volume is "
                                           "rendered (the image must carry the model)"));
}

/* The engine's container: image, argv, port, env (secrets by reference), GPUs, mounts, and the
 * startup (the slowest measured boot, with half again as margin), readiness and liveness probes.
 * limits and mounts are stolen. */
static json_t *k8s_container(struct k8s *k, json_t *limits, json_t *mounts)
{
    json_t *env = env_list(k->ep, &k->r, k->secret);
    if (!env)
        k->arc = SW_ENOMEM; /* never an empty list in its place: the key would silently go */
    json_t *probe_http = json_pack("{s:s,s:i}", "path", "/health", "port", (int)k->port);
    json_t *container = json_pack(
        "{s:s,s:s,s:o,s:o,s:[{s:s,s:i,s:s}],s:o,s:{s:o},s:o,"
        "s:{s:O,s:i,s:i,s:I},s:{s:O,s:i,s:i,s:i},s:{s:{s:o},s:i,s:i,s:i,s:i}}",
        "name", "engine", "image", k->r.image, "command", jarr_argv(k->r.engine_argv, 0, 1), "args",
        jarr_argv(k->r.engine_argv, 1, k->r.engine_argc), "ports", "name", "http", "containerPort",
        (int)k->port, "protocol", "TCP", "env", env, "resources", "limits", limits, "volumeMounts",
        mounts, "startupProbe", "httpGet", probe_http, "periodSeconds", PERIOD_S, "timeoutSeconds",
        5, "failureThreshold", (json_int_t)k->thr, "readinessProbe", "httpGet", probe_http,
        "periodSeconds", 10, "timeoutSeconds", 5, "failureThreshold", 3, "livenessProbe", "exec",
        "command", liveness_cmd(k->ep, k->port), "periodSeconds", 60, "timeoutSeconds", 90,
        "failureThreshold", 3, "initialDelaySeconds", 0);
    json_decref(probe_http);
    return container;
}

/* The workload: a LeaderWorkerSet across nodes, else a Deployment. container and vols are
 * stolen. */
static json_t *k8s_workload(struct k8s *k, json_t *container, json_t *vols)
{
    int64_t grace = (int64_t)(k->r.timing.stop_timeout_ms / 1000);
    if (k->nodes > 1 && container && vols && !k->arc)
        return lws_object(k->name, container, vols, grace > 0 ? grace : 30, k->nodes);
    if (k->nodes > 1) {
        json_decref(container);
        json_decref(vols);
        return NULL;
    }
    return json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:{s:i,s:{s:s},s:{s:{s:s}},"
                     "s:{s:{s:{s:s}},s:{s:I,s:[o],s:o}}}}",
                     "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", k->name,
                     "labels", "app.kubernetes.io/name", k->name, "app.kubernetes.io/managed-by",
                     "slipway", "spec", "replicas", 1, "strategy", "type", "Recreate", "selector",
                     "matchLabels", "app.kubernetes.io/name", k->name, "template", "metadata",
                     "labels", "app.kubernetes.io/name", k->name, "spec",
                     "terminationGracePeriodSeconds", (json_int_t)(grace > 0 ? grace : 30),
                     "containers", container, "volumes", vols);
}

/* The Service on the engine's port; a group's reaches its leader only (the workers serve no
 * HTTP). */
static json_t *k8s_service(struct k8s *k)
{
    json_t *svc = json_pack(
        "{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:{s:s},s:[{s:s,s:i,s:s,s:s}]}}", "apiVersion", "v1",
        "kind", "Service", "metadata", "name", k->name, "labels", "app.kubernetes.io/name", k->name,
        "spec", "type", "ClusterIP", "selector", "app.kubernetes.io/name", k->name, "ports", "name",
        "http", "port", (int)k->port, "targetPort", "http", "protocol", "TCP");
    if (svc && k->nodes > 1 &&
        json_object_set_new(json_object_get(json_object_get(svc, "spec"), "selector"),
                            "slipway.dev/role", json_string("leader")))
        k->arc = SW_ENOMEM;
    return svc;
}

/* objs: the workload and the Service first (both stolen, on success and failure alike), each
 * object in the namespace when one is asked for. */
static int k8s_objects(struct k8s *k, json_t *dep, json_t *svc)
{
    if (!dep || !svc || k->arc) {
        json_decref(dep);
        json_decref(svc);
        return SW_ENOMEM;
    }
    if (k->o && k->o->namespace) {
        json_object_set_new(json_object_get(dep, "metadata"), "namespace",
                            json_string(k->o->namespace));
        json_object_set_new(json_object_get(svc, "metadata"), "namespace",
                            json_string(k->o->namespace));
        size_t i;
        json_t *x;
        json_array_foreach(k->objs, i, x) json_object_set_new(
            json_object_get(x, "metadata"), "namespace", json_string(k->o->namespace));
    }
    if (json_array_insert_new(k->objs, 0, svc)) {
        json_decref(dep);
        return SW_ENOMEM;
    }
    if (json_array_insert_new(k->objs, 0, dep))
        return SW_ENOMEM;
    return 0;
}

int sw_unit_render_k8s(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                       const struct sw_k8s_opts *o, json_t **out, struct sw_err *e)
{
    struct k8s k;
    json_t *doc = NULL;
    memset(&k, 0, sizeof(k));
    k.ep = ep;
    k.o = o;
    *out = NULL;
    int rc = k8s_start(&k, f, e);
    if (rc)
        goto out;
    rc = k8s_gpus(&k, e);
    if (rc)
        goto out;
    json_t *limits = json_object();
    if (k.nv)
        k.arc |= json_object_set_new(limits, "nvidia.com/gpu", json_integer(k.nv)) ? SW_ENOMEM : 0;
    if (k.amd)
        k.arc |= json_object_set_new(limits, "amd.com/gpu", json_integer(k.amd)) ? SW_ENOMEM : 0;
    /* startupProbe: the slowest measured boot, with half again as margin */
    k.boot = o && o->boot_ms > 0 ? o->boot_ms : (int64_t)SW_K8S_DEFAULT_BOOT_MS;
    k.thr = (k.boot * 3 / 2 + PERIOD_S * 1000 - 1) / (PERIOD_S * 1000);
    if (k.thr < 3)
        k.thr = 3;
    json_t *vols, *mounts;
    k8s_volumes(&k, &vols, &mounts);
    json_t *container = k8s_container(&k, limits, mounts);
    json_t *dep = k8s_workload(&k, container, vols);
    rc = k8s_objects(&k, dep, k8s_service(&k));
    if (rc)
        goto out;
    doc = json_pack("{s:O,s:O,s:{s:I,s:s,s:I,s:i}}", "objects", k.objs, "warnings", k.warn,
                    "startup", "boot_ms", (json_int_t)k.boot, "source",
                    o && o->boot_ms > 0 ? "the slowest measured boot in the ledger"
                                        : "no boot measured: a stated default",
                    "failure_threshold", (json_int_t)k.thr, "period_s", PERIOD_S);
    if (!doc)
        rc = SW_ENOMEM;
out:
    if (rc == SW_ENOMEM && e && !e->code)
        sw_err_set(e, rc, "out of memory");
    json_decref(k.objs);
    json_decref(k.warn);
    sw_unit_render_free(&k.r);
    if (!rc)
        *out = doc;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * YAML
 */
static int yscalar(struct sw_buf *b, const json_t *v)
{
    if (json_is_string(v))
        return sw_buf_yaml_str(b, json_string_value(v));
    if (json_is_integer(v))
        return sw_buf_printf(b, "%lld", (long long)json_integer_value(v));
    if (json_is_real(v))
        return sw_buf_printf(b, "%.17g", json_real_value(v));
    if (json_is_boolean(v))
        return sw_buf_puts(b, json_is_true(v) ? "true" : "false");
    return sw_buf_puts(b, "null");
}

static bool empty_coll(const json_t *v)
{
    return (json_is_object(v) && !json_object_size(v)) || (json_is_array(v) && !json_array_size(v));
}

static int ynode(struct sw_buf *b, const json_t *v, int ind);

/* After "key:" or "- ": a scalar or empty collection on the same line, else a block below. */
static int yvalue(struct sw_buf *b, const json_t *v, int ind)
{
    if (empty_coll(v))
        return sw_buf_puts(b, json_is_object(v) ? " {}\n" : " []\n");
    if (!json_is_object(v) && !json_is_array(v)) {
        int rc = sw_buf_putc(b, ' ');
        if (!rc)
            rc = yscalar(b, v);
        return rc ? rc : sw_buf_putc(b, '\n');
    }
    int rc = sw_buf_putc(b, '\n');
    return rc ? rc : ynode(b, v, ind);
}

static int ynode(struct sw_buf *b, const json_t *v, int ind)
{
    int rc = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            rc = sw_buf_printf(b, "%*s", ind, "");
            /* a key of letters, digits and ._/- is a plain scalar; anything else is quoted */
            bool plain = *k && isalpha((unsigned char)*k);
            for (const char *p = k; *p && plain; p++)
                plain = isalnum((unsigned char)*p) || strchr("._/-", *p);
            if (!rc && plain)
                rc = sw_buf_puts(b, k);
            else if (!rc) {
                json_t *ks = json_string(k);
                rc = ks ? yscalar(b, ks) : SW_ENOMEM;
                json_decref(ks);
            }
            if (!rc)
                rc = sw_buf_putc(b, ':');
            if (!rc)
                rc = yvalue(b, x, ind + 2);
            if (rc)
                break;
        }
        return rc;
    }
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x)
    {
        rc = sw_buf_printf(b, "%*s-", ind, "");
        if (!rc)
            rc = yvalue(b, x, ind + 2);
        if (rc)
            break;
    }
    return rc;
}

int sw_unit_k8s_yaml(const json_t *objects, struct sw_buf *out)
{
    int rc = 0;
    size_t i;
    json_t *x;
    json_array_foreach(objects, i, x)
    {
        rc = sw_buf_puts(out, "---\n");
        if (!rc)
            rc = ynode(out, x, 0);
        if (rc)
            break;
    }
    return rc;
}
