/* The PD day on a short day: both pools' figures, the reports, and each
 * pool sized by its own planner (prefill and decode counts move
 * independently). Structure and determinism, not timing. */
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
    o.day_s = 1800;
    o.mean_rate = 8;
    o.bursts = 2;
    o.burst_s = 30;
    o.osl = 800; /* decode load enough for a few decode replicas */
    o.startup_fixed_s = 60;
    o.timeline_points = 96;
    /* The per-role profile measured once for this day (what the CLI does). */
    static struct kvg_bench_scale_pd_profile pr;
    if (!(pr.prefill_tps > 0)) CHECK_INT(kvg_bench_scale_pd_calibrate(&o, &pr), 0);
    o.pd_prefill_tps = pr.prefill_tps;
    o.pd_decode_tps = pr.decode_tps;
    return o;
}

static void run(const struct kvg_bench_scale_opts *o, const char *planner,
                struct kvg_bench_scale_pd_result *r)
{
    struct kvg_bench_scale_opts c = *o;
    snprintf(c.planner, sizeof c.planner, "%s", planner);
    char err[256] = "";
    CHECK_INT(kvg_bench_scale_pd_run(&c, r, err, sizeof err), 0);
    CHECK_INT(r->status, 0);
}

/* The measured per-role profile is below the engine model's batch-1
 * figures (queueing within the TTFT / ITL targets), within the targets,
 * tighter for a tighter target, and the same for the same seed. */
TEST(calibration_per_role_below_batch1_and_deterministic)
{
    struct kvg_bench_scale_opts o;
    kvg_bench_scale_opts_default(&o);
    struct kvg_bench_scale_pd_profile a, b, t;
    CHECK_INT(kvg_bench_scale_pd_calibrate(&o, &a), 0);
    CHECK(a.prefill_tps > 0 && a.decode_tps > 0);
    CHECK(a.prefill_tps < a.batch1_prefill_tps);
    CHECK(a.decode_tps < a.batch1_decode_tps);
    CHECK(a.prefill_ttft_p90_s > 0 && a.prefill_ttft_p90_s <= o.aopts.ttft_target_s);
    CHECK(a.decode_itl_p90_s > 0 && a.decode_itl_p90_s <= o.aopts.itl_target_s);
    CHECK_INT(kvg_bench_scale_pd_calibrate(&o, &b), 0);
    CHECK_NEAR(a.prefill_tps, b.prefill_tps, 0);
    CHECK_NEAR(a.decode_tps, b.decode_tps, 0);
    CHECK_NEAR(a.prefill_ttft_p90_s, b.prefill_ttft_p90_s, 0);
    CHECK_NEAR(a.decode_itl_p90_s, b.decode_itl_p90_s, 0);
    o.aopts.ttft_target_s = 0.5;
    o.aopts.itl_target_s = 0.03;
    CHECK_INT(kvg_bench_scale_pd_calibrate(&o, &t), 0);
    CHECK(t.prefill_tps < a.prefill_tps);
    CHECK(t.decode_tps < a.decode_tps);
}

/* A day run without a profile measures it first and hands it to the planners. */
TEST(run_calibrates_when_not_given)
{
    struct kvg_bench_scale_opts o = short_day();
    double p = o.pd_prefill_tps, d = o.pd_decode_tps;
    o.pd_prefill_tps = o.pd_decode_tps = 0;
    o.day_s = 300;
    struct kvg_bench_scale_pd_result r;
    run(&o, "static", &r);
    CHECK_NEAR(r.prefill_tps, p, 0);
    CHECK_NEAR(r.decode_tps, d, 0);
    kvg_bench_scale_pd_result_free(&r);
}

TEST(each_planner_fills_both_pools)
{
    struct kvg_bench_scale_opts o = short_day();
    const char *names[] = {"static", "queue", "sla", "kvgate"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct kvg_bench_scale_pd_result r;
        run(&o, names[i], &r);
        CHECK_STR(r.planner, names[i]);
        CHECK(r.requests > 5000);
        CHECK(r.met <= r.ttft_met && r.met <= r.itl_met && r.ttft_met <= r.requests);
        CHECK(r.slo_attainment >= 0 && r.slo_attainment <= 1);
        for (int pi = 0; pi < 2; pi++) {
            CHECK(r.pool[pi].gpu_hours > 0);
            CHECK(r.pool[pi].max_replicas >= 1);
            CHECK(r.pool[pi].static_peak >= 1);
        }
        CHECK_NEAR(r.gpu_hours, r.pool[0].gpu_hours + r.pool[1].gpu_hours, 1e-9);
        CHECK(r.ttft_p90_s > 0);
        CHECK(r.xfer_p90_s > 0);  /* every request's KV moved */
        CHECK(r.cache_hit > 0.2); /* the prefill side's prefix cache works */
        if (!strcmp(names[i], "static"))
            for (int pi = 0; pi < 2; pi++) CHECK_INT(r.pool[pi].scale_events, 0);
        kvg_bench_scale_pd_result_free(&r);
    }
    struct kvg_bench_scale_pd_result u;
    struct kvg_bench_scale_opts c = o;
    snprintf(c.planner, sizeof c.planner, "nope");
    char err[256] = "";
    CHECK_INT(kvg_bench_scale_pd_run(&c, &u, err, sizeof err), 0);
    CHECK_INT(u.status, KVG_ENOTFOUND);
    kvg_bench_scale_pd_result_free(&u);
}

