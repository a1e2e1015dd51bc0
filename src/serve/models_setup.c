/* The served models (router/catalog.h) as the proxy routes them: for each,
 * its tokenizer and chat template, and its own routing policy (its own
 * prefix history: one model's prompts never weigh on another's workers).
 * The single-model flags are one model that every name resolves to, and it
 * routes exactly as before (the tokenizer, template and policy of
 * router_setup.c). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "jinja/chat.h"
#include "serve/serve.h"
#include "tokenizer/tokenizer.h"

/* One model's state and what it owns (the shared tokenizer is not).
 * Reference counted: a reload that keeps a model as it was keeps its state
 * (its policy's prefix history, its loaded tokenizer) in the new catalog
 * too; each catalog holding it holds a reference. */
struct model_state {
    struct kvg_proxy_model pm;
    _Atomic int refs;
    struct kvg_tok *tok;          /* owned when the model has its own */
    struct kvg_jinja_chat *chat;  /* owned when the model has its own */
    struct kvg_tok_pcache *cache; /* owned when the model has its own tokenizer */
    int own_policy;
    struct kvg_pd_config serving; /* the mode and settings it serves with */
    int serving_own;              /* its entry's serving: (pm.pd owned), else the top level's */
};

/* A model's requests in flight and queued (gateway/gate.h), shared by
 * every state of that model name a reload makes, so the count of its
 * requests in flight carries over to the new catalog. Reference counted:
 * each state holding it holds one. */
struct model_count {
    struct kvg_gate_mcount c; /* first: the proxy sees this */
    _Atomic int refs;
    /* kvgate_admission_queue_model_waiting (not owned; NULL: none): its
     * series of this name is set from c.queued when /metrics is rendered
     * (made again if gone) and removed with the count, the model's last
     * state: a reload that drops the model drops it. */
    struct kvg_metrics_family *waiting_f;
    char name[KVG_CATALOG_NAME_MAX];
};

static void count_unref(struct kvg_gate_mcount *c)
{
    struct model_count *mc = (struct model_count *)c;
    if (!mc || atomic_fetch_sub_explicit(&mc->refs, 1, memory_order_acq_rel) != 1) return;
    for (int i = 0; i < 2; i++) kvg_metrics_series_release(mc->c.shed[i]);
    const char *v[] = {mc->name};
    if (mc->waiting_f) (void)kvg_metrics_family_remove(mc->waiting_f, v, 1); /* absent: fine */
    free(mc);
}

/* name's count: the old catalog's model of that name's (old: the catalog
 * being replaced, NULL at startup), else a new one with its shed series. */
static int model_count(struct kvg_serve *sv, const struct kvg_catalog *old, const char *name,
                       struct kvg_gate_mcount **out)
{
    for (size_t i = 0; old && old->any < 0 && i < old->nmodels; i++) {
        const struct kvg_proxy_model *pm = old->models[i].host;
        if (strcmp(old->models[i].name, name) || !pm || !pm->count) continue;
        atomic_fetch_add(&((struct model_count *)pm->count)->refs, 1);
        *out = pm->count;
        return 0;
    }
    struct model_count *mc = calloc(1, sizeof *mc);
    if (!mc) return -ENOMEM;
    atomic_init(&mc->refs, 1);
    static const char *const limits[2] = {"max_inflight", "max_queue"};
    for (int i = 0; i < 2 && sv->metrics.model_shed; i++) {
        const char *v[] = {name, limits[i]};
        int rc = kvg_metrics_series(sv->metrics.model_shed, v, 2, &mc->c.shed[i]);
        if (rc) {
            count_unref(&mc->c);
            return rc;
        }
    }
    mc->waiting_f = sv->metrics.adm_model_f;
    snprintf(mc->name, sizeof mc->name, "%s", name);
    *out = &mc->c;
    return 0;
}

