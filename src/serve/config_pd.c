/* The disaggregated-serving part of kvgate serve's configuration: vllm-router's
 * --vllm-pd-disaggregation --prefill URL [PORT|none] --decode URL, sglang's
 * --epd-disaggregation --encode URL [PORT], and the per-worker roles and
 * labels (YAML workers' role: and labels:). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "serve/config.h"

/* A --prefill value that is not a URL: its bootstrap port (SGLang's), or
 * none. The NIXL protocol needs none: vLLM's prefill names its side channel
 * in its answer. */
static int is_port(const char *s)
{
    uint64_t v;
    return !strcmp(s, "none") || (!kvg_parse_u64(s, &v) && v > 0 && v < 65536);
}

static int add_role(struct kvg_serve_config *c, const char *url, const char *role,
                    const char *bootstrap)
{
    int rc;
    while (c->worker_bootstrap.n < c->workers.n)
        if ((rc = kvg_strlist_add(&c->worker_bootstrap, "none"))) return rc;
    if ((rc = kvg_strlist_add(&c->workers, url)) ||
        (rc = kvg_strlist_add(&c->worker_roles, role)) ||
        (rc = kvg_strlist_add(&c->worker_bootstrap, bootstrap)))
        return rc;
    /* KV endpoint lists are parallel to the workers: keep them so. */
    if (c->kv_endpoints.n && (rc = kvg_strlist_add(&c->kv_endpoints, "none"))) return rc;
    if (c->replay_endpoints.n && (rc = kvg_strlist_add(&c->replay_endpoints, "none"))) return rc;
    if (c->upstream_keys.n && (rc = kvg_strlist_add(&c->upstream_keys, "none"))) return rc;
    return 0;
}

/* vllm-router's --epd-config {"encoder_urls": [URL, ...]} (the form seed
 * 004's operator renders): EPD with those encode workers. */
static int epd_config(struct kvg_serve_config *c, char *err, size_t errlen)
{
    cJSON *j = cJSON_Parse(c->epd_config);
    const cJSON *urls = cJSON_GetObjectItemCaseSensitive(j, "encoder_urls");
    int rc = cJSON_IsArray(urls) && cJSON_GetArraySize(urls) > 0 ? 0 : KVG_ECONFIG;
    const cJSON *list = rc ? NULL : urls, *u;
    cJSON_ArrayForEach(u, list)
    {
        if (!cJSON_IsString(u) || !u->valuestring[0]) {
            rc = KVG_ECONFIG;
            break;
        }
        if ((rc = kvg_strlist_add(&c->encode_urls, u->valuestring))) break;
    }
    cJSON_Delete(j);
    if (rc == KVG_ECONFIG)
        return kvg_err_set(err, errlen, rc,
                           "--epd-config: a JSON object with encoder_urls, a non-empty list of "
                           "URLs");
    if (rc) return kvg_err_set(err, errlen, rc, "--epd-config: %s", kvg_strerror(rc));
    c->pd.epd = 1;
    c->epd_config[0] = 0; /* folded in: a re-check adds nothing twice */
    return 0;
}

