/* Parked pods on Kubernetes (a pool's `standby: N`, actuator_k8s.h).
 *
 * The actuator does not put an engine to sleep itself: it marks the pod
 * with the annotation kvgate.io/park: "level1" (JSON merge PATCH of the
 * pod) and the pod acts on it (docs/autoscale.md, "Parking on
 * Kubernetes"): its readiness probe fails while the annotation is set, so
 * the pod leaves its Service's EndpointSlices and every gateway's pool
 * (discovery removes a not-ready endpoint), and a sidecar that reads the
 * pod's annotations from a downward API volume calls the engine's
 * /sleep?level=1&mode=wait after a grace, /wake_up when the annotation is
 * gone. A parked pod also gets controller.kubernetes.io/pod-deletion-cost
 * "1000", so a Deployment scaled down removes active pods before parked
 * ones; a StatefulSet removes its highest ordinals, so the active pod
 * parked is the lowest ordinal (names in ordinal order: shorter first).
 *
 * Each tick re-reads the pods and converges: a parked pod the controller
 * deleted anyway is replaced by parking another at the next scale-down,
 * a pod gone between the listing and its PATCH (404) is skipped. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/actuator_k8s_int.h"
#include "base/err.h"
#include "base/log.h"

#define PARK_KEY "kvgate.io/park"
#define COST_KEY "controller.kubernetes.io/pod-deletion-cost"

int kvg__k8s_scale_selector(const char *scale_json, char *buf, size_t cap)
{
    cJSON *j = scale_json ? cJSON_Parse(scale_json) : NULL;
    cJSON *s =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "status"), "selector");
    int rc = cJSON_IsString(s) && s->valuestring[0] ? 0 : KVG_EPARSE;
    if (!rc && strlen(s->valuestring) >= cap) rc = KVG_ETOOBIG;
    if (!rc) memcpy(buf, s->valuestring, strlen(s->valuestring) + 1);
    cJSON_Delete(j);
    return rc;
}

/* s percent-encoded (RFC 3986 unreserved kept) into buf: 0 or KVG_ETOOBIG. */
static int pct(const char *s, char *buf, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        if (o + (keep ? 1 : 3) >= cap) return KVG_ETOOBIG;
        if (keep) {
            buf[o++] = (char)*p;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[*p >> 4];
            buf[o++] = hex[*p & 15];
        }
    }
    buf[o] = 0;
    return 0;
}

static int ready_of(const cJSON *pod)
{
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pod, "status"), "conditions");
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "status");
        if (cJSON_IsString(t) && !strcmp(t->valuestring, "Ready"))
            return cJSON_IsString(st) && !strcmp(st->valuestring, "True");
    }
    return 0;
}

int kvg__k8s_pods_parse(const char *body, struct kvg__k8s_pods *out)
{
    cJSON *j = body ? cJSON_Parse(body) : NULL;
    cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "items");
    if (!cJSON_IsArray(items)) {
        cJSON_Delete(j);
        return KVG_EPARSE;
    }
    out->n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(md, "name");
        const cJSON *del = cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp");
        /* A terminating pod is leaving whatever it is marked. */
        /* Its name goes into a request path: a DNS subdomain only. */
        if (!cJSON_IsString(nm) || !kvg_autoscale_dns_name(nm->valuestring, 253) ||
            (del && !cJSON_IsNull(del)))
            continue;
        if (out->n == KVG__K8S_MAX_PODS) break;
        const cJSON *pk = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(md, "annotations"), PARK_KEY);
        struct kvg__k8s_pod *p = &out->pod[out->n++];
        snprintf(p->name, sizeof p->name, "%s", nm->valuestring);
        p->parked = cJSON_IsString(pk) && pk->valuestring[0];
        p->ready = ready_of(it);
        p->since = -1;
    }
    cJSON_Delete(j);
    /* Ordinal order: StatefulSet names differ in a numeric suffix. */
    for (uint32_t i = 1; i < out->n; i++)
        for (uint32_t k = i; k > 0; k--) {
            struct kvg__k8s_pod *a = &out->pod[k - 1], *b = &out->pod[k];
            size_t la = strlen(a->name), lb = strlen(b->name);
            if (la < lb || (la == lb && strcmp(a->name, b->name) <= 0)) break;
            struct kvg__k8s_pod t = *a;
            *a = *b;
            *b = t;
        }
    return 0;
}

/* Mark (park) or unmark one pod. A pod gone meanwhile (404) is no error. */
static int mark(struct kvg__k8s_act *k, const struct kvg_autoscale_pool_cfg *pc,
                struct kvg__k8s_pod *p, int park, double now, char *err, size_t errlen)
{
    char path[512], *body = NULL;
    int code = 0;
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", pc->target.ns, p->name);
    const char *patch = park ? "{\"metadata\":{\"annotations\":{\"" PARK_KEY
                               "\":\"level1\",\"" COST_KEY "\":\"1000\"}}}"
                             : "{\"metadata\":{\"annotations\":{\"" PARK_KEY "\":null,\"" COST_KEY
                               "\":null}}}";
    int rc = kvg__k8s_call(k, "PATCH", path, patch, &code, &body, err, errlen);
    free(body);
    if (rc) return rc;
    if (code == 404) return 0;
    if (code != 200)
        return kvg_err_set(
            err, errlen, KVG_EUPSTREAM,
            "pod %s/%s: PATCH of %s answered HTTP %d (RBAC must allow patch on pods)",
            pc->target.ns, p->name, PARK_KEY, code);
    p->parked = park;
    p->since = now;
    KVG_INFO("autoscale: pool %s: %s pod %s/%s", pc->name, park ? "parked" : "woke", pc->target.ns,
             p->name);
    return 0;
}

