/* Reports of the PD day (scale.h, kvg_bench_scale_pd_*): JSON, one object
 * per planner with both pools' figures, and the markdown table with the
 * goal's checks over prefill + decode GPU-hours. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/scale/scale_int.h"

static const char *const g_pool_name[2] = {"prefill", "decode"};

static double num(double v)
{
    return isfinite(v) ? v : -1;
}

static const struct kvg_bench_scale_pd_result *find(const struct kvg_bench_scale_pd_result *r,
                                                    size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].status == 0 && !strcmp(r[i].planner, name)) return &r[i];
    return NULL;
}

int kvg_bench_scale_pd_json(const struct kvg_bench_scale_pd_result *r, size_t n,
                            const struct kvg_bench_scale_opts *o, FILE *f)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr) return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (r[i].status) continue;
        const struct kvg_bench_scale_pd_result *x = &r[i];
        cJSON *j = cJSON_CreateObject();
        if (!j) {
            cJSON_Delete(arr);
            return -ENOMEM;
        }
        cJSON_AddItemToArray(arr, j);
        cJSON_AddStringToObject(j, "planner", x->planner);
        cJSON_AddStringToObject(j, "scenario", "diurnal-pd");
        cJSON_AddNumberToObject(j, "seed", (double)o->seed);
        cJSON_AddNumberToObject(j, "slo_attainment", x->slo_attainment);
        cJSON_AddNumberToObject(j, "ttft_attainment", x->ttft_attainment);
        cJSON_AddNumberToObject(j, "itl_attainment", x->itl_attainment);
        cJSON_AddNumberToObject(j, "gpu_hours", x->gpu_hours);
        cJSON_AddNumberToObject(j, "scale_events",
                                x->pool[0].scale_events + x->pool[1].scale_events);
        cJSON_AddNumberToObject(j, "ttft_p50_s", num(x->ttft_p50_s));
        cJSON_AddNumberToObject(j, "ttft_p90_s", num(x->ttft_p90_s));
        cJSON_AddNumberToObject(j, "ttft_p99_s", num(x->ttft_p99_s));
        cJSON_AddNumberToObject(j, "itl_p90_s", num(x->itl_p90_s));
        cJSON_AddNumberToObject(j, "kv_transfer_p90_s", num(x->xfer_p90_s));
        cJSON_AddNumberToObject(j, "cache_hit", x->cache_hit);
        cJSON_AddNumberToObject(j, "profile_prefill_tps", x->prefill_tps);
        cJSON_AddNumberToObject(j, "profile_decode_tps", x->decode_tps);
        cJSON_AddNumberToObject(j, "requests", (double)x->requests);
        cJSON_AddNumberToObject(j, "failed", (double)x->failed);
        kvg__scale_json_classes(j, &x->cls, o);
        kvg__scale_json_start(j, o, x->pool[0].parked_hours + x->pool[1].parked_hours,
                              x->pool[0].woken + x->pool[1].woken);
        for (int pi = 0; pi < 2; pi++) {
            const struct kvg_bench_scale_pd_pool *p = &x->pool[pi];
            cJSON *q = cJSON_AddObjectToObject(j, g_pool_name[pi]);
            if (!q) {
                cJSON_Delete(arr);
                return -ENOMEM;
            }
            cJSON_AddNumberToObject(q, "gpu_hours", p->gpu_hours);
            /* The share of the day's requests that missed on this pool's leg. */
            cJSON_AddNumberToObject(q, "slo_miss_leg",
                                    x->requests ? (double)x->missed_leg[pi] / (double)x->requests
                                                : 0);
            cJSON_AddNumberToObject(q, "mean_replicas", p->mean_replicas);
            cJSON_AddNumberToObject(q, "max_replicas", p->max_replicas);
            cJSON_AddNumberToObject(q, "scale_events", p->scale_events);
            cJSON_AddNumberToObject(q, "replicas_added", p->added);
            cJSON_AddNumberToObject(q, "replicas_removed", p->removed);
            cJSON_AddNumberToObject(q, "starts_cancelled", p->cancelled);
            cJSON_AddNumberToObject(q, "parked_hours", p->parked_hours);
            cJSON_AddNumberToObject(q, "replicas_woken", p->woken);
            cJSON_AddNumberToObject(q, "static_peak_replicas", p->static_peak);
        }
    }
    char *s = cJSON_Print(arr);
    cJSON_Delete(arr);
    if (!s) return -ENOMEM;
    int rc = fputs(s, f) < 0 || fputc('\n', f) == EOF ? -EIO : 0;
    free(s);
    return rc;
}

