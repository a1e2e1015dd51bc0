/* The autoscaling benchmark's prewarm and slow start (scale_int.h), and
 * the hit-rate recovery of replicas that scale-out adds.
 *
 * Prewarm is what kvgate does when a replica becomes healthy: before it is
 * routable, replay the hottest prefixes of kvgate's routing history as
 * prefill-only requests (max_tokens 1) so their blocks are cached, then let
 * its share of new requests ramp up (slow start) instead of the least-loaded
 * rule sending it everything at once. The replays run on the engine model
 * like any request: their prefill time is the replica's and its GPU-hours
 * are counted as the rest. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "base/stats.h"
#include "bench/scale/scale_int.h"

int kvg__scale_prewarm_start(struct run *R, int k, double t)
{
    const struct kvg_bench_scale_opts *o = R->o;
    struct rep *p = &R->pool.rep[k];
    p->warm_at = t;
    p->recovered_s = -1;
    if (!R->prewarmed || !o->prewarm_prefixes || !o->prefix_len) return 0;
    /* The hottest prefixes: the most routed groups so far (ties: the lower). */
    uint32_t ng = o->groups < KVG_BENCH_SCALE_GROUPS ? o->groups : KVG_BENCH_SCALE_GROUPS;
    uint64_t taken = 0;
    for (uint32_t n = 0; n < o->prewarm_prefixes && n < ng; n++) {
        int best = -1;
        for (uint32_t g = 0; g < ng; g++)
            if (!(taken >> g & 1) && R->group_routed[g] > 0 &&
                (best < 0 || R->group_routed[g] > R->group_routed[best]))
                best = (int)g;
        if (best < 0) break;
        taken |= 1ull << best;
        struct scale_req r = {.group = (uint32_t)best, .prompt_len = o->prefix_len};
        kvg__scale_wl_prompt(&R->d.wl, &r, R->d.prompt);
        struct kvg_sim_request sr = {.id = SCALE_PREWARM_ID | R->prewarm_next++,
                                     .prompt = R->d.prompt,
                                     .prompt_len = o->prefix_len,
                                     .max_tokens = 1,
                                     .ignore_eos = 1,
                                     .arrival = t};
        int rc = kvg_sim_submit(p->e, &sr);
        if (rc == -ENOMEM) return rc;
        if (rc) continue;
        p->warming++;
    }
    /* What the router will believe is cached once the replays are done. */
    if (p->warming) p->groups |= taken, p->warm_groups = taken;
    return 0;
}

int kvg__scale_prewarm_done(struct run *R, int k, double t)
{
    struct rep *p = &R->pool.rep[k];
    if (!p->warming || --p->warming) return 0;
    p->warm_at = t;
    /* As serve on a replay's 200 (kvg_pool_place): the router believes
     * the replica holds the replayed prefixes. */
    int rc = kvg__scale_sync(R, t);
    for (uint32_t g = 0; !rc && g < 64; g++) {
        if (!(p->warm_groups >> g & 1)) continue;
        struct scale_req r = {.group = g, .prompt_len = R->o->prefix_len};
        rc = kvg__scale_route_place(&R->rt, &R->d.wl, &r, k, t);
    }
    p->warm_groups = 0;
    return rc;
}

double kvg__scale_share(const struct run *R, const struct rep *p, double t)
{
    double ss = R->o->young_s;
    if (!R->prewarmed || !(ss > 0) || p->ready_at <= 0 || t - p->warm_at >= ss) return 1;
    return 0.25 + 0.75 * (t - p->warm_at) / ss;
}

void kvg__scale_recovery_note(struct run *R, struct rep *p, double t, double cached, double prompt,
                              double ttft)
{
    if (p->ready_at <= 0) return; /* the pool the day started with */
    if (t - p->ready_at < R->o->young_s) kvg_bench_samples_add(&R->young_ttft, ttft);
    if (p->recovered_s >= 0) return;
    p->rec_cached[p->rec_n % SCALE_REC_N] = cached;
    p->rec_prompt[p->rec_n % SCALE_REC_N] = prompt;
    p->rec_n++;
    if (p->rec_n < SCALE_REC_N || !(R->d.hit_prompt > 0)) return;
    double c = 0, pr = 0;
    for (int i = 0; i < SCALE_REC_N; i++) c += p->rec_cached[i], pr += p->rec_prompt[i];
    if (pr > 0 && c / pr >= 0.9 * R->d.hit_cached / R->d.hit_prompt)
        p->recovered_s = t - p->ready_at;
}

void kvg__scale_recovery_summary(struct run *R)
{
    struct kvg_bench_scale_result *out = R->out;
    double *v = malloc((R->pool.nrep + 1) * sizeof *v);
    size_t n = 0;
    double sum = 0;
    for (size_t i = 0; i < R->pool.nrep; i++) {
        const struct rep *p = &R->pool.rep[i];
        if (p->ready_at <= 0 || p->rec_n == 0) continue; /* served nothing after ready */
        out->scaled_out++;
        if (p->recovered_s < 0) continue;
        sum += p->recovered_s;
        if (v) v[n++] = p->recovered_s;
    }
    out->recovered = (uint32_t)n;
    out->recovery_mean_s = n ? sum / (double)n : -1;
    out->recovery_p90_s = -1;
    if (v && n) {
        out->recovery_p90_s = kvg_stats_pct(v, n, 90);
    }
    free(v);
    out->young_ttft_p90_s = R->young_ttft.n ? kvg_bench_samples_pct(&R->young_ttft, 90) : -1;
    out->prewarmed = R->prewarmed;
}
