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
 *       model: qwen2.5-32b    # the start-up model's key; serve's models: and kvgate
 *                             # autoscale: the served model it scales (its series)
 *       role: aggregated      # aggregated | prefill | decode
 *       planner: kvgate       # static | queue | sla | kvgate
 *       min_replicas: 1
 *       max_replicas: 8
 *       ttft_secs: 1.0        # targets
 *       itl_secs: 0.05
 *       prefill_tokens_per_sec: 12000   # the profile: one replica, uncached prompts
 *       decode_tokens_per_sec: 3000     #   at the ITL target
 *       ttft_idle_secs: 0.25
 *       itl_idle_secs: 0.012
 *       node: cold            # warm | cold | fetch: where new replicas land
 *       standby: 0            # parked (asleep) replicas kept at scale-down
 *       standby_cost: 1.0     # a parked replica's GPU-hours per hour
 *   # optional per pool: interval_secs, headroom, down_util, down_hold_secs,
 *   # zero_idle_secs, forecast_window_secs, static_replicas, queue_preset (llm-d | waiting),
 *   # queue_down_window_secs, queue_cooldown_secs,
 *   # sla_predictor (constant | moving_average | seasonal_trend),
 *   # cold_share, fetch_share, itl_per_seq_secs, slo_goal, cold_cache_penalty,
 *   # young_secs (how long a replica seen becoming ready counts as an empty cache),
 *   # burst_headroom (0: none; -1: learned in a prefill pool), burst_prior,
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
 * Unknown keys are errors (a typo should not pass silently). The keys are
 * option tables (base/opt.h), so an error names file:line: pools[0].key. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/ctl.h"
#include "base/err.h"
#include "base/opt.h"
#include "base/util.h"

/* role:, node:, sla_predictor: by their own parsers (an enum each). */
static int enum_key(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                    size_t errlen)
{
    (void)index;
    int r = !strcmp(o->name, "role")   ? kvg_autoscale_role_parse(v)
            : !strcmp(o->name, "node") ? kvg_autoscale_node_parse(v)
                                       : kvg_autoscale_pred_parse(v);
    if (r < 0)
        return kvg_err_set(
            err, errlen, KVG_ECONFIG, "unknown '%s'%s", v,
            !strcmp(o->name, "node") ? " (warm, cold, fetch, asleep1, asleep2 or restore)" : "");
    *(int *)(void *)((char *)obj + o->off) = r; /* the enums are int-sized */
    return 0;
}

/* A list of http:// URLs (a scalar is a list of one) into char[8][128] with
 * its size_t count at o->size bytes after the array. */
static int url_item(void *obj, const struct kvg_opt *o, const char *u, size_t index, char *err,
                    size_t errlen)
{
    char(*dst)[128] = (void *)((char *)obj + o->off);
    size_t *count = (size_t *)(void *)((char *)obj + o->count_off);
    if (index == 0) *count = 0;
    if (strncmp(u, "http://", 7) || strlen(u) >= 128)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "'%s' is not an http:// URL", u);
    if (*count == KVG_AUTOSCALE_MAX_SOURCES)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "at most %d", KVG_AUTOSCALE_MAX_SOURCES);
    size_t ul = strlen(u);
    while (ul > 7 && u[ul - 1] == '/') ul--; /* paths are appended */
    snprintf(dst[(*count)++], 128, "%.*s", (int)ul, u);
    return 0;
}

/* model: into opts.model, noting that it was given. */
static int model_key(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                     size_t errlen)
{
    (void)o;
    (void)index;
    struct kvg_autoscale_pool_cfg *p = obj;
    if (!v[0] || strlen(v) >= sizeof p->opts.model)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "model: 1..%zu bytes",
                           sizeof p->opts.model - 1);
    snprintf(p->opts.model, sizeof p->opts.model, "%s", v);
    p->model_given = 1;
    return 0;
}

static int target_kind(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                       size_t errlen)
{
    (void)o;
    (void)index;
    struct kvg_autoscale_target *t = obj;
    t->kind = !strcmp(v, "Deployment")        ? KVG_AUTOSCALE_KIND_DEPLOYMENT
              : !strcmp(v, "StatefulSet")     ? KVG_AUTOSCALE_KIND_STATEFULSET
              : !strcmp(v, "LeaderWorkerSet") ? KVG_AUTOSCALE_KIND_LWS
                                              : KVG_AUTOSCALE_KIND_NONE;
    if (!t->kind)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "'%s': Deployment, StatefulSet or LeaderWorkerSet", v);
    return 0;
}

