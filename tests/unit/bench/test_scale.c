/* The autoscaling benchmark on a short day: structure of the results and
 * reports, and determinism per seed (not timing). */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/scale/scale.h"

static struct kvg_bench_scale_opts short_day(void)
{
    struct kvg_bench_scale_opts o;
    kvg_bench_scale_opts_default(&o);
    o.stress = 1; /* the machinery on a short day of a few fixed bursts */
    o.day_s = 900;
    o.mean_rate = 6;
    o.bursts = 2;
    o.burst_s = 30;
    o.startup_fixed_s = 60;
    o.timeline_points = 48;
    o.knee_rps = 2.0;
    return o;
}

static void run(const struct kvg_bench_scale_opts *o, const char *planner,
                struct kvg_bench_scale_result *r)
{
    struct kvg_bench_scale_opts c = *o;
    snprintf(c.planner, sizeof c.planner, "%s", planner);
    char err[256] = "";
    CHECK_INT(kvg_bench_scale_run(&c, r, err, sizeof err), 0);
    CHECK_INT(r->status, 0);
}

TEST(shape_is_deepseeks)
{
    double mx = 0, sum = 0;
    for (int i = 0; i < 24 * 60; i++) {
        double v = kvg_bench_scale_shape(i / 60.0);
        sum += v;
        if (v > mx) mx = v;
    }
    CHECK_NEAR(sum / (24 * 60), 1.0, 0.01);
    CHECK_NEAR(mx, 1.23, 0.02);
    CHECK(kvg_bench_scale_shape(4) < 0.75); /* the night trough */
}

TEST(each_planner_runs_and_fills_the_result)
{
    struct kvg_bench_scale_opts o = short_day();
    const char *names[] = {"static", "queue", "queue-waiting", "sla", "kvgate"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct kvg_bench_scale_result r;
        run(&o, names[i], &r);
        CHECK_STR(r.planner, names[i]);
        CHECK(r.requests > 1000);
        CHECK(r.met <= r.requests);
        CHECK(r.slo_attainment >= 0 && r.slo_attainment <= 1);
        CHECK(r.gpu_hours > 0);
        CHECK_NEAR(r.gpu_hours, 2 * r.replica_hours, 1e-9);
        CHECK(r.ttft_p90_s > 0);
        CHECK(r.cache_hit > 0.2); /* the shared prefixes hit */
        CHECK_INT(r.n, 48);
        CHECK(r.ready[r.n - 1] >= 1);
        if (!strcmp(names[i], "static")) CHECK_INT(r.scale_events, 0);
        kvg_bench_scale_result_free(&r);
    }
    struct kvg_bench_scale_result r;
    struct kvg_bench_scale_opts c = o;
    snprintf(c.planner, sizeof c.planner, "hpa");
    char err[64];
    CHECK_INT(kvg_bench_scale_run(&c, &r, err, sizeof err), 0);
    CHECK_INT(r.status, KVG_ENOTFOUND);
    kvg_bench_scale_result_free(&r);
}

TEST(deterministic_per_seed)
{
    struct kvg_bench_scale_opts o = short_day();
    o.startup_fixed_s = 0; /* drawn from the start-up model */
    o.cold_share = 0.5;
    struct kvg_bench_scale_result a, b, c;
    run(&o, "kvgate", &a);
    run(&o, "kvgate", &b);
    CHECK_INT(a.requests, b.requests);
    CHECK_INT(a.met, b.met);
    CHECK_INT(a.scale_events, b.scale_events);
    CHECK_NEAR(a.gpu_hours, b.gpu_hours, 0);
    CHECK_NEAR(a.ttft_p90_s, b.ttft_p90_s, 0);
    for (size_t i = 0; i < a.n; i++) CHECK_NEAR(a.ready[i], b.ready[i], 0);
    o.seed = 2;
    run(&o, "kvgate", &c);
    CHECK(c.requests != a.requests || c.met != a.met);
    kvg_bench_scale_result_free(&a);
    kvg_bench_scale_result_free(&b);
    kvg_bench_scale_result_free(&c);
}

TEST(calibration_is_deterministic)
{
    struct kvg_bench_scale_opts o = short_day();
    double k1 = 0, k2 = 0;
    CHECK_INT(kvg_bench_scale_calibrate(&o, &k1), 0);
    CHECK_INT(kvg_bench_scale_calibrate(&o, &k2), 0);
    CHECK(k1 > 0.25);
    CHECK_NEAR(k1, k2, 0);
}

