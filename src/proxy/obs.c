/* What the proxy observes of a request for the people who run kvgate
 * (proxy_int.h): the series of the model that answered, a stream's true
 * time to first token and its inter-token gaps (clocked on the usage
 * filter's token-carrying events, not on bytes: a role-only first chunk
 * or a comment is no token), the answer's error code, the PD legs'
 * outcomes, and the end of it all into the series and the host's observer.
 *
 * Labels are bounded: a model label is the catalog's served model, or a
 * name the answering worker's /v1/models lists (single-model flags), else
 * "unknown"; never a name only a client sent. Each loop keeps the series
 * it has looked up (struct kvg__proxy_mcache), so the hot path takes no
 * lock once a model was seen. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/log.h"
#include "proxy/proxy_int.h"

#define MCACHE_N 32
#define TENANT_MAX 65

/* A loop's series by (model, tenant). Entries are never replaced: a loop
 * that saw more pairs than fit looks the others up in the registry each
 * time (correct, with the family's lock). */
struct kvg__proxy_mcache {
    size_t n;
    struct {
        char model[KVG_CATALOG_NAME_MAX];
        char tenant[TENANT_MAX];
        struct kvg__proxy_mseries s;
    } e[MCACHE_N];
};

static const char *const kinds[3] = {"prompt", "cached", "completion"};
static const char *const slo_results[KVG_PROXY_SLO_RESULTS] = {"met", "ttft_missed", "itl_missed",
                                                               "both_missed", "failed"};

const char *kvg_proxy_slo_label(int i)
{
    return i >= 0 && i < KVG_PROXY_SLO_RESULTS ? slo_results[i] : "";
}

/* The series of (model, tenant) from the families. A handle is released
 * at once: the family keeps every series it made (none is removed), so
 * the pointers live as long as the registry, which outlives the loops. */
static int take_series(const struct kvg_proxy_metrics *m, const char *model, const char *tenant,
                       struct kvg__proxy_mseries *out)
{
    struct kvg_metrics_series *s;
    int rc;
    memset(out, 0, sizeof *out);
    for (int k = 0; k < 3 && m->tokens_f; k++) {
        const char *v[3] = {model, kinds[k], NULL};
        if (m->tenant_labels) v[1] = tenant, v[2] = kinds[k];
        if ((rc = kvg_metrics_series(m->tokens_f, v, m->tenant_labels ? 3 : 2, &s))) return rc;
        out->tokens[k] = s;
        kvg_metrics_series_release(s);
    }
    if (m->ttft_f) {
        if ((rc = kvg_metrics_series(m->ttft_f, &model, 1, &s))) return rc;
        out->ttft = s;
        kvg_metrics_series_release(s);
    }
    if (m->itl_f) {
        if ((rc = kvg_metrics_series(m->itl_f, &model, 1, &s))) return rc;
        out->itl = s;
        kvg_metrics_series_release(s);
    }
    static const char *const classes[4] = {"2xx", "4xx", "5xx", "other"};
    for (int c = 0; c < 4 && m->mrequests_f; c++) {
        const char *v[2] = {model, classes[c]};
        if ((rc = kvg_metrics_series(m->mrequests_f, v, 2, &s))) return rc;
        out->requests[c] = s;
        kvg_metrics_series_release(s);
    }
    for (int r = 0; r < KVG_PROXY_SLO_RESULTS && m->slo_f; r++) {
        const char *v[2] = {model, slo_results[r]};
        if ((rc = kvg_metrics_series(m->slo_f, v, 2, &s))) return rc;
        out->slo[r] = s;
        kvg_metrics_series_release(s);
    }
    return 0;
}

/* The targets pr's served model is judged against: its models: entry's
 * (router/catalog.h: its own, else the gateway's), or the gateway's
 * (--slo-ttft-secs / --slo-itl-secs); 0: none, not judged. */
static void slo_targets(const struct proxy_req *pr, double *ttft, double *itl)
{
    const struct kvg_proxy_metrics *m = pr->pl->px->m;
    const struct kvg_catalog *cat = pr->cat;
    *ttft = m ? m->slo_ttft_s : 0;
    *itl = m ? m->slo_itl_s : 0;
    if (cat && cat->any < 0 && pr->cmodel >= 0) {
        *ttft = cat->models[pr->cmodel].slo_ttft_s;
        *itl = cat->models[pr->cmodel].slo_itl_s;
    }
}

void kvg__proxy_obs_answered(struct proxy_req *pr, int status)
{
    if (!pr->ms_set) kvg__proxy_obs_model(pr, NULL); /* no worker answered: the model asked */
    int c = status >= 200 && status < 300   ? 0
            : status >= 400 && status < 500 ? 1
            : status >= 500 && status < 600 ? 2
                                            : 3;
    if (pr->ms_set && pr->ms.requests[c]) kvg_metrics_inc(pr->ms.requests[c]);
}