int kvg_autoscale_dns_name(const char *v, size_t max)
{
    size_t n = strlen(v);
    return n && n <= max && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n;
}

/* Names go into the request path: DNS names only, nothing to escape. */
static int dns_name(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                    size_t errlen)
{
    (void)index;
    if (!kvg_autoscale_dns_name(v, o->size - 1))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "'%s': a DNS name (a-z 0-9 - .)", v);
    snprintf((char *)obj + o->off, o->size, "%s", v);
    return 0;
}

static int port_range(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                      size_t errlen)
{
    (void)o;
    (void)index;
    struct kvg_autoscale_local_cfg *l = obj;
    unsigned lo, hi;
    char extra;
    if (sscanf(v, "%u-%u%c", &lo, &hi, &extra) != 2 || !lo || hi < lo || hi > 65535)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "LO-HI (8100-8199)");
    l->port_lo = lo;
    l->port_hi = hi;
    return 0;
}

static int local_check(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent;
    (void)index;
    const struct kvg_autoscale_local_cfg *l = item;
    return l->host[0] ? 0 : kvg_err_set(err, errlen, KVG_ECONFIG, "host: a host name");
}

static int lease_check(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent;
    (void)index;
    const struct kvg_autoscale_lease_cfg *c = item;
    if (!c->redis[0] || strncmp(c->redis, "redis://", 8))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "needs redis: a redis:// URL");
    if (!c->key[0]) return kvg_err_set(err, errlen, KVG_ECONFIG, "lease key: 1..127 bytes");
    if (c->ttl_ms < 300 || c->ttl_ms > 600000)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "lease ttl_ms: 300..600000");
    return 0;
}

static void pool_default(struct kvg_autoscale_pool_cfg *p, size_t i)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "pool%zu", i);
    snprintf(p->planner, sizeof p->planner, "kvgate");
    kvg_autoscale_opts_default(&p->opts);
    p->opts.cold_share = 0; /* node decides, unless shares are given */
    p->node = KVG_AUTOSCALE_COLD;
    p->standby_cost = 1;
}

static int pool_init(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent;
    (void)err;
    (void)errlen;
    pool_default(item, index);
    return 0;
}

static int pool_check(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    const struct kvg_autoscale_config *c = parent;
    const struct kvg_autoscale_pool_cfg *p = item;
    if (p->target.kind && (!p->target.ns[0] || !p->target.name[0]))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "pool %s: target needs kind, namespace and name", p->name);
    if (p->opts.min_replicas > p->opts.max_replicas)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "pool %s: min_replicas over max_replicas",
                           p->name);
    for (size_t j = 0; j < index; j++)
        if (!strcmp(c->pools[j].name, p->name))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "pool %s: named twice", p->name);
    return 0;
}

#define TG(f) offsetof(struct kvg_autoscale_target, f)
static const struct kvg_opt target_keys[] = {
    {"kind", NULL, KVG_OPT_CUSTOM, 0, .parse = target_kind, .help = "the workload's kind"},
    {"namespace", NULL, KVG_OPT_CUSTOM, TG(ns), sizeof(((struct kvg_autoscale_target *)0)->ns),
     .parse = dns_name, .help = "its namespace"},
    {"name", NULL, KVG_OPT_CUSTOM, TG(name), sizeof(((struct kvg_autoscale_target *)0)->name),
     .parse = dns_name, .help = "its name"},
    KVG_OPT_END,
};

#define PO(f) offsetof(struct kvg_autoscale_pool_cfg, f)
#define PS(f) sizeof(((struct kvg_autoscale_pool_cfg *)0)->f)
#define NUM(key, field, lo, hi)                                                                    \
    {                                                                                              \
        key, NULL, KVG_OPT_DOUBLE, PO(field), .help = "", .min = lo, .max = hi                     \
    }
#define CNT(key, field, lo, hi)                                                                    \
    {                                                                                              \
        key, NULL, KVG_OPT_U32, PO(field), .help = "", .min = lo, .max = hi                        \
    }
