/* kvgate autoscale's signal sources; see sources.h. */
#include "autoscale/sources.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "metrics/load.h"
#include "metrics/metrics.h"
#include "metrics/parse.h"

#define BODY_CAP (8u << 20) /* an engine's /metrics is tens of KB; far over is garbage */

/* The span pool pc's signals cover. */
static double span_of(const struct kvg_autoscale_pool_cfg *pc)
{
    return kvg_autoscale_obs_span(pc->planner, pc->opts.interval_s, pc->signal_window_s);
}

int kvg_autoscale_sources_init(struct kvg_autoscale_sources *s,
                               const struct kvg_autoscale_config *c, uint32_t timeout_ms, char *err,
                               size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->timeout_ms = timeout_ms;
    int rc = 0;
    for (size_t i = 0; !rc && i < c->npools; i++)
        for (size_t k = 0; !rc && k < c->pools[i].nengines; k++)
            rc = kvg_https_init(&s->engines[i][k], c->pools[i].engines[k], NULL, "", err, errlen);
    for (size_t k = 0; !rc && k < c->ngateways; k++, s->ngw++)
        rc = kvg_https_init(&s->gw[k].api, c->gateways[k], NULL, "", err, errlen);
    for (size_t i = 0; i < c->npools; i++)
        for (size_t k = 0; k < c->pools[i].nengines; k++)
            s->engines[i][k].connect_timeout_ms = timeout_ms;
    for (size_t k = 0; k < s->ngw; k++) s->gw[k].api.connect_timeout_ms = timeout_ms;
    if (rc) return rc;
    s->ttft = calloc(1, sizeof *s->ttft);
    s->itl = calloc(1, sizeof *s->itl);
    if (!s->ttft || !s->itl) rc = -ENOMEM;
    /* Each pool's window spans what its planner reads, in ticks. */
    double tick = c->interval_s > 0 ? c->interval_s : 1;
    for (size_t i = 0; !rc && i < c->npools; i++) {
        const struct kvg_autoscale_pool_cfg *pc = &c->pools[i];
        double nb = ceil(span_of(pc) / tick) + 2;
        rc = kvg_autoscale_obs_new(
            nb < KVG_AUTOSCALE_LAT_TICKS ? (size_t)nb : KVG_AUTOSCALE_LAT_TICKS, 1, &s->obs[i]);
    }
    if (rc) snprintf(err, errlen, "autoscale sources: %s", kvg_strerror(rc));
    return rc;
}

void kvg_autoscale_sources_free(struct kvg_autoscale_sources *s,
                                const struct kvg_autoscale_config *c)
{
    for (size_t i = 0; i < c->npools; i++)
        for (size_t k = 0; k < c->pools[i].nengines; k++) kvg_https_free(&s->engines[i][k]);
    for (size_t k = 0; k < s->ngw; k++) kvg_https_free(&s->gw[k].api);
    for (size_t i = 0; i < KVG_AUTOSCALE_MAX_POOLS; i++) kvg_autoscale_obs_free(s->obs[i]);
    free(s->ttft);
    free(s->itl);
}

/* GET path: the status, and the body when want_body (caller frees). */
static int fetch(struct kvg_autoscale_sources *s, struct kvg_https *a, const char *path,
                 int want_body, char **body, size_t *len)
{
    struct kvg_https_resp r;
    *body = NULL;
    *len = 0;
    int rc = kvg_https_get(a, path, s->timeout_ms, &r);
    if (!rc && want_body && r.status == 200) rc = kvg_https_resp_body(&r, BODY_CAP, body, len);
    int status = r.status;
    kvg_https_resp_close(a, &r);
    if (rc) {
        snprintf(s->error, sizeof s->error, "GET http://%.120s:%d%.60s: %s", a->host, a->port, path,
                 kvg_strerror(rc));
        return rc;
    }
    return status;
}

static void read_engine(struct kvg_autoscale_sources *s, struct kvg_https *a,
                        struct kvg_autoscale_signals *sg)
{
    char *body;
    size_t len;
    if (fetch(s, a, "/health", 0, &body, &len) != 200) return;
    sg->ready++;
    if (fetch(s, a, "/metrics", 1, &body, &len) != 200 || !body) return;
    struct kvg_metrics_load l;
    if (!kvg_metrics_load_parse(body, len, &l)) {
        if (l.known & KVG_METRICS_HAS_WAITING) sg->waiting += l.waiting;
        if (l.known & KVG_METRICS_HAS_RUNNING) sg->running += l.running;
        if (l.known & KVG_METRICS_HAS_KV_USAGE) sg->kv_usage_sum += l.kv_usage;
    }
    free(body);
}

/* A bucket line (name_bucket{le="..."}) into h, in the order served; a
 * bound seen already adds to it (the same histogram per model: their sum). */
