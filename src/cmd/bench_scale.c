/* `kvgate bench --scenario diurnal|diurnal-pd`: the flags (an option table,
 * base/opt.h, with the output flags every scenario shares), one run per
 * planner (a few at a time on threads), and the reports. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/bench_int.h"
#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "bench/scale/scale.h"

struct cfg {
    struct kvg_bench_scale_opts o;
    struct kvg__bench_common com;
    char planners[KVG_BENCH_SCALE_MAX_PLANNERS][32];
    size_t n;
    char svg[512], csv[512], arrivals[512], command[2048];
    int jobs;
    int pd; /* --scenario diurnal-pd: separate prefill and decode pools */
};

#define A(field) offsetof(struct cfg, field)
#define AS(field) sizeof(((struct cfg *)0)->field)
#define O(field) A(o.field)
#define POSITIVE .parse = kvg__bench_parse_positive, .format = kvg__bench_format_double
#define FROM(lo) .min = (lo), .max = INFINITY

/* In the order of cfg.pd. */
static const char *const scenarios[] = {"diurnal", "diurnal-pd", NULL};
static const char *const queue_presets[] = {"llm-d", "waiting", NULL};
static char planner_help[512];

/* A planner the day can run: the autoscaler's, a bench variant of one
 * (queue-<preset>, kvgate-noprewarm), or the PD day's oracle. */
static int planner_known(const char *name)
{
    if (!strcmp(name, "oracle")) return 1;
    struct kvg_autoscale_opts a;
    kvg_autoscale_opts_default(&a);
    const char *base = !strcmp(name, "kvgate-noprewarm") ? "kvgate" : name;
    if (!strncmp(base, "queue-", 6)) {
        snprintf(a.queue_preset, sizeof a.queue_preset, "%s", base + 6);
        base = "queue";
    }
    struct kvg_autoscale_planner *p = NULL;
    int rc = kvg_autoscale_planner_new(base, &a, &p);
    if (!rc) kvg_autoscale_planner_free(p);
    return !rc;
}

static int add_planner(void *ud, const char *name, char *err, size_t errlen)
{
    struct cfg *c = ud;
    if (c->n == KVG_BENCH_SCALE_MAX_PLANNERS)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "at most %d planners",
                           KVG_BENCH_SCALE_MAX_PLANNERS);
    if (!planner_known(name) || strlen(name) >= sizeof c->planners[0])
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "unknown planner '%s' (known: %s, queue-waiting, kvgate-noprewarm; "
                           "diurnal-pd also oracle)",
                           name, kvg_autoscale_planner_names());
    snprintf(c->planners[c->n++], sizeof c->planners[0], "%s", name);
    return 0;
}

static int planners_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                        size_t errlen)
{
    (void)o, (void)index;
    struct cfg *c = obj;
    c->n = 0;
    return kvg__bench_each_name(v, add_planner, c, err, errlen);
}

static int planners_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    const struct cfg *c = obj;
    kvg__bench_join(out, cap, c->planners[0], sizeof c->planners[0], c->n);
    return 0;
}

static int predictor_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                         size_t errlen)
{
    (void)o, (void)index;
    struct kvg_bench_scale_opts *so = &((struct cfg *)obj)->o;
    int k = kvg_autoscale_pred_parse(v);
    if (k < 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "expects one of constant, moving_average, seasonal_trend, got '%s'", v);
    so->aopts.sla_predictor = (enum kvg_autoscale_pred_kind)k;
    /* A season is a day: in sla intervals. */
    so->aopts.sla_period = (uint32_t)(so->day_s / 180);
    return 0;
}

static int predictor_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    snprintf(out, cap, "%s",
             kvg_autoscale_pred_name(((const struct cfg *)obj)->o.aopts.sla_predictor));
    return 0;
}

