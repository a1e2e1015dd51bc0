/* Reports of the autoscaling benchmark: JSON (one object per planner), the
 * markdown table with the goal's checks, and the SVG of replicas and load
 * over the day (drawn here, no plotting library). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/startup.h"
#include "bench/scale/scale_int.h"

static const struct kvg_bench_scale_result *find(const struct kvg_bench_scale_result *r, size_t n,
                                                 const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].status == 0 && !strcmp(r[i].planner, name)) return &r[i];
    return NULL;
}

static double num(double v)
{
    return isfinite(v) ? v : -1;
}

void kvg__scale_json_start(struct cJSON *j, const struct kvg_bench_scale_opts *o,
                           double parked_hours, uint32_t woken)
{
    cJSON_AddBoolToObject(j, "stress", o->stress);
    cJSON_AddNumberToObject(j, "fast_share", o->fast_share);
    if (o->fast_share > 0)
        cJSON_AddNumberToObject(j, "fast_ready_secs", o->fast_ready_s);
    else
        cJSON_AddNullToObject(j, "fast_ready_secs");
    cJSON_AddNumberToObject(j, "standby", o->standby);
    cJSON_AddNumberToObject(j, "standby_cost", o->standby_cost);
    cJSON_AddNumberToObject(j, "parked_hours", parked_hours);
    cJSON_AddNumberToObject(j, "replicas_woken", woken);
    cJSON_AddNumberToObject(j, "slo_goal", o->aopts.slo_goal);
}

void kvg__scale_json_classes(struct cJSON *j, const struct kvg_bench_scale_classes *c,
                             const struct kvg_bench_scale_opts *o)
{
    /* Interactive is every request in a run without classes. */
    cJSON_AddBoolToObject(j, "classes", c->on);
    cJSON_AddNumberToObject(j, "batch_share", c->on ? o->batch_share : 0);
    cJSON_AddNumberToObject(j, "slo_attainment_interactive", c->slo_attainment_interactive);
    if (c->batch) {
        cJSON_AddNumberToObject(j, "slo_attainment_batch", c->slo_attainment_batch);
        cJSON_AddNumberToObject(j, "batch_deadline_met", c->batch_deadline_met);
    } else {
        cJSON_AddNullToObject(j, "slo_attainment_batch");
        cJSON_AddNullToObject(j, "batch_deadline_met");
    }
    cJSON_AddNumberToObject(j, "batch_rejected", (double)c->batch_rejected);
    cJSON_AddNumberToObject(j, "batch_dropped", (double)c->batch_dropped);
    cJSON_AddNumberToObject(j, "batch_requests", (double)c->batch);
    cJSON_AddNumberToObject(j, "batch_deadline_s", o->batch_deadline_s);
}

void kvg__scale_md_classes(FILE *f, const struct kvg_bench_scale_opts *o)
{
    fprintf(f,
            "\nTraffic classes: %.0f%% of requests batch, deadline %.0f s from arrival "
            "(planner sla without classes, as Dynamo's). Interactive SLO: TTFT from arrival; "
            "batch SLO: TTFT from its dispatch by the gateway; rejected: 429 past the deadline; "
            "dropped: never finished nor answered.\n\n",
            o->batch_share * 100, o->batch_deadline_s);
    fprintf(f, "| planner | classes | interactive SLO | batch SLO | batch deadline met | "
               "batch rejected | batch dropped | GPU-h |\n|---|---|---|---|---|---|---|---|\n");
}

void kvg__scale_md_class_row(FILE *f, const char *planner, const struct kvg_bench_scale_classes *c,
                             double gpu_hours)
{
    char bs[16] = "-", bd[16] = "-";
    if (c->batch) {
        snprintf(bs, sizeof bs, "%.2f%%", c->slo_attainment_batch * 100);
        snprintf(bd, sizeof bd, "%.2f%%", c->batch_deadline_met * 100);
    }
    fprintf(f, "| %s | %s | %.2f%% | %s | %s | %llu | %llu | %.1f |\n", planner,
            c->on ? "yes" : "no", c->slo_attainment_interactive * 100, bs, bd,
            (unsigned long long)c->batch_rejected, (unsigned long long)c->batch_dropped, gpu_hours);
}