/* Points where one pool's ready count changed and the other's did not. */
static void moves(const struct kvg_bench_scale_pd_result *r, int *p_only, int *d_only)
{
    *p_only = *d_only = 0;
    for (size_t i = 1; i < r->n; i++) {
        int dp = r->ready[0][i] != r->ready[0][i - 1], dd = r->ready[1][i] != r->ready[1][i - 1];
        *p_only += dp && !dd;
        *d_only += dd && !dp;
    }
}

TEST(prefill_and_decode_move_independently)
{
    struct kvg_bench_scale_opts o = short_day();
    const char *names[] = {"kvgate", "queue"};
    for (size_t i = 0; i < 2; i++) {
        struct kvg_bench_scale_pd_result r;
        run(&o, names[i], &r);
        CHECK(r.pool[0].scale_events > 0);
        CHECK(r.pool[1].scale_events > 0);
        int p_only, d_only;
        moves(&r, &p_only, &d_only);
        CHECK(p_only > 0);
        CHECK(d_only > 0);
        kvg_bench_scale_pd_result_free(&r);
    }
}

TEST(deterministic_per_seed)
{
    struct kvg_bench_scale_opts o = short_day();
    struct kvg_bench_scale_pd_result a, b;
    run(&o, "kvgate", &a);
    run(&o, "kvgate", &b);
    CHECK_INT(a.requests, b.requests);
    CHECK_INT(a.met, b.met);
    CHECK_NEAR(a.gpu_hours, b.gpu_hours, 1e-12);
    CHECK_INT(a.pool[0].scale_events, b.pool[0].scale_events);
    CHECK_INT(a.pool[1].scale_events, b.pool[1].scale_events);
    for (size_t i = 0; i < a.n; i++) CHECK_NEAR(a.ready[1][i], b.ready[1][i], 0);
    kvg_bench_scale_pd_result_free(&a);
    kvg_bench_scale_pd_result_free(&b);
}

TEST(reports_have_both_pools)
{
    struct kvg_bench_scale_opts o = short_day();
    struct kvg_bench_scale_pd_result r[3];
    run(&o, "static", &r[0]);
    run(&o, "sla", &r[1]);
    run(&o, "kvgate", &r[2]);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_pd_json(r, 3, &o, f), 0);
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    CHECK(cJSON_IsArray(j));
    CHECK_INT(cJSON_GetArraySize(j), 3);
    cJSON *k = cJSON_GetArrayItem(j, 2);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(k, "planner")), "kvgate");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(k, "scenario")), "diurnal-pd");
    const char *keys[] = {"slo_attainment", "ttft_attainment", "itl_attainment",
                          "gpu_hours",      "scale_events",    "ttft_p90_s"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(k, keys[i])));
    const char *pools[] = {"prefill", "decode"};
    for (int pi = 0; pi < 2; pi++) {
        cJSON *p = cJSON_GetObjectItem(k, pools[pi]);
        CHECK(cJSON_IsObject(p));
        CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "gpu_hours")),
                   r[2].pool[pi].gpu_hours, 1e-9);
        CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "scale_events")),
                   r[2].pool[pi].scale_events, 0);
        CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "slo_miss_leg")),
                   (double)r[2].missed_leg[pi] / (double)r[2].requests, 1e-12);
    }
    cJSON_Delete(j);
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_pd_md(r, 3, &o, "kvgate bench --scenario diurnal-pd", NULL, f), 0);
    fclose(f);
    CHECK(strstr(buf, "| kvgate |") != NULL);
    CHECK(strstr(buf, "GPU-h (P + D)") != NULL);
    int g = kvg_bench_scale_pd_goal(r, 3, NULL);
    CHECK(g >= 0 && g <= 3);
    CHECK_INT(kvg_bench_scale_pd_goal(r, 2, NULL), -1); /* no kvgate */
    free(buf);
    for (int i = 0; i < 3; i++) kvg_bench_scale_pd_result_free(&r[i]);
}

