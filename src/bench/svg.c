/* SVG line charts of a report, written by hand so the README's plots come
 * from kvgate itself: one x position per load stage, one colour per policy.
 * The TTFT chart uses a log scale (policies differ by orders of magnitude),
 * the throughput chart a linear one from zero. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "bench/report.h"

#define W 820
#define H 440
#define ML 70  /* left margin: y labels */
#define MR 170 /* right margin: legend */
#define MT 40
#define MB 60

static const char *colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 32 && (unsigned char)*s < 127) fputc(*s, f);
        }
    }
}

/* The stages of the first policy that ran (every run has the same). */
static const struct kvg_bench_summary *first_run(const struct kvg_bench_report *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (!r->s[i].status && r->s[i].nstages) return &r->s[i];
    return NULL;
}

/* The colour the policy of that name is drawn in, NULL if it did not run. */
static const char *colour_of(const struct kvg_bench_report *r, const char *policy)
{
    int c = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->s[i].status) continue;
        if (!strcmp(r->s[i].policy, policy))
            return colours[c % (sizeof colours / sizeof colours[0])];
        c++;
    }
    return NULL;
}

/* Index of the first measured stage (published stages start there). */
static size_t first_measured(const struct kvg_bench_summary *st)
{
    size_t k = 0;
    while (k < st->nstages && st->stage[k].arrivals == 0) k++;
    return k;
}

static double xpos(size_t k, size_t n)
{
    double w = W - ML - MR;
    return ML + (n > 1 ? w * (double)k / (double)(n - 1) : w / 2);
}

static void frame(FILE *f, const char *title, const char *ylabel,
                  const struct kvg_bench_summary *st)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", ML);
    xml_text(f, title);
    fprintf(f, "</text>\n");
    fprintf(f, "<text transform=\"translate(16,%d) rotate(-90)\" text-anchor=\"middle\">",
            (MT + H - MB) / 2);
    xml_text(f, ylabel);
    fprintf(f, "</text>\n");
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", ML, H - MB,
            W - MR, H - MB);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", ML, MT, ML,
            H - MB);
    for (size_t k = 0; k < st->nstages; k++) {
        double x = xpos(k, st->nstages);
        char lab[32];
        if (st->stage[k].conc)
            snprintf(lab, sizeof lab, "c%u", st->stage[k].conc);
        else
            snprintf(lab, sizeof lab, "%.3g", st->stage[k].rate);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\"/>\n", x,
                H - MB, x, H - MB + 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, H - MB + 17,
                lab);
    }
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">load stage (offered requests/s; "
            "c = concurrency)</text>\n",
            (ML + W - MR) / 2, H - 15);
}

static void legend(FILE *f, const struct kvg_bench_report *r, int dashed_note, int pub_note)
{
    int y = MT + 10, c = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->s[i].status) continue;
        const char *col = colours[c++ % (sizeof colours / sizeof colours[0])];
        fprintf(
            f,
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2.5\"/>\n",
            W - MR + 15, y, W - MR + 40, y, col);
        fprintf(f, "<text x=\"%d\" y=\"%d\">", W - MR + 46, y + 4);
        xml_text(f, r->s[i].policy);
        fprintf(f, "</text>\n");
        y += 20;
    }
    if (dashed_note)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">solid: p90, dashed: p50</text>\n",
                W - MR + 15, y + 8);
    if (pub_note)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">dotted: published</text>\n",
                W - MR + 15, y + 8 + (dashed_note ? 16 : 0));
}

/* style: 0 solid with markers, 1 dashed, 2 dotted and thin (published). */
static void polyline(FILE *f, const char *col, int dashed, const double *x, const double *y,
                     size_t n)
{
    size_t k = 0;
    while (k < n) {
        /* Gaps (no value) split the line. */
        while (k < n && isnan(y[k])) k++;
        size_t a = k;
        while (k < n && !isnan(y[k])) k++;
        if (k == a) continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", col,
                dashed == 2 ? "1.5" : "2",
                dashed == 2 ? " stroke-dasharray=\"1,3\""
                : dashed    ? " stroke-dasharray=\"6,4\""
                            : "");
        for (size_t i = a; i < k; i++) fprintf(f, "%s%.1f,%.1f", i > a ? " " : "", x[i], y[i]);
        fprintf(f, "\"/>\n");
        for (size_t i = a; i < k && !dashed; i++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x[i], y[i], col);
    }
}

/* The y axis of a chart: log10 from decade d0 to d1, or linear from 0 to
 * top. A value it cannot place (not positive on a log scale) is NAN: a gap
 * in the line. */
struct yaxis {
    int log;
    double d0, d1, top;
};

static double ymap(const struct yaxis *a, double v)
{
    double ph = H - MB - MT;
    if (a->log) return v > 0 ? H - MB - ph * (log10(v) - a->d0) / (a->d1 - a->d0) : NAN;
    return H - MB - ph * v / a->top;
}

/* Per run, coloured in run order: a dashed line from the stage field at
 * `dashed_off` when it is not NO_LINE, then a solid one from `off`
 * (offsets in struct kvg_bench_stage_sum). */
