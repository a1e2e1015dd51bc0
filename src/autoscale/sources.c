/* kvgate autoscale's signal sources; see sources.h. */
#include "autoscale/sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "metrics/load.h"
#include "metrics/parse.h"

#define BODY_CAP (8u << 20) /* an engine's /metrics is tens of KB; far over is garbage */

int kvg_autoscale_sources_init(struct kvg_autoscale_sources *s,
                                const struct kvg_autoscale_config *c, uint32_t timeout_ms,
                                char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->timeout_ms = timeout_ms;
    int rc = 0;
    for (size_t i = 0; !rc && i < c->npools; i++)
        for (size_t k = 0; !rc && k < c->pools[i].nengines; k++)
            rc = kvg_https_init(&s->engines[i][k], c->pools[i].engines[k], NULL, "", err,
                                        errlen);
    for (size_t k = 0; !rc && k < c->ngateways; k++, s->ngw++)
        rc = kvg_https_init(&s->gw[k].api, c->gateways[k], NULL, "", err, errlen);
    for (size_t i = 0; i < c->npools; i++)
        for (size_t k = 0; k < c->pools[i].nengines; k++)
            s->engines[i][k].connect_timeout_ms = timeout_ms;
    for (size_t k = 0; k < s->ngw; k++) s->gw[k].api.connect_timeout_ms = timeout_ms;
    return rc;
}

void kvg_autoscale_sources_free(struct kvg_autoscale_sources *s,
                                 const struct kvg_autoscale_config *c)
{
    for (size_t i = 0; i < c->npools; i++)
        for (size_t k = 0; k < c->pools[i].nengines; k++) kvg_https_free(&s->engines[i][k]);
    for (size_t k = 0; k < s->ngw; k++) kvg_https_free(&s->gw[k].api);
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

/* The gateway's counters now: 0, or -1 when it did not answer. */
static int read_gateway(struct kvg_autoscale_sources *s, struct kvg_autoscale_gateway *g,
                        double *req, double *tn, double *tsum, double *queued)
{
    char *body;
    size_t len;
    if (fetch(s, &g->api, "/metrics", 1, &body, &len) != 200 || !body) return -1;
    *req = *tn = *tsum = *queued = 0;
    struct kvg_metrics_parser ps;
    struct kvg_metrics_sample m;
    kvg_metrics_parser_init(&ps, body, len);
    int rc;
    while ((rc = kvg_metrics_parser_next(&ps, &m)) != 0) {
        if (rc < 0) continue; /* a bad line: skip it, keep the rest */
        if (kvg_str_eq(m.name, "kvgate_requests_total"))
            *req += m.value;
        else if (kvg_str_eq(m.name, "kvgate_time_to_first_byte_seconds_count"))
            *tn += m.value;
        else if (kvg_str_eq(m.name, "kvgate_time_to_first_byte_seconds_sum"))
            *tsum += m.value;
        else if (kvg_str_eq(m.name, "kvgate_admission_queue_waiting"))
            *queued += m.value;
    }
    free(body);
    return 0;
}

/* A counter's growth since the last read (a restart starts it over). */
static double delta(double now, double before)
{
    return now >= before ? now - before : now;
}

void kvg_autoscale_sources_read(struct kvg_autoscale_sources *s,
                                 const struct kvg_autoscale_config *c, double now,
                                 struct kvg_autoscale_signals *sigs)
{
    s->error[0] = 0;
    double dreq = 0, dtn = 0, dtsum = 0, queued = 0;
    for (size_t k = 0; k < s->ngw; k++) {
        struct kvg_autoscale_gateway *g = &s->gw[k];
        double req, tn, tsum, q;
        if (read_gateway(s, g, &req, &tn, &tsum, &q)) continue;
        if (g->seen) {
            dreq += delta(req, g->requests);
            dtn += delta(tn, g->ttfb_n);
            dtsum += delta(tsum, g->ttfb_sum);
        }
        queued += q;
        g->seen = 1;
        g->requests = req;
        g->ttfb_n = tn;
        g->ttfb_sum = tsum;
    }
    double dt = now - s->last_t;
    s->last_t = now;
    for (size_t i = 0; i < c->npools; i++) {
        const struct kvg_autoscale_pool_cfg *pc = &c->pools[i];
        struct kvg_autoscale_signals *sg = &sigs[i];
        memset(sg, 0, sizeof *sg);
        sg->now = now;
        for (size_t k = 0; k < pc->nengines; k++) read_engine(s, &s->engines[i][k], sg);
        sg->queued = queued;
        sg->arrival_rate = dt > 0 ? dreq / dt : 0;
        sg->isl = pc->isl;
        sg->osl = pc->osl;
        sg->input_tps = sg->arrival_rate * pc->isl;
        sg->output_tps = sg->arrival_rate * pc->osl;
        sg->ttft_mean = dtn > 0 ? dtsum / dtn : -1;
        sg->ttft_p90 = sg->itl_mean = sg->itl_p90 = sg->slo_miss = sg->cache_hit = -1;
    }
}