static const struct kvg_opt pool_keys[] = {
    {"name", NULL, KVG_OPT_STR, PO(name), PS(name), .help = "the pool's name"},
    {"model", NULL, KVG_OPT_CUSTOM, 0, .parse = model_key,
     .help = "the model it scales (start-up model key; serve's models: and kvgate autoscale: the "
             "served model it reads)"},
    {"planner", NULL, KVG_OPT_STR, PO(planner), PS(planner), .help = "static|queue|sla|kvgate"},
    {"queue_preset", NULL, KVG_OPT_STR, PO(opts.queue_preset), PS(opts.queue_preset),
     .help = "llm-d|waiting"},
    {"role", NULL, KVG_OPT_CUSTOM, PO(opts.role), .parse = enum_key, .help = "aggregated..."},
    {"node", NULL, KVG_OPT_CUSTOM, PO(node), .parse = enum_key,
     .help = "warm|cold|fetch|asleep1|asleep2|restore"},
    {"sla_predictor", NULL, KVG_OPT_CUSTOM, PO(opts.sla_predictor), .parse = enum_key,
     .help = "constant|moving_average|seasonal_trend"},
    CNT("min_replicas", opts.min_replicas, 0, 100000),
    CNT("max_replicas", opts.max_replicas, 1, 100000),
    CNT("static_replicas", opts.static_replicas, 0, 100000),
    CNT("standby", standby, 0, KVG_AUTOSCALE_LOCAL_MAX),
    NUM("standby_cost", standby_cost, 0, 1),
    NUM("ttft_secs", opts.ttft_target_s, 1e-3, 3600),
    NUM("itl_secs", opts.itl_target_s, 1e-4, 60),
    NUM("interval_secs", opts.interval_s, 0, 86400),
    NUM("signal_window_secs", signal_window_s, 0, 86400),
    NUM("prefill_tokens_per_sec", opts.prof.prefill_tps, 1e-3, 1e9),
    NUM("decode_tokens_per_sec", opts.prof.decode_tps, 1e-3, 1e9),
    NUM("ttft_idle_secs", opts.prof.ttft_idle_s, 0, 3600),
    NUM("itl_idle_secs", opts.prof.itl_idle_s, 0, 60),
    NUM("itl_per_seq_secs", opts.prof.itl_per_seq_s, 0, 60),
    NUM("headroom", opts.headroom, 0, 10),
    NUM("down_util", opts.down_util, 0.05, 1),
    NUM("down_hold_secs", opts.down_hold_s, 0, 86400),
    NUM("zero_idle_secs", opts.zero_idle_s, 0, 86400 * 7),
    NUM("forecast_window_secs", opts.window_s, 1, 86400),
    NUM("queue_down_window_secs", opts.queue_down_window_s, 0, 86400),
    NUM("queue_cooldown_secs", opts.queue_cooldown_s, 0, 86400),
    NUM("cold_share", opts.cold_share, 0, 1),
    NUM("fetch_share", opts.fetch_share, 0, 1),
    NUM("slo_goal", opts.slo_goal, 0.5, 0.99999),
    NUM("cold_cache_penalty", opts.cold_cache_penalty, 0, 0.89),
    NUM("young_secs", opts.young_s, 0, 3600),
    NUM("burst_headroom", opts.burst_headroom, -1, 10),
    NUM("burst_prior", opts.burst_prior, 1, 10),
    {"target", NULL, KVG_OPT_INCLUDE, PO(target), .sub = target_keys,
     .help = "actuator kubernetes: the workload to scale"},
    {"engines", NULL, KVG_OPT_CUSTOM, PO(engines), .count_off = PO(nengines), .parse = url_item,
     .flags = KVG_OPT_F_MULTI, .help = "their /health and /metrics"},
    KVG_OPT_END,
};

#define LO(f) offsetof(struct kvg_autoscale_local_cfg, f)
#define LS(f) sizeof(((struct kvg_autoscale_local_cfg *)0)->f)
static const struct kvg_opt local_keys[] = {
    {"command", NULL, KVG_OPT_STR, LO(command), LS(command), .help = "the engine's command"},
    {"host", NULL, KVG_OPT_STR, LO(host), LS(host), .help = "where engines listen"},
    {"ports", NULL, KVG_OPT_CUSTOM, 0, .parse = port_range, .help = "LO-HI"},
    {"prewarm_prompts", NULL, KVG_OPT_U32, LO(prewarm_prompts), .min = 0, .max = 64,
     .help = "hottest prefixes replayed to a new replica"},
    {"cold_start_scale", NULL, KVG_OPT_DOUBLE, LO(cold_start_scale), .min = 0, .max = 86400,
     .help = "the start-up model x this"},
    {"drain_timeout_secs", NULL, KVG_OPT_DOUBLE, LO(drain_timeout_s), .min = 0, .max = 86400,
     .help = "a draining replica's streams get this long"},
    {"start_timeout_secs", NULL, KVG_OPT_DOUBLE, LO(start_timeout_s), .min = 0, .max = 86400,
     .help = "never healthy by then: stopped"},
    {"kill_grace_secs", NULL, KVG_OPT_DOUBLE, LO(kill_grace_s), .min = 0, .max = 86400,
     .help = "SIGTERM, then SIGKILL after this"},
    {"slow_start_secs", NULL, KVG_OPT_DOUBLE, LO(slow_start_s), .min = 0, .max = 86400,
     .help = "a new replica's share ramps up over this"},
    KVG_OPT_END,
};

