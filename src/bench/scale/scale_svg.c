/* The autoscaling benchmark's plots: panels over the day, each with the
 * demand in replicas' worth (grey area), ready replicas (solid), ready +
 * starting (dotted) and the planner's desired count (dashed). The
 * aggregated day has one panel per planner, the PD day two (prefill pool,
 * decode pool); both go through panel() below. Plain SVG written here. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/scale/scale_int.h"

#define W 900.0
#define PH 170.0 /* panel height */
#define ML 50.0
#define MR 20.0
#define MT 34.0
#define PG 40.0 /* gap between panels */

/* One panel's series, n points each (t_h in hours). */
struct panel {
    const char *title, *summary;
    size_t n;
    const double *t_h, *demand, *ready, *starting, *desired;
};

static double xmap(double h)
{
    return ML + h / 24.0 * (W - ML - MR);
}

static double ymap(double v, double ymax, double top)
{
    return top + PH - v / ymax * PH;
}

/* The largest value p draws, folded into ymax. */
static double panel_max(const struct panel *p, double ymax)
{
    for (size_t i = 0; i < p->n; i++) {
        ymax = fmax(ymax, p->ready[i] + p->starting[i]);
        ymax = fmax(ymax, p->desired[i]);
        ymax = fmax(ymax, p->demand[i]);
    }
    return ymax;
}

static void line(FILE *f, const struct panel *p, const double *v, double ymax, double top,
                 const char *col, const char *dash)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s points=\"", col, dash);
    for (size_t i = 0; i < p->n; i++)
        fprintf(f, "%.1f,%.1f ", xmap(p->t_h[i]), ymap(v[i], ymax, top));
    fprintf(f, "\"/>\n");
}

static int panel(FILE *f, const struct panel *p, double ymax, double top)
{
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">%s</text>\n", ML, top - 4,
            p->title);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n", W - MR, top - 4,
            p->summary);
    fprintf(f,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
            "stroke=\"#999\"/>\n",
            ML, top, W - ML - MR, PH);
    for (int h = 0; h <= 24; h += 3)
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%02d:00</text>\n", xmap(h),
                top + PH + 13, h);
    /* Small pools (a decode pool of 2) need a label per replica to be read. */
    double step = ymax > 20 ? 10 : ymax > 8 ? 5 : 1;
    for (double v = 0; v <= ymax; v += step)
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", ML - 4,
                ymap(v, ymax, top) + 4, v);
    fprintf(f, "<polygon fill=\"#ddd\" points=\"%.1f,%.1f ", xmap(0), ymap(0, ymax, top));
    for (size_t i = 0; i < p->n; i++)
        fprintf(f, "%.1f,%.1f ", xmap(p->t_h[i]), ymap(p->demand[i], ymax, top));
    fprintf(f, "%.1f,%.1f\"/>\n", xmap(24), ymap(0, ymax, top));
    double *all = malloc(p->n * sizeof *all);
    if (!all) return -ENOMEM;
    for (size_t i = 0; i < p->n; i++) all[i] = p->ready[i] + p->starting[i];
    line(f, p, all, ymax, top, "#e08000", " stroke-dasharray=\"2,2\"");
    free(all);
    line(f, p, p->desired, ymax, top, "#c00000", " stroke-dasharray=\"6,3\"");
    line(f, p, p->ready, ymax, top, "#0050c0", "");
    return 0;
}

static void begin(FILE *f, double height, const char *title)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"white\"/>\n<text x=\"%.0f\" y=\"18\" font-size=\"14\">%s</text>\n",
            W, height, ML, title);
}

/* A legend line at y, grey. */
static void legend(FILE *f, double y, const char *text)
{
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">%s</text>\n", ML, y, text);
}

/* rate x per into a new array (NULL: no memory). */
static double *scaled(const double *rate, size_t n, double per)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++) v[i] = rate[i] * per;
    return v;
}

