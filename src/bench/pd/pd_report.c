/* kvgate bench --scenario pd: the tables of bench/results/pd.md, from the
 * engine model in pd.c. Workloads: Poisson arrivals of unshared prompts
 * (8,000 tokens in, 300 out by default, the long-prompt case), on
 * the qwen3-32b-h100-tp2-roofline profile (one engine = one pod of 2 GPUs).
 *   - aggregated vs P:D splits at equal pod counts (2, 3 and 4 pods), and a
 *     decode-heavy workload (2,000 in, 1,500 out) at 3 pods;
 *   - 1P:1D by KV link;
 *   - the decode pick with and without locality (kvgate's pd_decode policy
 *     over 2 prefills and 4 decodes in two zones): transfers by link and
 *     their effect on TTFT;
 *   - overload of a decode-bound 3P:1D with and without early rejection
 *     (kvgate's predictor): wasted prefill tokens, goodput, rejections. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/util.h"
#include "bench/pd/pd.h"
#include "bench/pd/pd_int.h"
#include "sim/sim.h"

static struct kvg_bench_pd_setup base(const struct kvg_bench_pd_opts *o)
{
    return (struct kvg_bench_pd_setup){.profile = o->profile,
                                       .requests = o->requests,
                                       .prompt = o->prompt,
                                       .output = o->output,
                                       .seed = o->seed,
                                       .link_bw = 50e9};
}

static const char *header =
    "| setup | rate (req/s) | TTFT p50 (s) | TTFT p90 (s) | TTFT p99 (s) | ITL p50 (ms) | "
    "ITL p99 (ms) | goodput (req/s) | within SLO |\n"
    "|---|---|---|---|---|---|---|---|---|\n";

static double pct(struct kvg_bench_samples *s, double p)
{
    return s->n ? kvg_bench_samples_pct(s, p) : 0;
}

static void row(FILE *f, const char *name, double rate, struct kvg_bench_pd_stats *st,
                uint32_t requests)
{
    double dur = st->duration > 0 ? st->duration : 1;
    fprintf(f, "| %s | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.2f | %.0f%% |\n", name, rate,
            pct(&st->ttft, 50), pct(&st->ttft, 90), pct(&st->ttft, 99), pct(&st->itl, 50) * 1e3,
            pct(&st->itl, 99) * 1e3, st->good / dur, 100.0 * st->good / (requests ? requests : 1));
}

/* The run's figures as one object of o->rows (when set), whichever table
 * shows them; -1 when memory runs out. */
static int json_row(const struct kvg_bench_pd_opts *o, const char *section, const char *name,
                    const struct kvg_bench_pd_setup *s, struct kvg_bench_pd_stats *st)
{
    if (!o->rows) return 0;
    cJSON *r = cJSON_CreateObject();
    if (!r) return -1;
    cJSON_AddItemToArray(o->rows, r);
    double dur = st->duration > 0 ? st->duration : 1;
    int ok = cJSON_AddStringToObject(r, "section", section) &&
             cJSON_AddStringToObject(r, "setup", name) &&
             cJSON_AddNumberToObject(r, "prefills", s->np) &&
             cJSON_AddNumberToObject(r, "decodes", s->nd) &&
             cJSON_AddNumberToObject(r, "rate", s->rate) &&
             cJSON_AddNumberToObject(r, "requests", s->requests) &&
             cJSON_AddNumberToObject(r, "prompt", s->prompt) &&
             cJSON_AddNumberToObject(r, "output", s->output) &&
             cJSON_AddBoolToObject(r, "early_rejection", s->early_rejection) &&
             cJSON_AddNumberToObject(r, "ttft_p50_s", pct(&st->ttft, 50)) &&
             cJSON_AddNumberToObject(r, "ttft_p90_s", pct(&st->ttft, 90)) &&
             cJSON_AddNumberToObject(r, "ttft_p99_s", pct(&st->ttft, 99)) &&
             cJSON_AddNumberToObject(r, "itl_p50_s", pct(&st->itl, 50)) &&
             cJSON_AddNumberToObject(r, "itl_p99_s", pct(&st->itl, 99)) &&
             cJSON_AddNumberToObject(r, "transfer_mean_s",
                                     st->xfer.n ? kvg_bench_samples_mean(&st->xfer) : 0) &&
             cJSON_AddNumberToObject(r, "transfer_p99_s", pct(&st->xfer, 99)) &&
             cJSON_AddNumberToObject(r, "goodput_rps", st->good / dur) &&
             cJSON_AddNumberToObject(r, "within_slo", (double)st->good / s->requests) &&
             cJSON_AddNumberToObject(r, "served", st->served) &&
             cJSON_AddNumberToObject(r, "door_rejected", st->door_rejected) &&
             cJSON_AddNumberToObject(r, "decode_refused", st->decode_refused) &&
             cJSON_AddNumberToObject(r, "wasted_prefill_tokens", (double)st->wasted_prefill_tokens);
    cJSON *links = ok ? cJSON_AddArrayToObject(r, "transfers_by_link") : NULL;
    for (int l = 0; links && l < 4; l++) {
        cJSON *n = cJSON_CreateNumber(st->by_link[l]);
        if (!n) return -1;
        cJSON_AddItemToArray(links, n);
    }
    return links ? 0 : -1;
}

