/* The routing suite's reports: a summary (each policy's p90 TTFT and
 * tokens/s against the best of each workload), the verdict of the default
 * rule for every policy, and one table per workload; JSON with one object
 * per workload and policy. See suite.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/routing/suite.h"

/* How close to the best p90 TTFT a default must be on every workload. */
#define P90_SLACK 0.02

/* max / min - 1 over the seeds (0 with one seed or a non-positive value). */
static double spread(const double *v, uint32_t n)
{
    double lo = INFINITY, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!(v[i] > 0)) return 0;
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
    }
    return n > 1 ? hi / lo - 1 : 0;
}

static int ran(const struct kvg_bench_summary *s)
{
    return s->status == 0 && s->requests > 0;
}

/* The policy with the lowest p90 TTFT on w, or -1. */
static int best_p90(const struct kvg_bench_suite_report *r, const struct kvg_bench_suite_wl *w)
{
    int b = -1;
    for (size_t p = 0; p < r->npolicies; p++)
        if (ran(&w->s[p]) && (b < 0 || w->s[p].ttft_p90 < w->s[b].ttft_p90)) b = (int)p;
    return b;
}

/* The peer default with the most tokens/s on w (its index in s), or -1. */
static int best_peer_tok(const struct kvg_bench_suite_report *r, const struct kvg_bench_suite_wl *w)
{
    int b = -1;
    for (size_t k = 0; k < r->npeers; k++)
        for (size_t p = 0; p < r->npolicies; p++)
            if (!strcmp(w->s[p].policy, r->peers[k][0]) && ran(&w->s[p]) &&
                (b < 0 || w->s[p].output_tokens_per_s > w->s[b].output_tokens_per_s))
                b = (int)p;
    return b;
}

struct verdict {
    double p90_gap; /* p90 / best p90 - 1 */
    double tok_gap; /* tokens/s / best peer's - 1 */
    double tok_noise;
    int p90_ok, tok_ok;
};

static struct verdict judge(const struct kvg_bench_suite_report *r,
                            const struct kvg_bench_suite_wl *w, size_t p)
{
    struct verdict v = {NAN, NAN, 0, 0, 0};
    int b = best_p90(r, w), q = best_peer_tok(r, w);
    if (!ran(&w->s[p]) || b < 0) return v;
    v.p90_gap = w->s[p].ttft_p90 / w->s[b].ttft_p90 - 1;
    v.p90_ok = v.p90_gap <= P90_SLACK;
    if (q < 0) {
        v.tok_ok = 1;
        return v;
    }
    v.tok_gap = w->s[p].output_tokens_per_s / w->s[q].output_tokens_per_s - 1;
    v.tok_noise = spread(w->s[q].seed_tok_s, w->s[q].nseeds);
    v.tok_ok = v.tok_gap >= -v.tok_noise;
    return v;
}

static void secs(FILE *f, double x)
{
    if (!isfinite(x))
        fprintf(f, "-");
    else if (x >= 100)
        fprintf(f, "%.0f", x);
    else if (x >= 10)
        fprintf(f, "%.1f", x);
    else if (x >= 1)
        fprintf(f, "%.2f", x);
    else
        fprintf(f, "%.3f", x);
}

/* The policies' names as the columns of a table after "| workload |". */
static void header_row(const struct kvg_bench_suite_report *r, FILE *f)
{
    const struct kvg_bench_summary *s0 = r->nwl ? r->wl[0].s : NULL;
    for (size_t p = 0; s0 && p < r->npolicies; p++) fprintf(f, " %s |", s0[p].policy);
    fprintf(f, "\n|---|");
    for (size_t p = 0; p < r->npolicies; p++) fprintf(f, "---:|");
    fprintf(f, "\n");
}

