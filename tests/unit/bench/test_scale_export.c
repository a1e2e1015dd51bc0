/* The aggregated day's arrivals export (scale_export.c) against the run of
 * the same options, and --startup-scale reaching the planners' lead time. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/scale/scale.h"

static struct kvg_bench_scale_opts small_day(void)
{
    struct kvg_bench_scale_opts o;
    kvg_bench_scale_opts_default(&o);
    o.day_s = 600; /* the realistic day: a conversation and a heavy-client burst */
    o.mean_rate = 3;
    o.knee_rps = 2.5;
    o.startup_fixed_s = 20;
    o.cold_share = 0;
    o.timeline_points = 48;
    snprintf(o.planner, sizeof o.planner, "kvgate-noprewarm");
    return o;
}

TEST(arrivals_are_the_runs_requests)
{
    struct kvg_bench_scale_opts o = small_day();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    CHECK_INT(kvg_bench_scale_arrivals(&o, f), 0);
    CHECK_INT(fclose(f), 0);
    struct kvg_bench_scale_result r;
    char err[256] = "";
    CHECK_INT(kvg_bench_scale_run(&o, &r, err, sizeof err), 0);

    char *save = NULL, *line = strtok_r(buf, "\n", &save);
    cJSON *h = cJSON_Parse(line);
    CHECK(h != NULL);
    cJSON *day = cJSON_GetObjectItem(h, "day"), *pool = cJSON_GetObjectItem(h, "pool");
    CHECK(day && pool);
    CHECK_NEAR(cJSON_GetObjectItem(day, "day_secs")->valuedouble, 600, 1e-9);
    CHECK_NEAR(cJSON_GetObjectItem(day, "startup_secs")->valuedouble, 20, 1e-9);
    CHECK(cJSON_GetObjectItem(pool, "prefill_tokens_per_sec")->valuedouble > 0);
    CHECK(cJSON_GetObjectItem(pool, "decode_tokens_per_sec")->valuedouble > 0);
    CHECK(cJSON_GetObjectItem(day, "first_replicas")->valuedouble >= 1);
    uint64_t n = 0, heavy = 0;
    double last = 0;
    int sorted = 1, shapes = 1;
    while ((line = strtok_r(NULL, "\n", &save))) {
        cJSON *q = cJSON_Parse(line);
        CHECK(q != NULL);
        if (!q) break;
        double t = cJSON_GetObjectItem(q, "t")->valuedouble;
        int prompt = cJSON_GetObjectItem(q, "prompt_tokens")->valueint;
        int shared = cJSON_GetObjectItem(q, "prefix_tokens")->valueint;
        int out = cJSON_GetObjectItem(q, "output_tokens")->valueint;
        int group = cJSON_GetObjectItem(q, "prefix")->valueint;
        int client = cJSON_GetObjectItem(q, "client")->valueint;
        sorted &= t >= last && t < o.day_s;
        last = t;
        shapes &= shared == (int)o.prefix_len && prompt > shared && out >= 1 &&
                  out <= (int)o.osl_max && group >= 0 && group < (int)o.groups;
        /* A heavy client's requests carry its own system prompt. */
        if (client >= 0) {
            heavy++;
            shapes &= group == (int)o.groups - 1 - client;
        }
        shapes &= !strcmp(cJSON_GetObjectItem(q, "class")->valuestring, "interactive");
        n++;
        cJSON_Delete(q);
    }
    CHECK(sorted);
    CHECK(shapes);
    CHECK(heavy > 0);
    CHECK_INT(n, r.requests);
    CHECK_INT(cJSON_GetObjectItem(day, "requests")->valuedouble, (double)r.requests);
    cJSON_Delete(h);
    kvg_bench_scale_result_free(&r);
    free(buf);
}

/* The lead in the kvgate planner's last reason: "... at +N s ...". */
static int lead_in(const char *reason)
{
    const char *p = strstr(reason, " at +");
    return p ? atoi(p + 5) : -1;
}

