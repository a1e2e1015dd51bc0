/* The autoscaler's controller (ctl.h). */
#include "autoscale/ctl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

int kvg_autoscale_ctl_new(const struct kvg_autoscale_config *cfg, struct kvg_autoscale_ctl **out,
                          char *err, size_t errlen)
{
    int ext = !strcmp(cfg->actuator, "external");
    if (!ext && strcmp(cfg->actuator, "local") && strcmp(cfg->actuator, "kubernetes"))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "actuator '%s': 'external', 'local' or 'kubernetes'", cfg->actuator);
    struct kvg_autoscale_ctl *c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    if (ext && kvg_autoscale_external_new(&c->act)) {
        free(c);
        return -ENOMEM;
    }
    c->cfg = *cfg;
    kvg_autoscale_startup_init(&c->su);
    pthread_mutex_init(&c->mu, NULL);
    for (size_t i = 0; i < cfg->npools; i++) {
        struct kvg_autoscale_pool *p = &c->pools[i];
        p->cfg = cfg->pools[i];
        struct kvg_autoscale_opts o = p->cfg.opts;
        o.startup = &c->su; /* the controller's, learned from what it sees */
        if (!(o.cold_share > 0) && !(o.fetch_share > 0)) {
            o.cold_share = p->cfg.node == KVG_AUTOSCALE_COLD;
            o.fetch_share = p->cfg.node == KVG_AUTOSCALE_FETCH;
        }
        o.node = p->cfg.node; /* a pool of woken or restored replicas plans on their lead */
        int rc = kvg_autoscale_planner_new(p->cfg.planner, &o, &p->pl);
        if (rc) {
            kvg_err_set(err, errlen, KVG_ECONFIG, "pool %s: planner '%s': %s (known: %s)",
                        p->cfg.name, p->cfg.planner,
                        rc == KVG_ENOTFOUND ? "unknown" : "inconsistent options",
                        kvg_autoscale_planner_names());
            c->npools = i;
            kvg_autoscale_ctl_free(c);
            return KVG_ECONFIG;
        }
        c->npools = i + 1;
    }
    *out = c;
    return 0;
}

