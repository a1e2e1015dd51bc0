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
    /* Each pool's window spans what its planner reads, in ticks. */
    double tick = c->interval_s > 0 ? c->interval_s : 1;
    for (size_t i = 0; !rc && i < c->npools; i++) {
        const struct kvg_autoscale_pool_cfg *pc = &c->pools[i];
        s->ttft[i] = calloc(1, sizeof *s->ttft[i]);
        s->itl[i] = calloc(1, sizeof *s->itl[i]);
        s->slo[i] = calloc(1, sizeof *s->slo[i]);
        if (!s->ttft[i] || !s->itl[i] || !s->slo[i]) {
            rc = -ENOMEM;
            break;
        }
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
    for (size_t i = 0; i < KVG_AUTOSCALE_MAX_POOLS; i++) {
        kvg_autoscale_obs_free(s->obs[i]);
        free(s->ttft[i]);
        free(s->itl[i]);
        free(s->slo[i]);
    }
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

/* An answer by its status class into r. */
static void answer(struct kvg_autoscale_gw_read *r, const struct kvg_str *cls, double v)
{
    r->requests += v;
    if (cls && kvg_str_eq(*cls, "2xx")) r->ok += v;
    if (cls && kvg_str_eq(*cls, "5xx")) r->failed += v;
}

/* m's result label as kvgate_slo_requests_total's, or -1. */
static int slo_result(const struct kvg_metrics_sample *m)
{
    static const char *const names[KVG_AUTOSCALE_SLO_N] = {"met", "ttft_missed", "itl_missed",
                                                           "both_missed", "failed"};
    const struct kvg_str *v = kvg_metrics_sample_label(m, "result");
    for (int i = 0; v && i < KVG_AUTOSCALE_SLO_N; i++)
        if (kvg_str_eq(*v, names[i])) return i;
    return -1;
}

/* kvgate_slo_target_seconds's lines, by latency (ttft, itl). */
struct targets {
    double own[2]; /* the model's: {model="M"} */
    double all[2]; /* the gateway's: model="" (none in an older gateway's) */
    int mixed[2];  /* every model read (no model given): the models' differ */
};

/* A kvgate_slo_target_seconds line into t: with model, its series and the
 * gateway's; without, the gateway's, and whether every model's is it
 * (the summed counts are exact only then). */
static void target(const struct kvg_metrics_sample *m, const char *model, struct targets *t)
{
    const struct kvg_str *l = kvg_metrics_sample_label(m, "latency");
    if (!l || !(kvg_str_eq(*l, "ttft") || kvg_str_eq(*l, "itl")) || !(m->value > 0)) return;
    int i = kvg_str_eq(*l, "itl");
    const struct kvg_str *ml = kvg_metrics_sample_label(m, "model");
    if (!ml || !ml->len) {
        t->all[i] = m->value;
    } else if (model) {
        if (kvg_str_eq(*ml, model)) t->own[i] = m->value;
    } else {
        if (t->own[i] > 0 && t->own[i] != m->value) t->mixed[i] = 1;
        t->own[i] = m->value;
    }
}

void kvg_autoscale_gw_parse(const char *body, size_t len, const char *model,
                            struct kvg_autoscale_gw_read *r)
{
    memset(r, 0, sizeof *r);
    int by_model = model && model[0];
    struct targets tgt;
    memset(&tgt, 0, sizeof tgt);
    static const char *const kinds[3] = {"prompt", "cached", "completion"};
    struct kvg_metrics_parser ps;
    struct kvg_metrics_sample m;
    kvg_metrics_parser_init(&ps, body, len);
    int rc;
    while ((rc = kvg_metrics_parser_next(&ps, &m)) != 0) {
        if (rc < 0) continue;                            /* a bad line: skip it, keep the rest */
        if (!(m.value >= 0) || isinf(m.value)) continue; /* no series read here can be */
        if (kvg_str_eq(m.name, "kvgate_slo_target_seconds")) {
            target(&m, by_model ? model : NULL, &tgt);
            continue;
        }
        if (by_model) { /* the series labelled with another model, or none, are not the pool's */
            const struct kvg_str *ml = kvg_metrics_sample_label(&m, "model");
            if (!ml || !kvg_str_eq(*ml, model)) continue;
            r->model_seen = 1;
        }
        if (!by_model && kvg_str_eq(m.name, "kvgate_requests_total")) {
            answer(r, kvg_metrics_sample_label(&m, "code"), m.value);
        } else if (by_model && kvg_str_eq(m.name, "kvgate_model_requests_total")) {
            answer(r, kvg_metrics_sample_label(&m, "class"), m.value);
        } else if (kvg_str_eq(m.name, "kvgate_slo_requests_total")) {
            int k = slo_result(&m);
            if (k >= 0) {
                r->slo[k] += m.value;
                r->has_slo = 1;
            }
        } else if (kvg_str_eq(m.name, "kvgate_tokens_total")) {
            const struct kvg_str *kind = kvg_metrics_sample_label(&m, "kind");
            for (int k = 0; kind && k < 3; k++)
                if (kvg_str_eq(*kind, kinds[k])) r->tokens[k] += m.value;
        } else if (!by_model && kvg_str_eq(m.name, "kvgate_admission_queue_waiting")) {
            r->queued += m.value;
        } else if (by_model && kvg_str_eq(m.name, "kvgate_admission_queue_model_waiting")) {
            r->queued += m.value;
        } else if (!hist_take(&r->ttft, "kvgate_time_to_first_token_seconds", &m)) {
            hist_take(&r->itl, "kvgate_inter_token_latency_seconds", &m);
        }
    }
    for (int i = 0; i < 2; i++) { /* the model's own, else the gateway's; 0: not one */
        double own = tgt.own[i], all = tgt.all[i];
        int differ = tgt.mixed[i] || (!by_model && own > 0 && all > 0 && own != all);
        r->slo_target[i] = differ ? 0 : own > 0 ? own : all;
    }
    for (int i = 0; i < 2; i++) { /* the last bucket must be +Inf */
        struct kvg_autoscale_hist *h = i ? &r->itl : &r->ttft;
        if (h->n && !isinf(h->le[h->n - 1])) h->bad = 1;
    }
}

int kvg_autoscale_gw_alias(const char *body, size_t len, const char *name, char *served, size_t cap)
{
    struct kvg_metrics_parser ps;
    struct kvg_metrics_sample m;
    kvg_metrics_parser_init(&ps, body, len);
    int kind = 0, rc;
    size_t k = 0;
    if (cap) served[0] = 0;
    while ((rc = kvg_metrics_parser_next(&ps, &m)) != 0) {
        if (rc < 0 || !kvg_str_eq(m.name, "kvgate_model_alias_info") || !(m.value > 0)) continue;
        const struct kvg_str *a = kvg_metrics_sample_label(&m, "alias"),
                             *kd = kvg_metrics_sample_label(&m, "kind"),
                             *md = kvg_metrics_sample_label(&m, "model");
        if (!a || !kd || !md || !md->len || !kvg_str_eq(*a, name)) continue;
        int split = !kvg_str_eq(*kd, "alias");
        if (kind == KVG_AUTOSCALE_ALIAS) continue; /* one alias, one model: it wins */
        if (!split) k = 0;                         /* over a split's lines before it */
        kind = split ? KVG_AUTOSCALE_SPLIT : KVG_AUTOSCALE_ALIAS;
        int n = snprintf(served + k, cap > k ? cap - k : 0, "%s%.*s", k ? ", " : "", (int)md->len,
                         md->p);
        k = n < 0 || (size_t)n >= cap - k ? (cap ? cap - 1 : 0) : k + (size_t)n;
    }
    return kind;
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

double kvg_autoscale_hist_over(const double *counts, const double *le, size_t n, double x)
{
    double over = 0, lo = 0;
    for (size_t i = 0; i < n; i++) {
        double hi = le[i], c = counts[i];
        if (x <= lo)
            over += c;
        else if (x < hi)
            over += isinf(hi) ? c : c * (hi - x) / (hi - lo);
        lo = hi;
    }
    return over;
}

/* A counter's growth since the last read (a restart starts it over). */
static double delta(double now, double before)
{
    return now >= before ? now - before : now;
}

/* The gateway says target t for what the pool calls want (as printed:
 * a relative 1e-6). */
static int same_target(double t, double want)
{
    return t > 0 && fabs(t - want) <= 1e-6 * want;
}

int kvg_autoscale_slo_delta(const struct kvg_autoscale_gw_read *now,
                            const struct kvg_autoscale_gw_read *before, double ttft_s, double itl_s,
                            struct kvg_autoscale_slo_delta *d)
{
    memset(d, 0, sizeof *d);
    if (now->has_slo && same_target(now->slo_target[0], ttft_s) &&
        same_target(now->slo_target[1], itl_s)) {
        /* One restart resets every result: any below its last value (or
         * the series new) is a gateway counting from zero again. */
        int fresh = !before->has_slo;
        for (int k = 0; k < KVG_AUTOSCALE_SLO_N; k++) fresh |= now->slo[k] < before->slo[k];
        double g[KVG_AUTOSCALE_SLO_N];
        for (int k = 0; k < KVG_AUTOSCALE_SLO_N; k++)
            g[k] = now->slo[k] - (fresh ? 0 : before->slo[k]);
        double failed = g[KVG_AUTOSCALE_SLO_FAILED], both = g[KVG_AUTOSCALE_SLO_BOTH];
        d->finished = g[0] + g[1] + g[2] + both + failed;
        d->ttft = g[KVG_AUTOSCALE_SLO_TTFT] + both + failed;
        d->itl = g[KVG_AUTOSCALE_SLO_ITL] + both + failed;
        d->either = d->finished - g[KVG_AUTOSCALE_SLO_MET];
        d->exact = 1;
        return 0;
    }
    if (!now->ttft.n) return -ENOENT;
    double c[KVG_AUTOSCALE_HIST_BUCKETS] = {0}, sum = 0, count = 0;
    int rc = kvg_autoscale_hist_delta(&now->ttft, &before->ttft, c, &sum, &count);
    if (rc) return rc;
    double failed = delta(now->failed, before->failed);
    d->finished = delta(now->ok, before->ok) + failed;
    /* A stream that failed after its first token is in both: at most all. */
    d->ttft = kvg_autoscale_hist_over(c, now->ttft.le, now->ttft.n, ttft_s) + failed;
    if (d->ttft > d->finished) d->ttft = d->finished;
    return 0;
}

void kvg_autoscale_slo_add(struct kvg_autoscale_slo_ring *R,
                           const struct kvg_autoscale_slo_delta *d)
{
    size_t t = R->cur % KVG_AUTOSCALE_LAT_TICKS;
    R->t[t].finished += d->finished;
    R->t[t].ttft += d->ttft;
    R->t[t].itl += d->itl;
    R->t[t].either += d->either;
    if (!d->exact) R->t[t].inexact += d->finished;
}

void kvg_autoscale_slo_next(struct kvg_autoscale_slo_ring *R)
{
    size_t t = ++R->cur % KVG_AUTOSCALE_LAT_TICKS;
    memset(&R->t[t], 0, sizeof R->t[t]);
}

void kvg_autoscale_slo_window(const struct kvg_autoscale_slo_ring *R, size_t nb, double *either,
                              double *ttft, double *itl)
{
    double fin = 0, mt = 0, mi = 0, me = 0, inexact = 0;
    if (nb > R->cur) nb = R->cur;
    if (nb > KVG_AUTOSCALE_LAT_TICKS - 1) nb = KVG_AUTOSCALE_LAT_TICKS - 1;
    for (size_t j = 1; j <= nb; j++) {
        size_t t = (R->cur - j) % KVG_AUTOSCALE_LAT_TICKS;
        fin += R->t[t].finished;
        mt += R->t[t].ttft;
        mi += R->t[t].itl;
        me += R->t[t].either;
        inexact += R->t[t].inexact;
    }
    *ttft = fin > 0 ? mt / fin : -1;
    *itl = fin > 0 && !(inexact > 0) ? mi / fin : -1;
    *either = fin > 0 && !(inexact > 0) ? me / fin : -1;
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

/* The served model pool i reads in gateway body: its model: (NULL: none),
 * or the one the gateway resolves it to (an alias); a split is said in
 * s->error and read as written (no series carries it: nothing). */
static const char *pool_model(struct kvg_autoscale_sources *s,
                              const struct kvg_autoscale_pool_cfg *pc, size_t i, const char *body,
                              size_t len)
{
    if (!pc->serves[0]) return NULL;
    char to[sizeof s->served[i]];
    int kind = kvg_autoscale_gw_alias(body, len, pc->serves, to, sizeof to);
    if (kind == KVG_AUTOSCALE_SPLIT && !s->error[0])
        snprintf(s->error, sizeof s->error,
                 "pool %.40s: model '%.40s' is a split in the gateway (of %.60s): a pool "
                 "scales one model: name one of them",
                 pc->name, pc->serves, to);
    snprintf(s->served[i], sizeof s->served[i], "%s",
             kind == KVG_AUTOSCALE_ALIAS ? to : pc->serves);
    return s->served[i];
}

/* Gateway g's read r (pool i's) grows into the pool's sums, latencies
 * and SLO outcomes, when g was read before. */
static void gw_add(struct kvg_autoscale_sources *s, const struct kvg_autoscale_pool_cfg *pc,
                   size_t i, const struct kvg_autoscale_gateway *g,
                   const struct kvg_autoscale_gw_read *r, struct kvg_autoscale_obs_sums *sum,
                   double *ok, double tok[3])
{
    const struct kvg_autoscale_gw_read *b = &g->last[i];
    sum->arrivals += delta(r->requests, b->requests);
    *ok += delta(r->ok, b->ok);
    for (int k = 0; k < 3; k++) tok[k] += delta(r->tokens[k], b->tokens[k]);
    lat_add(s->ttft[i], &r->ttft, &b->ttft);
    lat_add(s->itl[i], &r->itl, &b->itl);
    struct kvg_autoscale_slo_delta d;
    if (!kvg_autoscale_slo_delta(r, b, pc->opts.ttft_target_s, pc->opts.itl_target_s, &d))
        kvg_autoscale_slo_add(s->slo[i], &d);
}

/* The tick's sums into the pool's window and its signals out of it. */
static void pool_signals(struct kvg_autoscale_sources *s, const struct kvg_autoscale_config *c,
                         size_t i, struct kvg_autoscale_obs_sums *sum, double ok,
                         const double tok[3], struct kvg_autoscale_signals *sg)
{
    const struct kvg_autoscale_pool_cfg *pc = &c->pools[i];
    sum->out_tokens = tok[2];
    if (tok[0] > 0 || tok[2] > 0) { /* the gateways read usage: lengths per 2xx answer */
        sum->done_n = ok;
        sum->done_prompt = tok[0];
        sum->done_out = tok[2];
    }
    if (tok[1] > 0) { /* an engine that never says its cache is not a 0% hit */
        sum->cached = tok[1];
        sum->prefilled = tok[0];
    }
    lat_next(s->ttft[i]);
    lat_next(s->itl[i]);
    kvg_autoscale_slo_next(s->slo[i]);
    double tick = c->interval_s > 0 ? c->interval_s : 1;
    kvg_autoscale_obs_add(s->obs[i], sum);
    kvg_autoscale_obs_next(s->obs[i]);
    double span = span_of(pc);
    kvg_autoscale_obs_window(s->obs[i], tick, span, sg);
    size_t nb = (size_t)ceil(span / tick);
    lat_window(s->ttft[i], nb, &sg->ttft_mean, &sg->ttft_p90);
    lat_window(s->itl[i], nb, &sg->itl_mean, &sg->itl_p90);
    kvg_autoscale_slo_window(s->slo[i], nb, &sg->slo_miss, &sg->slo_miss_ttft, &sg->slo_miss_itl);
}

void kvg_autoscale_sources_read(struct kvg_autoscale_sources *s,
                                const struct kvg_autoscale_config *c, double now,
                                struct kvg_autoscale_signals *sigs)
{
    s->error[0] = 0;
    /* The tick's growth over every gateway that answered twice, per pool
     * (each reads its model's series, or all). */
    struct kvg_autoscale_obs_sums sums[KVG_AUTOSCALE_MAX_POOLS] = {0};
    double tok[KVG_AUTOSCALE_MAX_POOLS][3] = {{0}}, ok[KVG_AUTOSCALE_MAX_POOLS] = {0};
    double queued[KVG_AUTOSCALE_MAX_POOLS] = {0};
    int seen[KVG_AUTOSCALE_MAX_POOLS] = {0}, answered = 0;
    for (size_t k = 0; k < s->ngw; k++) {
        struct kvg_autoscale_gateway *g = &s->gw[k];
        char *body;
        size_t len;
        if (fetch(s, &g->api, "/metrics", 1, &body, &len) != 200 || !body) continue;
        answered = 1;
        for (size_t i = 0; i < c->npools; i++) {
            const struct kvg_autoscale_pool_cfg *pc = &c->pools[i];
            struct kvg_autoscale_gw_read r;
            kvg_autoscale_gw_parse(body, len, pool_model(s, pc, i, body, len), &r);
            if (g->seen) gw_add(s, pc, i, g, &r, &sums[i], &ok[i], tok[i]);
            queued[i] += r.queued;
            seen[i] |= r.model_seen;
            g->last[i] = r;
        }
        g->seen = 1;
        free(body);
    }
    for (size_t i = 0; i < c->npools; i++) {
        const struct kvg_autoscale_pool_cfg *pc = &c->pools[i];
        struct kvg_autoscale_signals *sg = &sigs[i];
        memset(sg, 0, sizeof *sg);
        sg->now = now;
        for (size_t k = 0; k < pc->nengines; k++) read_engine(s, &s->engines[i][k], sg);
        sg->queued = queued[i];
        pool_signals(s, c, i, &sums[i], ok[i], tok[i], sg);
        if (answered && pc->serves[0] && !seen[i] && !s->error[0])
            snprintf(s->error, sizeof s->error,
                     "pool %.40s: model '%.40s' is in no series of the gateways' /metrics (model: "
                     "names a served model or an alias of one in their models:; none served it "
                     "yet?)",
                     pc->name, pc->serves);
    }
}
