/* The autoscaler's YAML file:
 *
 *   interval_secs: 5          # tick period
 *   actuator: external        # desired replicas exported (KEDA / HPA), or local
 *   local:                    # actuator local (actuator_local.h): engine processes
 *     command: "kvgate sim --port {port} --model {model} --cold-start-secs {cold_start}"
 *     ports: 8100-8199        # {port} is the next free one
 *     host: 127.0.0.1
 *     cold_start_scale: 1     # the start-up model x this ({cold_start}, lead times)
 *     drain_timeout_secs: 60  # a draining replica's streams get this long
 *     start_timeout_secs: 1800
 *     kill_grace_secs: 5
 *     prewarm_prompts: 8      # hottest prefixes replayed to a new replica (0: none)
 *     slow_start_secs: 30     # then its share of traffic ramps up over this
 *   dry_run: false            # plan and report, act on nothing
 *   pools:
 *     - name: qwen            # the pool's name in /autoscale and the gauges
 *       model: qwen2.5-32b    # the start-up model's key
 *       role: aggregated      # aggregated | prefill | decode
 *       planner: kvgate       # static | queue | sla | kvgate
 *       min_replicas: 1
 *       max_replicas: 8
 *       ttft_secs: 1.0        # targets
 *       itl_secs: 0.05
 *       isl: 3000             # tokens per request assumed until requests are measured
 *       osl: 150
 *       prefill_tokens_per_sec: 12000   # the profile: one replica, uncached prompts
 *       decode_tokens_per_sec: 3000     #   at the ITL target
 *       ttft_idle_secs: 0.25
 *       itl_idle_secs: 0.012
 *       node: cold            # warm | cold | fetch: where new replicas land
 *   # optional per pool: interval_secs, headroom, down_util, down_hold_secs,
 *   # zero_idle_secs, forecast_window_secs, static_replicas, queue_preset (llm-d | waiting),
 *   # queue_down_window_secs, queue_cooldown_secs,
 *   # sla_predictor (constant | moving_average | seasonal_trend),
 *   # cold_share, fetch_share, itl_per_seq_secs, slo_goal, cold_cache_penalty,
 *   # signal_window_secs (the span the observed signals cover; default: the
 *   # planner's interval, sla 180 s / others 30 s, at least 30 s)
 *       target:               # actuator kubernetes: the workload to scale
 *         kind: Deployment    # Deployment | StatefulSet | LeaderWorkerSet
 *         namespace: llm
 *         name: vllm-qwen
 *       engines: [http://10.0.0.5:8000]   # kvgate autoscale: /health and /metrics
 *   gateways: [http://kvgate:8080]        # kvgate autoscale: their /metrics
 *   kubernetes:               # optional: in-cluster defaults
 *     api_url: https://10.96.0.1:443
 *     token_file: /var/run/secrets/kubernetes.io/serviceaccount/token
 *     ca_file: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
 *     timeout_ms: 5000
 *   lease:                    # several kvgate autoscale replicas: one acts
 *     redis: redis://redis:6379
 *     key: kvgate:autoscale:leader
 *     ttl_ms: 15000
 *
 * Unknown keys are errors (a typo should not pass silently). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "autoscale/ctl.h"
#include "base/err.h"
#include "base/util.h"

static const char *scalar(yaml_document_t *d, yaml_node_t *n)
{
    (void)d;
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int num(const char *v, double *out)
{
    return v && kvg_parse_double(v, out) == 0 ? 0 : -1;
}

static int set_bool(const char *v, int *out)
{
    if (!v) return -1;
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
        *out = 0;
    else
        return -1;
    return 0;
}

/* Numeric pool keys and where they go. */
struct numkey {
    const char *key;
    size_t off;
    int is_u32;
    double lo, hi;
};

