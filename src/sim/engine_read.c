/* What callers read of the simulated engine: its metrics, one request's
 * state, the prefix cache's contents and order, the adapters. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "sim/engine_int.h"

void kvg_sim_get_metrics(const struct kvg_sim *e, struct kvg_sim_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->num_waiting = e->nwaiting;
    m->num_running = e->nrunning;
    m->num_blocks = e->nb;
    m->block_size = e->bs;
    m->kv_usage = (double)(e->nb - kvg_sim_kvc_num_free(e->kvc)) / e->nb;
    m->num_cached_blocks = kvg_sim_kvc_num_cached(e->kvc);
    m->prefix_cache_queries = e->q_tokens;
    m->prefix_cache_hits = e->h_tokens;
    m->cpu_num_blocks = kvg_sim_kvc_cpu_num_blocks(e->kvc);
    m->cpu_cached_blocks = kvg_sim_kvc_cpu_num_cached(e->kvc);
    m->cpu_hit_tokens = e->cpu_h_tokens;
    m->num_preemptions = e->preemptions;
    m->prompt_tokens = e->prompt_tokens;
    m->generation_tokens = e->gen_tokens;
    m->finished_length = e->fin_length;
    m->finished_stop = e->fin_stop;
    m->aborted = e->aborted;
    m->steps = e->steps;
    m->busy_time = e->busy;
    m->max_num_seqs = e->p.max_num_seqs;
    m->max_num_batched_tokens = e->p.max_num_batched_tokens;
    m->max_model_len = e->p.max_model_len;
    m->max_loras = e->slots.cap;
    m->lora_loads = e->slots.loads;
    m->lora_evictions = e->slots.evictions;
}

void kvg_sim_reported_counts(const struct kvg_sim *e, double now, uint32_t *running,
                             uint32_t *waiting)
{
    int ended = e->pend && now >= e->pend_at;
    *running = ended ? e->pend_running : e->pub_running;
    *waiting = ended ? e->pend_waiting : e->pub_waiting;
}

int kvg_sim_request_get(const struct kvg_sim *e, uint64_t id, struct kvg_sim_request_info *out)
{
    size_t i = kvg__sim_map_find(e, id);
    if (i == SIZE_MAX) return KVG_ENOTFOUND;
    const struct req *r = e->map[i];
    out->state = r->state == ST_WAITING ? KVG_SIM_WAITING : KVG_SIM_RUNNING;
    out->prompt_len = r->prompt_len;
    out->max_tokens = r->max_tokens;
    out->target_len = r->target_len;
    out->num_computed = r->num_computed;
    out->num_output = r->num_output;
    out->cached_tokens = r->cached_tokens;
    out->num_blocks = r->n_blocks;
    out->num_preemptions = r->preemptions;
    out->arrival = r->arrival;
    return 0;
}

size_t kvg_sim_cached_hashes(const struct kvg_sim *e, uint64_t *out, size_t cap)
{
    return kvg_sim_kvc_cached_hashes(e->kvc, out, cap);
}

size_t kvg_sim_eviction_order(const struct kvg_sim *e, uint64_t *out, size_t cap)
{
    return kvg_sim_kvc_eviction_order(e->kvc, out, cap);
}

size_t kvg_sim_cpu_cached_hashes(const struct kvg_sim *e, uint64_t *out, size_t cap)
{
    return kvg_sim_kvc_cpu_hashes(e->kvc, out, cap);
}

void kvg_sim_lora_requests(const struct kvg_sim *e, char *running, size_t rcap, char *waiting,
                           size_t wcap)
{
    if (rcap) running[0] = 0;
    if (wcap) waiting[0] = 0;
    for (uint32_t i = 0; rcap && i < e->nrunning; i++)
        if (e->running[i]->lora) kvg_list_add_once(running, rcap, e->running[i]->lora);
    for (const struct req *r = e->whead; wcap && r; r = r->wnext)
        if (r->lora) kvg_list_add_once(waiting, wcap, r->lora);
}

size_t kvg_sim_lora_resident(const struct kvg_sim *e, const char **out, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = 0; i < e->slots.cap; i++) {
        if (!e->slots.name[i]) continue;
        if (n < cap) out[n] = e->slots.name[i];
        n++;
    }
    return n;
}