/* One run into a row of a table of the main columns; -1 when it cannot run. */
static int run_row(FILE *f, const struct kvg_bench_pd_opts *o, const char *section,
                   const char *name, const struct kvg_bench_pd_setup *s)
{
    struct kvg_bench_pd_stats st;
    int rc = kvg__bench_pd_run(s, &st);
    if (!rc) row(f, name, s->rate, &st, s->requests);
    if (!rc) rc = json_row(o, section, name, s, &st);
    kvg__bench_pd_stats_free(&st);
    return rc;
}

struct split {
    const char *name;
    int np, nd;
};

/* Setups at one pod count over rates; -1 when a run cannot. */
static int table(FILE *f, const char *title, const struct kvg_bench_pd_opts *o,
                 const struct split *sp, size_t n, const double *rates, size_t nr, uint32_t prompt,
                 uint32_t output, const char *note)
{
    fprintf(f, "\n## %s\n\n%s", title, header);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < nr; k++) {
            struct kvg_bench_pd_setup s = base(o);
            s.np = sp[i].np;
            s.nd = sp[i].nd;
            s.rate = rates[k];
            s.prompt = prompt;
            s.output = output;
            if (run_row(f, o, title, sp[i].name, &s)) return -1;
        }
    if (note) fprintf(f, "\n%s\n", note);
    return 0;
}

/* 2 prefills, 4 decodes: P0 shares node n1 with D0 and rack r1 with D1
 * (zone z1); P1 shares node n3 with D2 and zone z2 with D3. */
static const char *const topo[] = {
    "node=n1,rack=r1,zone=z1", "node=n3,rack=r3,zone=z2", /* P0, P1 */
    "node=n1,rack=r1,zone=z1", "node=n2,rack=r1,zone=z1", /* D0, D1 */
    "node=n3,rack=r3,zone=z2", "node=n4,rack=r4,zone=z2", /* D2, D3 */
};