/* The cached entry of (model, tenant), or NULL. */
static const struct kvg__proxy_mseries *cached(const struct kvg__proxy_mcache *c, const char *model,
                                               size_t mlen, const char *tenant)
{
    for (size_t i = 0; c && i < c->n; i++)
        if (strlen(c->e[i].model) == mlen && !memcmp(c->e[i].model, model, mlen) &&
            !strcmp(c->e[i].tenant, tenant))
            return &c->e[i].s;
    return NULL;
}

void kvg__proxy_obs_model(struct proxy_req *pr, struct kvg_worker *w)
{
    struct kvg_proxy_loop *pl = pr->pl;
    const struct kvg_proxy *px = pl->px;
    const struct kvg_proxy_metrics *m = px->m;
    if (pr->ms_set || !m ||
        (!m->tokens_f && !m->ttft_f && !m->itl_f && !m->mrequests_f && !m->slo_f))
        return;
    const char *tenant = "";
    if (m->tenant_labels && pr->gate.key) tenant = pr->gate.key->tenant;
    const char *model;
    size_t mlen;
    const struct kvg_catalog *cat = pr->cat;      /* the catalog it was resolved in (NULL: none) */
    if (cat && cat->any < 0 && pr->cmodel >= 0) { /* a served model of models: */
        model = cat->models[pr->cmodel].name;
        mlen = strlen(model);
    } else {
        model = pr->ri.model;
        mlen = pr->ri.model_len;
    }
    const struct kvg__proxy_mseries *hit = mlen ? cached(pl->mcache, model, mlen, tenant) : NULL;
    if (hit) {
        pr->ms = *hit;
        pr->ms_set = 1;
        return;
    }
    /* Not seen on this loop: a name the catalog serves or the worker lists,
     * else the one label for every other name. */
    char name[KVG_CATALOG_NAME_MAX];
    int known =
        mlen && mlen < sizeof name &&
        ((cat && cat->any < 0 && pr->cmodel >= 0) || (w && kvg_worker_lists(w, model, mlen)));
    snprintf(name, sizeof name, "%.*s", known ? (int)mlen : 7, known ? model : "unknown");
    if (!known && (hit = cached(pl->mcache, name, 7, tenant))) { /* its series, not its name */
        pr->ms = *hit;
        pr->ms_set = 1;
        return;
    }
    struct kvg__proxy_mseries s;
    if (take_series(m, name, tenant, &s)) return; /* a family at its cap: not kept */
    pr->ms = s;
    pr->ms_set = 1;
    if (!pl->mcache && !(pl->mcache = calloc(1, sizeof *pl->mcache))) return;
    struct kvg__proxy_mcache *c = pl->mcache;
    if (c->n == MCACHE_N || cached(c, name, strlen(name), tenant)) return;
    snprintf(c->e[c->n].model, sizeof c->e[c->n].model, "%s", name);
    snprintf(c->e[c->n].tenant, sizeof c->e[c->n].tenant, "%s", tenant);
    c->e[c->n++].s = s;
}

void kvg__proxy_mcache_free(struct kvg_proxy_loop *pl)
{
    free(pl->mcache);
    pl->mcache = NULL;
}

void kvg__proxy_obs_tokens(struct proxy_req *pr)
{
    uint64_t ev = kvg_gate_token_events(&pr->gate);
    if (ev <= pr->tok_events) return;
    uint64_t k = ev - pr->tok_events, now = pr->last_ns;
    pr->tok_events = ev;
    uint64_t since = pr->tok_last_ns ? pr->tok_last_ns : now;
    if (!pr->tok_first_ns) {
        pr->tok_first_ns = now; /* the first has no gap before it */
        k--;
        const struct kvg_proxy *px = pr->pl->px;
        if (px->on_observe) {
            struct kvg_proxy_obs o = {.kind = KVG_PROXY_OBS_FIRST,
                                      .ttft_s = (double)(now - pr->t0_ns) / 1e9,
                                      .model = kvg__proxy_model_served(pr)};
            px->on_observe(px->on_observe_ud, &o);
        }
    }
    pr->tok_last_ns = now;
    if (!k || !pr->ms_set || !pr->ms.itl) return;
    double gap = (double)(now - since) / 1e9 / (double)k;
    for (uint64_t i = 0; i < k; i++) kvg_metrics_observe(pr->ms.itl, gap);
}

void kvg__proxy_obs_error(struct proxy_req *pr, const char *code, const char *type)
{
    const char *c = code && code[0] ? code : type;
    if (!pr->error_code[0] && c) snprintf(pr->error_code, sizeof pr->error_code, "%s", c);
}

/* A member into out: a non-empty string (num 0), or a number's text
 * (num 1). */
static int member(const cJSON *o, const char *name, int num, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!num && cJSON_IsString(v) && v->valuestring[0])
        snprintf(out, cap, "%s", v->valuestring);
    else if (num && cJSON_IsNumber(v))
        snprintf(out, cap, "%.0f", v->valuedouble);
    else
        return 0;
    return 1;
}

/* o's code: a string code, else its type (not the envelope's "error"),
 * else a numeric code (vLLM's, which repeats the status). */
static int code_in(const cJSON *o, char *out, size_t cap)
{
    return member(o, "code", 0, out, cap) ||
           (member(o, "type", 0, out, cap) && strcmp(out, "error")) ||
           member(o, "code", 1, out, cap);
}