TEST(startup_scale_is_the_planners_lead_too)
{
    struct kvg_bench_scale_opts o = small_day();
    snprintf(o.planner, sizeof o.planner, "kvgate");
    struct kvg_bench_scale_result a, b;
    char err[256] = "";
    CHECK_INT(kvg_bench_scale_run(&o, &a, err, sizeof err), 0);
    o.startup_scale = 0.05; /* the warm prior's p90 (343 s) x 0.05: 17 s */
    CHECK_INT(kvg_bench_scale_run(&o, &b, err, sizeof err), 0);
    int la = lead_in(a.last_reason), lb = lead_in(b.last_reason);
    CHECK(la > 300);
    CHECK(lb > 0 && lb < 40);
    kvg_bench_scale_result_free(&a);
    kvg_bench_scale_result_free(&b);
}

/* The PD day's export against its run: the run's requests, one line each;
 * a prefill and a decode pool with the per-role profile the run's planners
 * had and the replicas each pool was ready with at the day's start (a
 * start takes 20 s, so the first 2.5 s point shows those alone); the
 * bench's own experiments and the batch class refused. */
TEST(pd_arrivals_are_the_runs_requests_and_pools)
{
    struct kvg_bench_scale_opts o = small_day();
    snprintf(o.planner, sizeof o.planner, "kvgate");
    o.pd_prefill_tps = 9000; /* as measured, so that no calibration runs */
    o.pd_decode_tps = 4000;
    o.aopts.min_replicas = 2;
    o.timeline_points = 240;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    CHECK_INT(kvg_bench_scale_pd_arrivals(&o, f), 0);
    CHECK_INT(fclose(f), 0);
    struct kvg_bench_scale_pd_result r;
    char err[256] = "";
    CHECK_INT(kvg_bench_scale_pd_run(&o, &r, err, sizeof err), 0);
    char *save = NULL, *line = strtok_r(buf, "\n", &save);
    cJSON *h = cJSON_Parse(line);
    CHECK(h != NULL);
    cJSON *day = cJSON_GetObjectItem(h, "day"), *pools = cJSON_GetObjectItem(h, "pools");
    CHECK(day && cJSON_GetArraySize(pools) == 2 && !cJSON_GetObjectItem(h, "pool"));
    CHECK(!strcmp(cJSON_GetObjectItem(day, "scenario")->valuestring, "diurnal-pd"));
    CHECK_INT(cJSON_GetObjectItem(day, "requests")->valuedouble, (double)r.requests);
    const char *roles[] = {"prefill", "decode"};
    for (int pi = 0; pi < 2; pi++) {
        cJSON *p = cJSON_GetArrayItem(pools, pi);
        CHECK(!strcmp(cJSON_GetObjectItem(p, "role")->valuestring, roles[pi]));
        CHECK_NEAR(cJSON_GetObjectItem(p, "prefill_tokens_per_sec")->valuedouble, r.prefill_tps,
                   1e-9);
        CHECK_NEAR(cJSON_GetObjectItem(p, "decode_tokens_per_sec")->valuedouble, r.decode_tps,
                   1e-9);
        CHECK_NEAR(cJSON_GetObjectItem(p, "min_replicas")->valuedouble, 2, 0);
        CHECK_NEAR(cJSON_GetObjectItem(p, "first_replicas")->valuedouble, r.ready[pi][0], 0);
    }
    uint64_t n = 0;
    while ((line = strtok_r(NULL, "\n", &save))) {
        cJSON *q = cJSON_Parse(line);
        CHECK(q != NULL && cJSON_GetObjectItem(q, "prompt_tokens")->valueint > 0);
        cJSON_Delete(q);
        n++;
    }
    CHECK_INT(n, r.requests);
    cJSON_Delete(h);
    kvg_bench_scale_pd_result_free(&r);
    free(buf);
    f = fopen("/dev/null", "w");
    CHECK(f != NULL);
    o.pd_local_wait_s = 2;
    CHECK_INT(kvg_bench_scale_pd_arrivals(&o, f), KVG_EUNSUPP);
    o.pd_local_wait_s = 0;
    o.batch_share = 0.2;
    CHECK_INT(kvg_bench_scale_pd_arrivals(&o, f), KVG_EUNSUPP);
    CHECK_INT(kvg_bench_scale_arrivals(&o, f), KVG_EUNSUPP);
    fclose(f);
}
