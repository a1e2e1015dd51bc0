/* The figures of a run: accumulation while it runs, and the summary at the
 * end; see acc.h. */
#include <math.h>
#include <string.h>

#include "bench/acc.h"

int kvg_bench_acc_init(struct kvg_bench_acc *a, const struct kvg_bench_wl *wl)
{
    memset(a, 0, sizeof *a);
    kvg_bench_samples_init(&a->ttft);
    kvg_bench_samples_init(&a->e2e);
    kvg_bench_samples_init(&a->queue);
    kvg_bench_samples_init(&a->kv);
    for (size_t i = 0; i < KVG_BENCH_MAX_STAGES; i++) kvg_bench_samples_init(&a->st_ttft[i]);
    a->warm_end = kvg_bench_wl_warm_end(wl);
    a->end = kvg_bench_wl_end(wl);
    a->nstages = kvg_bench_wl_nstages(wl);
    for (size_t i = 0; i < a->nstages; i++) kvg_bench_wl_stage(wl, i, &a->st_start[i]);
    a->st_start[a->nstages] = a->end;
    return kvg_bench_hist_init(&a->itl);
}

void kvg_bench_acc_free(struct kvg_bench_acc *a)
{
    kvg_bench_samples_free(&a->ttft);
    kvg_bench_samples_free(&a->e2e);
    kvg_bench_samples_free(&a->queue);
    kvg_bench_samples_free(&a->kv);
    for (size_t i = 0; i < KVG_BENCH_MAX_STAGES; i++) kvg_bench_samples_free(&a->st_ttft[i]);
    kvg_bench_hist_free(&a->itl);
}

int kvg_bench_acc_window(const struct kvg_bench_acc *a, double t)
{
    if (t < 0 || t >= a->end) return -1;
    size_t i = 0;
    while (i + 1 < a->nstages && t >= a->st_start[i + 1]) i++;
    return (int)i;
}

void kvg_bench_acc_arrival(struct kvg_bench_acc *a, const struct kvg_bench_req *r)
{
    if (r->warmup) {
        a->warmup_requests++;
        return;
    }
    a->requests++;
    if ((size_t)r->stage < a->nstages) a->st_arrivals[r->stage]++;
}

void kvg_bench_acc_first(struct kvg_bench_acc *a, const struct kvg_bench_req *r, double ttft,
                         int64_t cached)
{
    if (r->warmup) return;
    kvg_bench_samples_add(&a->ttft, ttft);
    if ((size_t)r->stage < a->nstages) kvg_bench_samples_add(&a->st_ttft[r->stage], ttft);
    /* The hit ratio is over requests the engine started: a request given
     * up while queued never had its cache looked up. */
    a->prompt_tokens += r->ntokens;
    if (cached > 0) a->cached_tokens += (uint64_t)cached;
}

void kvg_bench_acc_tokens(struct kvg_bench_acc *a, const struct kvg_bench_req *r, double t,
                          uint32_t ntok, double gap)
{
    int s = kvg_bench_acc_window(a, t);
    if (s >= 0) {
        a->st_tokens[s] += ntok;
        if (t >= a->warm_end) a->window_tokens += ntok;
    }
    if (r->warmup) return;
    a->output_tokens += ntok;
    /* Tokens that arrive together are ITL 0 apart, as a client sees them. */
    if (gap >= 0) kvg_bench_hist_add(&a->itl, gap);
    for (uint32_t i = 1; i < ntok; i++) kvg_bench_hist_add(&a->itl, 0);
}

void kvg_bench_acc_finish(struct kvg_bench_acc *a, const struct kvg_bench_req *r, double t)
{
    if (t > a->last_finish) a->last_finish = t;
    int s = kvg_bench_acc_window(a, t);
    if (s >= 0) {
        a->st_completed[s]++;
        if (t >= a->warm_end) a->window_completed++;
    }
    if (r->warmup) return;
    a->completed++;
    kvg_bench_samples_add(&a->e2e, t - r->arrival);
}

void kvg_bench_acc_error(struct kvg_bench_acc *a, const struct kvg_bench_req *r, int timeout)
{
    if (r->warmup) return;
    a->errors++;
    if (timeout) a->timeouts++;
}

void kvg_bench_acc_sample(struct kvg_bench_acc *a, double t, double waiting, double kv_usage)
{
    int s = kvg_bench_acc_window(a, t);
    if (s >= 0 && waiting >= 0) {
        a->st_q_sum[s] += waiting;
        a->st_q_n[s]++;
        if (waiting > a->st_q_max[s]) a->st_q_max[s] = waiting;
    }
    if (s >= 0 && kv_usage >= 0) {
        a->st_kv_sum[s] += kv_usage * 100.0;
        a->st_kv_n[s]++;
        if (kv_usage * 100.0 > a->st_kv_max[s]) a->st_kv_max[s] = kv_usage * 100.0;
    }
    if (t < a->warm_end || t >= a->end) return;
    if (waiting >= 0) kvg_bench_samples_add(&a->queue, waiting);
    if (kv_usage >= 0) kvg_bench_samples_add(&a->kv, kv_usage * 100.0);
}

