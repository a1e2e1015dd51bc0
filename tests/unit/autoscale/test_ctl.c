/* The controller and its YAML: pools, ticks, inferred starts and their
 * learning, the JSON for /autoscale and KEDA. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "autoscale/ctl.h"
#include "base/err.h"

static const char *yaml_ok = "interval_secs: 2\n"
                             "actuator: external\n"
                             "pools:\n"
                             "  - name: agg\n"
                             "    model: qwen2.5-7b\n"
                             "    planner: kvgate\n"
                             "    min_replicas: 1\n"
                             "    max_replicas: 8\n"
                             "    ttft_secs: 1\n"
                             "    itl_secs: 0.05\n"
                             "    prefill_tokens_per_sec: 10000\n"
                             "    decode_tokens_per_sec: 1000\n"
                             "    headroom: 0\n"
                             "    cold_cache_penalty: 0\n"
                             "    node: warm\n"
                             "  - name: q\n"
                             "    planner: queue\n"
                             "    queue_preset: waiting\n"
                             "    queue_down_window_secs: 15\n"
                             "    forecast_window_secs: 20\n";

TEST(config_parses_and_refuses)
{
    struct kvg_autoscale_config c;
    char err[256] = "";
    CHECK_INT(kvg_autoscale_config_parse(yaml_ok, strlen(yaml_ok), &c, err, sizeof err), 0);
    CHECK_INT(c.npools, 2);
    CHECK_NEAR(c.interval_s, 2, 0);
    CHECK_STR(c.pools[0].name, "agg");
    CHECK_STR(c.pools[0].opts.model, "qwen2.5-7b");
    CHECK_INT(c.pools[0].opts.max_replicas, 8);
    CHECK_INT(c.pools[0].node, KVG_AUTOSCALE_WARM);
    CHECK_STR(c.pools[1].opts.queue_preset, "waiting");
    CHECK_NEAR(c.pools[1].opts.queue_down_window_s, 15, 0);
    CHECK_NEAR(c.pools[1].opts.queue_cooldown_s, 300, 0); /* the default stays */
    CHECK_NEAR(c.pools[1].opts.window_s, 20, 0);
    CHECK_NEAR(c.pools[0].opts.window_s, 300, 0);
    const char *bad[] = {"pools:\n  - name: a\n    max_replica: 3\n", /* typo */
                         "pools:\n  - name: a\n    role: both\n",
                         "pools:\n  - name: a\n  - name: a\n",
                         "pools:\n  - name: a\n    min_replicas: 5\n    max_replicas: 2\n",
                         "interval_secs: fast\n",
                         "pools:\n  - name: a\n    forecast_window_secs: 0\n", /* under 1 s */
                         "pools: [1, 2\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK(kvg_autoscale_config_parse(bad[i], strlen(bad[i]), &c, err, sizeof err) < 0);
        CHECK(err[0] != 0);
    }
}

TEST(ctl_refuses_unknown_planner_and_actuator)
{
    struct kvg_autoscale_config c;
    char err[256];
    const char *y = "pools:\n  - name: a\n    planner: hpa\n";
    CHECK_INT(kvg_autoscale_config_parse(y, strlen(y), &c, err, sizeof err), 0);
    struct kvg_autoscale_ctl *ctl;
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "hpa") != NULL);
    y = "actuator: hpa\n";
    CHECK_INT(kvg_autoscale_config_parse(y, strlen(y), &c, err, sizeof err), 0);
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), KVG_ECONFIG);
}

static struct kvg_autoscale_signals sig(double now, uint32_t ready, double rate)
{
    struct kvg_autoscale_signals s;
    memset(&s, 0, sizeof s);
    s.now = now;
    s.ready = ready;
    s.arrival_rate = rate;
    s.input_tps = rate * 2000;
    s.output_tps = rate * 100;
    s.isl = 2000;
    s.osl = 100;
    s.ttft_mean = s.ttft_p90 = s.itl_mean = s.itl_p90 = s.slo_miss = s.slo_miss_ttft =
        s.slo_miss_itl = s.slo_miss_prefill = s.slo_miss_decode = -1;
    return s;
}