static const struct kvg_opt opt_table[] = {
    {"scenario", NULL, KVG_OPT_ENUM, A(pd), .choices = scenarios, .section = "scenario",
     .help = "the autoscaling day (docs/autoscale.md); diurnal-pd: the same day on separate "
             "prefill and decode pools, each sized by its own planner instance (no prewarm; "
             "--svg: a prefill and a decode panel per planner)"},
    {"planners", NULL, KVG_OPT_CUSTOM, 0, .meta = "LIST", .parse = planners_opt,
     .format = planners_text, .help = planner_help},
    {"day-secs", NULL, KVG_OPT_DOUBLE, O(day_s), FROM(60), .meta = "SECS",
     .help = "virtual seconds for 24 h"},
    {"mean-rate", NULL, KVG_OPT_CUSTOM, O(mean_rate), .meta = "R", POSITIVE,
     .help = "requests/s at the day's mean"},
    {"stress", NULL, KVG_OPT_BOOL, O(stress),
     .help = "the stress day (before issue 38): the day curve and --bursts of --burst-mult "
             "that may overlap; default: the realistic day, calibrated to published traces "
             "(bench/results/autoscale-realistic.md)"},
    {"bursts", NULL, KVG_OPT_U32, O(bursts), .min = 0, .max = 64,
     .help = "--stress: bursts per day"},
    {"burst-secs", NULL, KVG_OPT_CUSTOM, O(burst_s), .meta = "SECS", POSITIVE,
     .help = "--stress: each burst's length"},
    {"burst-mult", NULL, KVG_OPT_DOUBLE, O(burst_mult), FROM(1),
     .help = "--stress: each burst's rate factor"},
    {"day-noise", NULL, KVG_OPT_DOUBLE, O(day_noise), .min = 0, .max = 0.9,
     .help = "realistic day: the day curve's level drawn within +-this share of --mean-rate"},
    {"heavy-share", NULL, KVG_OPT_DOUBLE, O(heavy_share), .min = 0, .max = 0.9,
     .help = "realistic day: share of the traffic from the heavy clients"},
    {"heavy-clients", NULL, KVG_OPT_U32, O(heavy_clients), .min = 1, .max = 8,
     .help = "realistic day: clients the bursty traffic comes from (each its own system "
             "prompt; fewer than the groups)"},
    {"cold-share", NULL, KVG_OPT_DOUBLE, O(cold_share), .min = 0, .max = 1,
     .help = "share of new replicas on cold nodes (the rest warm)"},
    {"fetch-share", NULL, KVG_OPT_DOUBLE, O(fetch_share), .min = 0, .max = 1,
     .help = "share on nodes that fetch image and weights"},
    {"fast-share", NULL, KVG_OPT_DOUBLE, O(fast_share), .min = 0, .max = 1, .meta = "F",
     .help = "share of nodes whose replicas restore from a checkpoint within --fast-ready-secs "
             "(the restore class's published shape scaled to that p90, never past it; the rest "
             "draw from --cold-share / --fetch-share / warm); the planners' lead time knows it"},
    {"fast-ready-secs", NULL, KVG_OPT_CUSTOM, O(fast_ready_s), .meta = "SECS", POSITIVE,
     .help = "the fast nodes' time to ready"},
    {"standby", NULL, KVG_OPT_U32, O(standby), .min = 0, .max = KVG_BENCH_SCALE_MAX_REPLICAS,
     .help = "parked replicas each pool keeps at scale-down (asleep, woken first when more are "
             "wanted, within the asleep1 class's time; a pool's standby: N)"},
    {"standby-cost", NULL, KVG_OPT_DOUBLE, O(standby_cost), .min = 0, .max = 1,
     .help = "GPU-hours of a parked replica per hour (1: it holds its GPU)"},
    {"slo-goal", NULL, KVG_OPT_DOUBLE, O(aopts.slo_goal), .min = 0.5, .max = 0.99999, .meta = "X",
     .help = "the share of (interactive) requests the kvgate planner keeps within the targets, "
             "a pool's slo_goal"},
    {"forecast-window-secs", NULL, KVG_OPT_DOUBLE, O(aopts.window_s), .min = 1, .max = 86400,
     .meta = "SECS",
     .help = "the kvgate planner's window W, a pool's forecast_window_secs (the "
             "level's median over W, the trend over 3W): replicas that start in seconds may "
             "follow a shorter one"},
    {"down-hold-secs", NULL, KVG_OPT_DOUBLE, O(aopts.down_hold_s), FROM(0), .meta = "SECS",
     .help = "the planners' hold before a scale-down (a pool's down_hold_secs)"},
    {"startup-secs", NULL, KVG_OPT_DOUBLE, O(startup_fixed_s), FROM(0), .meta = "SECS",
     .help = "every start-up takes exactly SECS (0: drawn)"},
    {"startup-scale", NULL, KVG_OPT_CUSTOM, O(startup_scale), .meta = "F", POSITIVE,
     .flags = KVG_OPT_F_NODEFAULT,
     .help = "the start-up model x F, draws and the planners' lead time alike (a local "
             "actuator's cold_start_scale: a live miniature's clock)"},
    {"min-replicas", NULL, KVG_OPT_U32, O(aopts.min_replicas), .min = 0,
     .max = KVG_BENCH_SCALE_MAX_REPLICAS,
     .help = "the planners' lower bound (a pool's min_replicas)"},
    {"max-replicas", NULL, KVG_OPT_U32, O(aopts.max_replicas), .min = 1,
     .max = KVG_BENCH_SCALE_MAX_REPLICAS,
     .help = "the planners' upper bound (a pool's max_replicas)"},
    {"ttft", NULL, KVG_OPT_CUSTOM, O(aopts.ttft_target_s), .meta = "SECS", POSITIVE,
     .help = "SLO: time to first token"},
    {"itl", NULL, KVG_OPT_CUSTOM, O(aopts.itl_target_s), .meta = "SECS", POSITIVE,
     .help = "SLO: inter-token latency"},
    {"queue-preset", NULL, KVG_OPT_ENUM, O(aopts.queue_preset), AS(o.aopts.queue_preset),
     .choices = queue_presets, .help = "the queue planner's preset"},
    {"sla-predictor", NULL, KVG_OPT_CUSTOM, 0, .meta = "constant|moving_average|seasonal_trend",
     .parse = predictor_opt, .format = predictor_text,
     .help = "the sla planner's load predictor (its season: a day)"},
    {"static-replicas", NULL, KVG_OPT_U32, O(aopts.static_replicas), .min = 1,
     .max = KVG_BENCH_SCALE_MAX_REPLICAS, .flags = KVG_OPT_F_NODEFAULT,
     .help = "static's count (default: the day's peak by the profile)"},
    {"knee-rps", NULL, KVG_OPT_CUSTOM, O(knee_rps), .meta = "R", POSITIVE,
     .flags = KVG_OPT_F_NODEFAULT, .help = "the profile's req/s per replica (default: measured)"},
    {"batch-share", NULL, KVG_OPT_DOUBLE, O(batch_share), .min = 0, .max = 1, .meta = "F",
     .help = "this share of requests is batch (waits in the gateway through bursts, deadline "
             "--batch-deadline-secs, a 429 past it); planner sla runs without classes"},
    {"batch-deadline-secs", NULL, KVG_OPT_DOUBLE, O(batch_deadline_s), .min = 1, .max = 86400,
     .meta = "SECS", .help = "a batch request's deadline from its arrival (virtual seconds)"},
    {"trace", NULL, KVG_OPT_BOOL, O(trace),
     .help = "every planner decision and its reason to stderr"},
    {NULL, NULL, KVG_OPT_INCLUDE, A(com), .sub = kvg__bench_common_table},
    {NULL, NULL, KVG_OPT_INCLUDE, A(jobs), .sub = kvg__bench_jobs_table},
    {"svg", NULL, KVG_OPT_STR, A(svg), AS(svg), .meta = "FILE", .section = "output",
     .help = "the plot"},
    {"timeline", NULL, KVG_OPT_STR, A(csv), AS(csv), .meta = "FILE",
     .help = "per planner and 5-minute point: load, replicas, misses (CSV)"},
    {"arrivals-out", NULL, KVG_OPT_STR, A(arrivals), AS(arrivals), .meta = "FILE",
     .help = "the day's requests as JSONL, a header line first (the setup a live replay "
             "needs: bench/autoscale/agree_replay.py; diurnal-pd: its prefill and decode pools "
             "with the measured per-role profile), then one line per request"},
    {"prefill-headroom", NULL, KVG_OPT_DOUBLE, O(pd_headroom[0]), .min = 0, .max = 10,
     .section = "diurnal-pd experiments (bench-only, not planner options a deployment has)",
     .flags = KVG_OPT_F_NODEFAULT,
     .help = "the prefill pool's planner headroom (default: the planner's, 0.1; kvgate and "
             "oracle read it; static's count is unchanged)"},
    {"decode-headroom", NULL, KVG_OPT_DOUBLE, O(pd_headroom[1]), .min = 0, .max = 10,
     .flags = KVG_OPT_F_NODEFAULT, .help = "the same for the decode pool"},
    {"headroom-from", NULL, KVG_OPT_DOUBLE, O(pd_headroom_from_s), FROM(0), .meta = "SECS",
     .help = "those headrooms apply from virtual second SECS on (before: 0.1)"},
    {"pd-local-prefill-wait", NULL, KVG_OPT_DOUBLE, O(pd_local_wait_s), .min = 0, .max = 3600,
     .meta = "SECS",
     .help = "prefill on a decode replica when the prefill pool's predicted wait is past SECS "
             "and the decode's is shorter (0: never; not a serve option)"},
    {"decode-batched-tokens", NULL, KVG_OPT_U32, O(pd_decode_batched_tokens), .min = 1,
     .max = 1 << 20, .flags = KVG_OPT_F_NODEFAULT,
     .help = "the decode replicas' token budget per step (default: the profile's "
             "max_num_batched_tokens)"},
    {"oracle-lead", NULL, KVG_OPT_DOUBLE, O(oracle_lead_s), FROM(0), .meta = "SECS",
     .help = "planner oracle sizes each pool for the day's true rate (bursts included) over the "
             "next SECS (0: the start-up p90 lead)"},
    KVG_OPT_END,
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate bench --scenario diurnal|diurnal-pd [--planners LIST] [flags]\n\n"
               "A day of load against each planner, offline in virtual time (deterministic per "
               "--seed):\n"
               "SLO attainment against GPU-hours. A line per planner on stdout, then the report "
               "(or\n"
               "to --out FILE).\n\n");
}

