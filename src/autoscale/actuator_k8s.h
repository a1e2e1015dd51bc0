/* The `kubernetes` actuator (actuator.h): each pool's target workload
 * (Deployment, StatefulSet or LeaderWorkerSet) is scaled through its scale
 * subresource, PATCH .../scale with a JSON merge patch
 * {"spec":{"replicas":N}}, as `kubectl scale` and the HPA do. The service
 * account's token (re-read on every request: projected tokens rotate) is
 * the Bearer, its CA verifies the API server. One blocking request per
 * apply(), on the caller's thread (kvgate autoscale's tick thread), through
 * discovery's API client: the connect and each wait for bytes are bounded
 * by the configured timeout, the answer by 1 MiB.
 *
 * With `standby: N` a pool parks pods instead of removing them: the
 * workload's pods (the Scale's status.selector) are listed, and pods are
 * marked or unmarked with the annotation kvgate.io/park
 * (actuator_k8s_park.c; the pod's side is in docs/autoscale.md); the count
 * then keeps the active and the parked ones. That is a few requests per
 * tick, each bounded like the scale's.
 *
 * RBAC (deploy/base/rbac.yaml): get and patch on deployments/scale and
 * statefulsets/scale in apps, leaderworkersets/scale in
 * leaderworkerset.x-k8s.io, in the targets' namespace; list and patch on
 * pods for standby. */
#ifndef KVG_AUTOSCALE_ACTUATOR_K8S_H
#define KVG_AUTOSCALE_ACTUATOR_K8S_H

#include <stddef.h>
#include <stdint.h>

#include "autoscale/actuator.h"
#include "autoscale/ctl.h"
#include "autoscale/startup.h"

/* Reads the API server's address from kc (or KUBERNETES_SERVICE_HOST and
 * _PORT) and loads its CA. su (borrowed, may be NULL) gives a parked pod's
 * expected wake time. *out is the caller's (ops->destroy). 0 or
 * KVG_ECONFIG with the reason in err. */
int kvg_autoscale_k8s_new(const struct kvg_autoscale_k8s_cfg *kc, struct kvg_autoscale_startup *su,
                          struct kvg_autoscale_actuator **out, char *err, size_t errlen);
/* The scale subresource's path for a target into buf: 0 or KVG_ETOOBIG. */
int kvg_autoscale_k8s_path(const struct kvg_autoscale_target *t, char *buf, size_t cap);
/* GET the pool's scale subresource: spec.replicas and status.replicas. 0 or
 * a code with the reason in err. */
int kvg_autoscale_k8s_get(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                          uint32_t *spec, uint32_t *status, char *err, size_t errlen);

#endif