/* A model with a tokenizer of its own: loaded with its template. */
static int own_tokenizer(struct kvg_serve *sv, const struct kvg_catalog_model *m,
                         struct model_state *st, char *err, size_t errlen)
{
    int rc = kvg_tok_load(m->tokenizer, m->tokenizer_config[0] ? m->tokenizer_config : NULL,
                          &st->tok, err, errlen);
    if (rc)
        return kvg_err_set(err, errlen, rc, "model %s (%s): tokenizer: %s", m->name, m->where, err);
    struct kvg_buf tpl;
    kvg_buf_init(&tpl, 16u << 20);
    if (m->chat_template[0] &&
        ((rc = kvg_buf_read_file(&tpl, m->chat_template)) || (rc = kvg_buf_append(&tpl, "", 1)))) {
        kvg_buf_free(&tpl);
        return kvg_err_set(err, errlen, KVG_ECONFIG, "model %s (%s): chat_template %s: %s", m->name,
                           m->where, m->chat_template, kvg_strerror(rc));
    }
    rc = kvg_jinja_chat_new(tpl.len ? tpl.data : kvg_tok_chat_template(st->tok),
                            kvg_tok_bos_token(st->tok), kvg_tok_eos_token(st->tok), &st->chat, err,
                            errlen);
    kvg_buf_free(&tpl);
    if (rc) return rc;
    if (sv->cfg.tokenizer_cache_bytes &&
        (rc = kvg_tok_pcache_new(st->tok, (size_t)sv->cfg.tokenizer_cache_bytes, &st->cache)))
        return rc;
    return 0;
}

/* m's serving mode (f: the configuration whose catalog it is): a PD
 * router of its own over its workers by role when its entry has a serving:
 * section (the proxy's route context keeps every pick to the model's
 * workers), else the top level's (sv->pd, NULL when aggregated). */
static int model_pd(struct kvg_serve *sv, const struct kvg_serve_config *f,
                    const struct kvg_catalog_model *m, struct model_state *st, char *err,
                    size_t errlen)
{
    st->pm.pd = sv->pd;
    if (m->entry < 0) return 0; /* the flags' one model */
    kvg_serve_model_serving(f, (size_t)m->entry, &st->serving);
    st->serving_own = f->models[m->entry].serving_given;
    if (!st->serving_own) return 0;
    st->pm.pd = NULL;
    if (st->serving.mode == KVG_PD_OFF) return 0;
    struct kvg_policy_opts o = m->policy_opts;
    o.kv = sv->kv;
    int rc = kvg_pd_new(&st->serving, &o, &sv->pool, sv->metrics.reg, &st->pm.pd, err, errlen);
    if (rc)
        return kvg_err_set(err, errlen, rc, "model %s (%s): serving: %s", m->name, m->where, err);
    KVG_INFO("model %s (%s): serving %s", m->name, m->where, kvg_pd_mode_name(st->serving.mode));
    return 0;
}

static int model_init(struct kvg_serve *sv, struct kvg_catalog_model *m, struct model_state *st,
                      char *err, size_t errlen)
{
    const struct kvg_serve_config *c = &sv->cfg;
    int rc;
    if (strcmp(m->tokenizer, c->tokenizer) || strcmp(m->tokenizer_config, c->tokenizer_config) ||
        strcmp(m->chat_template, c->chat_template)) {
        if ((rc = own_tokenizer(sv, m, st, err, errlen))) return rc;
        st->pm.rt = (struct kvg_rinput_tokenizer){st->tok, st->chat, m->block_size, st->cache};
        st->pm.tokenizer_exact = strcmp(m->tokenizer, "builtin:bytes") != 0;
    } else {
        st->pm.rt = sv->proxy.rt;
        st->pm.rt.block_size = m->block_size;
        st->pm.tokenizer_exact = sv->proxy.tokenizer_exact;
    }
    struct kvg_policy_opts o = m->policy_opts;
    o.kv = sv->kv;
    if ((rc = kvg_policy_new(m->policy, &o, &st->pm.policy)))
        return kvg_err_set(err, errlen, rc, "model %s (%s): policy %s: %s", m->name, m->where,
                           m->policy, kvg_strerror(rc));
    st->own_policy = 1;
    st->pm.wants_tokens = st->pm.policy->ops->wants_tokens;
    st->pm.wants_text = st->pm.policy->ops->wants_text;
    KVG_INFO("model %s (%s): policy %s, tokenizer %s, block %u", m->name, m->where, m->policy,
             m->tokenizer, m->block_size);
    return 0;
}

/* The catalog's host_free: a model's state, when its last catalog goes. */
static void state_unref(void *host)
{
    struct model_state *st = host;
    if (atomic_fetch_sub_explicit(&st->refs, 1, memory_order_acq_rel) != 1) return;
    count_unref(st->pm.count);
    if (st->own_policy) st->pm.policy->ops->destroy(st->pm.policy);
    if (st->serving_own) kvg_pd_free(st->pm.pd);
    if (st->chat) kvg_jinja_chat_free(st->chat);
    kvg_tok_pcache_free(st->cache);
    if (st->tok) kvg_tok_free(st->tok);
    free(st);
}