/* Defaults, then argv: 0, 1 for --help (printed), or 2 with the reason on
 * stderr. */
static int parse(struct cfg *c, int argc, char **argv)
{
    kvg_bench_scale_opts_default(&c->o);
    c->jobs = 2;
    c->com.seed = c->o.seed;
    static const char *const defaults[] = {"static", "queue", "sla", "kvgate"};
    for (size_t i = 0; i < KVG_ARRAY_LEN(defaults); i++)
        snprintf(c->planners[c->n++], sizeof c->planners[0], "%s", defaults[i]);
    kvg__bench_command(c->command, sizeof c->command, argc, argv);
    snprintf(planner_help, sizeof planner_help,
             "comma-separated planners to compare: %s; queue-waiting: queue's waiting preset; "
             "kvgate-noprewarm: kvgate without prewarming new replicas; oracle (diurnal-pd)",
             kvg_autoscale_planner_names());
    kvg__bench_names_init();
    int rc = kvg__bench_parse(opt_table, c, c, argc, argv, usage, "kvgate bench");
    if (rc) return rc;
    c->o.seed = c->com.seed;
    if (c->o.cold_share + c->o.fetch_share > 1) {
        fprintf(stderr, "kvgate bench: --cold-share + --fetch-share > 1\n");
        return 2;
    }
    return 0;
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

/* Writes fn's output to path, or to stdout when path is "" (the report). */
static int write_file(const char *path,
                      int (*fn)(const struct kvg_bench_scale_result *, size_t, const struct cfg *,
                                FILE *),
                      const struct kvg_bench_scale_result *r, size_t n, const struct cfg *c)
{
    FILE *f = path[0] ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "kvgate bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = fn(r, n, c, f);
    if ((path[0] ? fclose(f) : fflush(f)) || rc) {
        fprintf(stderr, "kvgate bench: writing %s failed\n", path[0] ? path : "stdout");
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

/* A run with classes: its per-class figures under its line. */
static void print_classes(const struct kvg_bench_scale_classes *k)
{
    if (!k->on) return;
    printf("         interactive slo %.4f  batch %llu: slo %.4f  deadline met %.4f  "
           "rejected %llu  dropped %llu\n",
           k->slo_attainment_interactive, (unsigned long long)k->batch, k->slo_attainment_batch,
           k->batch_deadline_met, (unsigned long long)k->batch_rejected,
           (unsigned long long)k->batch_dropped);
}

/* The PD day's results: a line per planner, then --json, the report
 * (--out, else stdout), --timeline and --svg. */
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
        } else if (!c->com.quiet) {
            const struct kvg_bench_scale_pd_result *r = &j->pr;
            printf("%-8s slo %.4f (ttft %.4f itl %.4f)  gpu-h %.2f (prefill %.2f decode %.2f)  "
                   "events %u/%u  ttft p90 %.3f s  itl p90 %.4f s  failed %llu  local %llu  "
                   "(%.1f s)\n",
                   r->planner, r->slo_attainment, r->ttft_attainment, r->itl_attainment,
                   r->gpu_hours, r->pool[0].gpu_hours, r->pool[1].gpu_hours,
                   r->pool[0].scale_events, r->pool[1].scale_events, r->ttft_p90_s, r->itl_p90_s,
                   (unsigned long long)r->failed, (unsigned long long)r->local_prefills, r->wall_s);
            print_classes(&r->cls);
        }
    }
    const char *svg = svg_link(c);
    for (int w = 0; res && !status && w < 4; w++) {
        const char *path = w == 3 ? c->svg : w == 2 ? c->csv : w ? c->com.out : c->com.json;
        int to_stdout = w == 1 && !path[0]; /* the report's default */
        if (!path[0] && !to_stdout) continue;
        FILE *f = to_stdout ? stdout : fopen(path, "w");
        int rc = !f       ? -1
                 : w == 3 ? kvg_bench_scale_pd_svg(res, c->n, &c->o, f)
                 : w == 2 ? kvg_bench_scale_pd_timeline_csv(res, c->n, f)
                 : w      ? kvg_bench_scale_pd_md(res, c->n, &c->o, c->command, svg, f)
                          : kvg_bench_scale_pd_json(res, c->n, &c->o, f);
        if (!f || (to_stdout ? fflush(f) : fclose(f)) || rc) {
            fprintf(stderr, "kvgate bench: writing %s failed\n", to_stdout ? "stdout" : path);
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
    if (!c->com.quiet)
        printf("one prefill replica: %.0f input tokens/s within TTFT p90 %.2f s (batch 1: %.0f); "
               "one decode replica: %.0f output tokens/s within ITL p90 %.3f s (batch 1: %.0f) "
               "(the planners' profile)\n",
               pr.prefill_tps, pr.prefill_ttft_p90_s, pr.batch1_prefill_tps, pr.decode_tps,
               pr.decode_itl_p90_s, pr.batch1_decode_tps);
    return 0;
}

/* --arrivals-out: the day's requests (the PD day's after its per-role
 * profile is measured). 0 or 1. */
static int arrivals_out(const struct cfg *c)
{
    FILE *f = fopen(c->arrivals, "w");
    if (!f) {
        fprintf(stderr, "kvgate bench: %s: %s\n", c->arrivals, strerror(errno));
        return 1;
    }
    int rc = c->pd ? kvg_bench_scale_pd_arrivals(&c->o, f) : kvg_bench_scale_arrivals(&c->o, f);
    if (fclose(f) && !rc) rc = -EIO;
    if (rc == KVG_EUNSUPP)
        fprintf(stderr, "kvgate bench: --arrivals-out: not with --batch-share, --headroom-from, "
                        "--pd-local-prefill-wait or --decode-batched-tokens (no gateway pool "
                        "has them)\n");
    else if (rc)
        fprintf(stderr, "kvgate bench: %s: %s\n", c->arrivals, kvg_strerror(rc));
    return rc ? 1 : 0;
}

int kvg_cmd_bench_scale_main(int argc, char **argv)
{
    struct cfg *c = calloc(1, sizeof *c);
    if (!c) return 1;
    int rc = parse(c, argc, argv);
    if (rc) {
        free(c);
        return rc == 1 ? 0 : 2;
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
    if (!c->com.quiet && !c->pd)
        printf("one replica meets the SLO up to %.2f req/s of this workload (the planners' "
               "profile)\n",
               c->o.knee_rps);
    if (c->pd && pd_calibrate(c)) {
        free(c);
        return 1;
    }
    if (c->arrivals[0] && arrivals_out(c)) {
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
        } else if (!c->com.quiet) {
            const struct kvg_bench_scale_result *r = &j->r;
            printf("%-8s slo %.4f (ramp %.4f)  gpu-h %.2f  replicas mean %.2f max %u  events %u  "
                   "ttft p90 %.3f s  itl p90 %.4f s  hit %.2f  failed %llu  (%.1f s)\n",
                   r->planner, r->slo_attainment, r->ramp_slo_attainment, r->gpu_hours,
                   r->mean_replicas, r->max_replicas, r->scale_events, r->ttft_p90_s, r->itl_p90_s,
                   r->cache_hit, (unsigned long long)r->failed, r->wall_s);
            print_classes(&r->cls);
        }
    }
    if (res && !status) {
        if (c->com.json[0] && write_file(c->com.json, json_of, res, c->n, c)) status = 1;
        if (c->svg[0] && write_file(c->svg, svg_of, res, c->n, c)) status = 1;
        if (c->csv[0] && write_file(c->csv, csv_of, res, c->n, c)) status = 1;
        if (write_file(c->com.out, md_of, res, c->n, c)) status = 1;
    }
    for (size_t i = 0; i < c->n; i++) kvg_bench_scale_result_free(&p.jobs[i].r);
    free(res);
    free(p.jobs);
    free(c);
    return status;
}