TEST(reports_have_the_fields)
{
    struct kvg_bench_scale_opts o = short_day();
    struct kvg_bench_scale_result r[5];
    const char *names[] = {"static", "queue", "sla", "kvgate", "kvgate-noprewarm"};
    for (int i = 0; i < 5; i++) run(&o, names[i], &r[i]);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_json(r, 4, &o, f), 0);
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    CHECK(j && cJSON_IsArray(j));
    CHECK_INT(cJSON_GetArraySize(j), 4);
    const char *keys[] = {"planner", "slo_attainment", "gpu_hours", "scale_events", "ttft_p90_s"};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 5; k++)
            CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(j, i), keys[k]) != NULL);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 3), "planner")),
              "kvgate");
    cJSON_Delete(j);
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_md(r, 5, &o, "kvgate bench --scenario diurnal", "x.svg", f), 0);
    fclose(f);
    CHECK(strstr(buf, "| kvgate |") != NULL);
    CHECK(strstr(buf, "The goal is") != NULL);
    /* kvgate-noprewarm's checks are plain bullets: the verdict stays kvgate's. */
    CHECK(strstr(buf, "Without prewarm the goal is") != NULL);
    CHECK(strstr(buf, "- **met**: kvgate-noprewarm") == NULL);
    CHECK(strstr(buf, "- **not met**: kvgate-noprewarm") == NULL);
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_svg(r, 4, f), 0);
    fclose(f);
    CHECK(strncmp(buf, "<svg", 4) == 0);
    CHECK(strstr(buf, "</svg>") != NULL);
    free(buf);
    CHECK(kvg_bench_scale_goal(r, 4, NULL) >= 0);
    CHECK_INT(kvg_bench_scale_goal(r, 2, NULL), -1);
    for (int i = 0; i < 5; i++) kvg_bench_scale_result_free(&r[i]);
}

TEST(prewarm_warms_new_replicas_before_they_take_traffic)
{
    struct kvg_bench_scale_opts o = short_day();
    o.mean_rate = 12; /* a ramp that needs new replicas */
    struct kvg_bench_scale_result a, b;
    run(&o, "kvgate", &a);
    run(&o, "kvgate-noprewarm", &b);
    CHECK_INT(a.prewarmed, 1);
    CHECK_INT(b.prewarmed, 0);
    CHECK(a.scaled_out > 0);
    CHECK(b.scaled_out > 0);
    /* Prewarmed: the hottest prefixes are cached before the first request,
     * so the first requests already hit; without, it takes traffic to fill. */
    CHECK(a.recovered > 0);
    CHECK(a.recovery_mean_s >= 0);
    CHECK(b.recovered == 0 || a.recovery_mean_s < b.recovery_mean_s);
    CHECK(a.young_ttft_p90_s > 0);
    /* The baselines never prewarm. */
    struct kvg_bench_scale_result s;
    run(&o, "sla", &s);
    CHECK_INT(s.prewarmed, 0);
    /* The per-point misses add up to the run's. */
    double missed = 0, arrived = 0;
    for (size_t i = 0; i < a.n; i++) missed += a.missed[i], arrived += a.arrived[i];
    CHECK_NEAR(arrived, (double)a.requests, 0);
    CHECK_NEAR(missed, (double)(a.requests - a.met), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct kvg_bench_scale_result r[2] = {a, b};
    CHECK_INT(kvg_bench_scale_json(r, 2, &o, f), 0);
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    CHECK(j != NULL);
    cJSON *k = cJSON_GetArrayItem(j, 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(k, "prewarm")));
    CHECK(cJSON_GetObjectItem(k, "hit_recovery_mean_s") != NULL);
    CHECK(cJSON_GetObjectItem(k, "new_replica_ttft_p90_s") != NULL);
    cJSON_Delete(j);
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_timeline_csv(r, 2, f), 0);
    fclose(f);
    CHECK(strncmp(buf, "planner,hour,", 13) == 0);
    CHECK(strstr(buf, "\nkvgate-noprewarm,") != NULL);
    free(buf);
    kvg_bench_scale_result_free(&a);
    kvg_bench_scale_result_free(&b);
    kvg_bench_scale_result_free(&s);
}
