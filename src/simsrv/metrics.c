/* kvgate sim's /metrics in the flavor it imitates: vLLM's names and labels
 * (model_name, engine), SGLang's, or llama.cpp's (no labels). Gauges and
 * counters are read from the engine model at scrape time; latency histograms
 * are observed as tokens go out, in engine seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "simsrv/simsrv.h"

struct sim_metrics {
    struct kvg_metrics_series *waiting, *running, *kv, *queries, *hits, *preempt, *prompt, *gen,
        *ok_length, *ok_stop, *ttft, *itl, *e2e, *config, *hit_rate, *prompt_tps, *gen_tps,
        *ext_queries, *ext_hits;
    double last_queries, last_hits, last_preempt, last_prompt, last_gen, last_ext_q, last_ext_h;
};

/* Creates one series, unless --metrics-mode leaves it out (*out NULL). */
static int series(struct kvg_simsrv_server *sv, struct sim_metrics *m, int kind, const char *name,
                  const char *help, const char *const *lnames, const char *const *lvals, size_t nl,
                  struct kvg_metrics_series **out)
{
    struct kvg_metrics_registry *r = sv->reg;
    int mode = sv->o.metrics_mode;
    *out = NULL;
    if (mode == KVG_SIMSRV_METRICS_NO_KV && out == &m->kv) return 0;
    if (mode == KVG_SIMSRV_METRICS_WAITING_ONLY && out != &m->waiting) return 0;
    static const double lat[] = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                 0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                 20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
    struct kvg_metrics_family *f;
    int rc = kind == 0   ? kvg_metrics_gauge(r, name, help, lnames, nl, &f)
             : kind == 1 ? kvg_metrics_counter(r, name, help, lnames, nl, &f)
                         : kvg_metrics_histogram(r, name, help, lnames, nl, lat,
                                                 sizeof lat / sizeof lat[0], &f);
    if (rc) return rc;
    return kvg_metrics_series(f, lvals, nl, out);
}

