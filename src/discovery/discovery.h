/* Kubernetes service discovery: keeps the router's pool in step with the
 * ready pods of the serving deployment.
 *
 * A thread of its own lists the EndpointSlices (discovery.k8s.io/v1) of a
 * namespace (or all), then watches them from the list's resourceVersion; a
 * 410 Gone relists, any other failure backs off (0.5 s doubling to 30 s) and
 * resumes. Each slice change is reconciled: the pods its endpoints point at
 * are read once for their labels, the candidate rules (rules.h) decide, and
 * workers join (kvg_pool_add) or leave (kvg_pool_remove, which lets requests
 * in flight to them finish). Discovery only ever removes workers it added.
 *
 * With a model label (serve's models: section), a candidate pod must carry
 * that label: its value, the model it serves, goes on its worker
 * (kvg_pool_set_model_label); a pod without it is logged and left out, and
 * a pod whose value changes leaves and joins again under the new one.
 *
 * Credentials: the service account's token (re-read on every request) and CA
 * from /var/run/secrets/kubernetes.io/serviceaccount, the API server from
 * KUBERNETES_SERVICE_HOST/PORT; each can be overridden (tests point the URL
 * at a local replaying server over plain HTTP). */
#ifndef KVG_DISCOVERY_DISCOVERY_H
#define KVG_DISCOVERY_DISCOVERY_H

#include <stdatomic.h>
#include <stdint.h>

#include "discovery/rules.h"
#include "router/pool.h"

#define KVG_DISCOVERY_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kvg_discovery_opts {
    struct kvg_discovery_rules rules;
    const char *namespace_;   /* "" or NULL: every namespace */
    const char *api_url;      /* NULL: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT */
    const char *ca_file;      /* NULL: the service account's ca.crt */
    const char *token_file;   /* NULL: the service account's token */
    uint32_t watch_timeout_s; /* the server ends each watch after this (300) */
    uint32_t resync_s;        /* relist this often to re-read pod labels (300) */
    /* Called on the discovery thread after workers joined (serve kicks a
     * health check so they need not wait for the next round). Optional. */
    void (*on_change)(void *ud);
    /* The pod label naming a candidate's model (NULL or "": none), and,
     * optional, whether a value names a model the host serves (called on
     * the discovery thread as a pod joins; 0: logged). */
    const char *model_label;
    int (*model_known)(void *ud, const char *model);
    void *ud;
};

/* Counters since start, read from any thread. */
struct kvg_discovery_stats {
    _Atomic uint64_t registrations;
    _Atomic uint64_t deregistrations[KVG_DISCOVERY_NREASONS];
    _Atomic uint64_t relists; /* lists after a 410 Gone */
    _Atomic uint64_t errors;  /* failed lists, watches and pod reads */
    _Atomic uint64_t workers; /* workers discovery holds in the pool now */
    _Atomic int synced;       /* 1 once a list succeeded */
};

struct kvg_discovery;

/* Starts the thread. Strings in o are copied; pool must outlive the
 * discovery. 0 or KVG_ECONFIG (message in err), -ENOMEM, -EAGAIN. *out is
 * freed by kvg_discovery_free. */
int kvg_discovery_start(const struct kvg_discovery_opts *o, struct kvg_pool *pool,
                        struct kvg_discovery **out, char *err, size_t errlen);
/* Stops and joins the thread (any blocking read is cut); the workers it
 * added stay in the pool. Idempotent. */
void kvg_discovery_stop(struct kvg_discovery *d);
/* Stops if needed and frees. NULL is a no-op. */
void kvg_discovery_free(struct kvg_discovery *d);
const struct kvg_discovery_stats *kvg_discovery_stats(const struct kvg_discovery *d);

#endif
