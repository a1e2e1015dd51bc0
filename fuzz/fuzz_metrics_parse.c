/* libFuzzer target for the engine metrics parser (src/metrics/parse.c),
 * the load normaliser built on it (src/metrics/load.c) and kvgate
 * autoscale's reading of a gateway's /metrics (src/autoscale/sources.c:
 * every model's and one model's series, the SLO growth between two reads,
 * a name's alias or split in kvgate_model_alias_info):
 * all read /metrics bodies from engines and gateways, which are outside
 * bytes. The input is copied into an
 * exactly sized heap buffer so ASan flags any read past the end; the parser
 * is driven past errors too, since callers may skip bad lines. Checks the
 * invariants a caller relies on: bounded label counts, views inside the
 * input or the scratch space, known bits matching non-NaN values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/sources.h"
#include "base/err.h"
#include "metrics/load.h"
#include "metrics/parse.h"

static int inside(const char *p, size_t n, const char *lo, size_t len)
{
    return p >= lo && p + n <= lo + len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);

    static struct kvg_metrics_parser ps;
    static struct kvg_metrics_sample s;
    kvg_metrics_parser_init(&ps, text, size);
    size_t steps = 0;
    int rc;
    while ((rc = kvg_metrics_parser_next(&ps, &s)) != 0) {
        if (++steps > size + 1) abort(); /* every call consumes at least one line */
        if (rc < 0) {
            if (rc != KVG_EPARSE && rc != KVG_ETOOBIG) abort();
            continue;
        }
        if (!s.name.len || !inside(s.name.p, s.name.len, text, size)) abort();
        if (s.nlabels > KVG_METRICS_PARSE_MAX_LABELS) abort();
        for (size_t i = 0; i < s.nlabels; i++) {
            const struct kvg_str *v = &s.labels[i].value;
            if (!inside(s.labels[i].name.p, s.labels[i].name.len, text, size)) abort();
            if (v->len && !inside(v->p, v->len, text, size) &&
                !inside(v->p, v->len, ps.scratch, sizeof ps.scratch))
                abort();
        }
    }

    struct kvg_metrics_load l;
    rc = kvg_metrics_load_parse(text, size, &l);
    if (rc < 0 && (l.known || l.flavor != KVG_METRICS_FLAVOR_UNKNOWN)) abort();
    if (((l.known & KVG_METRICS_HAS_WAITING) != 0) == isnan(l.waiting)) abort();
    if (((l.known & KVG_METRICS_HAS_RUNNING) != 0) == isnan(l.running)) abort();
    if (((l.known & KVG_METRICS_HAS_KV_USAGE) != 0) == isnan(l.kv_usage)) abort();
    if ((l.known & KVG_METRICS_HAS_KV_USAGE) && !(l.kv_usage >= 0 && l.kv_usage <= 1)) abort();
    if ((l.known & KVG_METRICS_HAS_WAITING) && !(l.waiting >= 0)) abort();

    /* The gateway reading: the text as two reads (its halves), each for
     * every model and for model "a"; their SLO growth judged. */
    static struct kvg_autoscale_gw_read r[2][2];
    size_t half = size / 2;
    for (int m = 0; m < 2; m++) {
        kvg_autoscale_gw_parse(text, half, m ? "a" : NULL, &r[m][0]);
        kvg_autoscale_gw_parse(text + half, size - half, m ? "a" : NULL, &r[m][1]);
        for (int k = 0; k < 2; k++) {
            const struct kvg_autoscale_gw_read *g = &r[m][k];
            if (g->ttft.n > KVG_AUTOSCALE_HIST_BUCKETS || g->itl.n > KVG_AUTOSCALE_HIST_BUCKETS)
                abort();
            if (!(g->requests >= 0) || !(g->queued >= 0)) abort();
            for (int i = 0; i < 2; i++) /* a target is one the text said (> 0), or 0 */
                if (!(g->slo_target[i] >= 0) || isinf(g->slo_target[i])) abort();
            if (!g->ttft.bad)
                for (size_t i = 1; i < g->ttft.n; i++)
                    if (!(g->ttft.le[i] > g->ttft.le[i - 1])) abort();
        }
        struct kvg_autoscale_slo_delta d;
        if (!kvg_autoscale_slo_delta(&r[m][1], &r[m][0], 1, 0.05, &d) &&
            (d.finished < 0 || d.ttft < 0 || d.itl < 0 || d.either < 0 || d.ttft > d.finished))
            abort();
    }
    /* Alias "a" in the whole text: a kind, the served name terminated
     * within its buffer, "" when none. */
    char to[16];
    int kind = kvg_autoscale_gw_alias(text, size, "a", to, sizeof to);
    if (kind < 0 || kind > KVG_AUTOSCALE_SPLIT || strnlen(to, sizeof to) == sizeof to ||
        (!kind && to[0]) || (kind && !to[0]))
        abort();
    free(text);
    return 0;
}