int kvg__proxy_error_code(const char *body, size_t len, char *out, size_t cap)
{
    if (!cap) return 0;
    out[0] = 0;
    if (!body || !len || len > 64 * 1024) return 0; /* an error body is small */
    cJSON *j = cJSON_ParseWithLength(body, len);
    int found = 0;
    if (cJSON_IsObject(j)) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        found = cJSON_IsObject(e) ? code_in(e, out, cap) : code_in(j, out, cap);
    }
    cJSON_Delete(j);
    if (!found) out[0] = 0;
    return found;
}

void kvg__proxy_obs_engine_error(struct proxy_req *pr, int status, const char *body, size_t len)
{
    if (status < 400) return;
    pr->engine_error = 1;
    if (!kvg__proxy_error_code(body, len, pr->error_code, sizeof pr->error_code))
        snprintf(pr->error_code, sizeof pr->error_code, "http_%d", status);
}

/* The PD legs this request ran, by how they ended. */
static void pd_legs(const struct proxy_req *pr, int status)
{
    const struct kvg_pd_req *r = &pr->pdr;
    if (!kvg__proxy_pd(pr)) return;
    if (r->decision == KVG_PD_PREFILL_DECODE &&
        (r->prefill_done_ms || r->state == KVG_PD_CANCELLED))
        kvg_pd_series_inc(r->ms, r->state == KVG_PD_CANCELLED ? KVG_PD_S_PREFILL_GONE
                                 : r->state == KVG_PD_FAILED  ? KVG_PD_S_PREFILL_ERROR
                                                              : KVG_PD_S_PREFILL_OK);
    if (r->decode_attempts)
        kvg_pd_series_inc(r->ms, status >= 200 && status < 300 ? KVG_PD_S_DECODE_OK
                                 : status == 499               ? KVG_PD_S_DECODE_GONE
                                                               : KVG_PD_S_DECODE_ERROR);
}

void kvg__proxy_observe_end(struct proxy_req *pr, int status)
{
    const struct kvg_proxy *px = pr->pl->px;
    struct kvg_usage u;
    uint64_t relayed = kvg_gate_usage_final(&pr->gate, &u);
    struct kvg_proxy_obs o = {.kind = KVG_PROXY_OBS_FINISH,
                              .status = status,
                              .failed = status >= 500 || (status == 499 && !pr->first_ns),
                              .ttft_s = -1,
                              .itl_s = -1,
                              .prefill_s = -1,
                              .prompt_tokens = u.found ? u.prompt_tokens : -1,
                              .completion_tokens = u.found ? u.completion_tokens : -1,
                              .cached_tokens = u.found && u.cached_found ? u.cached_tokens : -1,
                              .model = kvg__proxy_model_served(pr)};
    if (pr->pd_split)
        o.prefill_s =
            pr->prefill_end_ns ? (double)(pr->prefill_end_ns - pr->t0_ns) / 1e9 : INFINITY;
    if (pr->tok_first_ns) {
        o.ttft_s = (double)(pr->tok_first_ns - pr->t0_ns) / 1e9;
        /* vLLM's mean ITL: the span from the first token to the last over
         * its gaps; the tokens the engine counted, else those relayed. */
        int64_t n = u.found ? u.completion_tokens : (int64_t)relayed;
        if (n > 1) o.itl_s = (double)(pr->tok_last_ns - pr->tok_first_ns) / 1e9 / (double)(n - 1);
    }
    /* A request no worker took (a 503 no_worker) is still a finished,
     * failed one of the model asked, as the host's observer counts it. */
    if (!pr->ms_set && px->m && px->m->slo_f && o.failed) kvg__proxy_obs_model(pr, NULL);
    const struct kvg__proxy_mseries *s = pr->ms_set ? &pr->ms : NULL;
    if (s && u.found) {
        if (s->tokens[0]) kvg_metrics_add(s->tokens[0], (double)u.prompt_tokens);
        if (s->tokens[1] && u.cached_found) kvg_metrics_add(s->tokens[1], (double)u.cached_tokens);
        if (s->tokens[2]) kvg_metrics_add(s->tokens[2], (double)u.completion_tokens);
    }
    if (s && s->ttft && o.ttft_s >= 0) kvg_metrics_observe(s->ttft, o.ttft_s);
    /* Finished as the autoscaler's feed counts it (serve/autoscale_setup.c):
     * served, failed, or its client gone; a latency not seen (a whole
     * answer has no TTFT, one token no ITL) misses nothing. */
    double slo_ttft, slo_itl;
    slo_targets(pr, &slo_ttft, &slo_itl);
    if (s && s->slo[0] && slo_ttft > 0 &&
        (o.failed || (status >= 200 && status < 300) || status == 499)) {
        int r = o.failed ? 4 : (o.ttft_s > slo_ttft) + 2 * (o.itl_s > slo_itl);
        kvg_metrics_inc(s->slo[r]);
    }
    pd_legs(pr, status);
    if (px->on_observe) px->on_observe(px->on_observe_ud, &o);
}
