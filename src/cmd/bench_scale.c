/* `kvgate bench --scenario diurnal`: flags, one run per planner (a few at a
 * time on threads), and the reports. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/err.h"
#include "base/log.h"
#include "bench/scale/scale.h"

struct cfg {
    struct kvg_bench_scale_opts o;
    char planners[KVG_BENCH_SCALE_MAX_PLANNERS][32];
    size_t n;
    char json[512], md[512], svg[512], csv[512], command[2048];
    int jobs, quiet;
    int pd; /* --scenario diurnal-pd: separate prefill and decode pools */
};

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: kvgate bench --scenario diurnal|diurnal-pd [--planners static,queue,sla,kvgate]\n"
        "                    [flags]\n"
        "  diurnal-pd          the same day on separate prefill and decode pools, each sized by\n"
        "                      its own planner instance (no prewarm; --svg: a prefill and a\n"
        "                      decode panel per planner)\n"
        "  --planners LIST     planners to compare (%s; queue-waiting: queue's waiting preset;\n"
        "                      kvgate-noprewarm: kvgate without prewarming new replicas)\n"
        "  --seed N            workload, start-ups and engines (1)\n"
        "  --day-secs S        virtual seconds for 24 h (8640)\n"
        "  --mean-rate R       requests/s at the day's mean (40)\n"
        "  --bursts N          bursts per day (6), --burst-secs S (90), --burst-mult X (1.5)\n"
        "  --cold-share X      share of new replicas on cold nodes (0.5; the rest warm)\n"
        "  --fetch-share X     share on nodes that fetch image and weights (0)\n"
        "  --startup-secs S    every start-up takes exactly S (default: drawn)\n"
        "  --ttft S / --itl S  SLO targets (1.0 / 0.05)\n"
        "  --queue-preset P    llm-d (default) or waiting\n"
        "  --sla-predictor P   constant (default), moving_average, seasonal_trend\n"
        "  --json FILE --markdown FILE --svg FILE   reports\n"
        "  --timeline FILE     per planner and 5-minute point: load, replicas, misses (CSV)\n"
        "  --static-replicas N static's count (default: the day's peak by the profile)\n"
        "  --knee-rps R        the profile's req/s per replica (default: measured)\n"
        "  --jobs N            planners run at once (2)\n"
        "  --trace             every planner decision and its reason to stderr\n"
        "diurnal-pd experiments (bench-only, not planner options a deployment has):\n"
        "  --prefill-headroom X / --decode-headroom X   that pool's planner headroom (0.1;\n"
        "                      kvgate and oracle read it; static's count is unchanged)\n"
        "  --headroom-from S   those headrooms apply from virtual second S on (before: 0.1)\n"
        "  --pd-local-prefill-wait S   prefill on a decode replica when the prefill pool's\n"
        "                      predicted wait is past S seconds and the decode's is\n"
        "                      shorter (0: never; not a serve option)\n"
        "  --decode-batched-tokens N   the decode replicas' token budget per step\n"
        "                      (default: the profile's max_num_batched_tokens)\n"
        "  planner oracle      sizes each pool for the day's true rate (bursts included)\n"
        "                      over the next --oracle-lead S (the start-up p90 lead)\n",
        kvg_autoscale_planner_names());
}