#define KO(f) offsetof(struct kvg_autoscale_k8s_cfg, f)
#define KS(f) sizeof(((struct kvg_autoscale_k8s_cfg *)0)->f)
static const struct kvg_opt k8s_keys[] = {
    {"api_url", NULL, KVG_OPT_STR, KO(api_url), KS(api_url), .help = "the API server"},
    {"token_file", NULL, KVG_OPT_STR, KO(token_file), KS(token_file), .help = "bearer token"},
    {"ca_file", NULL, KVG_OPT_STR, KO(ca_file), KS(ca_file), .help = "the server's CA"},
    {"timeout_ms", NULL, KVG_OPT_MS, KO(timeout_ms), .min = 100, .max = 120000,
     .help = "one request's deadline"},
    KVG_OPT_END,
};

#define LE(f) offsetof(struct kvg_autoscale_lease_cfg, f)
#define LES(f) sizeof(((struct kvg_autoscale_lease_cfg *)0)->f)
static const struct kvg_opt lease_keys[] = {
    {"redis", NULL, KVG_OPT_STR, LE(redis), LES(redis), .help = "redis:// URL"},
    {"key", NULL, KVG_OPT_STR, LE(key), LES(key), .help = "the lease's key"},
    {"ttl_ms", NULL, KVG_OPT_MS, LE(ttl_ms), .help = "the lease's lifetime"},
    KVG_OPT_END,
};

#define CO(f) offsetof(struct kvg_autoscale_config, f)
#define CS(f) sizeof(((struct kvg_autoscale_config *)0)->f)
static const struct kvg_opt config_keys[] = {
    {"interval_secs", NULL, KVG_OPT_DOUBLE, CO(interval_s), .min = 0.1, .max = 3600,
     .help = "tick period"},
    {"actuator", NULL, KVG_OPT_STR, CO(actuator), CS(actuator), .help = "external|local|..."},
    {"local", NULL, KVG_OPT_INCLUDE, CO(local), .sub = local_keys, .check = local_check,
     .help = "actuator local: engine processes"},
    {"dry_run", NULL, KVG_OPT_BOOL, CO(dry_run), .help = "plan and report, act on nothing"},
    {"kubernetes", NULL, KVG_OPT_INCLUDE, CO(kubernetes), .sub = k8s_keys,
     .help = "in-cluster defaults"},
    {"lease", NULL, KVG_OPT_INCLUDE, CO(lease), .sub = lease_keys, .check = lease_check,
     .help = "several replicas: one acts"},
    {"gateways", NULL, KVG_OPT_CUSTOM, CO(gateways), .count_off = CO(ngateways), .parse = url_item,
     .flags = KVG_OPT_F_MULTI, .help = "their /metrics"},
    {"pools", NULL, KVG_OPT_ROWS, CO(pools), sizeof(struct kvg_autoscale_pool_cfg),
     .sub = pool_keys, .count_off = CO(npools), .max_rows = KVG_AUTOSCALE_MAX_POOLS,
     .init = pool_init, .check = pool_check, .help = "the pools"},
    KVG_OPT_END,
};

/* name stands for the file in errors. */
static int parse_named(const char *text, size_t len, const char *name,
                       struct kvg_autoscale_config *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->interval_s = 5;
    snprintf(out->actuator, sizeof out->actuator, "external");
    out->kubernetes.timeout_ms = 5000;
    snprintf(out->lease.key, sizeof out->lease.key, "kvgate:autoscale:leader");
    out->lease.ttl_ms = 15000;
    kvg_autoscale_local_cfg_default(&out->local);
    int rc = kvg_opt_load_yaml_text(config_keys, out, text, len, name, err, errlen);
    for (size_t i = 0; !rc && !strcmp(out->actuator, "kubernetes") && i < out->npools; i++)
        if (!out->pools[i].target.kind)
            rc = kvg_err_set(err, errlen, KVG_ECONFIG,
                             "pool %s: actuator kubernetes needs target: {kind, namespace, name}",
                             out->pools[i].name);
    return rc;
}

int kvg_autoscale_config_parse(const char *text, size_t len, struct kvg_autoscale_config *out,
                               char *err, size_t errlen)
{
    return parse_named(text, len, "config", out, err, errlen);
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
                 : parse_named(buf, n, path, out, err, errlen);
    free(buf);
    return rc;
}