/* m's state in old, when old serves a model of that name with the same
 * tokenizer, template, block size, policy and serving mode (f's entry:
 * its state fits m as is). */
static struct model_state *same_in(const struct kvg_catalog *old, const struct kvg_catalog_model *m,
                                   const struct kvg_serve_config *f)
{
    struct kvg_pd_config serving;
    if (m->entry >= 0) kvg_serve_model_serving(f, (size_t)m->entry, &serving);
    for (size_t i = 0; old && old->any < 0 && i < old->nmodels; i++) {
        const struct kvg_catalog_model *o = &old->models[i];
        if (strcmp(o->name, m->name)) continue;
        int same = !strcmp(o->tokenizer, m->tokenizer) &&
                   !strcmp(o->tokenizer_config, m->tokenizer_config) &&
                   !strcmp(o->chat_template, m->chat_template) && !strcmp(o->policy, m->policy) &&
                   o->block_size == m->block_size &&
                   !memcmp(&o->policy_opts, &m->policy_opts, sizeof m->policy_opts);
        const struct model_state *st = o->host;
        char what[256];
        same = same && m->entry >= 0 && st->serving_own == f->models[m->entry].serving_given &&
               !kvg_opt_diff(kvg_pd_serving_table, &st->serving, &serving, NULL, NULL, what,
                             sizeof what);
        return same ? o->host : NULL;
    }
    return NULL;
}

/* Every model of cat its state: old's where it fits (old: the catalog
 * being replaced, NULL at startup), else a new one. On failure the states
 * made go with cat. */
static int states(struct kvg_serve *sv, const struct kvg_serve_config *f, struct kvg_catalog *cat,
                  const struct kvg_catalog *old, char *err, size_t errlen)
{
    cat->host_free = state_unref;
    for (size_t i = 0; i < cat->nmodels; i++) {
        struct model_state *st = same_in(old, &cat->models[i], f);
        if (st) {
            atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
            cat->models[i].host = st;
            continue;
        }
        if (!(st = calloc(1, sizeof *st))) return -ENOMEM;
        atomic_init(&st->refs, 1);
        cat->models[i].host = st;
        if ((int)i == cat->any) { /* the flags' one model: as router_setup.c made it */
            st->pm.rt = sv->proxy.rt;
            st->pm.wants_tokens = sv->proxy.wants_tokens;
            st->pm.wants_text = sv->proxy.wants_text;
            st->pm.tokenizer_exact = sv->proxy.tokenizer_exact;
            st->pm.pd = sv->pd;
            continue;
        }
        int rc = model_init(sv, &cat->models[i], st, err, errlen);
        if (!rc) rc = model_pd(sv, f, &cat->models[i], st, err, errlen);
        if (!rc) rc = model_count(sv, old, cat->models[i].name, &st->pm.count);
        /* Its PD series from the start, at 0 (NULL: not counted; no error). */
        if (!rc && st->pm.pd) (void)kvg_pd_series_for(st->pm.pd, cat->models[i].name);
        if (rc) return rc;
    }
    return 0;
}

int kvg_serve_models_init(struct kvg_serve *sv, char *err, size_t errlen)
{
    struct kvg_catalog *cat;
    int rc = kvg_serve_models_catalog(&sv->cfg, sv->cfg.config_path, &cat, err, errlen);
    if (rc) return rc;
    if ((rc = states(sv, &sv->cfg, cat, NULL, err, errlen))) {
        kvg_catalog_unref(cat);
        return rc;
    }
    kvg_catalog_holder_init(&sv->catalogs, cat);
    sv->catalogs_on = 1;
    sv->proxy.catalog = &sv->catalogs;
    return 0;
}