int kvg_bench_scale_pd_goal(const struct kvg_bench_scale_pd_result *r, size_t n, FILE *f)
{
    const struct kvg_bench_scale_pd_result *k = find(r, n, "kvgate"), *s = find(r, n, "sla"),
                                           *st = find(r, n, "static");
    if (!k || !s || !st) return -1;
    int failed = 0;
    struct {
        int ok;
        char text[200];
    } c[3];
    c[0].ok = k->slo_attainment >= 0.99;
    snprintf(c[0].text, sizeof c[0].text, "kvgate's SLO attainment %.2f%% (goal >= 99%%)",
             k->slo_attainment * 100);
    c[1].ok = k->gpu_hours <= 0.9 * s->gpu_hours;
    snprintf(c[1].text, sizeof c[1].text,
             "kvgate's GPU-hours %.1f = %.2fx sla's %.1f (goal <= 0.9x)", k->gpu_hours,
             s->gpu_hours > 0 ? k->gpu_hours / s->gpu_hours : 0, s->gpu_hours);
    c[2].ok = k->gpu_hours <= 0.85 * st->gpu_hours;
    snprintf(c[2].text, sizeof c[2].text,
             "kvgate's GPU-hours = %.2fx static peak's %.1f (goal: well below, <= 0.85x)",
             st->gpu_hours > 0 ? k->gpu_hours / st->gpu_hours : 0, st->gpu_hours);
    for (int i = 0; i < 3; i++) {
        failed += !c[i].ok;
        if (f) fprintf(f, "- %s: %s\n", c[i].ok ? "met" : "**not met**", c[i].text);
    }
    return failed;
}

int kvg_bench_scale_pd_md(const struct kvg_bench_scale_pd_result *r, size_t n,
                          const struct kvg_bench_scale_opts *o, const char *command,
                          const char *svg, FILE *f)
{
    fprintf(f, "Command: `%s` (seed %llu)\n\n", command ? command : "kvgate bench",
            (unsigned long long)o->seed);
    for (size_t i = 0; i < n; i++)
        if (!r[i].status) {
            fprintf(f,
                    "Per-role profile (measured, every planner's): a prefill replica %.0f input "
                    "tokens/s within the TTFT target, a decode replica %.0f output tokens/s "
                    "within the ITL target.\n\n",
                    r[i].prefill_tps, r[i].decode_tps);
            break;
        }
    fprintf(f, "| planner | SLO | TTFT ok | ITL ok | GPU-h (P + D) | prefill mean / max | "
               "decode mean / max | events P / D | TTFT p90 s | ITL p90 s | KV xfer p90 s | "
               "hit | failed |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct kvg_bench_scale_pd_result *x = &r[i];
        if (x->status) continue;
        fprintf(f,
                "| %s | %.2f%% | %.2f%% | %.2f%% | %.1f (%.1f + %.1f) | %.2f / %u | %.2f / %u | "
                "%u / %u | %.3f | %.4f | %.4f | %.2f | %llu |\n",
                x->planner, x->slo_attainment * 100, x->ttft_attainment * 100,
                x->itl_attainment * 100, x->gpu_hours, x->pool[0].gpu_hours, x->pool[1].gpu_hours,
                x->pool[0].mean_replicas, x->pool[0].max_replicas, x->pool[1].mean_replicas,
                x->pool[1].max_replicas, x->pool[0].scale_events, x->pool[1].scale_events,
                x->ttft_p90_s, x->itl_p90_s, x->xfer_p90_s, x->cache_hit,
                (unsigned long long)x->failed);
    }
    if (o->batch_share > 0) {
        kvg__scale_md_classes(f, o);
        for (size_t i = 0; i < n; i++)
            if (!r[i].status) kvg__scale_md_class_row(f, r[i].planner, &r[i].cls, r[i].gpu_hours);
    }
    if (svg)
        fprintf(f, "\n![prefill and decode replicas and load over the day per planner](%s)\n", svg);
    fprintf(f, "\nThe goal on the PD day (computed by `kvg_bench_scale_pd_goal`):\n\n");
    int g = kvg_bench_scale_pd_goal(r, n, f);
    if (g < 0)
        fprintf(f, "- not checked: kvgate, sla and static must all run\n");
    else
        fprintf(f, "\n**%s**\n", g ? "The goal is not met." : "The goal is met.");
    return ferror(f) ? -EIO : 0;
}

int kvg_bench_scale_pd_timeline_csv(const struct kvg_bench_scale_pd_result *r, size_t n, FILE *f)
{
    fprintf(f, "planner,hour,rate,arrived,missed,missed_prefill,p_desired,p_ready,p_starting,"
               "d_desired,d_ready,d_starting\n");
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; !r[k].status && i < r[k].n; i++)
            fprintf(f, "%s,%.3f,%.3f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f\n", r[k].planner,
                    r[k].t_h[i], r[k].rate[i], r[k].arrived[i], r[k].missed[i],
                    r[k].missed_prefill[i], r[k].desired[0][i], r[k].ready[0][i],
                    r[k].starting[0][i], r[k].desired[1][i], r[k].ready[1][i], r[k].starting[1][i]);
    return ferror(f) ? -EIO : 0;
}