/* The pod to mark next: among those in state `parked`, a ready one first
 * (parking a pod still starting saves no start), the first in ordinal order. */
static struct kvg__k8s_pod *pick(struct kvg__k8s_pods *ps, int parked)
{
    struct kvg__k8s_pod *best = NULL;
    for (uint32_t i = 0; i < ps->n; i++) {
        struct kvg__k8s_pod *p = &ps->pod[i];
        if (p->parked != parked) continue;
        if (!best || (!parked && p->ready && !best->ready)) best = p;
    }
    return best;
}

static struct kvg__k8s_pods *slot(struct kvg__k8s_act *k, const char *pool)
{
    struct kvg__k8s_pods *free_slot = NULL;
    for (size_t i = 0; i < KVG_AUTOSCALE_MAX_POOLS; i++) {
        if (!strcmp(k->pools[i].pool, pool)) return &k->pools[i];
        if (!free_slot && !k->pools[i].pool[0]) free_slot = &k->pools[i];
    }
    return free_slot;
}

int kvg__k8s_park(struct kvg__k8s_act *k, const struct kvg_autoscale_pool_cfg *pc, const char *sel,
                  uint32_t desired, double now, uint32_t *total, char *err, size_t errlen)
{
    char q[768], path[1024], *body = NULL;
    if (pct(sel, q, sizeof q))
        return kvg_err_set(err, errlen, KVG_ETOOBIG, "pool %s: label selector too long", pc->name);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods?labelSelector=%s", pc->target.ns, q);
    int code = 0;
    int rc = kvg__k8s_call(k, "GET", path, NULL, &code, &body, err, errlen);
    if (!rc && code != 200)
        rc = kvg_err_set(err, errlen, KVG_EUPSTREAM,
                         "pods of %s/%s (%s): HTTP %d (RBAC must allow list on pods)",
                         pc->target.ns, pc->target.name, sel, code);
    struct kvg__k8s_pods now_pods; /* ~17 KiB on the autoscaler thread's stack */
    if (!rc && kvg__k8s_pods_parse(body, &now_pods))
        rc = kvg_err_set(err, errlen, KVG_EPARSE, "pods of %s/%s: the answer is not a PodList",
                         pc->target.ns, pc->target.name);
    free(body);
    if (rc) return rc;
    struct kvg__k8s_pods *prev = slot(k, pc->name);
    /* A pod keeps its since while it stays in one state. */
    for (uint32_t i = 0; i < now_pods.n; i++) {
        struct kvg__k8s_pod *p = &now_pods.pod[i];
        p->since = now;
        for (uint32_t j = 0; prev && j < prev->n; j++)
            if (!strcmp(prev->pod[j].name, p->name) && prev->pod[j].parked == p->parked &&
                prev->pod[j].ready == p->ready)
                p->since = prev->pod[j].since;
    }
    uint32_t active = 0, parked = 0;
    for (uint32_t i = 0; i < now_pods.n; i++) now_pods.pod[i].parked ? parked++ : active++;
    struct kvg__k8s_pod *p;
    while (!rc && active < desired && parked && (p = pick(&now_pods, 1))) {
        if (!(rc = mark(k, pc, p, 0, now, err, errlen))) active++, parked--;
    }
    while (!rc && active > desired && parked < pc->standby && (p = pick(&now_pods, 0))) {
        if (!(rc = mark(k, pc, p, 1, now, err, errlen))) active--, parked++;
    }
    if (prev) { /* for GET /autoscale (kvg__k8s_replicas) */
        snprintf(now_pods.pool, sizeof now_pods.pool, "%s", pc->name);
        *prev = now_pods;
    }
    *total = desired + (parked < pc->standby ? parked : pc->standby);
    return rc;
}

int kvg__k8s_replicas(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                      struct kvg_autoscale_replica *out, uint32_t cap)
{
    struct kvg__k8s_act *k = (struct kvg__k8s_act *)a;
    const struct kvg__k8s_pods *ps = NULL;
    for (size_t i = 0; i < KVG_AUTOSCALE_MAX_POOLS; i++)
        if (!strcmp(k->pools[i].pool, pc->name)) ps = &k->pools[i];
    if (!pc->standby || !ps) return -1;
    double wake =
        k->su ? kvg_autoscale_startup_lead(k->su, pc->opts.model, KVG_AUTOSCALE_ASLEEP1) : -1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < ps->n && n < cap; i++, n++) {
        snprintf(out[n].url, sizeof out[n].url, "pod/%s", ps->pod[i].name);
        out[n].state = ps->pod[i].parked ? "parked" : ps->pod[i].ready ? "ready" : "starting";
        out[n].since = ps->pod[i].since;
        out[n].eta = ps->pod[i].parked ? wake : -1;
    }
    return (int)n;
}
