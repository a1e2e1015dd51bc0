/* The kubernetes actuator; see actuator_k8s.h. */
#include "autoscale/actuator_k8s.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/actuator_k8s_int.h"
#include "base/err.h"
#include "base/log.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

int kvg_autoscale_k8s_path(const struct kvg_autoscale_target *t, char *buf, size_t cap)
{
    const char *grp =
        t->kind == KVG_AUTOSCALE_KIND_LWS ? "/apis/leaderworkerset.x-k8s.io/v1" : "/apis/apps/v1";
    const char *res = t->kind == KVG_AUTOSCALE_KIND_DEPLOYMENT    ? "deployments"
                      : t->kind == KVG_AUTOSCALE_KIND_STATEFULSET ? "statefulsets"
                      : t->kind == KVG_AUTOSCALE_KIND_LWS         ? "leaderworkersets"
                                                                  : NULL;
    if (!res) return KVG_ENOTFOUND;
    int n = snprintf(buf, cap, "%s/namespaces/%s/%s/%s/scale", grp, t->ns, res, t->name);
    return n < 0 || (size_t)n >= cap ? KVG_ETOOBIG : 0;
}

static const char *kind_name(enum kvg_autoscale_kind k)
{
    return k == KVG_AUTOSCALE_KIND_DEPLOYMENT    ? "Deployment"
           : k == KVG_AUTOSCALE_KIND_STATEFULSET ? "StatefulSet"
                                                 : "LeaderWorkerSet";
}

/* Why the API server refused, from its Status object when it sent one. */
static int refused(const struct kvg_autoscale_pool_cfg *pc, int status, const char *body, char *err,
                   size_t errlen)
{
    cJSON *j = body ? cJSON_Parse(body) : NULL;
    cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
    char msg[256];
    snprintf(msg, sizeof msg, "%s", cJSON_IsString(m) ? m->valuestring : "no Status message");
    cJSON_Delete(j);
    const struct kvg_autoscale_target *t = &pc->target;
    const char *why = status == 401   ? "unauthorized: the service account token was refused"
                      : status == 403 ? "forbidden: RBAC must allow patch on the scale subresource"
                      : status == 404 ? "not found: no such workload"
                      : status == 409 ? "conflict: the object changed meanwhile, retried next tick"
                      : status == 422 ? "invalid: the API server refused the replica count"
                                      : "unexpected answer";
    return kvg_err_set(err, errlen, status == 404 ? KVG_ENOTFOUND : KVG_EUPSTREAM,
                       "%s %s/%s: HTTP %d, %s (%s)", kind_name(t->kind), t->ns, t->name, status,
                       why, msg);
}

int kvg__k8s_call(struct kvg__k8s_act *k, const char *method, const char *path, const char *patch,
                  int *status, char **body, char *err, size_t errlen)
{
    *body = NULL;
    *status = 0;
    struct kvg_https_resp r;
    int rc = kvg_https_request(&k->api, method, path, patch ? "application/merge-patch+json" : NULL,
                               patch, patch ? strlen(patch) : 0, k->timeout_ms, &r);
    size_t len;
    if (!rc) rc = kvg_https_resp_body(&r, 1 << 20, body, &len);
    *status = r.status;
    kvg_https_resp_close(&k->api, &r);
    if (rc)
        return kvg_err_set(err, errlen, rc, "%s %s:%d%s: %s", method, k->api.host, k->api.port,
                           path, kvg_strerror(rc));
    return 0;
}

/* One request to the pool's scale subresource: status and body (caller
 * frees *body). */
static int call(struct kvg__k8s_act *k, const struct kvg_autoscale_pool_cfg *pc, const char *method,
                const char *patch, int *status, char **body, char *err, size_t errlen)
{
    char path[512];
    *body = NULL;
    if (kvg_autoscale_k8s_path(&pc->target, path, sizeof path))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "pool %s: no kubernetes target", pc->name);
    return kvg__k8s_call(k, method, path, patch, status, body, err, errlen);
}

static int scale_of(const char *body, uint32_t *spec, uint32_t *status)
{
    cJSON *j = cJSON_Parse(body);
    cJSON *sp =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "spec"), "replicas");
    cJSON *st =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "status"), "replicas");
    /* Counts outside uint32 are not counts (and their cast would be UB). */
    int ok = cJSON_IsNumber(sp) && sp->valuedouble >= 0 && sp->valuedouble <= UINT32_MAX;
    if (ok && spec) *spec = (uint32_t)sp->valuedouble;
    if (status)
        *status = cJSON_IsNumber(st) && st->valuedouble >= 0 && st->valuedouble <= UINT32_MAX
                      ? (uint32_t)st->valuedouble
                      : 0;
    cJSON_Delete(j);
    return ok ? 0 : KVG_EPARSE;
}