static int locality(FILE *f, const struct kvg_bench_pd_opts *o)
{
    fprintf(f, "\n## Decode pick with and without locality (2P:4D in two zones)\n\n");
    fprintf(f, "Prefills P0 (node n1, rack r1, zone z1) and P1 (node n3, rack r3, zone z2); "
               "decodes D0 (n1, r1, z1), D1 (n2, r1, z1), D2 (n3, r3, z2), D3 (n4, r4, z2). "
               "Each transfer's link is the nearest the two engines share (sim/link.c). The "
               "decode pick is kvgate's `pd_decode` policy on kvgate's own counts (requests "
               "and KV blocks sent to each decode): without locality it takes the lowest "
               "cost; with it, the nearest decode within 1.5 x the best cost + 1 (the "
               "default `locality_load_bound`); `nearest, no bound` is the same with an "
               "unbounded factor.\n\n");
    fprintf(f, "| decode pick | rate (req/s) | node / rack / zone / across | transfer mean "
               "(s) | transfer p99 (s) | TTFT p50 (s) | TTFT p90 (s) | TTFT p99 (s) | ITL p99 "
               "(ms) | goodput (req/s) | within SLO |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n");
    static const struct {
        const char *name;
        double bound;
        int near;
    } picks[] = {{"least cost, no locality", 1.5, 0},
                 {"pd_decode with locality", 1.5, 1},
                 {"nearest, no bound", 1e9, 1}};
    static const double rates[] = {1.5, 3.0};
    for (size_t i = 0; i < KVG_ARRAY_LEN(picks); i++)
        for (size_t k = 0; k < KVG_ARRAY_LEN(rates); k++) {
            struct kvg_policy *pol;
            if (kvg_pd_decode_policy_new(picks[i].bound, &pol)) return -1;
            struct kvg_bench_pd_setup s = base(o);
            s.np = 2;
            s.nd = 4;
            s.rate = rates[k];
            s.labels = topo;
            s.decode_pick = pol;
            s.near = picks[i].near;
            struct kvg_bench_pd_stats st;
            int rc = kvg__bench_pd_run(&s, &st);
            pol->ops->destroy(pol);
            if (!rc) rc = json_row(o, "decode pick", picks[i].name, &s, &st);
            if (rc) {
                kvg__bench_pd_stats_free(&st);
                return -1;
            }
            double dur = st.duration > 0 ? st.duration : 1;
            fprintf(f,
                    "| %s | %.2f | %u / %u / %u / %u | %.3f | %.3f | %.2f | %.2f | %.2f | %.1f | "
                    "%.2f | %.0f%% |\n",
                    picks[i].name, s.rate, st.by_link[0], st.by_link[1], st.by_link[2],
                    st.by_link[3], kvg_bench_samples_mean(&st.xfer), pct(&st.xfer, 99),
                    pct(&st.ttft, 50), pct(&st.ttft, 90), pct(&st.ttft, 99), pct(&st.itl, 99) * 1e3,
                    st.good / dur, 100.0 * st.good / s.requests);
            kvg__bench_pd_stats_free(&st);
        }
    fprintf(f, "\nWhat to read: without locality about half the transfers cross zones (8k tokens "
               "= 2 GB at 1.25 GB/s: 1.68 s each) and TTFT p90 passes 2 s. kvgate's pick with "
               "locality keeps most transfers in the prefill's node and lifts the share within "
               "SLO from 43-52%% to 87-88%%. With no load bound every transfer stays in the "
               "prefill's node here (each prefill has a decode beside it and two decodes absorb "
               "the load), 100%% within SLO at 1.5 req/s. The default bound (1.5 x the best cost "
               "+ 1, not a flag) gives locality up as soon as the near decode holds a request or "
               "two more than an idle far one (each 8k request costs ~3 in kvgate's count), which "
               "for cross-zone links and long prompts is the wrong trade: 26 of 200 transfers "
               "crossed zones at 1.5 req/s.\n");
    return 0;
}