#define PO(f) offsetof(struct kvg_autoscale_pool_cfg, f)
static const struct numkey g_num[] = {
    {"min_replicas", PO(opts.min_replicas), 1, 0, 100000},
    {"max_replicas", PO(opts.max_replicas), 1, 1, 100000},
    {"static_replicas", PO(opts.static_replicas), 1, 0, 100000},
    {"ttft_secs", PO(opts.ttft_target_s), 0, 1e-3, 3600},
    {"itl_secs", PO(opts.itl_target_s), 0, 1e-4, 60},
    {"interval_secs", PO(opts.interval_s), 0, 0, 86400},
    {"isl", PO(isl), 0, 1, 1e7},
    {"osl", PO(osl), 0, 1, 1e7},
    {"signal_window_secs", PO(signal_window_s), 0, 0, 86400},
    {"prefill_tokens_per_sec", PO(opts.prof.prefill_tps), 0, 1e-3, 1e9},
    {"decode_tokens_per_sec", PO(opts.prof.decode_tps), 0, 1e-3, 1e9},
    {"ttft_idle_secs", PO(opts.prof.ttft_idle_s), 0, 0, 3600},
    {"itl_idle_secs", PO(opts.prof.itl_idle_s), 0, 0, 60},
    {"itl_per_seq_secs", PO(opts.prof.itl_per_seq_s), 0, 0, 60},
    {"headroom", PO(opts.headroom), 0, 0, 10},
    {"down_util", PO(opts.down_util), 0, 0.05, 1},
    {"down_hold_secs", PO(opts.down_hold_s), 0, 0, 86400},
    {"zero_idle_secs", PO(opts.zero_idle_s), 0, 0, 86400 * 7},
    {"forecast_window_secs", PO(opts.window_s), 0, 1, 86400},
    {"queue_down_window_secs", PO(opts.queue_down_window_s), 0, 0, 86400},
    {"queue_cooldown_secs", PO(opts.queue_cooldown_s), 0, 0, 86400},
    {"cold_share", PO(opts.cold_share), 0, 0, 1},
    {"fetch_share", PO(opts.fetch_share), 0, 0, 1},
    {"slo_goal", PO(opts.slo_goal), 0, 0.5, 0.99999},
    {"cold_cache_penalty", PO(opts.cold_cache_penalty), 0, 0, 0.89},
};

static int pool_key(struct kvg_autoscale_pool_cfg *p, const char *k, const char *v, char *err,
                    size_t errlen)
{
    if (!v) return kvg_err_set(err, errlen, KVG_ECONFIG, "pool key %s: needs a scalar value", k);
    if (!strcmp(k, "name")) {
        snprintf(p->name, sizeof p->name, "%s", v);
    } else if (!strcmp(k, "model")) {
        snprintf(p->opts.model, sizeof p->opts.model, "%s", v);
    } else if (!strcmp(k, "planner")) {
        snprintf(p->planner, sizeof p->planner, "%s", v);
    } else if (!strcmp(k, "queue_preset")) {
        snprintf(p->opts.queue_preset, sizeof p->opts.queue_preset, "%s", v);
    } else if (!strcmp(k, "role")) {
        int r = kvg_autoscale_role_parse(v);
        if (r < 0) return kvg_err_set(err, errlen, KVG_ECONFIG, "role: unknown '%s'", v);
        p->opts.role = (enum kvg_autoscale_role)r;
    } else if (!strcmp(k, "node")) {
        int r = kvg_autoscale_node_parse(v);
        if (r < 0) return kvg_err_set(err, errlen, KVG_ECONFIG, "node: warm, cold or fetch");
        p->node = (enum kvg_autoscale_node)r;
    } else if (!strcmp(k, "sla_predictor")) {
        int r = kvg_autoscale_pred_parse(v);
        if (r < 0) return kvg_err_set(err, errlen, KVG_ECONFIG, "sla_predictor: unknown '%s'", v);
        p->opts.sla_predictor = (enum kvg_autoscale_pred_kind)r;
    } else {
        for (size_t i = 0; i < sizeof g_num / sizeof g_num[0]; i++) {
            if (strcmp(k, g_num[i].key)) continue;
            double d;
            if (num(v, &d) || d < g_num[i].lo || d > g_num[i].hi)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: '%s' is out of range", k, v);
            char *dst = (char *)p + g_num[i].off;
            if (g_num[i].is_u32)
                *(uint32_t *)(void *)dst = (uint32_t)d;
            else
                *(double *)(void *)dst = d;
            return 0;
        }
        return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown pool key '%s'", k);
    }
    return 0;
}