static int parse(struct cfg *c, int argc, char **argv)
{
    kvg_bench_scale_opts_default(&c->o);
    c->jobs = 2;
    size_t off = 0;
    for (int i = 0; i < argc; i++) {
        int k = snprintf(c->command + off, sizeof c->command - off, "%s%s", i ? " " : "", argv[i]);
        if (k > 0 && off + (size_t)k < sizeof c->command) off += (size_t)k;
    }
    const char *planners = "static,queue,sla,kvgate";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--quiet")) {
            c->quiet = 1;
            continue;
        }
        if (!strcmp(a, "--trace")) {
            c->o.trace = 1;
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "kvgate bench: %s needs a value\n", a);
            return -1;
        }
        i++;
        double d = 0;
        int num = kvg_parse_double(v, &d) == 0;
        struct kvg_bench_scale_opts *o = &c->o;
        if (!strcmp(a, "--scenario")) {
            if (strcmp(v, "diurnal") && strcmp(v, "diurnal-pd")) return -1;
            c->pd = !strcmp(v, "diurnal-pd");
        } else if (!strcmp(a, "--planners")) {
            planners = v;
        } else if (!strcmp(a, "--json")) {
            snprintf(c->json, sizeof c->json, "%s", v);
        } else if (!strcmp(a, "--markdown")) {
            snprintf(c->md, sizeof c->md, "%s", v);
        } else if (!strcmp(a, "--timeline")) {
            snprintf(c->csv, sizeof c->csv, "%s", v);
        } else if (!strcmp(a, "--svg")) {
            snprintf(c->svg, sizeof c->svg, "%s", v);
        } else if (!strcmp(a, "--queue-preset")) {
            snprintf(o->aopts.queue_preset, sizeof o->aopts.queue_preset, "%s", v);
        } else if (!strcmp(a, "--sla-predictor")) {
            int k = kvg_autoscale_pred_parse(v);
            if (k < 0) {
                fprintf(stderr, "kvgate bench: unknown predictor '%s'\n", v);
                return -1;
            }
            o->aopts.sla_predictor = (enum kvg_autoscale_pred_kind)k;
            /* A season is a day: in sla intervals. */
            o->aopts.sla_period = (uint32_t)(o->day_s / 180);
        } else if (!num) {
            fprintf(stderr, "kvgate bench: %s: '%s' is not a number (or unknown flag)\n", a, v);
            return -1;
        } else if (!strcmp(a, "--seed") && d >= 0) {
            o->seed = (uint64_t)d;
        } else if (!strcmp(a, "--day-secs") && d >= 60) {
            o->day_s = d;
        } else if (!strcmp(a, "--mean-rate") && d > 0) {
            o->mean_rate = d;
        } else if (!strcmp(a, "--bursts") && d >= 0 && d <= 64) {
            o->bursts = (uint32_t)d;
        } else if (!strcmp(a, "--burst-secs") && d > 0) {
            o->burst_s = d;
        } else if (!strcmp(a, "--burst-mult") && d >= 1) {
            o->burst_mult = d;
        } else if (!strcmp(a, "--cold-share") && d >= 0 && d <= 1) {
            o->cold_share = d;
        } else if (!strcmp(a, "--fetch-share") && d >= 0 && d <= 1) {
            o->fetch_share = d;
        } else if (!strcmp(a, "--startup-secs") && d >= 0) {
            o->startup_fixed_s = d;
        } else if (!strcmp(a, "--ttft") && d > 0) {
            o->aopts.ttft_target_s = d;
        } else if (!strcmp(a, "--itl") && d > 0) {
            o->aopts.itl_target_s = d;
        } else if (!strcmp(a, "--static-replicas") && d >= 1 && d <= KVG_BENCH_SCALE_MAX_REPLICAS) {
            o->aopts.static_replicas = (uint32_t)d;
        } else if (!strcmp(a, "--prefill-headroom") && d >= 0 && d <= 10) {
            o->pd_headroom[0] = d;
        } else if (!strcmp(a, "--decode-headroom") && d >= 0 && d <= 10) {
            o->pd_headroom[1] = d;
        } else if (!strcmp(a, "--headroom-from") && d >= 0) {
            o->pd_headroom_from_s = d;
        } else if (!strcmp(a, "--pd-local-prefill-wait") && d >= 0 && d <= 3600) {
            o->pd_local_wait_s = d;
        } else if (!strcmp(a, "--decode-batched-tokens") && d >= 1 && d <= 1 << 20) {
            o->pd_decode_batched_tokens = (uint32_t)d;
        } else if (!strcmp(a, "--oracle-lead") && d >= 0) {
            o->oracle_lead_s = d;
        } else if (!strcmp(a, "--knee-rps") && d > 0) {
            o->knee_rps = d;
        } else if (!strcmp(a, "--jobs") && d >= 1 && d <= 64) {
            c->jobs = (int)d;
        } else {
            fprintf(stderr, "kvgate bench: bad flag or value: %s %s\n", a, v);
            return -1;
        }
    }
    if (c->o.cold_share + c->o.fetch_share > 1) {
        fprintf(stderr, "kvgate bench: --cold-share + --fetch-share > 1\n");
        return -1;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", planners);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (c->n == KVG_BENCH_SCALE_MAX_PLANNERS) {
            fprintf(stderr, "kvgate bench: at most %d planners\n", KVG_BENCH_SCALE_MAX_PLANNERS);
            return -1;
        }
        snprintf(c->planners[c->n++], sizeof c->planners[0], "%s", t);
    }
    return c->n ? 0 : -1;
}

struct job {
    struct kvg_bench_scale_opts o;
    struct kvg_bench_scale_result r;
    struct kvg_bench_scale_pd_result pr;
    int pd, rc;
    char err[256];
};

struct pool {
    struct job *jobs;
    size_t n, next;
    pthread_mutex_t mu;
};

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n) return NULL;
        struct job *j = &p->jobs[i];
        j->rc = j->pd ? kvg_bench_scale_pd_run(&j->o, &j->pr, j->err, sizeof j->err)
                      : kvg_bench_scale_run(&j->o, &j->r, j->err, sizeof j->err);
    }
}