static void hist_bucket(struct kvg_autoscale_hist *h, const struct kvg_metrics_sample *m)
{
    const struct kvg_str *le = kvg_metrics_sample_label(m, "le");
    char tmp[48];
    if (!le || !le->len || le->len >= sizeof tmp || h->n == KVG_AUTOSCALE_HIST_BUCKETS) {
        h->bad = 1;
        return;
    }
    memcpy(tmp, le->p, le->len);
    tmp[le->len] = 0;
    char *end;
    double b = strtod(tmp, &end);
    for (size_t i = 0; !*end && i < h->n; i++)
        if (h->le[i] == b) {
            h->cum[i] += m->value;
            return;
        }
    if (*end || (h->n && !(b > h->le[h->n - 1]))) {
        h->bad = 1;
        return;
    }
    h->le[h->n] = b;
    h->cum[h->n++] = m->value;
}

/* m into h when it is one of histogram base's lines: 1, else 0. */
static int hist_take(struct kvg_autoscale_hist *h, const char *base,
                     const struct kvg_metrics_sample *m)
{
    size_t bl = strlen(base);
    if (m->name.len <= bl || memcmp(m->name.p, base, bl)) return 0;
    struct kvg_str rest = {m->name.p + bl, m->name.len - bl};
    if (kvg_str_eq(rest, "_bucket"))
        hist_bucket(h, m);
    else if (kvg_str_eq(rest, "_sum"))
        h->sum += m->value;
    else if (kvg_str_eq(rest, "_count"))
        h->count += m->value;
    else
        return 0;
    return 1;
}

void kvg_autoscale_gw_parse(const char *body, size_t len, struct kvg_autoscale_gw_read *r)
{
    memset(r, 0, sizeof *r);
    static const char *const kinds[3] = {"prompt", "cached", "completion"};
    struct kvg_metrics_parser ps;
    struct kvg_metrics_sample m;
    kvg_metrics_parser_init(&ps, body, len);
    int rc;
    while ((rc = kvg_metrics_parser_next(&ps, &m)) != 0) {
        if (rc < 0) continue; /* a bad line: skip it, keep the rest */
        if (kvg_str_eq(m.name, "kvgate_requests_total")) {
            r->requests += m.value;
            const struct kvg_str *code = kvg_metrics_sample_label(&m, "code");
            if (code && kvg_str_eq(*code, "2xx")) r->ok += m.value;
        } else if (kvg_str_eq(m.name, "kvgate_tokens_total")) {
            const struct kvg_str *kind = kvg_metrics_sample_label(&m, "kind");
            for (int k = 0; kind && k < 3; k++)
                if (kvg_str_eq(*kind, kinds[k])) r->tokens[k] += m.value;
        } else if (kvg_str_eq(m.name, "kvgate_admission_queue_waiting")) {
            r->queued += m.value;
        } else if (!hist_take(&r->ttft, "kvgate_time_to_first_token_seconds", &m)) {
            hist_take(&r->itl, "kvgate_inter_token_latency_seconds", &m);
        }
    }
    for (int i = 0; i < 2; i++) { /* the last bucket must be +Inf */
        struct kvg_autoscale_hist *h = i ? &r->itl : &r->ttft;
        if (h->n && !isinf(h->le[h->n - 1])) h->bad = 1;
    }
}

int kvg_autoscale_hist_delta(const struct kvg_autoscale_hist *now,
                             const struct kvg_autoscale_hist *before, double *counts, double *sum,
                             double *count)
{
    if (now->bad || !now->n) return -EINVAL;
    int fresh = before->count > now->count || before->n != now->n || before->bad;
    if (!fresh)
        for (size_t i = 0; i < now->n; i++)
            if (before->le[i] != now->le[i]) return -EINVAL;
    double prev = 0;
    for (size_t i = 0; i < now->n; i++) {
        double c = now->cum[i] - (fresh ? 0 : before->cum[i]);
        counts[i] += c > prev ? c - prev : 0;
        prev = c > prev ? c : prev;
    }
    *sum += now->sum - (fresh ? 0 : before->sum);
    *count += now->count - (fresh ? 0 : before->count);
    return 0;
}

double kvg_autoscale_hist_quantile(const double *counts, const double *le, size_t n, double q)
{
    uint64_t c[KVG_AUTOSCALE_HIST_BUCKETS];
    if (n < 2 || n > KVG_AUTOSCALE_HIST_BUCKETS) return -1;
    for (size_t i = 0; i < n; i++) c[i] = counts[i] > 0 ? (uint64_t)llround(counts[i]) : 0;
    double v = kvg_metrics_quantile(c, le, n, q);
    return isnan(v) ? -1 : v;
}

/* The gateway's counters now: 0, or -1 when it did not answer. */
static int read_gateway(struct kvg_autoscale_sources *s, struct kvg_autoscale_gateway *g,
                        struct kvg_autoscale_gw_read *r)
{
    char *body;
    size_t len;
    if (fetch(s, &g->api, "/metrics", 1, &body, &len) != 200 || !body) return -1;
    kvg_autoscale_gw_parse(body, len, r);
    free(body);
    return 0;
}

