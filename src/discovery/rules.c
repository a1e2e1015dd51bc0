/* The candidate rules over EndpointSlice and Pod JSON; see rules.h. */
#include "discovery/rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "router/worker.h"

int kvg_discovery_selector_parse(const char *const *terms, size_t n,
                                 struct kvg_discovery_selector *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n > KVG_DISCOVERY_MAX_TERMS)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "a selector has at most %d terms",
                           KVG_DISCOVERY_MAX_TERMS);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(terms[i], '=');
        size_t kl = eq ? (size_t)(eq - terms[i]) : 0;
        /* Only equality: it is what sglang's selectors accept, and what a
         * Service selector is. */
        if (!eq || !kl || kl >= sizeof out->key[0] || strlen(eq + 1) >= sizeof out->val[0] ||
            strchr(eq + 1, '=') || (kl && terms[i][kl - 1] == '!'))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "selector term '%s' is not key=value",
                               terms[i]);
        memcpy(out->key[i], terms[i], kl);
        snprintf(out->val[i], sizeof out->val[i], "%s", eq + 1);
    }
    out->n = (int)n;
    return 0;
}

int kvg_discovery_selector_matches(const struct kvg_discovery_selector *s, const cJSON *labels)
{
    if (s->n == 0) return 0;
    for (int i = 0; i < s->n; i++) {
        const cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, s->key[i]) : NULL;
        if (!cJSON_IsString(v) || strcmp(v->valuestring, s->val[i])) return 0;
    }
    return 1;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int kvg_discovery_slice_key(const cJSON *slice, char *key, size_t cap)
{
    const char *ns = str_at(slice, "metadata", "namespace");
    const char *name = str_at(slice, "metadata", "name");
    if (!name) return KVG_EPARSE;
    int k = snprintf(key, cap, "%s/%s", ns ? ns : "", name);
    return k < 0 || (size_t)k >= cap ? KVG_EPARSE : 0;
}

/* A condition that is absent counts as true: the API's documented meaning. */
static int cond(const cJSON *conds, const char *name, int absent)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(conds, name);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : absent;
}

static int copy(char *dst, size_t cap, const char *s)
{
    if (!s || strlen(s) >= cap) return -1;
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

int kvg_discovery_slice_endpoints(const cJSON *slice, struct kvg_discovery_endpoint **out,
                                  size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!cJSON_IsObject(slice)) return KVG_EPARSE;
    const char *slice_ns = str_at(slice, "metadata", "namespace");
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(slice, "endpoints");
    if (cJSON_IsNull(eps) || !eps) return 0; /* a slice with no endpoints yet */
    if (!cJSON_IsArray(eps)) return KVG_EPARSE;
    int total = cJSON_GetArraySize(eps);
    if (total == 0) return 0;
    struct kvg_discovery_endpoint *v = calloc((size_t)total, sizeof *v);
    if (!v) return -ENOMEM;
    size_t k = 0;
    /* Every endpoint of a slice serves on its ports; the first is the one
     * a worker's URL takes when no port is configured. */
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(slice, "ports"), 0), "port");
    int slice_port = cJSON_IsNumber(port) && port->valuedouble >= 1 && port->valuedouble <= 65535
                         ? (int)port->valuedouble
                         : 0;
    const cJSON *ep;
    cJSON_ArrayForEach(ep, eps)
    {
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(ep, "targetRef");
        const char *kind = str_at(ref, "kind", NULL);
        const cJSON *addrs = cJSON_GetObjectItemCaseSensitive(ep, "addresses");
        const cJSON *a0 = cJSON_GetArrayItem(addrs, 0);
        /* Only pods carry the labels the rules read. */
        if (!kind || strcmp(kind, "Pod") || !cJSON_IsString(a0)) continue;
        struct kvg_discovery_endpoint *e = &v[k];
        const char *ns = str_at(ref, "namespace", NULL);
        if (copy(e->pod_name, sizeof e->pod_name, str_at(ref, "name", NULL)) ||
            copy(e->pod_ns, sizeof e->pod_ns,
                 ns         ? ns
                 : slice_ns ? slice_ns
                            : "") ||
            copy(e->address, sizeof e->address, a0->valuestring))
            continue;
        const char *uid = str_at(ref, "uid", NULL);
        copy(e->pod_uid, sizeof e->pod_uid, uid ? uid : e->pod_name);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(ep, "conditions");
        /* A terminating pod may still say ready on a Service that publishes
         * not-ready addresses: it is leaving either way. */
        e->ready = cond(c, "ready", 1) && !cond(c, "terminating", 0);
        e->port = slice_port;
        k++;
    }
    if (!k) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = k;
    return 0;
}

int kvg_discovery_classify(const struct kvg_discovery_rules *r, const cJSON *labels, int *role,
                           int *dp_rank)
{
    int ro, stage = 0;
    if (kvg_discovery_selector_matches(&r->encode, labels))
        ro = KVG_ROLE_ENCODE, stage = 1;
    else if (kvg_discovery_selector_matches(&r->prefill, labels))
        ro = KVG_ROLE_PREFILL;
    else if (kvg_discovery_selector_matches(&r->decode, labels))
        ro = KVG_ROLE_DECODE;
    else if (kvg_discovery_selector_matches(&r->regular, labels))
        ro = KVG_ROLE_REGULAR;
    else
        return KVG_DISCOVERY_NO_MATCH;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(labels, KVG_DISCOVERY_ROLE_KIND_LABEL);
    if (!stage && cJSON_IsString(kind) && !strcmp(kind->valuestring, "encode"))
        return KVG_DISCOVERY_ENCODE;
    const cJSON *wi = cJSON_GetObjectItemCaseSensitive(labels, KVG_DISCOVERY_WORKER_INDEX_LABEL);
    long index = 0;
    if (cJSON_IsString(wi)) {
        char *end;
        index = strtol(wi->valuestring, &end, 10);
        if (*end || end == wi->valuestring || index < 0) index = -1; /* not a member index */
    }
    if (r->dp_aware) {
        if (index < 0) return KVG_DISCOVERY_SUBORDINATE;
        *role = ro;
        *dp_rank = (int)index;
        return KVG_DISCOVERY_CANDIDATE;
    }
    /* Subordinate members expose no HTTP endpoint in these shapes. */
    if (index != 0) return KVG_DISCOVERY_SUBORDINATE;
    *role = ro;
    *dp_rank = -1;
    return KVG_DISCOVERY_CANDIDATE;
}

const char *kvg_discovery_label(const cJSON *labels, const char *key)
{
    return key ? str_at(labels, key, NULL) : NULL;
}

const char *kvg_discovery_reason_name(int reason)
{
    static const char *names[] = {"pod_deleted", "not_ready", "selector_changed"};
    return reason >= 0 && reason < KVG_DISCOVERY_NREASONS ? names[reason] : "?";
}

int kvg_discovery_removal_reason(int seen, int ready)
{
    if (!seen) return KVG_DISCOVERY_POD_DELETED;
    if (!ready) return KVG_DISCOVERY_NOT_READY;
    return KVG_DISCOVERY_SELECTOR_CHANGED;
}

int kvg_discovery_worker_url(const char *address, int port, char *url, size_t cap)
{
    int v6 = strchr(address, ':') != NULL;
    int k = snprintf(url, cap, "http://%s%s%s:%d", v6 ? "[" : "", address, v6 ? "]" : "", port);
    return k < 0 || (size_t)k >= cap ? -ENOSPC : 0;
}
