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
 *   - a PersistentVolumeClaim per payload mount (the model cache).
 * The caller runs the gates first (gate sits above unit): a shape `check` rejects is not
 * rendered. Objects are JSON (jansson), written as YAML by sw_unit_k8s_yaml.
 *
 * What it deliberately does not do: multi-node serving (a LeaderWorkerSet for a vLLM endpoint
 * split across nodes), apply anything to a cluster, or carry secret values.
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
};

/*
 * Render ep. *out (new reference) is {"objects": [Deployment, Service, PVC...], "warnings":
 * [...], "startup": {"boot_ms", "source", "failure_threshold", "period_s"}}. Errors (SW_EINVAL,
 * SW_EUNSUPPORTED naming the endpoint): no container image (Kubernetes runs images), an engine
 * without a generation probe here, and every error of sw_unit_render_endpoint.
 */
int sw_unit_render_k8s(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                       const struct sw_k8s_opts *o, json_t **out, struct sw_err *e);

/* The objects as one YAML stream ("---" between documents), appended to out. */
int sw_unit_k8s_yaml(const json_t *objects, struct sw_buf *out);

#ifdef __cplusplus
}
#endif
#endif