/* The timeline counts every request once, by arrival: the points' arrivals
 * are the day's requests, their misses the ones that did not meet the SLO,
 * and the prefill-side misses a part of those, the day's misses on the
 * prefill leg; every miss is on a leg. The CSV has a row a point. */
TEST(timeline_counts_each_request_by_arrival)
{
    struct kvg_bench_scale_opts o = short_day();
    struct kvg_bench_scale_pd_result r;
    run(&o, "kvgate", &r);
    double arrived = 0, missed = 0, missed_pre = 0;
    for (size_t i = 0; i < r.n; i++) {
        arrived += r.arrived[i];
        missed += r.missed[i];
        missed_pre += r.missed_prefill[i];
        CHECK(r.missed_prefill[i] <= r.missed[i]);
        CHECK(r.missed[i] <= r.arrived[i]);
        for (int pi = 0; pi < 2; pi++) CHECK(r.ready[pi][i] + r.starting[pi][i] >= 1);
    }
    CHECK_NEAR(arrived, (double)r.requests, 0);
    CHECK_NEAR(missed, (double)(r.requests - r.met), 0);
    CHECK_NEAR(missed_pre, (double)r.missed_leg[0], 0);
    CHECK(r.missed_leg[0] <= r.requests - r.met && r.missed_leg[1] <= r.requests - r.met);
    CHECK(r.missed_leg[0] + r.missed_leg[1] >= r.requests - r.met);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_pd_timeline_csv(&r, 1, f), 0);
    fclose(f);
    size_t lines = 0;
    for (const char *c = buf; *c; c++) lines += *c == '\n';
    CHECK_INT(lines, r.n + 1);
    CHECK(strncmp(buf, "planner,hour,rate,arrived,missed,missed_prefill,", 48) == 0);
    free(buf);
    kvg_bench_scale_pd_result_free(&r);
}

/* The bench-only oracle sizes both pools ahead of the true rate: on a day
 * of 2x bursts that a planner cannot foresee, it meets the SLO for more
 * requests than kvgate and for nearly all. */
TEST(oracle_provisions_ahead_of_bursts)
{
    struct kvg_bench_scale_opts o = short_day();
    o.bursts = 3;
    o.burst_s = 60;
    o.burst_mult = 2;
    struct kvg_bench_scale_pd_result orc, kv;
    run(&o, "oracle", &orc);
    run(&o, "kvgate", &kv);
    CHECK_STR(orc.planner, "oracle");
    /* Measured: 99.1% against kvgate's 90.5%, on fewer GPU-hours. */
    CHECK(orc.slo_attainment > kv.slo_attainment);
    CHECK(orc.slo_attainment >= 0.98);
    CHECK(orc.pool[0].scale_events > 0);
    kvg_bench_scale_pd_result_free(&orc);
    kvg_bench_scale_pd_result_free(&kv);
}

/* --prefill-headroom: more prefill capacity held, the decode pool's own
 * headroom untouched; --headroom-from: only from then on (less than all
 * day, more than none). */
TEST(prefill_headroom_knob_and_its_start)
{
    struct kvg_bench_scale_opts o = short_day();
    struct kvg_bench_scale_pd_result base, all, late;
    run(&o, "kvgate", &base);
    o.pd_headroom[0] = 1.0;
    run(&o, "kvgate", &all);
    o.pd_headroom_from_s = 900;
    run(&o, "kvgate", &late);
    CHECK(all.pool[0].gpu_hours > base.pool[0].gpu_hours);
    CHECK(late.pool[0].gpu_hours < all.pool[0].gpu_hours);
    CHECK(late.pool[0].gpu_hours > base.pool[0].gpu_hours);
    for (size_t i = 0; i < base.n && base.t_h[i] < 0.9 * 24 * 900 / o.day_s; i++)
        CHECK_NEAR(late.ready[0][i], base.ready[0][i], 0);
    kvg_bench_scale_pd_result_free(&base);
    kvg_bench_scale_pd_result_free(&all);
    kvg_bench_scale_pd_result_free(&late);
}

/* --pd-local-prefill-wait: on a day of 2x bursts, requests whose prefill
 * pool is backed up prefill on a decode replica; every request is still
 * counted once, it never helps ITL (the decode batches carry the
 * prefills), and the same seed gives the same day. Off: none moves. */