static double or0(double x)
{
    return isnan(x) ? 0 : x;
}

void kvg_bench_acc_summarize(struct kvg_bench_acc *a, const struct kvg_bench_wl *wl,
                             struct kvg_bench_summary *s)
{
    s->requests = a->requests;
    s->completed = a->completed;
    s->errors = a->errors;
    s->timeouts = a->timeouts;
    s->warmup_requests = a->warmup_requests;
    s->ttft_mean = or0(kvg_bench_samples_mean(&a->ttft));
    s->ttft_p50 = or0(kvg_bench_samples_pct(&a->ttft, 50));
    s->ttft_p90 = or0(kvg_bench_samples_pct(&a->ttft, 90));
    s->ttft_p99 = or0(kvg_bench_samples_pct(&a->ttft, 99));
    s->ttft_max = or0(kvg_bench_samples_pct(&a->ttft, 100));
    s->itl_mean = or0(kvg_bench_hist_mean(&a->itl));
    s->itl_p50 = or0(kvg_bench_hist_pct(&a->itl, 50));
    s->itl_p90 = or0(kvg_bench_hist_pct(&a->itl, 90));
    s->itl_p99 = or0(kvg_bench_hist_pct(&a->itl, 99));
    s->e2e_mean = or0(kvg_bench_samples_mean(&a->e2e));
    s->e2e_p90 = or0(kvg_bench_samples_pct(&a->e2e, 90));
    s->window_s = a->end - a->warm_end;
    s->output_tokens_per_s = s->window_s > 0 ? (double)a->window_tokens / s->window_s : 0;
    s->requests_per_s = s->window_s > 0 ? (double)a->window_completed / s->window_s : 0;
    s->drain_s = a->last_finish > a->end ? a->last_finish - a->end : 0;
    s->output_tokens = a->output_tokens;
    s->prompt_tokens = a->prompt_tokens;
    s->cached_tokens = a->cached_tokens;
    s->cache_hit_ratio = a->prompt_tokens ? (double)a->cached_tokens / (double)a->prompt_tokens : 0;
    s->queue_mean = or0(kvg_bench_samples_mean(&a->queue));
    s->queue_p90 = or0(kvg_bench_samples_pct(&a->queue, 90));
    s->queue_max = or0(kvg_bench_samples_pct(&a->queue, 100));
    s->kv_mean = or0(kvg_bench_samples_mean(&a->kv));
    s->kv_p90 = or0(kvg_bench_samples_pct(&a->kv, 90));
    s->kv_max = or0(kvg_bench_samples_pct(&a->kv, 100));
    s->route_us_mean = a->routed ? a->route_ns / (double)a->routed / 1e3 : 0;
    s->nstages = a->nstages;
    for (size_t i = 0; i < a->nstages; i++) {
        struct kvg_bench_stage_sum *g = &s->stage[i];
        const struct kvg_bench_stage *st = kvg_bench_wl_stage(wl, i, NULL);
        g->rate = st->rate;
        g->conc = st->conc;
        g->start = a->st_start[i];
        g->secs = a->st_start[i + 1] - a->st_start[i];
        g->arrivals = a->st_arrivals[i];
        g->completed = a->st_completed[i];
        g->ttft_mean = or0(kvg_bench_samples_mean(&a->st_ttft[i]));
        g->ttft_p50 = or0(kvg_bench_samples_pct(&a->st_ttft[i], 50));
        g->ttft_p90 = or0(kvg_bench_samples_pct(&a->st_ttft[i], 90));
        g->ttft_p99 = or0(kvg_bench_samples_pct(&a->st_ttft[i], 99));
        g->output_tokens_per_s = g->secs > 0 ? (double)a->st_tokens[i] / g->secs : 0;
        g->requests_per_s = g->secs > 0 ? (double)a->st_completed[i] / g->secs : 0;
        g->queue_mean = a->st_q_n[i] ? a->st_q_sum[i] / (double)a->st_q_n[i] : 0;
        g->queue_max = a->st_q_max[i];
        g->kv_mean = a->st_kv_n[i] ? a->st_kv_sum[i] / (double)a->st_kv_n[i] : 0;
        g->kv_max = a->st_kv_max[i];
    }
}