/* A counter's growth since the last read (a restart starts it over). */
static double delta(double now, double before)
{
    return now >= before ? now - before : now;
}

/* Gateway h's growth over before into the ring's filling tick (the first
 * gateway read sets the buckets; one with others is left out). */
static void lat_add(struct kvg_autoscale_lat_ring *L, const struct kvg_autoscale_hist *now,
                    const struct kvg_autoscale_hist *before)
{
    if (now->bad || !now->n) return;
    if (!L->n) {
        L->n = now->n;
        memcpy(L->le, now->le, now->n * sizeof *now->le);
    }
    if (now->n != L->n || memcmp(now->le, L->le, now->n * sizeof *now->le)) return;
    size_t t = L->cur % KVG_AUTOSCALE_LAT_TICKS;
    kvg_autoscale_hist_delta(now, before, L->counts[t], &L->sum[t], &L->count[t]);
}

static void lat_next(struct kvg_autoscale_lat_ring *L)
{
    size_t t = ++L->cur % KVG_AUTOSCALE_LAT_TICKS;
    memset(L->counts[t], 0, sizeof L->counts[t]);
    L->sum[t] = L->count[t] = 0;
}

/* Mean and p90 over the last nb closed ticks, -1 when nothing was seen. */
static void lat_window(const struct kvg_autoscale_lat_ring *L, size_t nb, double *mean, double *p90)
{
    double c[KVG_AUTOSCALE_HIST_BUCKETS] = {0}, sum = 0, count = 0;
    if (nb > L->cur) nb = L->cur;
    if (nb > KVG_AUTOSCALE_LAT_TICKS - 1) nb = KVG_AUTOSCALE_LAT_TICKS - 1;
    for (size_t j = 1; j <= nb; j++) {
        size_t t = (L->cur - j) % KVG_AUTOSCALE_LAT_TICKS;
        for (size_t i = 0; i < L->n; i++) c[i] += L->counts[t][i];
        sum += L->sum[t];
        count += L->count[t];
    }
    *mean = count > 0 ? sum / count : -1;
    *p90 = count > 0 ? kvg_autoscale_hist_quantile(c, L->le, L->n, 0.9) : -1;
}

void kvg_autoscale_sources_read(struct kvg_autoscale_sources *s,
                                const struct kvg_autoscale_config *c, double now,
                                struct kvg_autoscale_signals *sigs)
{
    s->error[0] = 0;
    /* The tick's growth over every gateway that answered twice. */
    struct kvg_autoscale_obs_sums sum = {0};
    double tok[3] = {0}, ok = 0, queued = 0;
    for (size_t k = 0; k < s->ngw; k++) {
        struct kvg_autoscale_gateway *g = &s->gw[k];
        struct kvg_autoscale_gw_read r;
        if (read_gateway(s, g, &r)) continue;
        if (g->seen) {
            sum.arrivals += delta(r.requests, g->last.requests);
            ok += delta(r.ok, g->last.ok);
            for (int i = 0; i < 3; i++) tok[i] += delta(r.tokens[i], g->last.tokens[i]);
            lat_add(s->ttft, &r.ttft, &g->last.ttft);
            lat_add(s->itl, &r.itl, &g->last.itl);
        }
        queued += r.queued;
        g->seen = 1;
        g->last = r;
    }
    sum.out_tokens = tok[2];
    if (tok[0] > 0 || tok[2] > 0) { /* the gateways read usage: lengths per 2xx answer */
        sum.done_n = ok;
        sum.done_prompt = tok[0];
        sum.done_out = tok[2];
    }
    if (tok[1] > 0) { /* an engine that never says its cache is not a 0% hit */
        sum.cached = tok[1];
        sum.prefilled = tok[0];
    }
    lat_next(s->ttft);
    lat_next(s->itl);
    double tick = c->interval_s > 0 ? c->interval_s : 1;
    for (size_t i = 0; i < c->npools; i++) {
        const struct kvg_autoscale_pool_cfg *pc = &c->pools[i];
        struct kvg_autoscale_signals *sg = &sigs[i];
        memset(sg, 0, sizeof *sg);
        sg->now = now;
        for (size_t k = 0; k < pc->nengines; k++) read_engine(s, &s->engines[i][k], sg);
        sg->queued = queued;
        kvg_autoscale_obs_add(s->obs[i], &sum);
        kvg_autoscale_obs_next(s->obs[i]);
        double span = span_of(pc);
        kvg_autoscale_obs_window(s->obs[i], tick, span, sg);
        size_t nb = (size_t)ceil(span / tick);
        lat_window(s->ttft, nb, &sg->ttft_mean, &sg->ttft_p90);
        lat_window(s->itl, nb, &sg->itl_mean, &sg->itl_p90);
    }
}
