/* Internal to the kubernetes actuator (actuator_k8s.c: the scale
 * subresource; actuator_k8s_park.c: parked pods). */
#ifndef KVG_AUTOSCALE_ACTUATOR_K8S_INT_H
#define KVG_AUTOSCALE_ACTUATOR_K8S_INT_H

#include <stddef.h>
#include <stdint.h>

#include "autoscale/actuator.h"
#include "autoscale/ctl.h"
#include "autoscale/startup.h"
#include "net/https.h"

/* The pods of one pool, as its last listing found them. */
#define KVG__K8S_MAX_PODS 64
struct kvg__k8s_pod {
    char name[254]; /* a DNS subdomain */
    int parked;     /* carries kvgate.io/park */
    int ready;      /* its Ready condition is True */
    double since;   /* when it was first listed in this state (the caller's clock) */
};
struct kvg__k8s_pods {
    char pool[64]; /* "" : never listed */
    uint32_t n;
    struct kvg__k8s_pod pod[KVG__K8S_MAX_PODS];
};

struct kvg__k8s_act {
    struct kvg_autoscale_actuator base; /* first: the ops' pointer is this */
    struct kvg_https api;
    uint32_t timeout_ms;
    struct kvg_autoscale_startup *su; /* borrowed, may be NULL: a wake's expected time */
    struct kvg__k8s_pods pools[KVG_AUTOSCALE_MAX_POOLS];
};

/* One request to the API server: its status and body (*body the caller's
 * to free). 0, or a transport error with the reason in err. */
int kvg__k8s_call(struct kvg__k8s_act *k, const char *method, const char *path, const char *patch,
                  int *status, char **body, char *err, size_t errlen);
/* A Scale object's status.selector (the workload's pods' label selector)
 * into buf: 0, or KVG_EPARSE when it has none, KVG_ETOOBIG. */
int kvg__k8s_scale_selector(const char *scale_json, char *buf, size_t cap);
/* A PodList's live pods (not terminating, named as a DNS subdomain) into
 * out, in ordinal order (shorter names first), at most KVG__K8S_MAX_PODS;
 * since is -1. 0 or KVG_EPARSE (not a PodList). */
int kvg__k8s_pods_parse(const char *body, struct kvg__k8s_pods *out);
/* With standby: list the pool's pods by selector `sel`, wake parked ones
 * while fewer than `desired` are active, park active ones while more are
 * and fewer than standby are parked; *total is the replica count that keeps
 * the active and the parked ones. 0 or a code with the reason in err. */
int kvg__k8s_park(struct kvg__k8s_act *k, const struct kvg_autoscale_pool_cfg *pc, const char *sel,
                  uint32_t desired, double now, uint32_t *total, char *err, size_t errlen);
/* ops->replicas: the pods of the pool's last listing (-1 before any, or
 * without standby). */
int kvg__k8s_replicas(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                      struct kvg_autoscale_replica *out, uint32_t cap);

#endif