TEST(ctl_infers_starts_and_learns_their_time)
{
    struct kvg_autoscale_config c;
    char err[256];
    CHECK_INT(kvg_autoscale_config_parse(yaml_ok, strlen(yaml_ok), &c, err, sizeof err), 0);
    struct kvg_autoscale_ctl *ctl;
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), 0);
    CHECK_INT(kvg_autoscale_ctl_find(ctl, "agg"), 0);
    CHECK_INT(kvg_autoscale_ctl_find(ctl, "nope"), -1);
    double desired, ready;
    kvg_autoscale_ctl_counts(ctl, 0, &desired, &ready);
    CHECK_NEAR(desired, -1, 0);
    /* 10 req/s: 2 + 1 = 3 replicas' worth on 1 ready -> 3, two starts */
    struct kvg_autoscale_signals s = sig(0, 1, 10);
    struct kvg_autoscale_decision d;
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    CHECK_INT(d.desired, 3);
    CHECK_INT(ctl->pools[0].nstart, 2);
    kvg_autoscale_ctl_counts(ctl, 0, &desired, &ready);
    CHECK_NEAR(desired, 3, 0);
    CHECK_NEAR(ready, 1, 0);
    /* While they start, the planner sees them: no more asked for. */
    s = sig(15, 1, 10);
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    CHECK_INT(d.desired, 3);
    CHECK_INT(ctl->pools[0].nstart, 2);
    /* Both ready at 60 s: the start-up model has two 60 s samples. */
    s = sig(60, 3, 10);
    s.slo_miss_ttft = 0.125;    /* shown as measured; the ITL share unknown: null */
    s.slo_miss_decode = 0.0625; /* the decode leg's, measured; the prefill leg's null */
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    CHECK_INT(ctl->pools[0].nstart, 0);
    CHECK_INT(kvg_autoscale_startup_samples(&ctl->su, "qwen2.5-7b", KVG_AUTOSCALE_WARM), 2);
    cJSON *j = kvg_autoscale_ctl_json(ctl);
    CHECK(j != NULL);
    cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "pools"), 0);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(p0, "planner")), "kvgate");
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(p0, "desired")), 3, 0);
    cJSON *sj = cJSON_GetObjectItem(p0, "signals");
    CHECK(sj != NULL);
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(sj, "slo_miss_ttft")), 0.125, 0);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(sj, "slo_miss_itl")));
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(sj, "slo_miss_decode")), 0.0625, 0);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(sj, "slo_miss_prefill")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(sj, "slo_miss")));
    cJSON *dec = cJSON_GetObjectItem(p0, "decisions");
    CHECK(cJSON_GetArraySize(dec) >= 2);
    CHECK(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(dec, 0), "reason"))) >
          10);
    cJSON_Delete(j);
    j = kvg_autoscale_ctl_keda_json(ctl);
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(
                   cJSON_GetObjectItem(cJSON_GetObjectItem(j, "pools"), "agg"), "desiredReplicas")),
               3, 0);
    /* the queue pool never ticked: its min counts */
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "desiredReplicas")), 4, 0);
    cJSON_Delete(j);
    kvg_autoscale_ctl_free(ctl);
}

TEST(ctl_dry_run_infers_nothing)
{
    struct kvg_autoscale_config c;
    char err[256];
    CHECK_INT(kvg_autoscale_config_parse(yaml_ok, strlen(yaml_ok), &c, err, sizeof err), 0);
    c.dry_run = 1;
    struct kvg_autoscale_ctl *ctl;
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), 0);
    struct kvg_autoscale_signals s = sig(0, 1, 10);
    struct kvg_autoscale_decision d;
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    CHECK_INT(d.desired, 3);
    CHECK_INT(ctl->pools[0].nstart, 0);
    kvg_autoscale_ctl_free(ctl);
}