static int write_file(const char *path,
                      int (*fn)(const struct kvg_bench_scale_result *, size_t, const struct cfg *,
                                FILE *),
                      const struct kvg_bench_scale_result *r, size_t n, const struct cfg *c)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kvgate bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = fn(r, n, c, f);
    if (fclose(f) || rc) {
        fprintf(stderr, "kvgate bench: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

static int json_of(const struct kvg_bench_scale_result *r, size_t n, const struct cfg *c, FILE *f)
{
    return kvg_bench_scale_json(r, n, &c->o, f);
}

static int svg_of(const struct kvg_bench_scale_result *r, size_t n, const struct cfg *c, FILE *f)
{
    (void)c;
    return kvg_bench_scale_svg(r, n, f);
}

static int csv_of(const struct kvg_bench_scale_result *r, size_t n, const struct cfg *c, FILE *f)
{
    (void)c;
    return kvg_bench_scale_timeline_csv(r, n, f);
}

/* The plot's file name as the markdown links it (beside the report), or
 * NULL without --svg. */
static const char *svg_link(const struct cfg *c)
{
    if (!c->svg[0]) return NULL;
    const char *s = strrchr(c->svg, '/');
    return s ? s + 1 : c->svg;
}

static int md_of(const struct kvg_bench_scale_result *r, size_t n, const struct cfg *c, FILE *f)
{
    return kvg_bench_scale_md(r, n, &c->o, c->command, svg_link(c), f);
}

/* The PD day's results: a line per planner, then --json, --markdown,
 * --timeline and --svg. */
static int pd_report(const struct cfg *c, struct job *jobs)
{
    int status = 0;
    struct kvg_bench_scale_pd_result *res = calloc(c->n, sizeof *res);
    if (!res) status = 1;
    for (size_t i = 0; res && i < c->n; i++) {
        const struct job *j = &jobs[i];
        res[i] = j->pr;
        if (j->rc) {
            fprintf(stderr, "kvgate bench: %s: %s\n", c->planners[i], j->err);
            status = 1;
        } else if (j->pr.status == KVG_ENOTFOUND) {
            fprintf(stderr, "kvgate bench: planner '%s' is not in this build (known: %s)\n",
                    c->planners[i], kvg_autoscale_planner_names());
        } else if (!c->quiet) {
            const struct kvg_bench_scale_pd_result *r = &j->pr;
            printf("%-8s slo %.4f (ttft %.4f itl %.4f)  gpu-h %.2f (prefill %.2f decode %.2f)  "
                   "events %u/%u  ttft p90 %.3f s  itl p90 %.4f s  failed %llu  local %llu  "
                   "(%.1f s)\n",
                   r->planner, r->slo_attainment, r->ttft_attainment, r->itl_attainment,
                   r->gpu_hours, r->pool[0].gpu_hours, r->pool[1].gpu_hours,
                   r->pool[0].scale_events, r->pool[1].scale_events, r->ttft_p90_s, r->itl_p90_s,
                   (unsigned long long)r->failed, (unsigned long long)r->local_prefills, r->wall_s);
        }
    }
    const char *svg = svg_link(c);
    for (int w = 0; res && !status && w < 4; w++) {
        const char *path = w == 3 ? c->svg : w == 2 ? c->csv : w ? c->md : c->json;
        if (!path[0]) continue;
        FILE *f = fopen(path, "w");
        int rc = !f       ? -1
                 : w == 3 ? kvg_bench_scale_pd_svg(res, c->n, &c->o, f)
                 : w == 2 ? kvg_bench_scale_pd_timeline_csv(res, c->n, f)
                 : w      ? kvg_bench_scale_pd_md(res, c->n, &c->o, c->command, svg, f)
                          : kvg_bench_scale_pd_json(res, c->n, &c->o, f);
        if (!f || fclose(f) || rc) {
            fprintf(stderr, "kvgate bench: writing %s failed\n", path);
            status = 1;
        }
    }
    for (size_t i = 0; i < c->n; i++) kvg_bench_scale_pd_result_free(&jobs[i].pr);
    free(res);
    return status;
}

/* The PD day's per-role profile, measured once for every planner. */
static int pd_calibrate(struct cfg *c)
{
    struct kvg_bench_scale_pd_profile pr;
    if (c->o.pd_prefill_tps > 0 && c->o.pd_decode_tps > 0) return 0;
    if (kvg_bench_scale_pd_calibrate(&c->o, &pr)) {
        fprintf(stderr, "kvgate bench: calibrating one prefill and one decode replica failed\n");
        return 1;
    }
    c->o.pd_prefill_tps = pr.prefill_tps;
    c->o.pd_decode_tps = pr.decode_tps;
    if (!c->quiet)
        printf("one prefill replica: %.0f input tokens/s within TTFT p90 %.2f s (batch 1: %.0f); "
               "one decode replica: %.0f output tokens/s within ITL p90 %.3f s (batch 1: %.0f) "
               "(the planners' profile)\n",
               pr.prefill_tps, pr.prefill_ttft_p90_s, pr.batch1_prefill_tps, pr.decode_tps,
               pr.decode_itl_p90_s, pr.batch1_decode_tps);
    return 0;
}

int kvg_cmd_bench_scale_main(int argc, char **argv)
{
    struct cfg *c = calloc(1, sizeof *c);
    if (!c) return 1;
    int rc = parse(c, argc, argv);
    if (rc) {
        if (rc < 0) usage(stderr);
        free(c);
        return rc > 0 ? 0 : 2;
    }
    int pd_only = c->o.pd_headroom[0] >= 0 || c->o.pd_headroom[1] >= 0 || c->o.oracle_lead_s > 0 ||
                  c->o.pd_headroom_from_s > 0 || c->o.pd_local_wait_s > 0 ||
                  c->o.pd_decode_batched_tokens;
    for (size_t i = 0; i < c->n; i++) pd_only |= !strcmp(c->planners[i], "oracle");
    if (!c->pd && pd_only) {
        fprintf(stderr, "kvgate bench: planner oracle, --prefill-headroom, --decode-headroom, "
                        "--headroom-from, --oracle-lead, --pd-local-prefill-wait and "
                        "--decode-batched-tokens are --scenario diurnal-pd's\n");
        free(c);
        return 2;
    }
    kvg_log_set_level(KVG_LOG_WARN);
    /* One calibration for every planner: they share the profile (the PD
     * day's: one prefill and one decode replica measured). */
    if (!c->pd && !(c->o.knee_rps > 0) && kvg_bench_scale_calibrate(&c->o, &c->o.knee_rps)) {
        fprintf(stderr, "kvgate bench: calibrating one replica failed\n");
        free(c);
        return 1;
    }
    if (!c->quiet && !c->pd)
        printf("one replica meets the SLO up to %.2f req/s of this workload (the planners' "
               "profile)\n",
               c->o.knee_rps);
    if (c->pd && pd_calibrate(c)) {
        free(c);
        return 1;
    }
    struct pool p = {.n = c->n, .mu = PTHREAD_MUTEX_INITIALIZER};
    p.jobs = calloc(c->n, sizeof *p.jobs);
    if (!p.jobs) {
        free(c);
        return 1;
    }
    for (size_t i = 0; i < c->n; i++) {
        p.jobs[i].o = c->o;
        snprintf(p.jobs[i].o.planner, sizeof p.jobs[i].o.planner, "%s", c->planners[i]);
        p.jobs[i].pd = c->pd;
    }
    int nt = c->jobs < (int)c->n ? c->jobs : (int)c->n;
    pthread_t th[64];
    int started = 0;
    for (int i = 0; i < nt; i++)
        if (!pthread_create(&th[i], NULL, worker, &p)) started++;
    if (!started) worker(&p);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    if (c->pd) {
        int st = pd_report(c, p.jobs);
        free(p.jobs);
        free(c);
        return st;
    }
    int status = 0;
    struct kvg_bench_scale_result *res = calloc(c->n, sizeof *res);
    if (!res) status = 1;
    for (size_t i = 0; res && i < c->n; i++) {
        res[i] = p.jobs[i].r;
        struct job *j = &p.jobs[i];
        if (j->rc) {
            fprintf(stderr, "kvgate bench: %s: %s\n", c->planners[i], j->err);
            status = 1;
        } else if (j->r.status == KVG_ENOTFOUND) {
            fprintf(stderr, "kvgate bench: planner '%s' is not in this build (known: %s)\n",
                    c->planners[i], kvg_autoscale_planner_names());
        } else if (!c->quiet) {
            const struct kvg_bench_scale_result *r = &j->r;
            printf("%-8s slo %.4f (ramp %.4f)  gpu-h %.2f  replicas mean %.2f max %u  events %u  "
                   "ttft p90 %.3f s  itl p90 %.4f s  hit %.2f  failed %llu  (%.1f s)\n",
                   r->planner, r->slo_attainment, r->ramp_slo_attainment, r->gpu_hours,
                   r->mean_replicas, r->max_replicas, r->scale_events, r->ttft_p90_s, r->itl_p90_s,
                   r->cache_hit, (unsigned long long)r->failed, r->wall_s);
        }
    }
    if (res && !status) {
        if (c->json[0] && write_file(c->json, json_of, res, c->n, c)) status = 1;
        if (c->svg[0] && write_file(c->svg, svg_of, res, c->n, c)) status = 1;
        if (c->csv[0] && write_file(c->csv, csv_of, res, c->n, c)) status = 1;
        if (c->md[0] && write_file(c->md, md_of, res, c->n, c)) status = 1;
    }
    for (size_t i = 0; i < c->n; i++) kvg_bench_scale_result_free(&p.jobs[i].r);
    free(res);
    free(p.jobs);
    free(c);
    return status;
}