int kvg_bench_scale_json(const struct kvg_bench_scale_result *r, size_t n,
                         const struct kvg_bench_scale_opts *o, FILE *f)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr) return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (r[i].status) continue;
        const struct kvg_bench_scale_result *x = &r[i];
        cJSON *j = cJSON_CreateObject();
        if (!j) {
            cJSON_Delete(arr);
            return -ENOMEM;
        }
        cJSON_AddItemToArray(arr, j);
        cJSON_AddStringToObject(j, "planner", x->planner);
        cJSON_AddStringToObject(j, "scenario", "diurnal");
        cJSON_AddNumberToObject(j, "seed", (double)o->seed);
        cJSON_AddNumberToObject(j, "slo_attainment", x->slo_attainment);
        cJSON_AddNumberToObject(j, "ramp_slo_attainment", x->ramp_slo_attainment);
        cJSON_AddNumberToObject(j, "gpu_hours", x->gpu_hours);
        kvg__scale_json_classes(j, &x->cls, o);
        kvg__scale_json_start(j, o, x->parked_hours, x->woken);
        cJSON_AddNumberToObject(j, "replica_hours", x->replica_hours);
        cJSON_AddNumberToObject(j, "mean_replicas", x->mean_replicas);
        cJSON_AddNumberToObject(j, "max_replicas", x->max_replicas);
        cJSON_AddNumberToObject(j, "scale_events", x->scale_events);
        cJSON_AddNumberToObject(j, "replicas_added", x->added);
        cJSON_AddNumberToObject(j, "replicas_removed", x->removed);
        cJSON_AddNumberToObject(j, "starts_cancelled", x->cancelled);
        cJSON_AddNumberToObject(j, "ttft_p50_s", num(x->ttft_p50_s));
        cJSON_AddNumberToObject(j, "ttft_p90_s", num(x->ttft_p90_s));
        cJSON_AddNumberToObject(j, "ttft_p99_s", num(x->ttft_p99_s));
        cJSON_AddNumberToObject(j, "ramp_ttft_p90_s", num(x->ramp_ttft_p90_s));
        cJSON_AddNumberToObject(j, "itl_p90_s", num(x->itl_p90_s));
        cJSON_AddNumberToObject(j, "cache_hit", x->cache_hit);
        cJSON_AddBoolToObject(j, "prewarm", x->prewarmed);
        cJSON_AddNumberToObject(j, "replicas_scaled_out", x->scaled_out);
        cJSON_AddNumberToObject(j, "replicas_hit_recovered", x->recovered);
        cJSON_AddNumberToObject(j, "hit_recovery_mean_s", num(x->recovery_mean_s));
        cJSON_AddNumberToObject(j, "hit_recovery_p90_s", num(x->recovery_p90_s));
        cJSON_AddNumberToObject(j, "new_replica_ttft_p90_s", num(x->young_ttft_p90_s));
        cJSON_AddNumberToObject(j, "requests", (double)x->requests);
        cJSON_AddNumberToObject(j, "failed", (double)x->failed);
        cJSON_AddNumberToObject(j, "static_peak_replicas", x->static_peak);
        cJSON_AddStringToObject(j, "last_reason", x->last_reason);
    }
    char *s = cJSON_Print(arr);
    cJSON_Delete(arr);
    if (!s) return -ENOMEM;
    int rc = fputs(s, f) < 0 || fputc('\n', f) == EOF ? -EIO : 0;
    free(s);
    return rc;
}

int kvg_bench_scale_timeline_csv(const struct kvg_bench_scale_result *r, size_t n, FILE *f)
{
    fprintf(f, "planner,hour,rate,desired,ready,starting,arrived,missed\n");
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; !r[k].status && i < r[k].n; i++)
            fprintf(f, "%s,%.3f,%.3f,%.0f,%.0f,%.0f,%.0f,%.0f\n", r[k].planner, r[k].t_h[i],
                    r[k].rate[i], r[k].desired[i], r[k].ready[i], r[k].starting[i], r[k].arrived[i],
                    r[k].missed[i]);
    return ferror(f) ? -EIO : 0;
}

/* One check of the goal: a markdown bullet ("- **met**:" or, with plain,
 * "- met:" so that a second block is not read as the section's verdict). */
static void check(FILE *f, int plain, int *failed, int ok, const char *fmt, const char *who,
                  double a, double b)
{
    if (!ok) (*failed)++;
    if (!f) return;
    fprintf(f, "- %s ", ok ? (plain ? "met:" : "**met**:") : (plain ? "not met:" : "**not met**:"));
    fprintf(f, fmt, who, a, b);
    fputc('\n', f);
}