void kvg_autoscale_ctl_free(struct kvg_autoscale_ctl *c)
{
    if (!c) return;
    /* The actuator first: it may borrow c->su. */
    if (c->act) c->act->ops->destroy(c->act);
    for (size_t i = 0; i < c->npools; i++) kvg_autoscale_planner_free(c->pools[i].pl);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static int ext_apply(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                     uint32_t desired, double now, char *err, size_t errlen)
{
    (void)a, (void)pc, (void)desired, (void)now, (void)err, (void)errlen;
    return 0; /* the count is exported; something else scales */
}

static void ext_destroy(struct kvg_autoscale_actuator *a)
{
    free(a);
}

static const struct kvg_autoscale_actuator_ops g_external = {"external", ext_apply, NULL,
                                                             ext_destroy, NULL};

int kvg_autoscale_external_new(struct kvg_autoscale_actuator **out)
{
    struct kvg_autoscale_actuator *a = calloc(1, sizeof *a);
    if (!a) return -ENOMEM;
    a->ops = &g_external;
    *out = a;
    return 0;
}

void kvg_autoscale_ctl_set_actuator(struct kvg_autoscale_ctl *c, struct kvg_autoscale_actuator *a)
{
    pthread_mutex_lock(&c->mu);
    if (c->act && c->act != a) c->act->ops->destroy(c->act);
    c->act = a;
    pthread_mutex_unlock(&c->mu);
}

int kvg_autoscale_ctl_find(const struct kvg_autoscale_ctl *c, const char *name)
{
    for (size_t i = 0; i < c->npools; i++)
        if (!strcmp(c->pools[i].cfg.name, name)) return (int)i;
    return -1;
}

static double lead_of(const struct kvg_autoscale_ctl *c, const struct kvg_autoscale_pool *p)
{
    return kvg_autoscale_startup_lead(&c->su, p->cfg.opts.model, p->cfg.node);
}

/* Inferred starts (external): replicas that became ready end the oldest,
 * and their time is what the start-up model learns. */
static void infer_ready(struct kvg_autoscale_ctl *c, struct kvg_autoscale_pool *p,
                        const struct kvg_autoscale_signals *s)
{
    if (!p->ticked || s->ready <= p->last_ready) return;
    uint32_t k = s->ready - p->last_ready;
    for (; k && p->nstart; k--) {
        kvg_autoscale_startup_observe(&c->su, p->cfg.opts.model, p->cfg.node,
                                      s->now - p->start_at[0], -1);
        memmove(p->start_at, p->start_at + 1, (p->nstart - 1) * sizeof *p->start_at);
        p->nstart--;
    }
}

/* signals.young, live: replicas this controller saw become ready within
 * young_s, as the benchmark's signal builder counts them
 * (src/bench/scale/scale_reps.c); a decode pool's are never young there, a
 * decode engine's prefix cache being not what it serves from. Replicas
 * ready at the first tick are not counted: a restarted gateway does not
 * empty its engines' caches. When replicas leave, the youngest are kept
 * (which ones left is not known; the count is what the planner reads). A
 * caller that knows better (s->young already set) is not overridden. */
static void note_young(struct kvg_autoscale_pool *p, struct kvg_autoscale_signals *s)
{
    double ys = p->cfg.opts.young_s;
    if (p->ticked && s->ready > p->last_ready)
        for (uint32_t k = s->ready - p->last_ready; k; k--) {
            if (p->nready_at == KVG_AUTOSCALE_MAX_STARTS) {
                memmove(p->ready_at, p->ready_at + 1, (p->nready_at - 1) * sizeof *p->ready_at);
                p->nready_at--;
            }
            p->ready_at[p->nready_at++] = s->now;
        }
    uint32_t old = 0;
    while (old < p->nready_at && !(s->now - p->ready_at[old] < ys)) old++;
    if (p->nready_at > s->ready && old < p->nready_at - s->ready) old = p->nready_at - s->ready;
    memmove(p->ready_at, p->ready_at + old, (p->nready_at - old) * sizeof *p->ready_at);
    p->nready_at -= old;
    if (p->cfg.opts.role != KVG_AUTOSCALE_DECODE && s->young < p->nready_at)
        s->young = p->nready_at;
}

double kvg_autoscale_ctl_tick_wait(double per, double now, uint64_t *ticks)
{
    double k = floor(now / per);
    if ((double)*ticks < k) *ticks = (uint64_t)k;
    double wait = (double)(*ticks + 1) * per - now;
    return wait > 0 ? wait : 0;
}

int kvg_autoscale_ctl_tick(struct kvg_autoscale_ctl *c, size_t i, struct kvg_autoscale_signals *s,
                           struct kvg_autoscale_decision *d)
{
    if (i >= c->npools) return KVG_ENOTFOUND;
    struct kvg_autoscale_decision tmp;
    if (!d) d = &tmp;
    pthread_mutex_lock(&c->mu);
    struct kvg_autoscale_pool *p = &c->pools[i];
    double lead = lead_of(c, p);
    /* An actuator that knows its starts reports them (and teaches the
     * start-up model itself); otherwise they are inferred. */
    int known =
        c->act && c->act->ops->starting
            ? c->act->ops->starting(c->act, &p->cfg, s->now, p->eta, KVG_AUTOSCALE_MAX_STARTS)
            : -1;
    if (known >= 0) {
        p->nstart = (uint32_t)known;
        for (uint32_t j = 0; j < p->nstart; j++) p->start_at[j] = p->eta[j] - lead;
    } else {
        infer_ready(c, p, s);
        lead = lead_of(c, p);
        for (uint32_t j = 0; j < p->nstart; j++) p->eta[j] = p->start_at[j] + lead;
    }
    s->starting = p->nstart;
    s->starting_eta = p->eta;
    note_young(p, s);
    int rc = kvg_autoscale_plan(p->pl, s, d);
    if (rc) {
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    if (!c->cfg.dry_run && !atomic_load(&c->standby)) {
        if (known < 0) {
            uint32_t cur = s->ready + p->nstart;
            for (; cur < d->desired && p->nstart < KVG_AUTOSCALE_MAX_STARTS; cur++)
                p->start_at[p->nstart++] = s->now;
            /* Fewer wanted: the newest starts are the ones given up. */
            while (p->nstart && s->ready + p->nstart > d->desired) p->nstart--;
        }
        /* Every tick, not only on a new recommendation: the actuator
         * converges (a child that died is replaced) and retries. */
        p->act_err[0] = 0;
        if (c->act && c->act->ops->apply &&
            c->act->ops->apply(c->act, &p->cfg, d->desired, s->now, p->act_err,
                               sizeof p->act_err) &&
            !p->act_err[0])
            snprintf(p->act_err, sizeof p->act_err, "failed");
    }
    p->sig = *s;
    p->sig.starting = p->nstart;
    p->sig.starting_eta = NULL;
    if (d->acted) p->hist[p->nhist++ % KVG_AUTOSCALE_HISTORY] = *d;
    p->cur = *d;
    p->last_ready = s->ready;
    p->ticked = 1;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static void add_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* A latency or rate the caller did not know (< 0) is null. */
static void add_known(cJSON *o, const char *k, double v)
{
    if (v >= 0 && isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *signals_json(const struct kvg_autoscale_signals *s)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    add_num(j, "ready", s->ready);
    add_num(j, "starting", s->starting);
    add_num(j, "draining", s->draining);
    add_num(j, "young", s->young);
    add_num(j, "waiting", s->waiting);
    add_num(j, "running", s->running);
    add_num(j, "kv_usage_sum", s->kv_usage_sum);
    add_num(j, "queued", s->queued);
    add_num(j, "inflight_prompt_tokens", s->inflight_prompt_tokens);
    add_num(j, "arrival_rate", s->arrival_rate);
    add_num(j, "input_tokens_per_s", s->input_tps);
    add_num(j, "output_tokens_per_s", s->output_tps);
    add_known(j, "isl", s->isl);
    add_known(j, "osl", s->osl);
    add_known(j, "ttft_mean_s", s->ttft_mean);
    add_known(j, "ttft_p90_s", s->ttft_p90);
    add_known(j, "itl_mean_s", s->itl_mean);
    add_known(j, "itl_p90_s", s->itl_p90);
    add_known(j, "cache_hit", s->cache_hit);
    add_known(j, "slo_miss", s->slo_miss);
    add_known(j, "slo_miss_ttft", s->slo_miss_ttft);
    add_known(j, "slo_miss_itl", s->slo_miss_itl);
    add_known(j, "slo_miss_prefill", s->slo_miss_prefill);
    add_known(j, "slo_miss_decode", s->slo_miss_decode);
    return j;
}

static cJSON *decision_json(const struct kvg_autoscale_decision *d)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    add_num(j, "at_s", d->at);
    add_num(j, "desired", d->desired);
    add_num(j, "current", d->current);
    add_known(j, "need", d->need);
    add_known(j, "forecast", d->forecast);
    add_num(j, "horizon_s", d->horizon_s);
    cJSON_AddStringToObject(j, "reason", d->reason);
    return j;
}

cJSON *kvg_autoscale_ctl_json(struct kvg_autoscale_ctl *c)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    pthread_mutex_lock(&c->mu);
    cJSON_AddStringToObject(root, "actuator", c->cfg.actuator);
    cJSON_AddBoolToObject(root, "dry_run", c->cfg.dry_run);
    cJSON_AddBoolToObject(root, "standby", atomic_load(&c->standby));
    add_num(root, "interval_s", c->cfg.interval_s);
    cJSON *pools = cJSON_AddArrayToObject(root, "pools");
    for (size_t i = 0; pools && i < c->npools; i++) {
        const struct kvg_autoscale_pool *p = &c->pools[i];
        cJSON *j = cJSON_CreateObject();
        if (!j) break;
        cJSON_AddItemToArray(pools, j);
        cJSON_AddStringToObject(j, "name", p->cfg.name);
        cJSON_AddStringToObject(j, "model", p->cfg.opts.model);
        if (p->cfg.serves[0])
            cJSON_AddStringToObject(j, "served_model", p->cfg.serves);
        else
            cJSON_AddNullToObject(j, "served_model");
        cJSON_AddStringToObject(j, "role", kvg_autoscale_role_name(p->cfg.opts.role));
        cJSON_AddStringToObject(j, "planner", p->cfg.planner);
        cJSON_AddStringToObject(j, "node", kvg_autoscale_node_name(p->cfg.node));
        if (p->act_err[0])
            cJSON_AddStringToObject(j, "actuator_error", p->act_err);
        else
            cJSON_AddNullToObject(j, "actuator_error");
        double lead = lead_of(c, p);
        add_num(j, "lead_time_s", lead);
        uint32_t ns = kvg_autoscale_startup_samples(&c->su, p->cfg.opts.model, p->cfg.node);
        add_num(j, "startup_samples", ns);
        /* The prior holds until min_samples starts are seen (until then the
         * lead is the prior or the slowest start seen, whichever is longer);
         * both are shown so an operator sees what was learned. */
        cJSON *lt = cJSON_AddObjectToObject(j, "lead_time");
        if (lt) {
            add_num(lt, "in_use_s", lead);
            add_num(lt, "prior_p90_s",
                    kvg_autoscale_startup_prior(&c->su, p->cfg.opts.model, p->cfg.node, 0.9));
            double learned =
                kvg_autoscale_startup_learned(&c->su, p->cfg.opts.model, p->cfg.node, 0.9);
            add_num(lt, "learned_p90_s", learned); /* null before any start is seen */
            add_num(lt, "samples", ns);
            add_num(lt, "min_samples", c->su.min_samples);
            cJSON_AddStringToObject(lt, "source",
                                    ns >= c->su.min_samples ? "learned"
                                    : ns                    ? "prior, or the slowest start seen"
                                                            : "prior");
        }
        if (!p->ticked) {
            cJSON_AddNullToObject(j, "desired");
            continue;
        }
        add_num(j, "desired", p->cur.desired);
        add_num(j, "current", p->sig.ready + p->sig.starting);
        add_num(j, "ready", p->sig.ready);
        cJSON *fc = cJSON_AddObjectToObject(j, "forecast");
        if (fc) {
            add_known(fc, "load_replicas", p->cur.forecast);
            add_num(fc, "horizon_s", p->cur.horizon_s);
            add_known(fc, "need_replicas", p->cur.need);
        }
        cJSON *sig = signals_json(&p->sig);
        if (sig) cJSON_AddItemToObject(j, "signals", sig);
        /* Per replica, when the actuator knows them (local): its state, and
         * for a parked one what a wake takes (the asleep1 start class). */
        struct kvg_autoscale_replica reps[KVG_AUTOSCALE_LOCAL_MAX];
        int nr = c->act && c->act->ops->replicas
                     ? c->act->ops->replicas(c->act, &p->cfg, reps, KVG_AUTOSCALE_LOCAL_MAX)
                     : -1;
        uint32_t parked = 0;
        cJSON *ra = nr >= 0 ? cJSON_AddArrayToObject(j, "replicas") : NULL;
        for (int k = 0; ra && k < nr; k++) {
            cJSON *e = cJSON_CreateObject();
            if (!e) break;
            cJSON_AddStringToObject(e, "url", reps[k].url);
            cJSON_AddStringToObject(e, "state", reps[k].state);
            add_num(e, "since_s", reps[k].since);
            int pk = !strcmp(reps[k].state, "parked");
            parked += pk;
            add_known(e, pk ? "expected_wake_s" : "expected_ready_at_s", reps[k].eta);
            cJSON_AddItemToArray(ra, e);
        }
        add_num(j, "standby", p->cfg.standby);
        add_num(j, "parked", parked);
        /* GPU-hours accrue per running replica, and per parked one x
         * standby_cost (1: a sleeping engine keeps its GPU). */
        add_num(j, "gpu_replicas",
                p->sig.ready + p->sig.starting + p->sig.draining + parked * p->cfg.standby_cost);
        cJSON *st = cJSON_AddArrayToObject(j, "starting");
        for (uint32_t k = 0; st && k < p->nstart; k++) {
            cJSON *e = cJSON_CreateObject();
            if (!e) break;
            add_num(e, "asked_at_s", p->start_at[k]);
            add_num(e, "expected_ready_at_s", p->start_at[k] + lead);
            cJSON_AddItemToArray(st, e);
        }
        cJSON *dec = cJSON_AddArrayToObject(j, "decisions");
        size_t n = p->nhist < KVG_AUTOSCALE_HISTORY ? p->nhist : KVG_AUTOSCALE_HISTORY;
        for (size_t k = 0; dec && k < n; k++) { /* newest first */
            cJSON *e = decision_json(&p->hist[(p->nhist - 1 - k) % KVG_AUTOSCALE_HISTORY]);
            if (e) cJSON_AddItemToArray(dec, e);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return root;
}

cJSON *kvg_autoscale_ctl_keda_json(struct kvg_autoscale_ctl *c)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    pthread_mutex_lock(&c->mu);
    double sum = 0;
    cJSON *pools = cJSON_AddObjectToObject(root, "pools");
    for (size_t i = 0; pools && i < c->npools; i++) {
        const struct kvg_autoscale_pool *p = &c->pools[i];
        cJSON *j = cJSON_AddObjectToObject(pools, p->cfg.name);
        if (!j) break;
        double want = p->ticked ? p->cur.desired : p->cfg.opts.min_replicas;
        sum += want;
        add_num(j, "desiredReplicas", want);
        add_num(j, "readyReplicas", p->ticked ? p->sig.ready : 0);
        add_num(j, "startingReplicas", p->nstart);
    }
    add_num(root, "desiredReplicas", sum);
    pthread_mutex_unlock(&c->mu);
    return root;
}

void kvg_autoscale_ctl_counts(struct kvg_autoscale_ctl *c, size_t i, double *desired, double *ready)
{
    *desired = *ready = -1;
    if (i >= c->npools) return;
    pthread_mutex_lock(&c->mu);
    if (c->pools[i].ticked) {
        *desired = c->pools[i].cur.desired;
        *ready = c->pools[i].sig.ready;
    }
    pthread_mutex_unlock(&c->mu);
}

void kvg_autoscale_ctl_set_standby(struct kvg_autoscale_ctl *c, int standby)
{
    atomic_store(&c->standby, standby != 0);
}

void kvg_autoscale_ctl_set_served(struct kvg_autoscale_ctl *c, size_t i, const char *model)
{
    if (i >= c->npools || !model[0]) return;
    pthread_mutex_lock(&c->mu);
    struct kvg_autoscale_pool_cfg *pc = &c->pools[i].cfg;
    snprintf(pc->serves, sizeof pc->serves, "%s", model);
    pthread_mutex_unlock(&c->mu);
}