int kvg_serve_models_prepare(struct kvg_serve *sv, const struct kvg_serve_config *f,
                             struct kvg_catalog **out, char *err, size_t errlen)
{
    *out = NULL;
    /* A models: section given or taken away is a catalog like any other:
     * the flags' one model is the router_setup.c state every process has
     * (its tokenizer, template and the pool's policy), and each entry's
     * state is built here, so either way round the swap is the same. */
    struct kvg_catalog *old = kvg_serve_catalog(sv);
    struct kvg_catalog *cat;
    int rc = kvg_serve_models_catalog(f, sv->cfg.config_path, &cat, err, errlen);
    /* A model without targets of its own keeps the running gateway's: the
     * top level's change needs a restart (kvg_serve_config_diff_restart). */
    for (size_t i = 0; !rc && i < cat->nmodels; i++) {
        struct kvg_catalog_model *m = &cat->models[i];
        if (m->entry >= 0 && f->models[m->entry].spec.slo_ttft_s > 0) continue;
        m->slo_ttft_s = sv->cfg.slo_ttft_s;
        m->slo_itl_s = sv->cfg.slo_itl_s;
    }
    if (!rc && ((rc = kvg_serve_autoscale_models_check(sv, cat, err, errlen)) ||
                (rc = states(sv, f, cat, old, err, errlen))))
        kvg_catalog_unref(cat);
    kvg_catalog_unref(old);
    if (!rc) *out = cat;
    return rc;
}

int kvg_serve_worker_model(struct kvg_serve *sv, const struct kvg_catalog *cat,
                           const struct kvg_worker *w)
{
    char label[sizeof w->model_label];
    kvg_pool_model_label(&sv->pool, w, label, sizeof label);
    return kvg_catalog_worker_model(cat, w->url, label);
}

void kvg_serve_models_unserved(struct kvg_serve *sv)
{
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    if (!cat) return;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    for (size_t i = 0; i < n; i++) {
        char label[sizeof ws[i]->model_label];
        kvg_pool_model_label(&sv->pool, ws[i], label, sizeof label);
        if (label[0] && kvg_catalog_worker_model(cat, ws[i]->url, label) < 0)
            KVG_WARN("worker %s: its pod's model label names '%s', which is no model of "
                     "models: (a split or an unknown name): it serves nothing",
                     ws[i]->url, label);
        kvg_worker_unref(ws[i]);
    }
    kvg_catalog_unref(cat);
}

/* The ids w lists, comma-separated into out (cut to cap). */
static void listed(struct kvg_worker *w, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = 0;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->models.n && k + 1 < cap; i++) {
        int n = snprintf(out + k, cap - k, "%s%s", i ? "," : "", w->models.e[i].id);
        k = n < 0 || (size_t)n >= cap - k ? cap - 1 : k + (size_t)n;
    }
    pthread_mutex_unlock(&w->mu);
}

void kvg_serve_models_confirm(struct kvg_serve *sv)
{
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    if (!cat) return;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = cat->any < 0 ? kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS) : 0;
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = ws[i];
        int m = kvg_serve_worker_model(sv, cat, w);
        const char *name = m >= 0 ? cat->models[m].name : "";
        /* The pick leaves it out already (it serves the name sent, or
         * lists nothing yet): this is the operator's word of it. */
        int bad = m >= 0 && !kvg_worker_serves(w, name, strlen(name));
        int was = atomic_exchange(&w->model_unconfirmed, bad);
        if (bad && !was) {
            char ids[512];
            listed(w, ids, sizeof ids);
            KVG_WARN("worker %s: its /v1/models lists %s, not %s (the model it is under): not "
                     "used for %s",
                     w->url, ids, name, name);
        } else if (was && !bad) {
            KVG_INFO("worker %s: its /v1/models lists %s now", w->url, name[0] ? name : "it");
        }
        kvg_worker_unref(w);
    }
    kvg_catalog_unref(cat);
}

void kvg_serve_models_queue_metrics(struct kvg_serve *sv)
{
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    for (size_t i = 0; cat && cat->any < 0 && i < cat->nmodels; i++) {
        const struct kvg_proxy_model *pm = cat->models[i].host;
        const struct model_count *mc = pm ? (const struct model_count *)pm->count : NULL;
        struct kvg_metrics_series *s;
        const char *v[] = {mc ? mc->name : ""};
        if (!mc || !mc->waiting_f || kvg_metrics_series(mc->waiting_f, v, 1, &s)) continue;
        int64_t q = atomic_load(&mc->c.queued);
        kvg_metrics_set(s, q > 0 ? (double)q : 0);
        kvg_metrics_series_release(s);
    }
    if (cat) kvg_catalog_unref(cat);
}

struct kvg_catalog *kvg_serve_catalog(struct kvg_serve *sv)
{
    return sv->catalogs_on ? kvg_catalog_acquire(&sv->catalogs) : NULL;
}

void kvg_serve_models_free(struct kvg_serve *sv)
{
    if (!sv->catalogs_on) return;
    sv->proxy.catalog = NULL;
    kvg_catalog_holder_destroy(&sv->catalogs);
    sv->catalogs_on = 0;
}