/* One rank's series: vLLM labels each engine core's by engine="rank". */
static int rank_metrics_init(struct kvg_simsrv_server *s, struct kvg_simsrv_rank *rk)
{
    struct sim_metrics *m = calloc(1, sizeof *m);
    if (!m) return -12;
    rk->m = m;
    int rc;
    char eng[16];
    snprintf(eng, sizeof eng, "%d", rk->rank);
    const char *ln[] = {"model_name", "engine"};
    const char *lv[] = {s->o.model, eng};
    struct kvg_sim_metrics em;
    kvg_sim_get_metrics(rk->engine, &em);
    char bs[16], nb[16];
    snprintf(bs, sizeof bs, "%u", em.block_size);
    snprintf(nb, sizeof nb, "%u", em.num_blocks);
    if (s->o.flavor == KVG_SIMSRV_FLAVOR_VLLM) {
        const char *cn[] = {"block_size", "num_gpu_blocks", "enable_prefix_caching", "engine"};
        const char *cv[] = {bs, nb, "True", eng};
        const char *fn[] = {"model_name", "engine", "finished_reason"};
        const char *fl[] = {s->o.model, eng, "length"}, *fs[] = {s->o.model, eng, "stop"};
        if ((rc = series(s, m, 0, "vllm:num_requests_running",
                         "Number of requests in model execution batches.", ln, lv, 2,
                         &m->running)) ||
            (rc = series(s, m, 0, "vllm:num_requests_waiting",
                         "Number of requests waiting to be processed.", ln, lv, 2, &m->waiting)) ||
            (rc = series(s, m, 0, "vllm:kv_cache_usage_perc",
                         "KV-cache usage. 1 means 100 percent usage.", ln, lv, 2, &m->kv)) ||
            (rc = series(s, m, 1, "vllm:prefix_cache_queries_total",
                         "Prefix cache queries, in terms of number of queried tokens.", ln, lv, 2,
                         &m->queries)) ||
            (rc = series(s, m, 1, "vllm:prefix_cache_hits_total",
                         "Prefix cache hits, in terms of number of cached tokens.", ln, lv, 2,
                         &m->hits)) ||
            (rc = series(s, m, 1, "vllm:num_preemptions_total",
                         "Cumulative number of preemption from the engine.", ln, lv, 2,
                         &m->preempt)) ||
            (rc = series(s, m, 1, "vllm:prompt_tokens_total", "Number of prefill tokens processed.",
                         ln, lv, 2, &m->prompt)) ||
            (rc = series(s, m, 1, "vllm:generation_tokens_total",
                         "Number of generation tokens processed.", ln, lv, 2, &m->gen)) ||
            (rc = series(s, m, 1, "vllm:request_success_total",
                         "Count of successfully processed requests.", fn, fl, 3, &m->ok_length)) ||
            (rc = series(s, m, 1, "vllm:request_success_total",
                         "Count of successfully processed requests.", fn, fs, 3, &m->ok_stop)) ||
            (rc = series(s, m, 2, "vllm:time_to_first_token_seconds",
                         "Histogram of time to first token in seconds.", ln, lv, 2, &m->ttft)) ||
            (rc = series(s, m, 2, "vllm:inter_token_latency_seconds",
                         "Histogram of inter-token latency in seconds.", ln, lv, 2, &m->itl)) ||
            (rc = series(s, m, 2, "vllm:e2e_request_latency_seconds",
                         "Histogram of e2e request latency in seconds.", ln, lv, 2, &m->e2e)) ||
            (rc = series(s, m, 0, "vllm:cache_config_info",
                         "Information of the LLMEngine CacheConfig", cn, cv, 4, &m->config)))
            return rc;
        if (m->config) kvg_metrics_set(m->config, 1);
        /* A KV connector's hits (here the CPU tier), as vLLM counts them. */
        if (em.cpu_num_blocks &&
            ((rc = series(s, m, 1, "vllm:external_prefix_cache_queries_total",
                          "External prefix cache queries from KV connector cross-instance cache "
                          "sharing, in terms of number of queried tokens.",
                          ln, lv, 2, &m->ext_queries)) ||
             (rc = series(s, m, 1, "vllm:external_prefix_cache_hits_total",
                          "External prefix cache hits from KV connector cross-instance cache "
                          "sharing, in terms of number of cached tokens.",
                          ln, lv, 2, &m->ext_hits))))
            return rc;
    } else if (s->o.flavor == KVG_SIMSRV_FLAVOR_SGLANG) {
        const char *cn[] = {"page_size", "num_pages"};
        const char *cv[] = {bs, nb};
        if ((rc = series(s, m, 0, "sglang:num_running_reqs", "The number of running requests.", ln,
                         lv, 1, &m->running)) ||
            (rc = series(s, m, 0, "sglang:num_queue_reqs",
                         "The number of requests in the waiting queue.", ln, lv, 1, &m->waiting)) ||
            (rc = series(s, m, 0, "sglang:token_usage", "The token usage.", ln, lv, 1, &m->kv)) ||
            (rc = series(s, m, 0, "sglang:cache_hit_rate", "The prefix cache hit rate.", ln, lv, 1,
                         &m->hit_rate)) ||
            (rc = series(s, m, 1, "sglang:prompt_tokens_total",
                         "Number of prefill tokens processed.", ln, lv, 1, &m->prompt)) ||
            (rc = series(s, m, 1, "sglang:generation_tokens_total",
                         "Number of generation tokens processed.", ln, lv, 1, &m->gen)) ||
            (rc = series(s, m, 2, "sglang:time_to_first_token_seconds",
                         "Histogram of time to first token in seconds.", ln, lv, 1, &m->ttft)) ||
            (rc = series(s, m, 2, "sglang:time_per_output_token_seconds",
                         "Histogram of time per output token in seconds.", ln, lv, 1, &m->itl)) ||
            (rc = series(s, m, 2, "sglang:e2e_request_latency_seconds",
                         "Histogram of end-to-end request latency in seconds", ln, lv, 1,
                         &m->e2e)) ||
            (rc = series(s, m, 0, "sglang:cache_config_info", "Cache configuration.", cn, cv, 2,
                         &m->config)))
            return rc;
        if (m->config) kvg_metrics_set(m->config, 1);
    } else {
        if ((rc = series(s, m, 0, "llamacpp:requests_processing", "Number of requests processing.",
                         NULL, NULL, 0, &m->running)) ||
            (rc = series(s, m, 0, "llamacpp:requests_deferred", "Number of requests deferred.",
                         NULL, NULL, 0, &m->waiting)) ||
            (rc = series(s, m, 0, "llamacpp:kv_cache_usage_ratio",
                         "KV-cache usage. 1 means 100 percent usage.", NULL, NULL, 0, &m->kv)) ||
            (rc = series(s, m, 1, "llamacpp:prompt_tokens_total",
                         "Number of prompt tokens processed.", NULL, NULL, 0, &m->prompt)) ||
            (rc = series(s, m, 1, "llamacpp:tokens_predicted_total",
                         "Number of generation tokens processed.", NULL, NULL, 0, &m->gen)) ||
            (rc =
                 series(s, m, 0, "llamacpp:prompt_tokens_seconds",
                        "Average prompt throughput in tokens/s.", NULL, NULL, 0, &m->prompt_tps)) ||
            (rc = series(s, m, 0, "llamacpp:predicted_tokens_seconds",
                         "Average generation throughput in tokens/s.", NULL, NULL, 0, &m->gen_tps)))
            return rc;
    }
    return 0;
}