TEST(local_prefill_knob_moves_prefills_to_decode_under_bursts)
{
    struct kvg_bench_scale_opts o = short_day();
    o.bursts = 3;
    o.burst_s = 60;
    o.burst_mult = 2;
    struct kvg_bench_scale_pd_result off, on, again;
    run(&o, "kvgate", &off);
    o.pd_local_wait_s = 0.5;
    run(&o, "kvgate", &on);
    run(&o, "kvgate", &again);
    CHECK_INT(off.local_prefills, 0);
    CHECK(on.local_prefills > 0 && on.local_prefills < on.requests);
    CHECK_INT(on.local_prefills, again.local_prefills);
    CHECK_NEAR(on.slo_attainment, again.slo_attainment, 0);
    double arrived = 0;
    for (size_t i = 0; i < on.n; i++) arrived += on.arrived[i];
    CHECK_NEAR(arrived, (double)on.requests, 0);
    CHECK(on.met <= on.ttft_met && on.met <= on.itl_met);
    /* Measured with the gateway's routing (scale_route.c): 172 of 16,394
     * moved, ITL attainment 99.988% both, TTFT 97.71% -> 97.57%. Under the
     * bench's former prefill rule, which backed the prefill pool up (TTFT
     * 90.25%), 1,983 moved and ITL fell 99.99% -> 99.93% (a gain is not
     * assured: bench/autoscale/pd-seed2.md). */
    CHECK(on.itl_attainment <= off.itl_attainment);
    kvg_bench_scale_pd_result_free(&off);
    kvg_bench_scale_pd_result_free(&on);
    kvg_bench_scale_pd_result_free(&again);
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* The PD plot from a made-up result, no day run: one SVG document, a
 * prefill and a decode panel for each planner that ran (none for one not
 * in the build), each with its demand area and three lines of a point per
 * timeline point; the markdown report links it by name. */
TEST(pd_svg_has_a_prefill_and_a_decode_panel_per_planner)
{
    enum { N = 24 };
    double t[N], rate[N], ready[2][N], starting[2][N], desired[2][N];
    for (int i = 0; i < N; i++) {
        t[i] = i + 1;
        rate[i] = 10 + i;
        ready[0][i] = 5 + i / 4;
        starting[0][i] = i % 3 == 0;
        desired[0][i] = ready[0][i] + starting[0][i];
        ready[1][i] = desired[1][i] = 2;
        starting[1][i] = 0;
    }
    struct kvg_bench_scale_pd_result r[3];
    memset(r, 0, sizeof r);
    const char *names[] = {"static", "not-built", "kvgate"};
    for (int k = 0; k < 3; k++) {
        snprintf(r[k].planner, sizeof r[k].planner, "%s", names[k]);
        r[k].n = N;
        r[k].t_h = t;
        r[k].rate = rate;
        for (int pi = 0; pi < 2; pi++) {
            r[k].ready[pi] = ready[pi];
            r[k].starting[pi] = starting[pi];
            r[k].desired[pi] = desired[pi];
        }
        r[k].prefill_tps = 9000;
        r[k].decode_tps = 4000;
        r[k].slo_attainment = 0.99;
    }
    r[1].status = KVG_ENOTFOUND;
    struct kvg_bench_scale_opts o;
    kvg_bench_scale_opts_default(&o);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_pd_svg(r, 3, &o, f), 0);
    fclose(f);
    CHECK(strncmp(buf, "<svg", 4) == 0);
    CHECK(len > 7 && strcmp(buf + len - 7, "</svg>\n") == 0);
    CHECK_INT(count(buf, "<svg"), 1);
    /* 2 planners x 2 pools: a frame and a demand area each, and the
     * ready, ready + starting and desired lines. */
    CHECK_INT(count(buf, "stroke=\"#999\""), 4);
    CHECK_INT(count(buf, "<polygon"), 4);
    CHECK_INT(count(buf, "<polyline"), 12);
    const char *titles[] = {"static: prefill pool", "static: decode pool", "kvgate: prefill pool",
                            "kvgate: decode pool"};
    for (int i = 0; i < 4; i++) CHECK(strstr(buf, titles[i]) != NULL);
    CHECK(strstr(buf, "not-built") == NULL);
    /* Every line has a point per timeline point ("x,y " each). */
    for (const char *p = strstr(buf, "<polyline"); p; p = strstr(p + 1, "<polyline")) {
        const char *pts = strstr(p, "points=\"") + 8, *end = strchr(pts, '"');
        size_t commas = 0;
        for (const char *c = pts; c < end; c++) commas += *c == ',';
        CHECK_INT(commas, N);
    }
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK_INT(kvg_bench_scale_pd_md(r, 3, &o, "kvgate bench --scenario diurnal-pd", "pd.svg", f),
              0);
    fclose(f);
    CHECK(strstr(buf, "](pd.svg)") != NULL);
    free(buf);
}