/* signals.young live: the replicas the controller saw become ready, for
 * young_secs, as the benchmark counts them; not those ready at its first
 * tick, never a decode pool's, and no more than are ready. */
TEST(ctl_counts_young_replicas_it_saw_become_ready)
{
    const char *y = "actuator: external\n"
                    "pools:\n"
                    "  - name: p\n"
                    "    role: prefill\n"
                    "    young_secs: 60\n"
                    "  - name: d\n"
                    "    role: decode\n";
    struct kvg_autoscale_config c;
    char err[256];
    CHECK_INT(kvg_autoscale_config_parse(y, strlen(y), &c, err, sizeof err), 0);
    c.dry_run = 1;
    CHECK_NEAR(c.pools[0].opts.young_s, 60, 0);
    struct kvg_autoscale_ctl *ctl;
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), 0);
    struct kvg_autoscale_decision d;
    /* 2 at the start (not young), 2 more at 15 s, 1 at 30 s; at 50 s four
     * leave, and the one kept young is the youngest, until 90 s. */
    const uint32_t ready[] = {2, 4, 5, 1, 1, 1};
    const double at[] = {0, 15, 30, 50, 89, 91};
    const uint32_t young_p[] = {0, 2, 3, 1, 1, 0};
    for (size_t k = 0; k < sizeof ready / sizeof ready[0]; k++)
        for (size_t i = 0; i < 2; i++) {
            struct kvg_autoscale_signals s = sig(at[k], ready[k], 1);
            CHECK_INT(kvg_autoscale_ctl_tick(ctl, i, &s, &d), 0);
            CHECK_INT(s.young, i == 0 ? young_p[k] : 0);
            CHECK_INT(ctl->pools[i].sig.young, s.young);
        }
    cJSON *j = kvg_autoscale_ctl_json(ctl);
    CHECK(j != NULL);
    cJSON *sj =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "pools"), 0), "signals");
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(sj, "young")), 0, 0);
    cJSON_Delete(j);
    kvg_autoscale_ctl_free(ctl);
}

/* A pool whose replicas all restore from a checkpoint plans on the restore
 * class's lead (the planner's horizon), as GET /autoscale's lead shows;
 * before, only cold and fetch reached the planner and it planned on a warm
 * start's minutes. */
TEST(ctl_pool_node_sets_the_planners_lead)
{
    const char *y = "interval_secs: 15\n"
                    "actuator: external\n"
                    "pools:\n"
                    "  - name: r\n"
                    "    model: qwen2.5-7b\n"
                    "    planner: kvgate\n"
                    "    node: restore\n"
                    "  - name: w\n"
                    "    model: qwen2.5-7b\n"
                    "    planner: kvgate\n"
                    "    node: warm\n";
    struct kvg_autoscale_config c;
    char err[256];
    CHECK_INT(kvg_autoscale_config_parse(y, strlen(y), &c, err, sizeof err), 0);
    struct kvg_autoscale_ctl *ctl;
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), 0);
    struct kvg_autoscale_startup m;
    kvg_autoscale_startup_init(&m);
    double restore = kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_RESTORE);
    double warm = kvg_autoscale_startup_lead(&m, "qwen2.5-7b", KVG_AUTOSCALE_WARM);
    CHECK(restore < warm);
    struct kvg_autoscale_signals s = sig(0, 1, 2);
    struct kvg_autoscale_decision d;
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    /* Restoring, the pool reacts and plans every 5 s: its horizon is its lead
     * plus that. */
    CHECK_NEAR(d.horizon_s, restore + 5, 1e-6);
    s = sig(0, 1, 2);
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 1, &s, &d), 0);
    CHECK_NEAR(d.horizon_s, warm + 15, 1e-6);
    kvg_autoscale_ctl_free(ctl);
}
