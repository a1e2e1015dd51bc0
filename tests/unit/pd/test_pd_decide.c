/* The pure PD decisions: llm-d's decider, locality of labels, and the
 * decode pick (room first, locality within a load bound). */
#include "support/test.h"

#include <stdio.h>
#include <string.h>

#include "pd/pd.h"

TEST(decider_threshold)
{
    CHECK_INT(kvg_pd_decide(2000, 0, 512), KVG_PD_PREFILL_DECODE);
    CHECK_INT(kvg_pd_decide(511, 0, 512), KVG_PD_DECODE_ONLY);
    CHECK_INT(kvg_pd_decide(512, 0, 512), KVG_PD_PREFILL_DECODE);
    /* A long prompt mostly cached on the decode side needs no prefill hop. */
    CHECK_INT(kvg_pd_decide(4000, 3600, 512), KVG_PD_DECODE_ONLY);
    CHECK_INT(kvg_pd_decide(100, 400, 512), KVG_PD_DECODE_ONLY);
    CHECK_INT(kvg_pd_decide(10, 0, 0), KVG_PD_PREFILL_DECODE); /* threshold 0: always split */
    CHECK_STR(kvg_pd_decision_name(KVG_PD_DECODE_ONLY), "decode_only");
    CHECK_STR(kvg_pd_decision_name(KVG_PD_PREFILL_DECODE), "prefill_decode");
}

TEST(locality_levels)
{
    CHECK_INT(kvg_pd_locality("node=n1,rack=r1,zone=z1", "zone=z1,rack=r1,node=n1"), 0);
    CHECK_INT(kvg_pd_locality("rack=r1,zone=z1", "rack=r1,zone=z1"), 1);
    CHECK_INT(kvg_pd_locality("rack=r1,zone=z1", "rack=r2,zone=z1"), 2);
    CHECK_INT(kvg_pd_locality("rack=r1,zone=z1", "rack=r1x,zone=z2"), 3);
    CHECK_INT(kvg_pd_locality("", ""), 3);
    CHECK_INT(kvg_pd_locality("rack=r1", NULL), 3);
}

static struct kvg_worker *W[4];

static void workers(const char *const *labels, int n)
{
    for (int i = 0; i < n; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", 9100 + i);
        CHECK_INT(kvg_worker_new(url, &W[i]), 0);
        snprintf(W[i]->labels, sizeof W[i]->labels, "%s", labels[i]);
    }
}

static int pick(struct kvg_policy *p, int n, const char *near)
{
    struct kvg_route_ctx c = {.now_ms = 1000, .load_max_age_ms = 5000, .near_labels = near};
    return p->ops->select(p, W, (size_t)n, &c, NULL);
}

TEST(decode_pick_prefers_room_then_locality)
{
    const char *labels[] = {"rack=r1,zone=z1", "rack=r2,zone=z1", "rack=r3,zone=z2"};
    workers(labels, 3);
    struct kvg_policy *p;
    CHECK_INT(kvg_pd_decode_policy_new(1.5, &p), 0);
    /* All idle: the prefill's rack wins, then its zone. */
    CHECK_INT(pick(p, 3, "rack=r1,zone=z1"), 0);
    CHECK_INT(pick(p, 3, "rack=r9,zone=z1"), 0); /* first of the same zone */
    CHECK_INT(pick(p, 3, "rack=r3,zone=z2"), 2);
    /* No locality hint: the least loaded. */
    atomic_store(&W[0]->in_flight, 3);
    atomic_store(&W[1]->in_flight, 1);
    CHECK_INT(pick(p, 3, NULL), 2);
    /* Within the bound (3 <= 1.5 x 2 + 1) the same rack still wins... */
    atomic_store(&W[1]->in_flight, 2);
    atomic_store(&W[2]->in_flight, 2);
    CHECK_INT(pick(p, 3, "rack=r1,zone=z1"), 0);
    /* ...but never past it: locality does not pile requests onto one decode. */
    atomic_store(&W[0]->in_flight, 9);
    CHECK_INT(pick(p, 3, "rack=r1,zone=z1"), 1); /* same zone, least loaded */
    /* KV blocks in use count as well as requests. */
    atomic_store(&W[0]->in_flight, 0);
    atomic_store(&W[1]->in_flight, 0);
    atomic_store(&W[2]->in_flight, 0);
    atomic_store(&W[0]->active_decode_blocks, 64 * 8);
    CHECK_INT(pick(p, 3, NULL), 1);
    p->ops->destroy(p);
    for (int i = 0; i < 3; i++) kvg_worker_unref(W[i]);
}

TEST(pd_config_defaults)
{
    struct kvg_pd_config c;
    kvg_pd_config_default(&c);
    CHECK_INT(c.threshold_tokens, 512);
    CHECK_INT(c.hold_timeout_ms, 480000);
    CHECK_STR(kvg_pd_state_name(KVG_PD_CANCELLED), "cancelled");
}

TEST(early_rejection_prediction)
{
    struct kvg_pd_decode_view v[2] = {{90, 100}, {40, 100}};
    /* 40 in use + 10 for the request fits under 95. */
    CHECK_INT(kvg_pd_has_room(v, 2, 10, 0, 0.1, 10, 0.95), 1);
    /* Blocks committed to prefills in flight land on the decodes too. */
    CHECK_INT(kvg_pd_has_room(v, 2, 10, 100, 0.1, 10, 0.95), 0);
    /* ...unless the running requests finish first: a prefill as long as a
     * decode frees everything running now. */
    CHECK_INT(kvg_pd_has_room(v, 2, 10, 100, 10, 10, 0.95), 1);
    v[1].used_blocks = 90;
    CHECK_INT(kvg_pd_has_room(v, 2, 10, 0, 0.1, 10, 0.95), 0);
    /* An unknown capacity predicts nothing: admit. */
    v[1].capacity_blocks = 0;
    CHECK_INT(kvg_pd_has_room(v, 2, 10, 0, 0.1, 10, 0.95), 1);
    CHECK_INT(kvg_pd_has_room(NULL, 0, 10, 0, 0.1, 10, 0.95), 1);
}
