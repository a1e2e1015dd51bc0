/* The autoscaling benchmark's plot: one panel per planner over the day,
 * the demand in replicas' worth (grey area: arrivals x the planners'
 * per-request cost), ready replicas (solid), ready + starting (dotted) and
 * the planner's desired count (dashed). Plain SVG written here. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/scale.h"

#define W 900.0
#define PH 170.0 /* panel height */
#define ML 50.0
#define MR 20.0
#define MT 34.0
#define PG 40.0 /* gap between panels */

static double xmap(double h)
{
    return ML + h / 24.0 * (W - ML - MR);
}

static double ymap(double v, double ymax, double top)
{
    return top + PH - v / ymax * PH;
}

static void line(FILE *f, const struct kvg_bench_scale_result *r, const double *v, double ymax,
                 double top, const char *col, const char *dash)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s points=\"", col, dash);
    for (size_t i = 0; i < r->n; i++)
        fprintf(f, "%.1f,%.1f ", xmap(r->t_h[i]), ymap(v[i], ymax, top));
    fprintf(f, "\"/>\n");
}

int kvg_bench_scale_svg(const struct kvg_bench_scale_result *r, size_t n, FILE *f)
{
    double ymax = 1;
    size_t np = 0;
    for (size_t k = 0; k < n; k++) {
        if (r[k].status) continue;
        np++;
        for (size_t i = 0; i < r[k].n; i++) {
            ymax = fmax(ymax, r[k].ready[i] + r[k].starting[i]);
            ymax = fmax(ymax, r[k].desired[i]);
            ymax = fmax(ymax, r[k].rate[i] * r[k].load_per_rps);
        }
    }
    ymax = ceil(ymax * 1.1);
    double H = MT + (double)np * (PH + PG) + 10;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"white\"/>\n<text x=\"%.0f\" y=\"18\" font-size=\"14\">Replicas and load over "
            "the day (kvgate bench --scenario diurnal)</text>\n",
            W, H, ML);
    double top = MT;
    for (size_t k = 0; k < n; k++) {
        const struct kvg_bench_scale_result *x = &r[k];
        if (x->status) continue;
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">%s</text>\n", ML, top - 4,
                x->planner);
        fprintf(f,
                "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">SLO %.2f%%, %.1f GPU-h, %u "
                "scale events</text>\n",
                W - MR, top - 4, x->slo_attainment * 100, x->gpu_hours, x->scale_events);
        fprintf(f,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                "stroke=\"#999\"/>\n",
                ML, top, W - ML - MR, PH);
        for (int h = 0; h <= 24; h += 3)
            fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%02d:00</text>\n",
                    xmap(h), top + PH + 13, h);
        for (double v = 0; v <= ymax; v += ymax > 20 ? 10 : 5)
            fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", ML - 4,
                    ymap(v, ymax, top) + 4, v);
        fprintf(f, "<polygon fill=\"#ddd\" points=\"%.1f,%.1f ", xmap(0), ymap(0, ymax, top));
        for (size_t i = 0; i < x->n; i++)
            fprintf(f, "%.1f,%.1f ", xmap(x->t_h[i]),
                    ymap(x->rate[i] * x->load_per_rps, ymax, top));
        fprintf(f, "%.1f,%.1f\"/>\n", xmap(24), ymap(0, ymax, top));
        double *all = malloc(x->n * sizeof *all);
        if (!all) return -ENOMEM;
        for (size_t i = 0; i < x->n; i++) all[i] = x->ready[i] + x->starting[i];
        line(f, x, all, ymax, top, "#e08000", " stroke-dasharray=\"2,2\"");
        free(all);
        line(f, x, x->desired, ymax, top, "#c00000", " stroke-dasharray=\"6,3\"");
        line(f, x, x->ready, ymax, top, "#0050c0", "");
        top += PH + PG;
    }
    fprintf(f,
            "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">grey: demand in replicas' worth; blue: "
            "ready; orange dotted: ready + starting; red dashed: desired</text>\n</svg>\n",
            ML, H - 4);
    return ferror(f) ? -EIO : 0;
}
