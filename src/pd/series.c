/* The PD router's series, per served model (pd.h, struct kvg_pd_series):
 * every counter and histogram of a request's PD lifecycle carries the
 * model the request is served as, whichever PD router it went through (the
 * top level's serves every model without a serving: section of its own).
 * The families are registered once here; a model's set of series is made
 * with its first request and kept with the router. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/pd_int.h"

enum { COUNTER, HISTOGRAM };

/* Each family: its name, kind, help (NULL: the entry before's family), and
 * the labels after model with this series' values. */
static const struct {
    int kind;
    const char *name, *help;
    size_t nl;
    const char *label[2], *value[2];
} fams[KVG_PD_NSERIES] = {
#define LEG(k, leg, out)                                                                           \
    [k] = {COUNTER, "kvgate_pd_leg_outcomes_total", NULL, 2, {"leg", "outcome"}, {leg, out}}
    [KVG_PD_S_PAIRS] = {COUNTER,
                        "kvgate_pd_decisions_total",
                        "Disaggregation decisions per served model: prefill then decode, or decode "
                        "alone (few uncached tokens).",
                        1,
                        {"decision"},
                        {"prefill_decode"}},
    [KVG_PD_S_DECODE_ONLY] =
        {COUNTER, "kvgate_pd_decisions_total", NULL, 1, {"decision"}, {"decode_only"}},
    [KVG_PD_S_TRANSFER] = {HISTOGRAM,
                           "kvgate_pd_kv_transfer_seconds",
                           "From a decode's dispatch to its first byte after a prefill: the KV "
                           "pull plus one decode step, per served model.",
                           0,
                           {NULL},
                           {NULL}},
    [KVG_PD_S_PREFILL_FAILURES] = {COUNTER,
                                   "kvgate_pd_prefill_failures_total",
                                   "Prefill legs that failed: their decode was never sent.",
                                   0,
                                   {NULL},
                                   {NULL}},
    [KVG_PD_S_DECODE_RETRIES] = {COUNTER,
                                 "kvgate_pd_decode_retries_total",
                                 "Decodes sent again to another decode worker after failing "
                                 "before their first byte.",
                                 0,
                                 {NULL},
                                 {NULL}},
    [KVG_PD_S_EARLY_REJECTIONS] = {COUNTER,
                                   "kvgate_pd_early_rejections_total",
                                   "Requests rejected at the door: no decode was predicted to "
                                   "have room when their prefill would finish (prefills "
                                   "avoided).",
                                   0,
                                   {NULL},
                                   {NULL}},
    [KVG_PD_S_WASTED_PREFILLS] = {COUNTER,
                                  "kvgate_pd_wasted_prefills_total",
                                  "Prefills whose decode then refused the request (429/503).",
                                  0,
                                  {NULL},
                                  {NULL}},
    [KVG_PD_S_ENCODE_FAILURES] = {COUNTER,
                                  "kvgate_pd_encode_failures_total",
                                  "Encode legs that failed: their prefill and decode were never "
                                  "sent.",
                                  0,
                                  {NULL},
                                  {NULL}},
    [KVG_PD_S_ENCODE_SECONDS] = {HISTOGRAM,
                                 "kvgate_pd_encode_seconds",
                                 "An encode leg, from its dispatch to the encoder's "
                                 "ec_transfer_params.",
                                 0,
                                 {NULL},
                                 {NULL}},
    [KVG_PD_S_RESTARTS] = {COUNTER,
                           "kvgate_pd_prefill_restarts_total",
                           "Prefill engines seen restarted: an answer named another engine id "
                           "(remote_engine_id) than the worker's last; the blocks the old engine "
                           "held are gone.",
                           0,
                           {NULL},
                           {NULL}},
    [KVG_PD_S_RERUNS] = {COUNTER,
                         "kvgate_pd_prefill_reruns_total",
                         "Decode retries whose prefill engine had restarted: the prefill ran "
                         "again instead of a pull from the dead engine.",
                         0,
                         {NULL},
                         {NULL}},
    [KVG_PD_S_AGGREGATED] = {COUNTER,
                             "kvgate_pd_aggregated_total",
                             "Requests of an endpoint the PD mode does not split (Responses, "
                             "Messages, generate under vLLM) served whole by a decode worker.",
                             0,
                             {NULL},
                             {NULL}},
    [KVG_PD_S_PREFILL_OK] = {COUNTER,
                             "kvgate_pd_leg_outcomes_total",
                             "PD legs by how they ended: prefill or decode; ok, error, "
                             "client_gone.",
                             2,
                             {"leg", "outcome"},
                             {"prefill", "ok"}},
    LEG(KVG_PD_S_PREFILL_ERROR, "prefill", "error"),
    LEG(KVG_PD_S_PREFILL_GONE, "prefill", "client_gone"),
    LEG(KVG_PD_S_DECODE_OK, "decode", "ok"),
    LEG(KVG_PD_S_DECODE_ERROR, "decode", "error"),
    LEG(KVG_PD_S_DECODE_GONE, "decode", "client_gone"),
#undef LEG
};