#define NO_LINE ((size_t)-1)
static void plot_runs(FILE *f, const struct kvg_bench_report *r, const struct kvg_bench_summary *st,
                      const struct yaxis *a, size_t dashed_off, size_t off)
{
    double xs[KVG_BENCH_MAX_STAGES], ys[KVG_BENCH_MAX_STAGES];
    int c = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct kvg_bench_summary *s = &r->s[i];
        if (s->status) continue;
        const char *col = colours[c++ % (sizeof colours / sizeof colours[0])];
        size_t n = s->nstages < st->nstages ? s->nstages : st->nstages;
        for (int dashed = dashed_off != NO_LINE; dashed >= 0; dashed--) {
            size_t o = dashed ? dashed_off : off;
            for (size_t k = 0; k < n; k++) {
                xs[k] = xpos(k, st->nstages);
                ys[k] = ymap(a, *(const double *)((const char *)&s->stage[k] + o));
            }
            polyline(f, col, dashed, xs, ys, n);
        }
    }
}

/* The published per-stage figures (the array pointer at `off` in struct
 * kvg_bench_published), dotted, from the first measured stage on; returns
 * how many lines were drawn. */
static int plot_published(FILE *f, const struct kvg_bench_report *r,
                          const struct kvg_bench_summary *st, const struct yaxis *a, size_t off)
{
    double xs[KVG_BENCH_MAX_STAGES], ys[KVG_BENCH_MAX_STAGES];
    size_t warm = first_measured(st);
    int pubs = 0;
    for (size_t i = 0; i < r->npub; i++) {
        const struct kvg_bench_published *p = &r->pub[i];
        const double *v = *(const double *const *)((const char *)p + off);
        const char *col = colour_of(r, p->policy);
        if (!col || !v) continue;
        size_t n = 0;
        for (size_t k = 0; k < p->nstage && warm + k < st->nstages; k++, n++) {
            xs[n] = xpos(warm + k, st->nstages);
            ys[n] = ymap(a, v[k]);
        }
        polyline(f, col, 2, xs, ys, n);
        pubs++;
    }
    return pubs;
}

int kvg_bench_svg_ttft(const struct kvg_bench_report *r, FILE *f)
{
    const struct kvg_bench_summary *st = first_run(r);
    if (!st) return -EINVAL;
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->s[i].status) continue;
        for (size_t k = 0; k < r->s[i].nstages; k++) {
            const double v[2] = {r->s[i].stage[k].ttft_p50, r->s[i].stage[k].ttft_p90};
            for (int j = 0; j < 2; j++)
                if (v[j] > 0) {
                    lo = fmin(lo, v[j]);
                    hi = fmax(hi, v[j]);
                }
        }
    }
    for (size_t i = 0; i < r->npub; i++)
        for (size_t k = 0; r->pub[i].stage_ttft_p90 && k < r->pub[i].nstage; k++)
            if (colour_of(r, r->pub[i].policy) && r->pub[i].stage_ttft_p90[k] > 0) {
                lo = fmin(lo, r->pub[i].stage_ttft_p90[k]);
                hi = fmax(hi, r->pub[i].stage_ttft_p90[k]);
            }
    if (!(hi > 0)) lo = 0.01, hi = 1;
    double d0 = floor(log10(lo)), d1 = ceil(log10(hi));
    if (d1 <= d0) d1 = d0 + 1;
    frame(f, "Time to first token per load stage", "TTFT (s, log scale)", st);
    double ph = H - MB - MT;
    for (double d = d0; d <= d1; d++) {
        double y = H - MB - ph * (d - d0) / (d1 - d0);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", ML,
                y, W - MR, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", ML - 6, y + 4,
                pow(10, d));
    }
    const struct yaxis a = {.log = 1, .d0 = d0, .d1 = d1};
    plot_runs(f, r, st, &a, offsetof(struct kvg_bench_stage_sum, ttft_p50),
              offsetof(struct kvg_bench_stage_sum, ttft_p90));
    int pubs = plot_published(f, r, st, &a, offsetof(struct kvg_bench_published, stage_ttft_p90));
    legend(f, r, 1, pubs > 0);
    fprintf(f, "</svg>\n");
    return ferror(f) ? -EIO : 0;
}

/* A round axis top: the next of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10 times a
 * power of ten (five grid lines then fall on readable values). */
static double nice(double x)
{
    static const double steps[] = {1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10};
    if (!(x > 0)) return 1;
    double p = pow(10, floor(log10(x))), m = x / p;
    size_t i = 0;
    while (i + 1 < sizeof steps / sizeof steps[0] && steps[i] < m) i++;
    return steps[i] * p;
}

int kvg_bench_svg_throughput(const struct kvg_bench_report *r, FILE *f)
{
    const struct kvg_bench_summary *st = first_run(r);
    if (!st) return -EINVAL;
    double hi = 0;
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; !r->s[i].status && k < r->s[i].nstages; k++)
            hi = fmax(hi, r->s[i].stage[k].output_tokens_per_s);
    for (size_t i = 0; i < r->npub; i++)
        for (size_t k = 0; r->pub[i].stage_tok_s && k < r->pub[i].nstage; k++)
            if (colour_of(r, r->pub[i].policy)) hi = fmax(hi, r->pub[i].stage_tok_s[k]);
    double top = nice(hi * 1.05);
    frame(f, "Output tokens/s per load stage", "output tokens/s", st);
    double ph = H - MB - MT;
    for (int g = 0; g <= 5; g++) {
        double v = top * g / 5, y = H - MB - ph * g / 5;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", ML,
                y, W - MR, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", ML - 6, y + 4, v);
    }
    const struct yaxis a = {.top = top};
    plot_runs(f, r, st, &a, NO_LINE, offsetof(struct kvg_bench_stage_sum, output_tokens_per_s));
    int pubs = plot_published(f, r, st, &a, offsetof(struct kvg_bench_published, stage_tok_s));
    legend(f, r, 0, pubs > 0);
    fprintf(f, "</svg>\n");
    return ferror(f) ? -EIO : 0;
}