/* The goal for planner `who` in kvgate's place. */
static int goal_for(const struct kvg_bench_scale_result *r, size_t n, const char *who, int plain,
                    FILE *f)
{
    const struct kvg_bench_scale_result *k = find(r, n, who), *s = find(r, n, "sla"),
                                        *st = find(r, n, "static"), *q = find(r, n, "queue");
    if (!k || !s || !st || !q) return -1;
    int failed = 0;
    check(f, plain, &failed, k->slo_attainment >= 0.99,
          "%s's SLO attainment %.4f (the goal: >= %.2f)", who, k->slo_attainment, 0.99);
    check(f, plain, &failed, k->gpu_hours <= 0.9 * s->gpu_hours,
          "%s's GPU-hours are %.3fx sla's (the goal: <= %.2fx)", who, k->gpu_hours / s->gpu_hours,
          0.9);
    check(f, plain, &failed, k->gpu_hours <= 0.85 * st->gpu_hours,
          "%s's GPU-hours are %.3fx static peak provisioning's (the goal: well below; "
          "checked as <= %.2fx)",
          who, k->gpu_hours / st->gpu_hours, 0.85);
    check(f, plain, &failed, k->ramp_slo_attainment >= 0.99,
          "through the morning ramp %s's SLO attainment is %.4f (the goal: >= %.2f)", who,
          k->ramp_slo_attainment, 0.99);
    check(f, plain, &failed, q->ramp_slo_attainment < 0.99,
          "through the morning ramp %s's SLO attainment is %.4f (the goal says queue does "
          "not meet it: < %.2f)",
          "queue", q->ramp_slo_attainment, 0.99);
    return failed;
}

int kvg_bench_scale_goal(const struct kvg_bench_scale_result *r, size_t n, FILE *f)
{
    return goal_for(r, n, "kvgate", 0, f);
}

int kvg_bench_scale_md(const struct kvg_bench_scale_result *r, size_t n,
                       const struct kvg_bench_scale_opts *o, const char *command, const char *svg,
                       FILE *f)
{
    fprintf(f, "| planner | SLO attainment | morning ramp | GPU-hours | mean / max replicas | "
               "scale events | TTFT p90 (s) | ramp TTFT p90 (s) | ITL p90 (s) | cache hit | "
               "failed | hit recovery mean / p90 (s) | new-replica TTFT p90 (s) |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct kvg_bench_scale_result *x = &r[i];
        if (x->status) {
            fprintf(f, "| %s | not in this build | | | | | | | | | | | |\n", x->planner);
            continue;
        }
        fprintf(f,
                "| %s | %.4f | %.4f | %.1f | %.2f / %u | %u | %.3f | %.3f | %.4f | %.3f | %llu | ",
                x->planner, x->slo_attainment, x->ramp_slo_attainment, x->gpu_hours,
                x->mean_replicas, x->max_replicas, x->scale_events, x->ttft_p90_s,
                x->ramp_ttft_p90_s, x->itl_p90_s, x->cache_hit, (unsigned long long)x->failed);
        if (x->recovered)
            fprintf(f, "%.1f / %.1f (%u of %u) | ", x->recovery_mean_s, x->recovery_p90_s,
                    x->recovered, x->scaled_out);
        else
            fprintf(f, "- (%u scaled out) | ", x->scaled_out);
        if (x->young_ttft_p90_s >= 0)
            fprintf(f, "%.3f |\n", x->young_ttft_p90_s);
        else
            fprintf(f, "- |\n");
    }
    fprintf(f,
            "\nSeed %llu; %s. SLO: TTFT <= %.2f s and mean inter-token latency <= %.3f s per "
            "request; the morning ramp is requests arriving %02.0f:00-%02.0f:00. "
            "Start-ups: model %s, %.0f%% cold / %.0f%% fetch / %.0f%% warm nodes",
            (unsigned long long)o->seed, command ? command : "", o->aopts.ttft_target_s,
            o->aopts.itl_target_s, o->ramp_from_h, o->ramp_to_h, o->startup_model,
            o->cold_share * 100, o->fetch_share * 100, (1 - o->cold_share - o->fetch_share) * 100);
    if (o->startup_fixed_s > 0) fprintf(f, ", every one exactly %.0f s", o->startup_fixed_s);
    fprintf(f, ".\n");
    if (o->batch_share > 0) {
        kvg__scale_md_classes(f, o);
        for (size_t i = 0; i < n; i++)
            if (!r[i].status) kvg__scale_md_class_row(f, r[i].planner, &r[i].cls, r[i].gpu_hours);
    }
    fprintf(f, "\n");
    if (svg) fprintf(f, "![replicas and load over the day per planner](%s)\n\n", svg);
    fprintf(f, "Goal (issue 16):\n\n");
    int g = kvg_bench_scale_goal(r, n, f);
    if (g < 0)
        fprintf(f, "- not checked: kvgate, sla, static and queue must all run\n");
    else
        fprintf(f, "\n**%s**\n", g ? "The goal is not met." : "The goal is met.");
    if (g >= 0 && find(r, n, "kvgate-noprewarm")) {
        fprintf(f, "\nThe same checks for kvgate-noprewarm (kvgate's planner, no prewarm):\n\n");
        int h = goal_for(r, n, "kvgate-noprewarm", 1, f);
        fprintf(f, "\nWithout prewarm the goal is %s.\n", h ? "not met" : "met");
    }
    return ferror(f) ? -EIO : 0;
}