int kvg_bench_scale_svg(const struct kvg_bench_scale_result *r, size_t n, FILE *f)
{
    struct panel *p = calloc(n ? n : 1, sizeof *p);
    char(*sum)[96] = calloc(n ? n : 1, sizeof *sum);
    int rc = p && sum ? 0 : -ENOMEM;
    double ymax = 1;
    size_t np = 0;
    for (size_t k = 0; !rc && k < n; k++) {
        const struct kvg_bench_scale_result *x = &r[k];
        if (x->status) continue;
        snprintf(sum[np], sizeof sum[np], "SLO %.2f%%, %.1f GPU-h, %u scale events",
                 x->slo_attainment * 100, x->gpu_hours, x->scale_events);
        p[np] = (struct panel){.title = x->planner,
                               .summary = sum[np],
                               .n = x->n,
                               .t_h = x->t_h,
                               .demand = scaled(x->rate, x->n, x->load_per_rps),
                               .ready = x->ready,
                               .starting = x->starting,
                               .desired = x->desired};
        if (!p[np].demand) rc = -ENOMEM;
        ymax = panel_max(&p[np++], ymax);
    }
    ymax = ceil(ymax * 1.1);
    double H = MT + (double)np * (PH + PG) + 10;
    if (!rc) begin(f, H, "Replicas and load over the day (kvgate bench --scenario diurnal)");
    for (size_t k = 0; !rc && k < np; k++) rc = panel(f, &p[k], ymax, MT + (double)k * (PH + PG));
    if (!rc) {
        legend(f, H - 4,
               "grey: demand in replicas' worth; blue: ready; orange dotted: ready + starting; "
               "red dashed: desired");
        fprintf(f, "</svg>\n");
    }
    for (size_t k = 0; p && k < np; k++) free((double *)p[k].demand);
    free(p);
    free(sum);
    if (rc) return rc;
    return ferror(f) ? -EIO : 0;
}

int kvg_bench_scale_pd_svg(const struct kvg_bench_scale_pd_result *r, size_t n,
                           const struct kvg_bench_scale_opts *o, FILE *f)
{
    static const char *const pool_name[2] = {"prefill", "decode"};
    size_t np = 0;
    for (size_t k = 0; k < n; k++) np += !r[k].status;
    double H = MT + (double)(2 * np) * (PH + PG) + 24;
    begin(f, H,
          "Prefill and decode replicas and load over the day (kvgate bench --scenario "
          "diurnal-pd)");
    /* Demand as the PD run's pool_need() prices a pool (scale_pd.c, the
     * sizing of static and of the day's first pool), without its headroom:
     * arrivals/s x the scenario's mean ISL (every prompt token, cached or
     * not: the per-role profile was measured on prompts that miss) over a
     * prefill replica's tokens/s, and x the mean OSL over a decode
     * replica's. */
    double per[2] = {kvg__scale_isl_mean(o), o->osl};
    double top = MT;
    int rc = 0;
    for (size_t k = 0; !rc && k < n; k++) {
        const struct kvg_bench_scale_pd_result *x = &r[k];
        if (x->status) continue;
        double tps[2] = {x->prefill_tps, x->decode_tps};
        for (int pi = 0; !rc && pi < 2; pi++) {
            const struct kvg_bench_scale_pd_pool *pool = &x->pool[pi];
            char title[64], sum[160];
            snprintf(title, sizeof title, "%s: %s pool", x->planner, pool_name[pi]);
            if (pi == 0)
                snprintf(sum, sizeof sum,
                         "SLO %.2f%% (TTFT ok %.2f%%), %.1f of %.1f GPU-h, %u scale events",
                         x->slo_attainment * 100, x->ttft_attainment * 100, pool->gpu_hours,
                         x->gpu_hours, pool->scale_events);
            else
                snprintf(sum, sizeof sum, "ITL ok %.2f%%, %.1f GPU-h, %u scale events",
                         x->itl_attainment * 100, pool->gpu_hours, pool->scale_events);
            struct panel p = {.title = title,
                              .summary = sum,
                              .n = x->n,
                              .t_h = x->t_h,
                              .demand = scaled(x->rate, x->n, tps[pi] > 0 ? per[pi] / tps[pi] : 0),
                              .ready = x->ready[pi],
                              .starting = x->starting[pi],
                              .desired = x->desired[pi]};
            if (!p.demand) return -ENOMEM;
            /* Each panel on its own scale: a decode pool of 3 next to a
             * prefill pool of 30 would be a flat line on theirs. */
            rc = panel(f, &p, ceil(panel_max(&p, 1) * 1.1), top);
            free((double *)p.demand);
            top += PH + PG;
        }
    }
    if (rc) return rc;
    legend(f, H - 18,
           "grey: demand in replicas' worth by the per-role profile (prefill: arrivals x mean "
           "ISL, cache hits not taken off; decode: arrivals x mean OSL);");
    legend(f, H - 4,
           "blue: ready; orange dotted: ready + starting; red dashed: desired; each panel on "
           "its own scale");
    fprintf(f, "</svg>\n");
    return ferror(f) ? -EIO : 0;
}
