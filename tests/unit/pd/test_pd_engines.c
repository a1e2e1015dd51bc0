/* Router-side detection of a restarted prefill (pd/engines.c). */
#include "support/test.h"

#include <stdio.h>
#include <string.h>

#include "pd/pd_int.h"

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
    CHECK_INT(kvg__pd_engines_new(&pd, NULL), 0);
    char id[64];
    CHECK_INT(kvg_pd_engine_id(&pd, "http://p1", id, sizeof id), 0);
    CHECK_STR(id, "");
    kvg__pd_engine_seen(&pd, "http://p1", "e1");
    kvg__pd_engine_seen(&pd, "http://p2", "f1");
    kvg__pd_engine_seen(&pd, "http://p1", ""); /* an answer naming none changes nothing */
    CHECK_INT(kvg_pd_engine_id(&pd, "http://p1", id, sizeof id), 1);
    CHECK_STR(id, "e1");

    struct kvg_pd_req r;
    decode_waiting(&r, "http://p1", "e1");
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 0); /* same engine: the blocks are held */
    CHECK_INT(r.state, KVG_PD_DECODE);
    kvg__pd_engine_seen(&pd, "http://p1", "e2"); /* p1 restarted */
    CHECK_INT(kvg_pd_decode_recheck(&pd, &r), 1);
    CHECK_INT(r.state, KVG_PD_DECIDE); /* its prefill runs again */
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
}
