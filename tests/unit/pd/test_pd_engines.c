/* Router-side detection of a restarted prefill (pd/engines.c), counted in
 * the series of the model whose request saw it (pd/series.c). */
#include "support/test.h"

#include <stdio.h>
#include <string.h>

#include "metrics/metrics.h"
#include "pd/pd_int.h"

/* A prefill answer of a request of model ms from url naming engine. */
static void seen(struct kvg_pd *pd, const char *url, const char *engine, struct kvg_pd_series *ms)
{
    struct kvg_pd_req r;
    memset(&r, 0, sizeof r);
    snprintf(r.prefill_url, sizeof r.prefill_url, "%s", url);
    snprintf(r.engine_id, sizeof r.engine_id, "%s", engine);
    r.ms = ms;
    kvg__pd_engine_seen(pd, &r);
}

static void decode_waiting(struct kvg_pd_req *r, const char *url, const char *engine)
{
    memset(r, 0, sizeof *r);
    r->state = KVG_PD_DECODE;
    r->decision = KVG_PD_PREFILL_DECODE;
    snprintf(r->prefill_url, sizeof r->prefill_url, "%s", url);
    snprintf(r->engine_id, sizeof r->engine_id, "%s", engine);
}

TEST(engine_ids_learnt_and_restart_detected)
{
    struct kvg_pd pd = {0};
    struct kvg_metrics_registry *reg;
    CHECK_INT(kvg_metrics_registry_new(0, &reg), 0);
    CHECK_INT(kvg__pd_series_init(&pd, reg), 0);
    CHECK_INT(kvg__pd_engines_new(&pd), 0);
    struct kvg_pd_series *m1 = kvg_pd_series_for(&pd, "m1"), *m2 = kvg_pd_series_for(&pd, "m2");
    CHECK(m1 && m2 && m1 != m2);
    CHECK(kvg_pd_series_for(&pd, "m1") == m1); /* one set per model */
    char id[64];
    CHECK_INT(kvg_pd_engine_id(&pd, "http://p1", id, sizeof id), 0);
    CHECK_STR(id, "");
    seen(&pd, "http://p1", "e1", m1);
    seen(&pd, "http://p2", "f1", m1);
    seen(&pd, "http://p1", "", m1); /* an answer naming none changes nothing */
    CHECK_INT(kvg_pd_engine_id(&pd, "http://p1", id, sizeof id), 1);
    CHECK_STR(id, "e1");

    struct kvg_pd_req r;
    decode_waiting(&r, "http://p1", "e1");
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 0); /* same engine: the blocks are held */
    CHECK_INT(r.state, KVG_PD_DECODE);
    seen(&pd, "http://p1", "e2", m2); /* p1 restarted, seen by a request of m2 */
    CHECK_NEAR(kvg_metrics_value(m2->s[KVG_PD_S_RESTARTS]), 1, 0);
    CHECK_NEAR(kvg_metrics_value(m1->s[KVG_PD_S_RESTARTS]), 0, 0);
    r.ms = m1;
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 1);
    CHECK_NEAR(kvg_metrics_value(m1->s[KVG_PD_S_RERUNS]), 1, 0); /* the waiting request's model */
    CHECK_INT(r.state, KVG_PD_DECIDE);                           /* its prefill runs again */
    CHECK_STR(r.engine_id, "");
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 0); /* once */

    decode_waiting(&r, "http://p2", "f1");
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 0); /* the other prefill did not restart */
    decode_waiting(&r, "http://p1", "e1");
    r.decision = KVG_PD_DECODE_ONLY;
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 0); /* no prefill: nothing pulled */
    decode_waiting(&r, "http://p1", "e1");
    r.concurrent = 1;
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 0); /* SGLang pairs are never retried */
    decode_waiting(&r, "http://p3", "g1");
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 0); /* an engine never seen: nothing known */
    kvg__pd_engines_free(&pd);
    struct kvg_buf out;
    kvg_buf_init(&out, 0);
    CHECK_INT(kvg_metrics_render(reg, &out), 0);
    CHECK(strstr(out.data, "kvgate_pd_prefill_restarts_total{model=\"m2\"} 1\n") != NULL);
    CHECK(strstr(out.data,
                 "kvgate_pd_decisions_total{model=\"m1\",decision=\"decode_only\"} 0\n") != NULL);
    CHECK(strstr(out.data, "kvgate_pd_leg_outcomes_total{model=\"m2\",leg=\"decode\","
                           "outcome=\"client_gone\"} 0\n") != NULL);
    kvg_buf_free(&out);
    kvg__pd_series_free(&pd);
    kvg_metrics_registry_free(reg);
}