/* The `local:` mapping. */
static int local_keys(yaml_document_t *d, yaml_node_t *m, struct kvg_autoscale_local_cfg *l,
                      char *err, size_t errlen)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "local: a mapping");
    for (yaml_node_pair_t *kp = m->data.mapping.pairs.start; kp < m->data.mapping.pairs.top; kp++) {
        const char *k = scalar(d, yaml_document_get_node(d, kp->key));
        const char *v = scalar(d, yaml_document_get_node(d, kp->value));
        double x;
        if (!k || !v) return kvg_err_set(err, errlen, KVG_ECONFIG, "local: scalar keys and values");
        if (!strcmp(k, "command")) {
            if (strlen(v) >= sizeof l->command)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "local.command: too long");
            snprintf(l->command, sizeof l->command, "%s", v);
        } else if (!strcmp(k, "host")) {
            if (!v[0] || strlen(v) >= sizeof l->host)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "local.host: a host name");
            snprintf(l->host, sizeof l->host, "%s", v);
        } else if (!strcmp(k, "ports")) {
            unsigned lo, hi;
            char extra;
            if (sscanf(v, "%u-%u%c", &lo, &hi, &extra) != 2 || !lo || hi < lo || hi > 65535)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "local.ports: LO-HI (8100-8199)");
            l->port_lo = lo;
            l->port_hi = hi;
        } else if (!strcmp(k, "prewarm_prompts")) {
            if (num(v, &x) || x < 0 || x > 64)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "local.prewarm_prompts: 0..64");
            l->prewarm_prompts = (uint32_t)x;
        } else {
            double *dst = !strcmp(k, "cold_start_scale")     ? &l->cold_start_scale
                          : !strcmp(k, "drain_timeout_secs") ? &l->drain_timeout_s
                          : !strcmp(k, "start_timeout_secs") ? &l->start_timeout_s
                          : !strcmp(k, "kill_grace_secs")    ? &l->kill_grace_s
                          : !strcmp(k, "slow_start_secs")    ? &l->slow_start_s
                                                             : NULL;
            if (!dst) return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown local key '%s'", k);
            if (num(v, &x) || x < 0 || x > 86400)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "local.%s: 0..86400 seconds", k);
            *dst = x;
        }
    }
    return 0;
}

static void pool_default(struct kvg_autoscale_pool_cfg *p, size_t i)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "pool%zu", i);
    snprintf(p->planner, sizeof p->planner, "kvgate");
    kvg_autoscale_opts_default(&p->opts);
    p->opts.cold_share = 0; /* node decides, unless shares are given */
    p->isl = 3000;          /* Dynamo's planner defaults */
    p->osl = 150;
    p->node = KVG_AUTOSCALE_COLD;
}

/* A mapping of scalars, each handed to set(o, key, value). */
static int sub_map(yaml_document_t *d, yaml_node_t *n, const char *what,
                   int (*set)(void *o, const char *k, const char *v, char *err, size_t errlen),
                   void *o, char *err, size_t errlen)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: a mapping", what);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *k = scalar(d, yaml_document_get_node(d, p->key));
        const char *v = scalar(d, yaml_document_get_node(d, p->value));
        if (!k || !v)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: scalar keys and values", what);
        int rc = set(o, k, v, err, errlen);
        if (rc) return rc;
    }
    return 0;
}

/* A list of http:// URLs (a scalar is a list of one). */
static int url_list(yaml_document_t *d, yaml_node_t *n, const char *what, char (*dst)[128],
                    size_t *count, char *err, size_t errlen)
{
    yaml_node_item_t one = 0, *it = &one, *end = &one + 1;
    if (n && n->type == YAML_SEQUENCE_NODE) {
        it = n->data.sequence.items.start;
        end = n->data.sequence.items.top;
    } else if (!n || n->type != YAML_SCALAR_NODE) {
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: a list of URLs", what);
    }
    *count = 0;
    for (; it < end; it++) {
        const char *u = it == &one ? scalar(d, n) : scalar(d, yaml_document_get_node(d, *it));
        if (!u || strncmp(u, "http://", 7) || strlen(u) >= 128)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: '%s' is not an http:// URL", what,
                               u ? u : "?");
        if (*count == KVG_AUTOSCALE_MAX_SOURCES)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: at most %d", what,
                               KVG_AUTOSCALE_MAX_SOURCES);
        size_t ul = strlen(u);
        while (ul > 7 && u[ul - 1] == '/') ul--; /* paths are appended */
        snprintf(dst[(*count)++], 128, "%.*s", (int)ul, u);
    }
    return 0;
}

