/* Routing mode per worker (router/mode.h): each rule on made-up counters. */
#include "support/test.h"

#include <string.h>

#include "router/mode.h"

static struct kvg_worker *mk(void)
{
    struct kvg_worker *w;
    CHECK_INT(kvg_worker_new("http://127.0.0.1:9000", &w), 0);
    return w;
}

static struct kvg_route_mode_in precise(const struct kvg_kv_sub_stats *st, uint64_t now)
{
    return (struct kvg_route_mode_in){.policy = "kv_aware",
                                      .reads_prefix = 1,
                                      .precise = 1,
                                      .events = st,
                                      .block_size = 16,
                                      .now_ms = now};
}

TEST(load_only_and_approximate)
{
    struct kvg_worker *w = mk();
    char why[200];
    struct kvg_route_mode_in in = {.policy = "round_robin", .now_ms = 1000};
    CHECK_INT(kvg_route_mode_get(w, NULL, 0), -1);
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_LOAD_ONLY);
    in.reads_prefix = 1;
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_APPROXIMATE);
    CHECK_INT(kvg_route_mode_get(w, why, sizeof why), KVG_MODE_APPROXIMATE);
    CHECK(strstr(why, "no KV events") != NULL);
    /* Token counts that differ do not degrade a view built from our own ids. */
    for (int i = 0; i < 50; i++) kvg_route_mode_usage(w, 10, -1, 11, 16);
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_APPROXIMATE);
    CHECK_STR(kvg_route_mode_name(KVG_MODE_LOAD_ONLY), "load_only");
    kvg_worker_unref(w);
}

TEST(exact_then_degraded_by_block_size)
{
    struct kvg_worker *w = mk();
    struct kvg_kv_sub_stats st = {.batches = 5, .last_seq = 4, .active = 1};
    struct kvg_route_mode_in in = precise(&st, 1000);
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_EXACT);
    w->load.block_size = 32; /* what the scraper read from the engine */
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_DEGRADED);
    char why[200];
    kvg_route_mode_get(w, why, sizeof why);
    CHECK(strstr(why, "block size mismatch") != NULL);
    w->load.block_size = 16;
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_EXACT);
    st.mismatches = 3; /* the index skipped stored blocks it could not split */
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_DEGRADED);
    kvg_worker_unref(w);
}

TEST(no_events_after_n_good_answers)
{
    struct kvg_worker *w = mk();
    struct kvg_kv_sub_stats st = {.last_seq = -1, .active = 1};
    struct kvg_route_mode_in in = precise(&st, 1000);
    atomic_store(&w->ok_requests, 19);
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_EXACT);
    atomic_store(&w->ok_requests, 20);
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_DEGRADED);
    st.batches = 1;
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_EXACT);
    st.batches = 0;
    /* Answers served from the engine's cache (under one block left to
     * compute) stored nothing, so they owed no event: a warm engine behind a
     * fresh gateway is not degraded for its silence. */
    for (int i = 0; i < 15; i++) kvg_route_mode_usage(w, 100, 90, 100, 16);
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_EXACT);
    kvg_route_mode_usage(w, 100, 84, 100, 16); /* 16 uncached: a full block stored */
    kvg_route_mode_usage(w, 100, -1, 100, 16); /* cached not reported: it may have */
    atomic_store(&w->ok_requests, 35);         /* 35 - 15 = 20 owed an event */
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_DEGRADED);
    char why[200];
    kvg_route_mode_get(w, why, sizeof why);
    CHECK(strstr(why, "after 20 successful requests that stored new blocks") != NULL);
    st.batches = 1;
    /* A worker the pool routes on events for, but which has none configured. */
    in.events = NULL;
    CHECK_INT(kvg_route_mode_update(w, &in, NULL), KVG_MODE_DEGRADED);
    kvg_worker_unref(w);
}

TEST(lost_events_hold_then_recover)
{
    struct kvg_worker *w = mk();
    struct kvg_kv_sub_stats st = {.batches = 5, .last_seq = 4, .active = 1};
    struct kvg_route_mode_in in = precise(&st, 1000);
    struct kvg_route_mode_limits lim = {.loss_hold_ms = 500};
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_EXACT);
    st.gaps = 1;
    st.drops = 1; /* a gap without replay: entries dropped */
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_DEGRADED);
    in.now_ms = 1400;
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_DEGRADED);
    in.now_ms = 1600;
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_EXACT);
    /* A gap with a replay endpoint, not yet repaired, then repaired in full. */
    in.has_replay = 1;
    st.gaps = 2;
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_DEGRADED);
    st.replays = 1;
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_EXACT);
    kvg_worker_unref(w);
}

TEST(token_count_mismatch_share)
{
    struct kvg_worker *w = mk();
    struct kvg_kv_sub_stats st = {.batches = 5, .last_seq = 4, .active = 1};
    struct kvg_route_mode_in in = precise(&st, 1000);
    struct kvg_route_mode_limits lim = {.check_window = 100};
    for (int i = 0; i < 95; i++) kvg_route_mode_usage(w, 100, -1, 100, 16);
    for (int i = 0; i < 5; i++) kvg_route_mode_usage(w, 100, -1, 101, 16); /* 5%: a few */
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_EXACT);
    for (int i = 0; i < 10; i++) kvg_route_mode_usage(w, 100, -1, 90, 16);
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_DEGRADED);
    char why[200];
    kvg_route_mode_get(w, why, sizeof why);
    CHECK(strstr(why, "tokenizer mismatch") != NULL);
    CHECK_INT(atomic_load(&w->usage_mismatches), 15);
    /* Counts that agree again age the mismatches out (two windows). */
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < 100; i++) kvg_route_mode_usage(w, 100, -1, 100, 16);
        kvg_route_mode_update(w, &in, &lim);
    }
    CHECK_INT(kvg_route_mode_update(w, &in, &lim), KVG_MODE_EXACT);
    /* An engine that reports no usage (0) is not checked. */
    uint64_t c = atomic_load(&w->usage_checks);
    kvg_route_mode_usage(w, 0, -1, 12, 16);
    CHECK_INT(atomic_load(&w->usage_checks), c);
    kvg_worker_unref(w);
}
