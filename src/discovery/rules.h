/* Which discovered pods become workers: the candidate rules of the serving
 * modes (docs/design.md), as pure functions over the Kubernetes JSON, so that
 * they are tested without an API server.
 *
 * An EndpointSlice says where a pod listens and whether it is ready; the
 * pod's own labels (read from the pod) say its role and its place in a
 * LeaderWorkerSet group. The rules:
 *  - a pod matching --prefill-selector is a prefill worker, --decode-selector
 *    a decode worker, --selector a regular one (first match in that order);
 *  - a pod matching --encode-selector (checked first) is an encode worker:
 *    discovered for the encode stage only (the pool never picks it to
 *    answer, pd/encode.c sends it the encode leg);
 *  - any other pod whose role-kind label says encode never joins the
 *    answering set;
 *  - in a group (LeaderWorkerSet's worker-index label), only member 0 answers
 *    HTTP, for server and prefill/decode groups alike, whatever the size;
 *  - with --dp-aware (the External DP shape), every member matching the
 *    selector is a candidate and serves the DP rank of its worker index. */
#ifndef KVG_DISCOVERY_RULES_H
#define KVG_DISCOVERY_RULES_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define KVG_DISCOVERY_MAX_TERMS 16
/* LeaderWorkerSet's label on every pod of a group: 0 for the leader. */
#define KVG_DISCOVERY_WORKER_INDEX_LABEL "leaderworkerset.sigs.k8s.io/worker-index"
/* The operator's role label; "encode" pods are stage-only. */
#define KVG_DISCOVERY_ROLE_KIND_LABEL "modeldeployment.gpustack.ai/role-kind"

/* An equality-based label selector: every key=value term must match. */
struct kvg_discovery_selector {
    int n; /* 0: not given (matches nothing) */
    char key[KVG_DISCOVERY_MAX_TERMS][128];
    char val[KVG_DISCOVERY_MAX_TERMS][128];
};

/* Parses terms like "app=sglang" (sglang's --selector values). 0 or
 * KVG_ECONFIG with a message in err. */
int kvg_discovery_selector_parse(const char *const *terms, size_t n,
                                 struct kvg_discovery_selector *out, char *err, size_t errlen);
/* 1 when every term matches labels (a JSON object of strings; NULL: none). */
int kvg_discovery_selector_matches(const struct kvg_discovery_selector *s, const cJSON *labels);

struct kvg_discovery_rules {
    struct kvg_discovery_selector regular, prefill, decode, encode;
    int dp_aware; /* External DP: every qualified member is a rank */
    int port;     /* the serving port of every pod (--service-discovery-port); 0: its slice's */
};

/* One endpoint of an EndpointSlice, as kvgate uses it. */
struct kvg_discovery_endpoint {
    char pod_ns[64], pod_name[254]; /* its targetRef Pod */
    char pod_uid[64];               /* identifies one incarnation of the pod */
    char address[64];               /* its first address */
    int ready;                      /* conditions.ready (absent: true), and not terminating */
    int port;                       /* the slice's first port (ports[0].port), 0 none */
};

/* The slice's "namespace/name" into key[cap]; 0 or KVG_EPARSE. */
int kvg_discovery_slice_key(const cJSON *slice, char *key, size_t cap);
/* The slice's endpoints that point at a pod and have an address; *out is
 * malloc'd (caller frees), *n their count. 0, KVG_EPARSE, -ENOMEM. */
int kvg_discovery_slice_endpoints(const cJSON *slice, struct kvg_discovery_endpoint **out,
                                  size_t *n);

enum kvg_discovery_verdict {
    KVG_DISCOVERY_CANDIDATE = 0,
    KVG_DISCOVERY_NO_MATCH,    /* no selector matches its labels */
    KVG_DISCOVERY_ENCODE,      /* an encode pod: not in the answering set */
    KVG_DISCOVERY_SUBORDINATE, /* a group member other than 0, without --dp-aware */
};
/* Decides for a pod with these labels; on KVG_DISCOVERY_CANDIDATE sets
 * *role (enum kvg_worker_role) and *dp_rank (-1 unless --dp-aware). */
int kvg_discovery_classify(const struct kvg_discovery_rules *r, const cJSON *labels, int *role,
                           int *dp_rank);

/* Why a worker left (a label of kvgate_discovery_deregistrations_total). */
enum kvg_discovery_reason {
    KVG_DISCOVERY_POD_DELETED = 0,
    KVG_DISCOVERY_NOT_READY,
    KVG_DISCOVERY_SELECTOR_CHANGED,
    KVG_DISCOVERY_NREASONS
};
/* "pod_deleted", "not_ready", "selector_changed". */
const char *kvg_discovery_reason_name(int reason);
/* The value of labels[key] (a string), or NULL when the pod has none. */
const char *kvg_discovery_label(const cJSON *labels, const char *key);

/* The reason a worker whose pod is no longer a candidate leaves: seen says
 * whether any slice still lists the pod (same uid), ready whether every slice
 * listing it says ready. */
int kvg_discovery_removal_reason(int seen, int ready);

/* "http://address:port" (IPv6 in brackets) into url[cap]; 0 or -ENOSPC. */
int kvg_discovery_worker_url(const char *address, int port, char *url, size_t cap);

#endif