static int target_key(void *o, const char *k, const char *v, char *err, size_t errlen)
{
    struct kvg_autoscale_target *t = o;
    if (!strcmp(k, "kind")) {
        t->kind = !strcmp(v, "Deployment")        ? KVG_AUTOSCALE_KIND_DEPLOYMENT
                  : !strcmp(v, "StatefulSet")     ? KVG_AUTOSCALE_KIND_STATEFULSET
                  : !strcmp(v, "LeaderWorkerSet") ? KVG_AUTOSCALE_KIND_LWS
                                                  : KVG_AUTOSCALE_KIND_NONE;
        if (!t->kind)
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "target kind '%s': Deployment, StatefulSet or LeaderWorkerSet", v);
        return 0;
    }
    char *dst = !strcmp(k, "namespace") ? t->ns : !strcmp(k, "name") ? t->name : NULL;
    size_t cap = dst == t->ns ? sizeof t->ns : sizeof t->name;
    if (!dst) return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown target key '%s'", k);
    /* Names go into the request path: DNS names only, nothing to escape. */
    if (!v[0] || strlen(v) >= cap ||
        strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-.") != strlen(v))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "target %s '%s': a DNS name (a-z 0-9 - .)", k,
                           v);
    snprintf(dst, cap, "%s", v);
    return 0;
}

static int k8s_key(void *o, const char *k, const char *v, char *err, size_t errlen)
{
    struct kvg_autoscale_k8s_cfg *c = o;
    double x;
    if (!strcmp(k, "timeout_ms")) {
        if (num(v, &x) || x < 100 || x > 120000)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "kubernetes timeout_ms: 100..120000");
        c->timeout_ms = (uint32_t)x;
        return 0;
    }
    char *dst = !strcmp(k, "api_url")      ? c->api_url
                : !strcmp(k, "token_file") ? c->token_file
                : !strcmp(k, "ca_file")    ? c->ca_file
                                           : NULL;
    if (!dst) return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown kubernetes key '%s'", k);
    if (strlen(v) >= 256)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "kubernetes %s: too long", k);
    snprintf(dst, 256, "%s", v);
    return 0;
}

static int lease_key(void *o, const char *k, const char *v, char *err, size_t errlen)
{
    struct kvg_autoscale_lease_cfg *c = o;
    double x;
    if (!strcmp(k, "ttl_ms")) {
        if (num(v, &x) || x < 300 || x > 600000)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "lease ttl_ms: 300..600000");
        c->ttl_ms = (uint32_t)x;
    } else if (!strcmp(k, "redis")) {
        if (strncmp(v, "redis://", 8) || strlen(v) >= sizeof c->redis)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "lease redis: a redis:// URL");
        snprintf(c->redis, sizeof c->redis, "%s", v);
    } else if (!strcmp(k, "key")) {
        if (!v[0] || strlen(v) >= sizeof c->key)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "lease key: 1..127 bytes");
        snprintf(c->key, sizeof c->key, "%s", v);
    } else {
        return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown lease key '%s'", k);
    }
    return 0;
}