int kvg_simsrv_metrics_init(struct kvg_simsrv_server *s)
{
    int rc = kvg_metrics_registry_new(0, &s->reg);
    if (rc) return rc;
    kvg_metrics_registry_allow_colons(s->reg); /* vllm:*, sglang:*, llamacpp:* as the engines */
    for (int r = 0; r < s->ndp; r++)
        if ((rc = rank_metrics_init(s, &s->ranks[r]))) return rc;
    return 0;
}

void kvg_simsrv_metrics_free(struct kvg_simsrv_server *s)
{
    for (int r = 0; r < s->ndp; r++) {
        struct sim_metrics *m = s->ranks[r].m;
        if (!m) continue;
        struct kvg_metrics_series *all[] = {
            m->waiting,    m->running, m->kv,          m->queries,   m->hits,
            m->preempt,    m->prompt,  m->gen,         m->ok_length, m->ok_stop,
            m->ttft,       m->itl,     m->e2e,         m->config,    m->hit_rate,
            m->prompt_tps, m->gen_tps, m->ext_queries, m->ext_hits};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kvg_metrics_series_release(all[i]);
        free(m);
        s->ranks[r].m = NULL;
    }
    kvg_metrics_registry_free(s->reg);
    s->reg = NULL;
}

static void bump(struct kvg_metrics_series *c, double now, double *last)
{
    if (!c) return;
    if (now > *last) kvg_metrics_add(c, now - *last);
    *last = now;
}