/* PATCH the scale subresource to `desired`, checked in the answer. */
static int scale_to(struct kvg__k8s_act *k, const struct kvg_autoscale_pool_cfg *pc,
                    uint32_t desired, char *err, size_t errlen)
{
    char patch[64];
    snprintf(patch, sizeof patch, "{\"spec\":{\"replicas\":%u}}", desired);
    int status = 0;
    char *body = NULL;
    int rc = call(k, pc, "PATCH", patch, &status, &body, err, errlen);
    if (!rc && status != 200) rc = refused(pc, status, body, err, errlen);
    uint32_t spec = 0;
    if (!rc && (scale_of(body, &spec, NULL) || spec != desired))
        rc = kvg_err_set(err, errlen, KVG_EUPSTREAM,
                         "%s %s/%s: the answer is not a Scale with spec.replicas %u",
                         kind_name(pc->target.kind), pc->target.ns, pc->target.name, desired);
    free(body);
    return rc;
}

static int k8s_apply(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                     uint32_t desired, double now, char *err, size_t errlen)
{
    struct kvg__k8s_act *k = (struct kvg__k8s_act *)a;
    if (!pc->standby) return scale_to(k, pc, desired, err, errlen);
    /* With standby: park or wake pods first, then the count that keeps the
     * parked ones (actuator_k8s_park.c). */
    char sel[512];
    int code = 0, rc;
    char *body = NULL;
    if (!(rc = call(k, pc, "GET", NULL, &code, &body, err, errlen)) && code != 200)
        rc = refused(pc, code, body, err, errlen);
    if (!rc && kvg__k8s_scale_selector(body, sel, sizeof sel))
        rc = kvg_err_set(err, errlen, KVG_EUPSTREAM,
                         "%s %s/%s: the Scale has no status.selector to find its pods",
                         kind_name(pc->target.kind), pc->target.ns, pc->target.name);
    free(body);
    uint32_t total = desired;
    if (!rc) rc = kvg__k8s_park(k, pc, sel, desired, now, &total, err, errlen);
    return rc ? rc : scale_to(k, pc, total, err, errlen);
}

int kvg_autoscale_k8s_get(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                          uint32_t *spec, uint32_t *status, char *err, size_t errlen)
{
    struct kvg__k8s_act *k = (struct kvg__k8s_act *)a;
    int code = 0;
    char *body = NULL;
    int rc = call(k, pc, "GET", NULL, &code, &body, err, errlen);
    if (!rc && code != 200) rc = refused(pc, code, body, err, errlen);
    if (!rc && scale_of(body, spec, status))
        rc = kvg_err_set(err, errlen, KVG_EPARSE, "pool %s: the answer is not a Scale", pc->name);
    free(body);
    return rc;
}

static void k8s_destroy(struct kvg_autoscale_actuator *a)
{
    struct kvg__k8s_act *k = (struct kvg__k8s_act *)a;
    kvg_https_free(&k->api);
    free(k);
}

static const struct kvg_autoscale_actuator_ops k8s_ops = {"kubernetes", k8s_apply, NULL,
                                                          k8s_destroy, kvg__k8s_replicas};

int kvg_autoscale_k8s_new(const struct kvg_autoscale_k8s_cfg *kc, struct kvg_autoscale_startup *su,
                          struct kvg_autoscale_actuator **out, char *err, size_t errlen)
{
    char url[300];
    if (kc->api_url[0]) {
        snprintf(url, sizeof url, "%s", kc->api_url);
    } else {
        const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
        if (!h || !h[0])
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "actuator kubernetes: no kubernetes.api_url and no "
                               "KUBERNETES_SERVICE_HOST (not in a cluster)");
        int v6 = strchr(h, ':') != NULL;
        snprintf(url, sizeof url, "https://%s%s%s:%s", v6 ? "[" : "", h, v6 ? "]" : "",
                 p && p[0] ? p : "443");
    }
    struct kvg__k8s_act *k = calloc(1, sizeof *k);
    if (!k) return -ENOMEM;
    k->base.ops = &k8s_ops;
    k->su = su;
    k->timeout_ms = kc->timeout_ms ? kc->timeout_ms : 5000;
    const char *tok = kc->token_file[0] ? kc->token_file : SA_DIR "/token";
    const char *ca = kc->ca_file[0] ? kc->ca_file : SA_DIR "/ca.crt";
    int rc = kvg_https_init(&k->api, url, ca, tok, err, errlen);
    if (rc) {
        free(k);
        return rc;
    }
    k->api.connect_timeout_ms = k->timeout_ms;
    *out = &k->base;
    KVG_INFO("autoscale: kubernetes actuator on %s (token %s)", url, tok);
    return 0;
}