static int overload(FILE *f, const struct kvg_bench_pd_opts *o)
{
    const uint32_t out = 1000, reqs = o->requests * 3 / 2;
    fprintf(f, "\n## Overload: 3P:1D with and without early rejection\n\n");
    fprintf(f,
            "%u requests of %u tokens in, %u out: decode-bound (one decode holds ~34 such "
            "requests in its KV and needs ~20 s for each, ~1.7 req/s; three prefills take ~4.8 "
            "req/s). A decode refuses a request its KV has no room for when its transfer would "
            "start (the prefill is then wasted: what Mooncake's early rejection avoids). Early "
            "rejection: kvgate's predictor (`kvg_pd_has_room`, `--pd-early-rejection` with its "
            "defaults: prefill at 8,000 tokens/s, decode time 10 s, room below 0.95 of the KV) "
            "on kvgate's own count of the blocks sent to the decode. Goodput counts requests "
            "within both SLOs per second of run; `within SLO` is a share of all requests, "
            "rejected ones included.\n\n",
            reqs, o->prompt, out);
    fprintf(f, "| early rejection | rate (req/s) | served | rejected at the door | refused by "
               "the decode (wasted prefills) | wasted prefill tokens | TTFT p50 (s) | TTFT p99 "
               "(s) | goodput (req/s) | within SLO |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
    static const double rates[] = {1.0, 2.0, 3.0, 4.0};
    for (int er = 0; er < 2; er++)
        for (size_t k = 0; k < KVG_ARRAY_LEN(rates); k++) {
            struct kvg_bench_pd_setup s = base(o);
            s.np = 3;
            s.nd = 1;
            s.rate = rates[k];
            s.output = out;
            s.requests = reqs;
            s.decode_admission = 1;
            s.early_rejection = er;
            struct kvg_bench_pd_stats st;
            if (kvg__bench_pd_run(&s, &st) ||
                json_row(o, "overload", er ? "early rejection on" : "early rejection off", &s,
                         &st)) {
                kvg__bench_pd_stats_free(&st);
                return -1;
            }
            double dur = st.duration > 0 ? st.duration : 1;
            fprintf(f, "| %s | %.2f | %u | %u | %u | %llu | %.2f | %.2f | %.2f | %.0f%% |\n",
                    er ? "on" : "off", s.rate, st.served, st.door_rejected, st.decode_refused,
                    (unsigned long long)st.wasted_prefill_tokens, pct(&st.ttft, 50),
                    pct(&st.ttft, 99), st.good / dur, 100.0 * st.good / s.requests);
            kvg__bench_pd_stats_free(&st);
        }
    fprintf(f, "\nWhat to read: past the decode's ~1.7 req/s, without early rejection the decode "
               "refuses a growing share after their prefill ran (164 of 300 at 4 req/s: 1.3 M "
               "prefill tokens wasted). kvgate's predictor rejects at the door instead and cuts "
               "the wasted tokens 3-4x; some refusals remain (its default decode time, 10 s, "
               "`--pd-decode-time-secs`, is half this workload's ~20 s, so it counts on blocks "
               "freeing sooner than they do; other values are not run here). Goodput "
               "is about equal at 2-3 req/s (the decode is the bottleneck either way) and higher "
               "with it at 4 req/s, where wasted prefills start delaying useful ones (TTFT p99 "
               "3.5 s off, 1.8 s on).\n");
    return 0;
}

static void intro(FILE *f, const struct kvg_bench_pd_opts *o)
{
    fprintf(f, "# Prefill/decode disaggregation (offline)\n\n");
    fprintf(f,
            "Command: `kvgate bench --scenario pd --requests %u --seed %llu` (virtual time; "
            "deterministic; `bash bench/pd/run.sh`).\n\n",
            o->requests, (unsigned long long)o->seed);
    fprintf(f,
            "Engines: the simulator's `%s` profile (one engine = one pod of 2 GPUs). "
            "Workload: Poisson arrivals of %u unshared %u-token prompts, %u output tokens "
            "(ignore_eos), unless a section says otherwise. SLO: TTFT <= 2 s and mean ITL <= "
            "50 ms per request; goodput = requests within both per second of run. Aggregated: "
            "least requests in flight. Split: the prefill (max_tokens 1, blocks held) on the "
            "least busy prefill engine, then its KV over a same-rack link (50 GB/s) to the "
            "decode with the fewest requests, which computes the last prompt token and the "
            "output.\n\n",
            o->profile, o->requests, o->prompt, o->output);
    fprintf(f, "Transfer model (src/sim/link.c, the same code kvgate sim's transfers use): KV "
               "bytes per token = layers x KV heads x head dim x 2 (K and V) x dtype bytes, from "
               "the profile's model shape (Qwen3-32B: 64 x 8 x 128 x 2 x 2 = 256 KiB), over the "
               "link the two engines' labels share: 450 GB/s in a node (NVLink 4, per direction "
               "per H100), 50 GB/s in a rack (a 400 Gb/s RDMA NIC per GPU), 12.5 GB/s between "
               "racks of a zone (100 Gb/s), 1.25 GB/s across zones (10 Gb/s). These are typical "
               "hardware figures chosen for the simulator, not measurements.\n");
}

void kvg_bench_pd_opts_default(struct kvg_bench_pd_opts *o)
{
    *o = (struct kvg_bench_pd_opts){.requests = 200,
                                    .prompt = 8000,
                                    .output = 300,
                                    .seed = 1,
                                    .profile = "qwen3-32b-h100-tp2-roofline"};
}

int kvg_bench_pd_report(FILE *f, const struct kvg_bench_pd_opts *o)
{
    intro(f, o);
    static const struct split two[] = {{"aggregated x2", 0, 2}, {"1P:1D", 1, 1}};
    static const struct split three[] = {{"aggregated x3", 0, 3}, {"1P:2D", 1, 2}, {"2P:1D", 2, 1}};
    static const struct split four[] = {
        {"aggregated x4", 0, 4}, {"1P:3D", 1, 3}, {"2P:2D", 2, 2}, {"3P:1D", 3, 1}};
    static const double r2[] = {0.5, 1.0, 1.5, 2.0}, r3[] = {0.75, 1.5, 2.25, 3.0},
                        r4[] = {1.0, 2.0, 3.0, 4.0}, rh[] = {1.5, 3.0, 4.5, 6.0};
    int rc = table(f, "Two pods", o, two, 2, r2, 4, o->prompt, o->output, NULL);
    if (!rc)
        rc = table(
            f, "Three pods", o, three, 3, r3, 4, o->prompt, o->output,
            "What to read (2 and 3 pods): aggregated engines interleave 8k-token prefill "
            "chunks with decode steps, so once prefills overlap decodes their ITL p99 is a "
            "prefill chunk (~0.6 s); the SLO is on each request's mean ITL, which those stalls "
            "rarely push past 50 ms, so they show in the ITL p99 column, not in goodput. A split "
            "keeps decode steps short and pays queueing on its prefill engines plus the "
            "transfer in TTFT: with 8k prompts and 300 outputs the work is prefill-bound, so "
            "2P:1D holds up and 1P:xD saturates at one engine's prefill rate (~1.6 req/s): "
            "1P:2D is the wrong split for this workload (the decode-heavy table below is where "
            "it pays).");
    if (!rc)
        rc = table(f, "Four pods", o, four, 4, r4, 4, o->prompt, o->output,
                   "3P:1D keeps up with aggregated x4 to 4 req/s (98% within SLO) with an ITL "
                   "p99 of ~17 ms where aggregated's is a prefill chunk (~600 ms); 2P:2D "
                   "saturates at two prefills' rate (~3.2 req/s), 1P:3D at one's.");
    if (!rc)
        rc = table(f, "Three pods, decode-heavy (2,000 tokens in, 1,500 out)", o, three, 3, rh, 4,
                   2000, 1500,
                   "With short prompts and long outputs the work is decode-bound: 1P:2D keeps "
                   "every request within SLO to 6 req/s with an ITL p99 under 20 ms; aggregated "
                   "x3 also stays within the SLO but its ITL p99 is a 2k prefill chunk "
                   "(~150 ms); 2P:1D's one decode saturates past ~3 req/s (TTFT p90 9 s at "
                   "4.5 req/s).");
    if (!rc) {
        fprintf(f, "\n## 1P:1D by link (rate 1.0 req/s)\n\n%s", header);
        static const char *names[] = {"1P:1D same node", "1P:1D same rack", "1P:1D same zone",
                                      "1P:1D across zones"};
        for (int l = 0; !rc && l < 4; l++) {
            struct kvg_bench_pd_setup s = base(o);
            s.np = s.nd = 1;
            s.rate = 1.0;
            s.link_bw = kvg_sim_link_bw(l);
            rc = run_row(f, o, "1P:1D by link", names[l], &s);
        }
    }
    if (!rc) rc = locality(f, o);
    if (!rc) rc = overload(f, o);
    return rc;
}