int kvg_simsrv_metrics_mode_parse(const char *v)
{
    static const char *names[] = {"full", "no-kv", "waiting-only", "none", "error", "garbage"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (!strcmp(v, names[i])) return i;
    return -1;
}

static void set_gauge(struct kvg_metrics_series *g, double v)
{
    if (g) kvg_metrics_set(g, v);
}

/* The fault modes of /metrics; 1 when one answered. */
static int render_fault(struct kvg_http_req *req, int mode)
{
    if (mode == KVG_SIMSRV_METRICS_NONE) {
        kvg_http_res_send(req, 404, "text/plain", NULL, 0, "Not Found", 9);
        return 1;
    }
    if (mode == KVG_SIMSRV_METRICS_ERROR) {
        kvg_http_res_send(req, 500, "text/plain", NULL, 0, "Internal Server Error", 21);
        return 1;
    }
    if (mode == KVG_SIMSRV_METRICS_GARBAGE) {
        static const char page[] = "<html><body><h1>Metrics</h1><p>see the dashboard</p>"
                                   "</body></html>\n";
        kvg_http_res_send(req, 200, "text/html", NULL, 0, page, sizeof page - 1);
        return 1;
    }
    return 0;
}

/* Reads rank gauges and counters from its engine before a render. */
static void update_rank(struct sim_metrics *m, const struct kvg_sim *e, double up)
{
    struct kvg_sim_metrics em;
    kvg_sim_get_metrics(e, &em);
    /* The gauges as vLLM publishes them, at the last step's end (sim.h,
     * kvg_sim_reported_counts): the offline bench's scrape reads the same.
     * SGLang's scheduler logs its gauges less often; they are kept alike. */
    uint32_t running, waiting;
    kvg_sim_reported_counts(e, up, &running, &waiting);
    set_gauge(m->waiting, waiting);
    set_gauge(m->running, running);
    set_gauge(m->kv, em.kv_usage);
    if (m->hit_rate)
        kvg_metrics_set(m->hit_rate, em.prefix_cache_queries
                                         ? (double)em.prefix_cache_hits / em.prefix_cache_queries
                                         : 0);
    set_gauge(m->prompt_tps, up > 0 ? (double)em.prompt_tokens / up : 0);
    set_gauge(m->gen_tps, up > 0 ? (double)em.generation_tokens / up : 0);
    bump(m->queries, (double)em.prefix_cache_queries, &m->last_queries);
    bump(m->hits, (double)em.prefix_cache_hits, &m->last_hits);
    bump(m->preempt, (double)em.num_preemptions, &m->last_preempt);
    bump(m->prompt, (double)em.prompt_tokens, &m->last_prompt);
    bump(m->gen, (double)em.generation_tokens, &m->last_gen);
    bump(m->ext_queries, (double)em.prefix_cache_queries, &m->last_ext_q);
    bump(m->ext_hits, (double)em.cpu_hit_tokens, &m->last_ext_h);
}

void kvg_simsrv_metrics_render(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    int mode = s->o.metrics_mode;
    if (s->o.metrics_after_s >= 0 && kvg_now_s() - s->t0 >= s->o.metrics_after_s)
        mode = s->o.metrics_later;
    if (render_fault(req, mode)) return;
    double up = kvg_simsrv_now(s);
    for (int r = 0; r < s->ndp; r++) update_rank(s->ranks[r].m, s->ranks[r].engine, up);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (kvg_metrics_render(s->reg, &b)) {
        kvg_buf_free(&b);
        kvg_http_res_send(req, 500, "text/plain", NULL, 0, "render failed", 13);
        return;
    }
    if (s->nadapters && s->o.flavor == KVG_SIMSRV_FLAVOR_VLLM) {
        /* vLLM's gauge: labels say which adapters are active, the value is
         * when that was last updated (wall seconds). */
        char run[512], wait[512];
        kvg_simsrv_lora_active(s, run, sizeof run, wait, sizeof wait);
        kvg_buf_printf(&b,
                       "# HELP vllm:lora_requests_info Running stats on lora requests.\n"
                       "# TYPE vllm:lora_requests_info gauge\n"
                       "vllm:lora_requests_info{max_lora=\"%d\",running_lora_adapters=\"%s\","
                       "waiting_lora_adapters=\"%s\"} %.6f\n",
                       s->nadapters, run, wait, kvg_wall_s());
    }
    kvg_http_res_send(req, 200, KVG_METRICS_CONTENT_TYPE, NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

void kvg_simsrv_observe_ttft(struct kvg_simsrv_rank *rk, double secs)
{
    if (rk->m->ttft) kvg_metrics_observe(rk->m->ttft, secs);
}

void kvg_simsrv_observe_itl(struct kvg_simsrv_rank *rk, double secs)
{
    if (rk->m->itl) kvg_metrics_observe(rk->m->itl, secs);
}

void kvg_simsrv_observe_e2e(struct kvg_simsrv_rank *rk, double secs, int finish_length)
{
    if (rk->m->e2e) kvg_metrics_observe(rk->m->e2e, secs);
    struct kvg_metrics_series *ok = finish_length ? rk->m->ok_length : rk->m->ok_stop;
    if (ok) kvg_metrics_inc(ok);
}
