/* The aggregated day's arrivals export (scale_export.c) against the run of
 * the same options, and --startup-scale reaching the planners' lead time. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