int kvg__pd_series_init(struct kvg_pd *pd, struct kvg_metrics_registry *reg)
{
    pthread_mutex_init(&pd->series_mu, NULL);
    if (!reg) return 0;
    double b[16];
    kvg_metrics_buckets_exp(0.001, 2, 16, b);
    for (int i = 0; i < KVG_PD_NSERIES; i++) {
        if (!fams[i].help) { /* another series of the family above */
            pd->fam[i] = pd->fam[i - 1];
            continue;
        }
        const char *ln[3] = {"model", fams[i].label[0], fams[i].label[1]};
        int rc = fams[i].kind == HISTOGRAM
                     ? kvg_metrics_histogram(reg, fams[i].name, fams[i].help, ln, 1 + fams[i].nl, b,
                                             16, &pd->fam[i])
                     : kvg_metrics_counter(reg, fams[i].name, fams[i].help, ln, 1 + fams[i].nl,
                                           &pd->fam[i]);
        if (rc) return rc;
    }
    return 0;
}

void kvg__pd_series_free(struct kvg_pd *pd)
{
    for (struct kvg_pd_series *s = pd->series, *next; s; s = next) {
        next = s->next;
        for (int i = 0; i < KVG_PD_NSERIES; i++) kvg_metrics_series_release(s->s[i]);
        free(s);
    }
    pd->series = NULL;
    pthread_mutex_destroy(&pd->series_mu);
}

/* Under pd->series_mu: model's set, made now (NULL: out of memory, or a
 * family at its series cap). */
static struct kvg_pd_series *make(struct kvg_pd *pd, const char *model)
{
    struct kvg_pd_series *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    snprintf(s->model, sizeof s->model, "%s", model);
    for (int i = 0; i < KVG_PD_NSERIES; i++) {
        const char *v[] = {s->model, fams[i].value[0], fams[i].value[1]};
        if (kvg_metrics_series(pd->fam[i], v, 1 + fams[i].nl, &s->s[i])) {
            for (int k = 0; k < i; k++) kvg_metrics_series_release(s->s[k]);
            free(s);
            return NULL;
        }
    }
    s->next = pd->series;
    pd->series = s;
    return s;
}

struct kvg_pd_series *kvg_pd_series_for(struct kvg_pd *pd, const char *model)
{
    if (!pd || !pd->fam[0] || !model) return NULL;
    pthread_mutex_lock(&pd->series_mu);
    struct kvg_pd_series *s = pd->series;
    while (s && strcmp(s->model, model)) s = s->next;
    if (!s) s = make(pd, model);
    pthread_mutex_unlock(&pd->series_mu);
    return s;
}

void kvg_pd_series_inc(const struct kvg_pd_series *ms, enum kvg_pd_series_kind which)
{
    if (ms && ms->s[which]) kvg_metrics_inc(ms->s[which]);
}

void kvg__pd_observe(const struct kvg_pd_req *r, int which, double v)
{
    if (r->ms && r->ms->s[which]) kvg_metrics_observe(r->ms->s[which], v);
}
