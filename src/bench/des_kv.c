/* The offline simulator's KV event path: each engine's event log, after each
 * step, into the precise index that KV-aware policies read, by the same
 * kvg_kv_index_apply the live subscriber calls. Two ways to get there (see
 * des.h): through vLLM's msgpack wire format and the live decoder, or by
 * filling the decoder's batch struct directly. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/des_int.h"
#include "sim/kv_events.h"

int kvg__bench_des_kv_init(struct des_kv *k, enum kvg_bench_kv_path path, uint32_t block_size,
                           uint32_t engines)
{
    memset(k, 0, sizeof *k);
    k->path = path;
    kvg_kv_batch_init(&k->batch, NULL);
    if (path == KVG_BENCH_KV_NONE) return 0;
    struct kvg_kv_index_opts io = {.block_size = block_size, .max_workers = engines};
    int rc = kvg_kv_index_new(&io, &k->idx);
    if (rc) return rc;
    for (uint32_t s = 0; s < engines; s++)
        if ((rc = kvg_kv_index_add_worker(k->idx, s))) return rc;
    return 0;
}

void kvg__bench_des_kv_free(struct des_kv *k)
{
    kvg_kv_batch_free(&k->batch);
    if (k->idx) kvg_kv_index_free(k->idx);
    k->idx = NULL;
}

/* The decoder's view of the engine's events, without msgpack. */
static int fill_direct(struct kvg_kv_batch *b, const struct kvg_sim_events *ev, double ts)
{
    size_t nh = 0, nt = 0;
    for (size_t i = 0; i < ev->n; i++) {
        nh += ev->ev[i].n_hashes;
        if (ev->ev[i].type == KVG_SIM_EV_STORED) nt += ev->ev[i].n_tokens;
    }
    int rc = kvg_kv_batch_reserve(b, ev->n, nh, nt);
    if (rc) return rc;
    b->ts = ts;
    b->dp_rank = 0;
    b->n_events = b->n_hashes = b->n_tokens = 0;
    b->n_unknown = 0;
    for (size_t i = 0; i < ev->n; i++) {
        const struct kvg_sim_event *s = &ev->ev[i];
        struct kvg_kv_event *d = &b->events[b->n_events++];
        memset(d, 0, sizeof *d);
        d->type = s->type == KVG_SIM_EV_STORED    ? KVG_KV_EV_STORED
                  : s->type == KVG_SIM_EV_REMOVED ? KVG_KV_EV_REMOVED
                                                  : KVG_KV_EV_CLEARED;
        d->group_idx = -1;
        d->sliding_window = -1;
        d->medium = KVG_STR("GPU");
        d->hash_off = b->n_hashes;
        d->n_hashes = s->n_hashes;
        if (s->n_hashes)
            memcpy(b->hashes + b->n_hashes, s->hashes, s->n_hashes * sizeof *s->hashes);
        b->n_hashes += s->n_hashes;
        if (s->type == KVG_SIM_EV_STORED) {
            d->token_off = b->n_tokens;
            d->n_tokens = s->n_tokens;
            d->block_size = s->block_size;
            d->has_parent = s->has_parent;
            d->parent = s->parent;
            /* The adapter and salt seed the router's keys, as decoded from vLLM. */
            if (s->lora_name) {
                d->lora_name = (struct kvg_str){s->lora_name, strlen(s->lora_name)};
                d->has_lora_id = 1;
                d->lora_id = s->lora_id;
            }
            if (s->cache_salt) {
                d->cache_salt = (struct kvg_str){s->cache_salt, strlen(s->cache_salt)};
                d->salt_block = 0;
            }
            if (s->n_tokens)
                memcpy(b->tokens + b->n_tokens, s->tokens, s->n_tokens * sizeof *s->tokens);
            b->n_tokens += s->n_tokens;
        }
    }
    return 0;
}

int kvg__bench_des_kv_publish(struct des_kv *k, struct kvg_sim *e, uint32_t slot, double ts)
{
    struct kvg_sim_events ev;
    kvg_sim_events(e, &ev);
    if (!ev.n) return 0;
    int rc = 0;
    void *buf = NULL; /* wire path: the decoded batch's strings point into it */
    size_t len = 0;
    if (k->path == KVG_BENCH_KV_DIRECT) {
        rc = fill_direct(&k->batch, &ev, ts);
    } else if (k->path == KVG_BENCH_KV_WIRE) {
        rc = kvg_sim_kv_encode(ev.ev, ev.n, ts, 0, KVG_SIM_KV_ARRAY, &buf, &len);
        if (!rc) {
            int n = kvg_kv_decode_batch(&k->batch, buf, len);
            rc = n < 0 ? n : 0;
            k->bytes += len;
        }
    }
    if (!rc && k->idx) {
        rc = kvg_kv_index_apply(k->idx, slot, &k->batch, NULL);
        k->events += ev.n;
        k->batches++;
    }
    free(buf);
    kvg_sim_events_clear(e);
    return rc;
}
