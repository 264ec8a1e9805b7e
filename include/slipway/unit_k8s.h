/*
 * unit/k8s: an endpoint as Kubernetes objects, for outgrowing one box. From the same render as
 * the systemd unit (sw_unit_render_endpoint: the plan's argv in the container's view, the image,
 * the shm size, the stop timeout) it builds
 *   - a Deployment (one replica, Recreate: two pods never hold the same GPUs): the image, the
 *     engine's argv as command + args, resources per vendor (nvidia.com/gpu, amd.com/gpu),
 *     /dev/shm as an emptyDir of medium Memory sized like the container's --shm-size, the model
 *     cache from a PVC at each payload mount's container path, the environment with every secret
 *     as a secretKeyRef (never a value), terminationGracePeriodSeconds from the unit's stop
 *     timeout, and three probes: a startupProbe sized from the measured boot time (not a fixed
 *     initialDelay), readiness on GET /health, and liveness that proves generation (a one-token
 *     completion, the key read from the environment, never from argv);
 *   - a Service (ClusterIP) on the engine's port;
 *   - a PersistentVolumeClaim per payload mount (the model cache);
 *   - with nodes > 1 (vLLM only), a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) in place of the
 *     Deployment: vLLM's documented multi-node mechanism, a Ray cluster across the group's pods.
 *     The leader starts the Ray head, waits until LWS_GROUP_SIZE nodes joined, then execs the
 *     plan's argv unchanged (its --tensor-parallel-size x --pipeline-parallel-size is the world
 *     size, split evenly over the nodes; vLLM picks its Ray executor when the world exceeds one
 *     node's GPUs); each worker joins the head at $LWS_LEADER_ADDRESS and blocks. The group is
 *     recreated when a pod restarts (RecreateGroupOnPodRestart: a Ray cluster does not survive
 *     losing a member); the Service selects the leader.
 * The caller runs the gates first (gate sits above unit): a shape `check` rejects is not
 * rendered. Objects are JSON (jansson), written as YAML by sw_unit_k8s_yaml.
 *
 * What it deliberately does not do: apply anything to a cluster, choose nodes (placement is the
 * scheduler's), or carry secret values.
 */
#ifndef SLIPWAY_UNIT_K8S_H
#define SLIPWAY_UNIT_K8S_H

#include <slipway/core.h>
#include <slipway/fleet.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Without a measured boot the startupProbe allows this long. */
#define SW_K8S_DEFAULT_BOOT_MS (600ull * 1000)
/* The model cache's requested size when nothing states it. */
#define SW_K8S_DEFAULT_CACHE "200Gi"

struct sw_k8s_opts {
    int64_t boot_ms;       /* the slowest measured boot (ledger); <= 0: SW_K8S_DEFAULT_BOOT_MS */
    const char *namespace; /* NULL: none set (the caller's current namespace) */
    unsigned nodes;        /* > 1: a LeaderWorkerSet of this many pods (vLLM); 0/1: the fleet's
                            * `nodes:` (a LeaderWorkerSet when > 1), else a Deployment */
};

/* The Ray head's port in a LeaderWorkerSet group (Ray's and vLLM's documented default). */
#define SW_K8S_RAY_PORT 6379

/*
 * Render ep. *out (new reference) is {"objects": [Deployment, Service, PVC...], "warnings":
 * [...], "startup": {"boot_ms", "source", "failure_threshold", "period_s"}}. Errors (SW_EINVAL,
 * SW_EUNSUPPORTED naming the endpoint): no container image (Kubernetes runs images), an engine
 * without a generation probe here, nodes > 1 for an engine other than vLLM (SW_EUNSUPPORTED) or
 * a world size (tensor x pipeline parallel) that does not split evenly over the nodes
 * (SW_EINVAL), and every error of sw_unit_render_endpoint.
 */
int sw_unit_render_k8s(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                       const struct sw_k8s_opts *o, json_t **out, struct sw_err *e);

/* The objects as one YAML stream ("---" between documents), appended to out. */
int sw_unit_k8s_yaml(const json_t *objects, struct sw_buf *out);

#ifdef __cplusplus
}
#endif
#endif