int kvg_serve_config_pd(struct kvg_serve_config *c, char *err, size_t errlen)
{
    if (c->epd_config[0]) {
        int rc = epd_config(c, err, errlen);
        if (rc) return rc;
    }
    int pd = c->vllm_pd || c->sglang_pd;
    if (c->vllm_pd && c->sglang_pd)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--vllm-pd-disaggregation (vLLM engines) and --pd-disaggregation "
                           "(SGLang engines) exclude each other");
    if (c->pd.epd && !pd)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--epd-disaggregation needs --vllm-pd-disaggregation or "
                           "--pd-disaggregation (the encode stage sits before a PD pair)");
    if ((c->prefill_urls.n || c->decode_urls.n) && !pd)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--prefill and --decode need --vllm-pd-disaggregation or "
                           "--pd-disaggregation");
    if (c->worker_roles.n && c->worker_roles.n != c->workers.n)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--worker-roles needs one role per --worker-urls entry");
    if (c->worker_bootstrap.n && c->worker_bootstrap.n != c->workers.n)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--worker-bootstrap-ports needs one entry per --worker-urls entry");
    for (size_t i = 0; i < c->worker_bootstrap.n; i++)
        if (!is_port(c->worker_bootstrap.v[i]))
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "worker bootstrap port '%s': 1..65535 or none",
                               c->worker_bootstrap.v[i]);
    int rc = 0;
    while (!rc && c->worker_roles.n < c->workers.n)
        rc = kvg_strlist_add(&c->worker_roles, "regular");
    for (size_t i = 0; !rc && i < c->prefill_urls.n; i++) {
        const char *u = c->prefill_urls.v[i];
        const char *next = i + 1 < c->prefill_urls.n ? c->prefill_urls.v[i + 1] : NULL;
        if (is_port(u)) continue; /* taken with its URL */
        rc = add_role(c, u, "prefill", next && is_port(next) ? next : "none");
    }
    for (size_t i = 0; !rc && i < c->decode_urls.n; i++)
        rc = add_role(c, c->decode_urls.v[i], "decode", "none");
    /* sglang's --encode URL [PORT]: the port is its encoder's, not the router's. */
    for (size_t i = 0; !rc && i < c->encode_urls.n; i++)
        if (!is_port(c->encode_urls.v[i])) rc = add_role(c, c->encode_urls.v[i], "encode", "none");
    if (rc) return kvg_err_set(err, errlen, KVG_ECONFIG, "config: %s", kvg_strerror(rc));
    kvg_strlist_free(&c->prefill_urls); /* folded in: a re-check adds nothing twice */
    kvg_strlist_free(&c->decode_urls);
    kvg_strlist_free(&c->encode_urls);
    if (c->worker_labels.n && c->worker_labels.n != c->workers.n)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--worker-labels needs one entry per worker (--worker-urls, then "
                           "--prefill, then --decode, then --encode)");
    c->pd.mode = c->vllm_pd ? KVG_PD_VLLM : c->sglang_pd ? KVG_PD_SGLANG : KVG_PD_OFF;
    if ((rc = kvg__serve_pd_values(&c->pd, "", err, errlen))) return rc;
    /* models: each model's workers against its own mode. */
    if (c->nmodels) return kvg_serve_config_serving(c, c->config_path, err, errlen);
    size_t np = 0, nd = 0, ne = 0;
    for (size_t i = 0; i < c->worker_roles.n; i++) {
        const char *r = c->worker_roles.v[i];
        if (!strcmp(r, "prefill"))
            np++;
        else if (!strcmp(r, "decode"))
            nd++;
        else if (!strcmp(r, "encode"))
            ne++;
        else if (strcmp(r, "regular") && strcmp(r, "none"))
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "worker role '%s': one of regular, prefill, decode, encode", r);
    }
    if (ne && !c->pd.epd)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "encode workers (--encode, role: encode) need --epd-disaggregation");
    if (c->pd.epd && c->vllm_pd && !ne && !c->service_discovery)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--epd-disaggregation with --vllm-pd-disaggregation needs at least "
                           "one --encode worker");
    if ((np || nd) && !pd)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "prefill and decode workers need --vllm-pd-disaggregation or "
                           "--pd-disaggregation");
    /* Discovered workers, or an autoscaler's prefill and decode pools (its
     * local actuator's replicas get their pool's role), may be all there is. */
    if (pd && (!np || !nd) && !c->service_discovery && !c->autoscale_path[0])
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "PD disaggregation needs at least one --prefill and one --decode "
                           "worker (or --service-discovery, or --autoscale)");
    return 0;
}

int kvg__serve_pd_values(const struct kvg_pd_config *pd, const char *who, char *err, size_t errlen)
{
    const char *sep = who[0] ? ": " : "";
    if (!(pd->reject_kv_frac > 0 && pd->reject_kv_frac <= 1) || !(pd->prefill_tokens_per_s > 0) ||
        !(pd->decode_secs > 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "%s%s--pd-reject-kv-frac: (0, 1]; --pd-prefill-tokens-per-sec and "
                           "--pd-decode-time-secs: above 0",
                           who, sep);
    if (pd->prefill_timeout_ms == 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%s%s--pd-prefill-timeout-secs: above 0", who,
                           sep);
    const char *bad = pd->prefill_policy[0] && !kvg_policy_known(pd->prefill_policy) ? "prefill"
                      : pd->decode_policy[0] && strcmp(pd->decode_policy, "pd_decode") &&
                              !kvg_policy_known(pd->decode_policy)
                          ? "decode"
                      : pd->encode_policy[0] && !kvg_policy_known(pd->encode_policy) ? "encode"
                                                                                     : NULL;
    if (bad)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "%s%s--%s-policy: unknown policy '%s' (known: %s)", who, sep, bad,
                           !strcmp(bad, "prefill")  ? pd->prefill_policy
                           : !strcmp(bad, "decode") ? pd->decode_policy
                                                    : pd->encode_policy,
                           kvg_policy_names());
    return 0;
}