static void summary(const struct kvg_bench_suite_report *r, FILE *f)
{
    fprintf(f, "### p90 TTFT against the best of each workload\n\n"
               "Each cell: the policy's p90 TTFT (s, median over the seeds) and how far it is "
               "from the workload's best; **bold** is the best.\n\n| workload |");
    header_row(r, f);
    for (size_t i = 0; i < r->nwl; i++) {
        const struct kvg_bench_suite_wl *w = &r->wl[i];
        int b = best_p90(r, w);
        fprintf(f, "| %s |", w->name);
        for (size_t p = 0; p < r->npolicies; p++) {
            fprintf(f, " ");
            if (!ran(&w->s[p])) {
                fprintf(f, "n/a |");
                continue;
            }
            if ((int)p == b) fprintf(f, "**");
            secs(f, w->s[p].ttft_p90);
            if ((int)p == b)
                fprintf(f, "** |");
            else
                fprintf(f, " (%+.0f%%) |", 100 * (w->s[p].ttft_p90 / w->s[b].ttft_p90 - 1));
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n### Output tokens/s against the best peer default of each workload\n\n"
               "The peer defaults: ");
    for (size_t k = 0; k < r->npeers; k++)
        fprintf(f, "%s`%s` (%s)", k ? ", " : "", r->peers[k][0], r->peers[k][1]);
    fprintf(f, ". Each cell: tokens/s and the gap to the best of them; its seed spread in "
               "brackets on that best's column.\n\n| workload |");
    header_row(r, f);
    for (size_t i = 0; i < r->nwl; i++) {
        const struct kvg_bench_suite_wl *w = &r->wl[i];
        int q = best_peer_tok(r, w);
        fprintf(f, "| %s |", w->name);
        for (size_t p = 0; p < r->npolicies; p++) {
            if (!ran(&w->s[p])) {
                fprintf(f, " n/a |");
                continue;
            }
            fprintf(f, " %.0f", w->s[p].output_tokens_per_s);
            if (q >= 0 && (int)p == q)
                fprintf(f, " [spread %.2f%%] |", 100 * spread(w->s[q].seed_tok_s, w->s[q].nseeds));
            else if (q >= 0)
                fprintf(f, " (%+.2f%%) |",
                        100 * (w->s[p].output_tokens_per_s / w->s[q].output_tokens_per_s - 1));
            else
                fprintf(f, " |");
        }
        fprintf(f, "\n");
    }
}

static void verdicts(const struct kvg_bench_suite_report *r, FILE *f)
{
    fprintf(f,
            "\n### The default rule, policy by policy\n\n"
            "A default must be best or within %.0f%% of the best p90 TTFT on every workload, and "
            "never below the best peer default's tokens/s by more than that peer's seed spread. "
            "kvgate serve's default is `%s`.\n\n",
            P90_SLACK * 100, r->default_policy);
    const struct kvg_bench_summary *s0 = r->nwl ? r->wl[0].s : NULL;
    for (size_t p = 0; s0 && p < r->npolicies; p++) {
        char lost[2048];
        size_t n = 0, nlost = 0;
        double worst = 0;
        lost[0] = 0;
        for (size_t i = 0; i < r->nwl; i++) {
            struct verdict v = judge(r, &r->wl[i], p);
            if (v.p90_ok && v.tok_ok) continue;
            nlost++;
            if (isfinite(v.p90_gap)) worst = fmax(worst, v.p90_gap);
            if (n < sizeof lost - 200) {
                int k;
                if (!isfinite(v.p90_gap))
                    k = snprintf(lost + n, sizeof lost - n, "%s%s (did not run)", n ? "; " : "",
                                 r->wl[i].name);
                else
                    k = snprintf(lost + n, sizeof lost - n,
                                 "%s%s (p90 %+.1f%%%s, tokens/s %+.2f%% vs noise %.2f%%%s)",
                                 n ? "; " : "", r->wl[i].name, 100 * v.p90_gap,
                                 v.p90_ok ? "" : " FAIL", 100 * v.tok_gap, 100 * v.tok_noise,
                                 v.tok_ok ? "" : " FAIL");
                n += k > 0 ? (size_t)k : 0;
            }
        }
        fprintf(f, "- %s `%s`%s: ", nlost ? "FAIL" : "PASS", s0[p].policy,
                strcmp(s0[p].policy, r->default_policy) ? "" : " (the default)");
        if (nlost)
            fprintf(f, "misses %zu of %zu workloads, worst p90 gap %+.1f%%: %s\n", nlost, r->nwl,
                    100 * worst, lost);
        else
            fprintf(f, "meets it on all %zu workloads\n", r->nwl);
    }
}

static void workload_table(const struct kvg_bench_suite_report *r,
                           const struct kvg_bench_suite_wl *w, FILE *f)
{
    fprintf(f, "\n### %s\n\n%s. `%s` (%.0f s of wall time).\n\n", w->name, w->what, w->command,
            w->wall_s);
    fprintf(f, "| policy | TTFT p90 (s) | TTFT p99 (s) | ITL p90 (ms) | output tok/s | cache hit | "
               "p90 spread | tok/s spread | p90 vs best |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int b = best_p90(r, w);
    for (size_t p = 0; p < r->npolicies; p++) {
        const struct kvg_bench_summary *s = &w->s[p];
        if (!ran(s)) {
            fprintf(f, "| %s | not run: %s |||||||| |\n", s->policy, s->note);
            continue;
        }
        fprintf(f, "| %s | ", s->policy);
        secs(f, s->ttft_p90);
        fprintf(f, " | ");
        secs(f, s->ttft_p99);
        fprintf(f, " | %.1f | %.0f | %.1f%% | %.1f%% | %.2f%% | ", s->itl_p90 * 1e3,
                s->output_tokens_per_s, 100 * s->cache_hit_ratio,
                100 * spread(s->seed_ttft_p90, s->nseeds), 100 * spread(s->seed_tok_s, s->nseeds));
        if ((int)p == b)
            fprintf(f, "best |\n");
        else
            fprintf(f, "%+.1f%% |\n", 100 * (s->ttft_p90 / w->s[b].ttft_p90 - 1));
    }
}

int kvg_bench_suite_md(const struct kvg_bench_suite_report *r, FILE *f)
{
    double wall = 0;
    for (size_t i = 0; i < r->nwl; i++) wall += r->wl[i].wall_s;
    fprintf(f, "## kvgate bench --suite routing%s\n\n",
            r->smoke ? " (smoke: figures meaningless)" : "");
    fprintf(f,
            "Offline (simulated engines in virtual time, kvgate's own router code), %u seeds per "
            "policy and workload, medians; spreads are max/min - 1 over the seeds. %zu workloads "
            "in %.0f s of wall time.\n\n",
            r->seeds, r->nwl, wall);
    summary(r, f);
    verdicts(r, f);
    fprintf(f, "\n## Per workload\n");
    for (size_t i = 0; i < r->nwl; i++) workload_table(r, &r->wl[i], f);
    return ferror(f) ? -EIO : 0;
}

static cJSON *seeds_json(const double *v, uint32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

int kvg_bench_suite_json(const struct kvg_bench_suite_report *r, FILE *f)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr) return -ENOMEM;
    for (size_t i = 0; i < r->nwl; i++) {
        const struct kvg_bench_suite_wl *w = &r->wl[i];
        int b = best_p90(r, w);
        for (size_t p = 0; p < r->npolicies; p++) {
            const struct kvg_bench_summary *s = &w->s[p];
            cJSON *o = cJSON_CreateObject();
            if (!o) break;
            cJSON_AddItemToArray(arr, o);
            cJSON_AddStringToObject(o, "workload", w->name);
            cJSON_AddStringToObject(o, "policy", s->policy);
            cJSON_AddStringToObject(o, "command", w->command);
            cJSON_AddBoolToObject(o, "smoke", r->smoke);
            cJSON_AddStringToObject(o, "status", ran(s) ? "ok" : s->status ? "unknown" : "empty");
            if (!ran(s)) continue;
            struct verdict v = judge(r, w, p);
            cJSON_AddNumberToObject(o, "ttft_p90_s", s->ttft_p90);
            cJSON_AddNumberToObject(o, "ttft_p99_s", s->ttft_p99);
            cJSON_AddNumberToObject(o, "itl_p90_s", s->itl_p90);
            cJSON_AddNumberToObject(o, "output_tokens_per_s", s->output_tokens_per_s);
            cJSON_AddNumberToObject(o, "cache_hit_ratio", s->cache_hit_ratio);
            cJSON_AddNumberToObject(o, "routers", (double)(s->routers ? s->routers : 1));
            if (s->max_load_ratio_10s > 0)
                cJSON_AddNumberToObject(o, "max_load_ratio_10s", s->max_load_ratio_10s);
            cJSON_AddNumberToObject(o, "herd_ratio", s->herd_ratio);
            cJSON_AddNumberToObject(o, "requests", (double)s->requests);
            cJSON_AddNumberToObject(o, "preemptions", (double)s->preemptions);
            cJSON_AddNumberToObject(o, "lora_loads", (double)s->lora_loads);
            cJSON_AddItemToObject(o, "seed_ttft_p90_s", seeds_json(s->seed_ttft_p90, s->nseeds));
            cJSON_AddItemToObject(o, "seed_output_tokens_per_s",
                                  seeds_json(s->seed_tok_s, s->nseeds));
            cJSON_AddItemToObject(o, "seed_cache_hit_ratio",
                                  seeds_json(s->seed_cache_hit, s->nseeds));
            cJSON_AddItemToObject(o, "seed_max_load_ratio_10s",
                                  seeds_json(s->seed_max_load, s->nseeds));
            cJSON_AddNumberToObject(o, "ttft_p90_spread", spread(s->seed_ttft_p90, s->nseeds));
            cJSON_AddNumberToObject(o, "tokens_spread", spread(s->seed_tok_s, s->nseeds));
            cJSON_AddBoolToObject(o, "best_p90", (int)p == b);
            cJSON_AddNumberToObject(o, "ttft_p90_vs_best", v.p90_gap);
            if (isfinite(v.tok_gap)) cJSON_AddNumberToObject(o, "tokens_vs_best_peer", v.tok_gap);
            cJSON_AddBoolToObject(o, "meets_default_rule", v.p90_ok && v.tok_ok);
        }
    }
    char *txt = cJSON_Print(arr);
    cJSON_Delete(arr);
    if (!txt) return -ENOMEM;
    int rc = fputs(txt, f) < 0 || fputc('\n', f) == EOF ? -EIO : 0;
    cJSON_free(txt);
    return rc;
}