static int walk(yaml_document_t *d, struct kvg_autoscale_config *c, char *err, size_t errlen)
{
    yaml_node_t *root = yaml_document_get_root_node(d);
    if (!root) return 0; /* an empty file: no pools */
    if (root->type != YAML_MAPPING_NODE)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "the top level must be a mapping");
    for (yaml_node_pair_t *kp = root->data.mapping.pairs.start; kp < root->data.mapping.pairs.top;
         kp++) {
        const char *k = scalar(d, yaml_document_get_node(d, kp->key));
        yaml_node_t *vn = yaml_document_get_node(d, kp->value);
        const char *v = scalar(d, vn);
        if (!k) return kvg_err_set(err, errlen, KVG_ECONFIG, "keys must be scalars");
        double x;
        if (!strcmp(k, "interval_secs")) {
            if (num(v, &x) || x < 0.1 || x > 3600)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "interval_secs: 0.1..3600");
            c->interval_s = x;
        } else if (!strcmp(k, "actuator")) {
            if (!v) return kvg_err_set(err, errlen, KVG_ECONFIG, "actuator: a name");
            snprintf(c->actuator, sizeof c->actuator, "%s", v);
        } else if (!strcmp(k, "local")) {
            int rc = local_keys(d, vn, &c->local, err, errlen);
            if (rc) return rc;
        } else if (!strcmp(k, "dry_run")) {
            if (set_bool(v, &c->dry_run))
                return kvg_err_set(err, errlen, KVG_ECONFIG, "dry_run: true or false");
        } else if (!strcmp(k, "kubernetes")) {
            int rc = sub_map(d, vn, "kubernetes", k8s_key, &c->kubernetes, err, errlen);
            if (rc) return rc;
        } else if (!strcmp(k, "lease")) {
            int rc = sub_map(d, vn, "lease", lease_key, &c->lease, err, errlen);
            if (rc) return rc;
            if (!c->lease.redis[0])
                return kvg_err_set(err, errlen, KVG_ECONFIG, "lease: needs redis: URL");
        } else if (!strcmp(k, "gateways")) {
            int rc = url_list(d, vn, "gateways", c->gateways, &c->ngateways, err, errlen);
            if (rc) return rc;
        } else if (!strcmp(k, "pools")) {
            if (!vn || vn->type != YAML_SEQUENCE_NODE)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "pools: a list of mappings");
            for (yaml_node_item_t *it = vn->data.sequence.items.start;
                 it < vn->data.sequence.items.top; it++) {
                yaml_node_t *pn = yaml_document_get_node(d, *it);
                if (!pn || pn->type != YAML_MAPPING_NODE)
                    return kvg_err_set(err, errlen, KVG_ECONFIG, "each pool is a mapping");
                if (c->npools == KVG_AUTOSCALE_MAX_POOLS)
                    return kvg_err_set(err, errlen, KVG_ECONFIG, "at most %d pools",
                                       KVG_AUTOSCALE_MAX_POOLS);
                struct kvg_autoscale_pool_cfg *p = &c->pools[c->npools];
                pool_default(p, c->npools);
                for (yaml_node_pair_t *pp = pn->data.mapping.pairs.start;
                     pp < pn->data.mapping.pairs.top; pp++) {
                    const char *pk = scalar(d, yaml_document_get_node(d, pp->key));
                    yaml_node_t *pvn = yaml_document_get_node(d, pp->value);
                    const char *pv = scalar(d, pvn);
                    int rc = !pk ? kvg_err_set(err, errlen, KVG_ECONFIG, "keys must be scalars")
                             : !strcmp(pk, "target")
                                 ? sub_map(d, pvn, "target", target_key, &p->target, err, errlen)
                             : !strcmp(pk, "engines") ? url_list(d, pvn, "engines", p->engines,
                                                                 &p->nengines, err, errlen)
                                                      : pool_key(p, pk, pv, err, errlen);
                    if (rc) return rc;
                }
                if (p->target.kind && (!p->target.ns[0] || !p->target.name[0]))
                    return kvg_err_set(err, errlen, KVG_ECONFIG,
                                       "pool %s: target needs kind, namespace and name", p->name);
                if (p->opts.min_replicas > p->opts.max_replicas)
                    return kvg_err_set(err, errlen, KVG_ECONFIG,
                                       "pool %s: min_replicas over max_replicas", p->name);
                for (size_t j = 0; j < c->npools; j++)
                    if (!strcmp(c->pools[j].name, p->name))
                        return kvg_err_set(err, errlen, KVG_ECONFIG, "pool %s: named twice",
                                           p->name);
                c->npools++;
            }
        } else {
            return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown key '%s'", k);
        }
    }
    return 0;
}

int kvg_autoscale_config_parse(const char *text, size_t len, struct kvg_autoscale_config *out,
                               char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->interval_s = 5;
    snprintf(out->actuator, sizeof out->actuator, "external");
    out->kubernetes.timeout_ms = 5000;
    snprintf(out->lease.key, sizeof out->lease.key, "kvgate:autoscale:leader");
    out->lease.ttl_ms = 15000;
    kvg_autoscale_local_cfg_default(&out->local);
    yaml_parser_t yp;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&yp)) return -ENOMEM;
    yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
    if (!yaml_parser_load(&yp, &doc)) {
        int rc = kvg_err_set(err, errlen, KVG_EPARSE, "YAML: %s at line %zu",
                             yp.problem ? yp.problem : "error", yp.problem_mark.line + 1);
        yaml_parser_delete(&yp);
        return rc;
    }
    int rc = walk(&doc, out, err, errlen);
    yaml_document_delete(&doc);
    yaml_parser_delete(&yp);
    for (size_t i = 0; !rc && !strcmp(out->actuator, "kubernetes") && i < out->npools; i++)
        if (!out->pools[i].target.kind)
            rc = kvg_err_set(err, errlen, KVG_ECONFIG,
                             "pool %s: actuator kubernetes needs target: {kind, namespace, name}",
                             out->pools[i].name);
    return rc;
}

int kvg_autoscale_config_load(const char *path, struct kvg_autoscale_config *out, char *err,
                              size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return kvg_err_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
    char *buf = malloc(1 << 20);
    if (!buf) {
        fclose(f);
        return -ENOMEM;
    }
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    int big = !feof(f);
    fclose(f);
    int rc = big ? kvg_err_set(err, errlen, KVG_ETOOBIG, "%s: over 1 MiB", path)
                 : kvg_autoscale_config_parse(buf, n, out, err, errlen);
    free(buf);
    return rc;
}
