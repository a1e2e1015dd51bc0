/* The offline PD benchmark's engine model (bench/pd/pd.c): every request is
 * accounted for once, a refused decode wastes exactly its prefill, early
 * rejection turns decode refusals into door rejections, and the decode
 * pick's locality shows in the links the transfers take. */
#include "support/test.h"

#include "bench/pd/pd_int.h"

static struct kvg_bench_pd_setup tiny(void)
{
    return (struct kvg_bench_pd_setup){.profile = "tiny",
                                       .requests = 60,
                                       .prompt = 500,
                                       .output = 100,
                                       .seed = 3,
                                       .rate = 50,
                                       .link_bw = 50e9};
}

TEST(pd_overload_accounts_every_request)
{
    struct kvg_bench_pd_setup s = tiny();
    s.np = 3;
    s.nd = 1;
    s.decode_admission = 1;
    struct kvg_bench_pd_stats off, on;
    CHECK_INT(kvg__bench_pd_run(&s, &off), 0);
    CHECK_INT(off.door_rejected, 0);
    CHECK(off.decode_refused > 0); /* the tiny decode holds ~6 of them */
    CHECK_INT(off.served + off.decode_refused, s.requests);
    CHECK_INT(off.wasted_prefill_tokens, (uint64_t)off.decode_refused * s.prompt);
    CHECK_INT(off.ttft.n, off.served);
    s.early_rejection = 1;
    CHECK_INT(kvg__bench_pd_run(&s, &on), 0);
    CHECK(on.door_rejected > 0);
    CHECK_INT(on.served + on.door_rejected + on.decode_refused, s.requests);
    CHECK(on.wasted_prefill_tokens < off.wasted_prefill_tokens);
    kvg__bench_pd_stats_free(&off);
    kvg__bench_pd_stats_free(&on);
}

TEST(pd_locality_picks_the_nearest_decode)
{
    static const char *const labels[] = {"node=a,rack=r1,zone=z1", "node=b,rack=r2,zone=z2",
                                         "node=a,rack=r1,zone=z1", "node=b,rack=r2,zone=z2"};
    struct kvg_bench_pd_setup s = tiny();
    s.requests = 20;
    s.rate = 1;
    s.np = 2;
    s.nd = 2;
    s.labels = labels;
    struct kvg_policy *p;
    CHECK_INT(kvg_pd_decode_policy_new(1e9, &p), 0);
    s.decode_pick = p;
    s.near = 1;
    struct kvg_bench_pd_stats st;
    CHECK_INT(kvg__bench_pd_run(&s, &st), 0);
    CHECK_INT(st.by_link[0], s.requests); /* each prefill's own node */
    CHECK_INT(st.served, s.requests);
    kvg__bench_pd_stats_free(&st);
    s.near = 0; /* no locality: some transfers cross zones */
    CHECK_INT(kvg__bench_pd_run(&s, &st), 0);
    CHECK(st.by_link[3] > 0);
    CHECK_INT(st.by_link[0] + st.by_link[3], s.requests);
    kvg__bench_pd_stats_free(&st);
    p->ops->destroy(p);
}

TEST(pd_aggregated_serves_all)
{
    struct kvg_bench_pd_setup s = tiny();
    s.rate = 2;
    s.nd = 2;
    struct kvg_bench_pd_stats st;
    CHECK_INT(kvg__bench_pd_run(&s, &st), 0);
    CHECK_INT(st.served, s.requests);
    CHECK_INT(st.xfer.n, 0);
    CHECK_INT(st.itl.n, s.requests * (s.output - 1));
    kvg__bench_pd_stats_free(&st);
    s.profile = "no-such-profile";
    CHECK_INT(kvg__bench_pd_run(&s, &st), -1);
    kvg__bench_pd_stats_free(&st);
}
