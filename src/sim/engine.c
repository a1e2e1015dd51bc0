/* The simulated engine's scheduler: requests, the waiting queue, the running
 * batch and one step at a time (see sim.h for how callers drive it).
 *
 * It follows vLLM's v1 Scheduler.schedule(): running requests first, each
 * asking for all its remaining tokens capped by the step's token budget
 * (chunked prefill; a decoding request asks for one); when the block pool
 * cannot hold them, the most recently admitted running request is preempted
 * (freed, recomputed later: vLLM v1 only recomputes) until the allocation
 * fits or the asker itself was preempted. Waiting requests are admitted FCFS
 * only when nothing was preempted, while the batch is below max_num_seqs, the
 * budget lasts, and their blocks (after a prefix-cache lookup) can be
 * allocated; the first that does not fit stops admission. Full blocks are
 * stored in the prefix cache when they are scheduled, as vLLM's
 * allocate_slots does, so the step's KV events precede its tokens.
 *
 * Ownership: the engine owns every request from submit until it finishes or
 * is aborted; the caller's prompt is copied. */
#include "sim/sim.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/util.h"
#include "sim/kv_cache.h"
#include "sim/lora_slots.h"

#include "sim/engine_int.h"

/* The engine's copy of s (NULL for NULL/empty, or when out of memory: the
 * request then runs untagged, which only costs cache sharing). */
static const char *intern(struct kvg_sim *e, const char *s)
{
    if (!s || !s[0]) return NULL;
    for (size_t i = 0; i < e->nstrs; i++)
        if (!strcmp(e->strs[i], s)) return e->strs[i];
    if (e->nstrs == e->capstrs) {
        size_t n = e->capstrs ? e->capstrs * 2 : 16;
        char **q = realloc(e->strs, n * sizeof *q);
        if (!q) return NULL;
        e->strs = q;
        e->capstrs = n;
    }
    char *c = strdup(s);
    if (!c) return NULL;
    e->strs[e->nstrs++] = c;
    return c;
}

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t kvg_sim_block_hash(uint64_t parent, const uint32_t *tokens, uint32_t n)
{
    uint64_t h = XXH3_64bits_withSeed(tokens, (size_t)n * sizeof *tokens, parent);
    return h ? h : 1;
}

uint64_t kvg_sim_root_hash(uint64_t hash_seed)
{
    static const char tag[] = "kvgate-sim-root";
    uint64_t h = XXH3_64bits_withSeed(tag, sizeof tag - 1, hash_seed);
    return h ? h : 1;
}

/* ---- id map */

size_t kvg__sim_map_find(const struct kvg_sim *e, uint64_t id)
{
    size_t mask = e->mcap - 1;
    for (size_t i = mix64(id) & mask; e->map[i]; i = (i + 1) & mask)
        if (e->map[i]->id == id) return i;
    return SIZE_MAX;
}

static void map_insert_raw(struct req **map, size_t cap, struct req *r)
{
    size_t i = mix64(r->id) & (cap - 1);
    while (map[i]) i = (i + 1) & (cap - 1);
    map[i] = r;
}

static int map_insert(struct kvg_sim *e, struct req *r)
{
    if ((e->mcount + 1) * 2 > e->mcap) {
        size_t ncap = e->mcap * 2;
        struct req **nm = calloc(ncap, sizeof *nm);
        if (!nm) return -ENOMEM;
        for (size_t i = 0; i < e->mcap; i++)
            if (e->map[i]) map_insert_raw(nm, ncap, e->map[i]);
        free(e->map);
        e->map = nm;
        e->mcap = ncap;
    }
    map_insert_raw(e->map, e->mcap, r);
    e->mcount++;
    return 0;
}

static void map_remove(struct kvg_sim *e, uint64_t id)
{
    size_t mask = e->mcap - 1, i = kvg__sim_map_find(e, id);
    if (i == SIZE_MAX) return;
    /* Backward-shift deletion keeps probe runs unbroken without tombstones. */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (!e->map[j]) break;
        size_t home = mix64(e->map[j]->id) & mask;
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (in_range) continue;
        e->map[i] = e->map[j];
        i = j;
    }
    e->map[i] = NULL;
    e->mcount--;
}

/* ---- waiting queue */

static void wq_push_back(struct kvg_sim *e, struct req *r)
{
    r->wnext = NULL;
    r->wprev = e->wtail;
    if (e->wtail)
        e->wtail->wnext = r;
    else
        e->whead = r;
    e->wtail = r;
    e->nwaiting++;
}

static void wq_push_front(struct kvg_sim *e, struct req *r)
{
    r->wprev = NULL;
    r->wnext = e->whead;
    if (e->whead)
        e->whead->wprev = r;
    else
        e->wtail = r;
    e->whead = r;
    e->nwaiting++;
}

static void wq_remove(struct kvg_sim *e, struct req *r)
{
    if (r->wprev)
        r->wprev->wnext = r->wnext;
    else
        e->whead = r->wnext;
    if (r->wnext)
        r->wnext->wprev = r->wprev;
    else
        e->wtail = r->wprev;
    r->wprev = r->wnext = NULL;
    e->nwaiting--;
}

/* ---- lifecycle */

void kvg_sim_config_init(struct kvg_sim_config *c, const struct kvg_sim_profile *p)
{
    memset(c, 0, sizeof *c);
    c->profile = *p;
    c->hash_seed = 42;
    c->mean_output_tokens = 256;
    c->emit_events = 1;
    c->lora_load_s = KVG_SIM_LORA_LOAD_S;
}

static int config_ok(const struct kvg_sim_config *c)
{
    const struct kvg_sim_profile *p = &c->profile;
    if (p->block_size == 0 || p->block_size > 65536) return 0;
    uint64_t nb = p->kv_capacity_tokens / p->block_size;
    if (nb < 2 || nb > INT32_MAX) return 0;
    if (!p->max_num_seqs || !p->max_num_batched_tokens || p->max_model_len < 2) return 0;
    if ((uint64_t)p->max_model_len > nb * p->block_size) return 0;
    if (!(p->t_fixed > 0) || p->t_seq < 0 || p->t_prefill_token < 0 || p->t_prefill_attn < 0 ||
        p->t_decode_ctx < 0)
        return 0;
    if (c->output_vocab && !c->n_output_vocab) return 0;
    if (!(c->mean_output_tokens >= 1)) return 0;
    if (!(c->lora_load_s >= 0) || c->max_loras > 4096) return 0;
    return 1;
}

int kvg_sim_create(const struct kvg_sim_config *c, struct kvg_sim **out)
{
    if (!config_ok(c)) return KVG_ECONFIG;
    struct kvg_sim *e = calloc(1, sizeof *e);
    if (!e) return -ENOMEM;
    e->p = c->profile;
    e->bs = c->profile.block_size;
    e->nb = (uint32_t)(c->profile.kv_capacity_tokens / e->bs);
    e->seed = c->seed;
    e->root = kvg_sim_root_hash(c->hash_seed);
    e->mean_out = c->mean_output_tokens;
    e->nvocab = c->output_vocab ? c->n_output_vocab : 95;
    e->vocab = malloc(e->nvocab * sizeof *e->vocab);
    e->mcap = 64;
    e->map = calloc(e->mcap, sizeof *e->map);
    e->running = malloc(e->p.max_num_seqs * sizeof *e->running);
    e->sched = malloc(e->p.max_num_seqs * sizeof *e->sched);
    e->hits = malloc((e->p.max_model_len / e->bs + 1) * sizeof *e->hits);
    e->ups = malloc(2 * (size_t)e->p.max_num_seqs * sizeof *e->ups);
    if (!e->vocab || !e->map || !e->running || !e->sched || !e->hits || !e->ups) goto fail;
    for (size_t i = 0; i < e->nvocab; i++)
        e->vocab[i] = c->output_vocab ? c->output_vocab[i] : (uint32_t)(32 + i);
    if (kvg_sim_kvc_create(e->nb, e->bs, c->emit_events, &e->kvc)) goto fail;
    uint64_t cpu_blocks = c->cpu_kv_capacity_tokens / e->bs;
    if (cpu_blocks > INT32_MAX) cpu_blocks = INT32_MAX;
    if (cpu_blocks && kvg_sim_kvc_enable_cpu(e->kvc, (uint32_t)cpu_blocks)) goto fail;
    if (kvg_sim_lora_slots_init(&e->slots, c->max_loras)) goto fail;
    if (c->max_loras && !(e->active = malloc(c->max_loras * sizeof *e->active))) goto fail;
    e->lora_load_s = c->lora_load_s;
    *out = e;
    return 0;
fail:
    kvg_sim_free(e);
    return -ENOMEM;
}

static void req_free(struct req *r)
{
    if (!r) return;
    free(r->tokens);
    free(r->hashes);
    free(r->blocks);
    free(r);
}

void kvg_sim_free(struct kvg_sim *e)
{
    if (!e) return;
    if (e->map)
        for (size_t i = 0; i < e->mcap; i++) req_free(e->map[i]);
    free(e->map);
    for (size_t i = 0; i < e->nstrs; i++) free(e->strs[i]);
    free(e->strs);
    free(e->vocab);
    free(e->running);
    free(e->sched);
    free(e->hits);
    free(e->ups);
    kvg_sim_kvc_free(e->kvc);
    kvg_sim_lora_slots_free(&e->slots);
    free(e->active);
    free(e);
}

/* ---- requests */

/* Hashes every block that is full of known tokens (prompt or output). */
static void ensure_hashes(struct kvg_sim *e, struct req *r)
{
    uint32_t full = r->num_tokens / e->bs;
    for (; r->n_hashed < full; r->n_hashed++) {
        uint64_t parent = r->n_hashed ? r->hashes[r->n_hashed - 1] : r->root;
        r->hashes[r->n_hashed] =
            kvg_sim_block_hash(parent, r->tokens + (size_t)r->n_hashed * e->bs, e->bs);
    }
}

/* Output length: exactly max_tokens with ignore_eos; otherwise geometric
 * (each token ends the output with probability 1/mean), capped. */
static void pick_length(struct kvg_sim *e, struct req *r, int ignore_eos)
{
    uint32_t len = r->max_tokens;
    if (!ignore_eos && e->mean_out > 1) {
        double u = 1.0 - kvg_rng_double(&r->rng); /* (0, 1] */
        double l = 1.0 + floor(log(u) / log1p(-1.0 / e->mean_out));
        if (l < r->max_tokens) len = (uint32_t)l;
    } else if (!ignore_eos) {
        len = 1;
    }
    r->target_len = len;
    r->finish = len < r->max_tokens ? KVG_SIM_FINISH_STOP : KVG_SIM_FINISH_LENGTH;
}

int kvg_sim_submit(struct kvg_sim *e, const struct kvg_sim_request *in)
{
    if (!in->prompt || !in->prompt_len || !in->max_tokens) return -EINVAL;
    if ((uint64_t)in->prompt_len + in->max_tokens > e->p.max_model_len) return KVG_ETOOBIG;
    if (kvg__sim_map_find(e, in->id) != SIZE_MAX) return -EEXIST;
    struct req *r = calloc(1, sizeof *r);
    if (!r) return -ENOMEM;
    uint32_t cap = in->prompt_len + in->max_tokens;
    r->tokens = malloc((size_t)cap * sizeof *r->tokens);
    r->hashes = malloc(((size_t)cap / e->bs + 1) * sizeof *r->hashes);
    r->blocks = malloc(((size_t)cap / e->bs + 1) * sizeof *r->blocks);
    r->id = in->id;
    if (!r->tokens || !r->hashes || !r->blocks || map_insert(e, r)) {
        req_free(r);
        return -ENOMEM;
    }
    memcpy(r->tokens, in->prompt, (size_t)in->prompt_len * sizeof *r->tokens);
    r->prompt_len = r->num_tokens = in->prompt_len;
    r->max_tokens = in->max_tokens;
    r->arrival = in->arrival;
    r->state = ST_WAITING;
    kvg_rng_seed(&r->rng, in->has_seed ? mix64(in->seed) : mix64(e->seed ^ mix64(in->id)));
    /* vLLM's extra keys (the adapter's name on every block, the salt on the
     * first) enter each block's hash; seeding the chain's root with them
     * gives the same sharing: same adapter and salt, or nothing. */
    r->lora = intern(e, in->lora_name);
    r->salt = intern(e, in->cache_salt);
    r->lora_id = r->lora ? in->lora_id : 0;
    r->root = e->root;
    if (r->lora) r->root = XXH3_64bits_withSeed(r->lora, strlen(r->lora), r->root ^ 0x6c6f7261u);
    if (r->salt) r->root = XXH3_64bits_withSeed(r->salt, strlen(r->salt), r->root ^ 0x73616c74u);
    if (!r->root) r->root = 1;
    /* vLLM recomputes the last prompt token even when every block arrived
     * from the prefill: the first decode step needs its logits. */
    r->remote_tokens = in->remote_tokens < in->prompt_len ? in->remote_tokens : in->prompt_len - 1;
    r->hold = (uint8_t)(in->hold_blocks != 0);
    pick_length(e, r, in->ignore_eos);
    ensure_hashes(e, r);
    wq_push_back(e, r);
    return 0;
}

static void running_remove_at(struct kvg_sim *e, uint32_t i)
{
    memmove(e->running + i, e->running + i + 1, (e->nrunning - i - 1) * sizeof *e->running);
    e->nrunning--;
}

static void drop_blocks(struct kvg_sim *e, struct req *r)
{
    kvg_sim_kvc_release(e->kvc, r->blocks, r->n_blocks);
    r->n_blocks = r->n_stored = 0;
    r->num_computed = 0;
}

int kvg_sim_abort(struct kvg_sim *e, uint64_t id)
{
    size_t i = kvg__sim_map_find(e, id);
    if (i == SIZE_MAX) return KVG_ENOTFOUND;
    struct req *r = e->map[i];
    if (r->state == ST_WAITING) {
        wq_remove(e, r);
    } else if (r->state == ST_HELD) {
        drop_blocks(e, r); /* a held prefill whose blocks were never pulled */
        e->nheld--;
    } else {
        for (uint32_t k = 0; k < e->nrunning; k++)
            if (e->running[k] == r) {
                running_remove_at(e, k);
                break;
            }
        drop_blocks(e, r);
    }
    int counted = r->state != ST_HELD;
    map_remove(e, id);
    req_free(r);
    e->aborted++;
    /* An abort that leaves the engine idle: vLLM steps once more (its
     * scheduler still has the aborted request among the finished ones not
     * yet removed from the batch, EngineCore.step), and that empty step's
     * stats publish 0 / 0, at the end of the step in flight if one is, else
     * at once. Without it the gauges kept the last step's queues, and a
     * router waiting for the engine to empty waited forever (vLLM issue
     * 22545's symptom). A busy engine publishes at its next step's end. */
    if (counted && kvg_sim_idle(e)) {
        if (e->pend)
            e->pend_running = e->pend_waiting = 0;
        else
            e->pub_running = e->pub_waiting = 0;
    }
    return 0;
}

int kvg_sim_release(struct kvg_sim *e, uint64_t id)
{
    size_t i = kvg__sim_map_find(e, id);
    if (i == SIZE_MAX || e->map[i]->state != ST_HELD) return KVG_ENOTFOUND;
    struct req *r = e->map[i];
    drop_blocks(e, r);
    e->nheld--;
    map_remove(e, id);
    req_free(r);
    return 0;
}

int kvg_sim_idle(const struct kvg_sim *e)
{
    return !e->nwaiting && !e->nrunning;
}

/* ---- scheduling */

/* Gives r the blocks to hold its first base + n_new tokens: k prefix hits
 * (hit[0..k), n_free_hits of them unheld) and new ones from the pool, then
 * stores the blocks that will be full once this step has run. 0 (and no
 * change at all) when the pool cannot supply them. */
static int allocate(struct kvg_sim *e, struct req *r, uint32_t base, uint32_t n_new,
                    const int32_t *hit, uint32_t k, uint32_t n_free_hits)
{
    uint32_t total = base + n_new;
    uint32_t need = (total + e->bs - 1) / e->bs;
    uint32_t have = r->n_blocks + k;
    uint32_t fresh = need > have ? need - have : 0;
    if (fresh + n_free_hits > kvg_sim_kvc_num_free(e->kvc)) return 0;
    if (k) {
        kvg_sim_kvc_touch(e->kvc, hit, k);
        memcpy(r->blocks + r->n_blocks, hit, k * sizeof *hit);
        r->n_blocks += k;
        r->n_stored = r->n_blocks;
    }
    kvg_sim_kvc_alloc(e->kvc, r->blocks + r->n_blocks, fresh);
    r->n_blocks += fresh;
    uint32_t full = (total < r->num_tokens ? total : r->num_tokens) / e->bs;
    if (full > r->n_stored) {
        kvg_sim_kvc_store_tagged(e->kvc, r->blocks, r->hashes, r->tokens, r->n_stored, full,
                                 r->lora, r->lora_id, r->salt);
        r->n_stored = full;
    }
    return 1;
}

static struct kvg_sim_update *new_update(struct kvg_sim *e, const struct req *r, uint32_t flags)
{
    struct kvg_sim_update *u = &e->ups[e->nups++];
    u->id = r->id;
    u->flags = flags;
    u->token = 0;
    u->prompt_len = r->prompt_len;
    u->prompt_computed = r->num_computed < r->prompt_len ? r->num_computed : r->prompt_len;
    u->num_output = r->num_output;
    u->cached_tokens = r->cached_tokens;
    u->finish = KVG_SIM_FINISH_NONE;
    return u;
}

static void preempt(struct kvg_sim *e, struct req *v)
{
    drop_blocks(e, v);
    v->state = ST_WAITING;
    v->preemptions++;
    e->preemptions++;
    wq_push_front(e, v);
    new_update(e, v, KVG_SIM_UP_PREEMPTED);
}

/* Running requests, in admission order; returns 1 if any was preempted. */
static int schedule_running(struct kvg_sim *e, uint32_t *budget, uint32_t *nsched)
{
    int preempted = 0;
    for (uint32_t i = 0; i < e->nrunning;) {
        struct req *r = e->running[i];
        uint32_t n = r->num_tokens - r->num_computed;
        if (n > *budget) n = *budget;
        if (!n) {
            i++;
            continue;
        }
        int ok = 0;
        for (;;) {
            if (allocate(e, r, r->num_computed, n, NULL, 0, 0)) {
                ok = 1;
                break;
            }
            struct req *v = e->running[--e->nrunning];
            preempt(e, v);
            preempted = 1;
            if (v == r) break;
        }
        if (!ok) break;
        e->sched[(*nsched)++] = (struct sched){r, n, 0, 0};
        *budget -= n;
        i++;
    }
    return preempted;
}

/* LoRA: the distinct adapters of the running batch (the scheduler's
 * scheduled_loras), which the slots must keep. */
static void active_loras(struct kvg_sim *e)
{
    e->nactive = 0;
    if (!e->slots.cap) return;
    for (uint32_t i = 0; i < e->nrunning; i++) {
        const char *a = e->running[i]->lora;
        uint32_t k = 0;
        while (a && k < e->nactive && e->active[k] != a) k++;
        if (a && k == e->nactive && e->nactive < e->slots.cap) e->active[e->nactive++] = a;
    }
}

/* 1 when r's adapter fits the batch: none, already in it, or a slot to spare. */
static int lora_fits(const struct kvg_sim *e, const struct req *r)
{
    if (!e->slots.cap || !r->lora || e->nactive < e->slots.cap) return 1;
    for (uint32_t k = 0; k < e->nactive; k++)
        if (e->active[k] == r->lora) return 1;
    return 0;
}

/* r was admitted: its adapter joins the batch, loaded if no slot holds it. */
static void lora_admit(struct kvg_sim *e, const struct req *r)
{
    if (!e->slots.cap || !r->lora) return;
    if (kvg_sim_lora_slots_acquire(&e->slots, r->lora, e->active, e->nactive) == 1) e->step_loads++;
    for (uint32_t k = 0; k < e->nactive; k++)
        if (e->active[k] == r->lora) return;
    if (e->nactive < e->slots.cap) e->active[e->nactive++] = r->lora;
}

static void schedule_waiting(struct kvg_sim *e, uint32_t *budget, uint32_t *nsched)
{
    active_loras(e);
    struct req *next;
    for (struct req *r = e->whead; r && *budget && e->nrunning < e->p.max_num_seqs; r = next) {
        next = r->wnext;
        /* One adapter too many for this batch: vLLM skips it and goes on. */
        if (!lora_fits(e, r)) continue;
        uint32_t n_free = 0, nmax = (r->num_tokens - 1) / e->bs;
        uint32_t k = kvg_sim_kvc_lookup(e->kvc, r->hashes, nmax, e->hits, &n_free);
        /* The prefix may go on in the CPU tier: those blocks are copied
         * into fresh GPU blocks (allocate stores them) instead of computed. */
        uint32_t cpu = kvg_sim_kvc_cpu_lookup(e->kvc, r->hashes + k, nmax - k);
        uint32_t base = (k + cpu) * e->bs;
        /* A PD decode: the pulled KV covers more than the local tiers do,
         * so nothing comes back from the CPU tier. */
        if (!r->ever_scheduled && r->remote_tokens > base) {
            base = r->remote_tokens;
            cpu = 0;
        }
        uint32_t n = r->num_tokens - base;
        if (n > *budget) n = *budget;
        if (!allocate(e, r, base, n, e->hits, k, n_free)) break;
        wq_remove(e, r);
        lora_admit(e, r);
        r->state = ST_RUNNING;
        r->num_computed = base;
        e->running[e->nrunning++] = r;
        if (!r->ever_scheduled) {
            r->ever_scheduled = 1;
            r->cached_tokens = base; /* vLLM counts local and connector hits alike */
            e->q_tokens += r->num_tokens;
            e->h_tokens += (uint64_t)k * e->bs;
            e->cpu_h_tokens += (uint64_t)cpu * e->bs;
        }
        e->sched[(*nsched)++] = (struct sched){r, n, KVG_SIM_UP_SCHEDULED, cpu * e->bs};
        *budget -= n;
    }
}

/* Emits r's next token; returns 1 when that finished it. */
static int emit_token(struct kvg_sim *e, struct req *r, struct kvg_sim_update *u)
{
    uint32_t tok = e->vocab[kvg_rng_below(&r->rng, e->nvocab)];
    r->tokens[r->num_tokens++] = tok;
    r->num_output++;
    e->gen_tokens++;
    u->flags |= KVG_SIM_UP_TOKEN;
    u->token = tok;
    u->num_output = r->num_output;
    if (r->num_output == 1) {
        u->flags |= KVG_SIM_UP_FIRST;
        e->prompt_tokens += r->prompt_len;
    }
    if (r->num_output < r->target_len) {
        ensure_hashes(e, r);
        return 0;
    }
    u->flags |= KVG_SIM_UP_FINISHED;
    u->finish = r->finish;
    if (r->finish == KVG_SIM_FINISH_STOP)
        e->fin_stop++;
    else
        e->fin_length++;
    return 1;
}

int kvg_sim_step(struct kvg_sim *e, double now, struct kvg_sim_step *out)
{
    memset(out, 0, sizeof *out);
    e->nups = 0;
    out->updates = e->ups;
    /* The caller steps no earlier than the last step's end: its gauges are out. */
    if (e->pend) {
        e->pub_running = e->pend_running;
        e->pub_waiting = e->pend_waiting;
        e->pend = 0;
    }
    if (kvg_sim_idle(e)) return 0;

    uint32_t budget = e->p.max_num_batched_tokens, nsched = 0;
    e->step_loads = 0;
    if (!schedule_running(e, &budget, &nsched)) schedule_waiting(e, &budget, &nsched);

    struct kvg_sim_batch_shape *sh = &out->shape;
    sh->num_seqs = nsched;
    for (uint32_t i = 0; i < nsched; i++) {
        const struct req *r = e->sched[i].r;
        uint32_t n = e->sched[i].n, start = r->num_computed;
        sh->cpu_load_tokens += e->sched[i].loaded;
        if (n == 1 && r->num_output > 0 && start + 1 == r->num_tokens) {
            sh->decode_ctx_tokens += start + 1;
            out->num_decode_seqs++;
        } else {
            sh->prefill_tokens += n;
            sh->prefill_attn_pairs += (double)n * (start + (n + 1) / 2.0);
        }
    }
    out->duration = nsched ? kvg_sim_step_time(&e->p, sh) : e->p.t_fixed;
    out->lora_loads = e->step_loads;
    out->duration += e->step_loads * e->lora_load_s;

    int any_done = 0;
    for (uint32_t i = 0; i < nsched; i++) {
        struct req *r = e->sched[i].r;
        r->num_computed += e->sched[i].n;
        struct kvg_sim_update *u = new_update(e, r, e->sched[i].flags);
        if (r->num_computed < r->num_tokens) {
            u->flags |= KVG_SIM_UP_PREFILL;
            continue;
        }
        if (emit_token(e, r, u)) {
            if (r->hold) {
                r->state = ST_HELD; /* off the batch; its blocks stay until released */
            } else {
                drop_blocks(e, r);
                r->state = ST_DONE;
            }
            any_done = 1;
        }
    }
    if (any_done) {
        uint32_t w = 0;
        for (uint32_t i = 0; i < e->nrunning; i++) {
            struct req *r = e->running[i];
            if (r->state == ST_HELD) {
                e->nheld++;
                continue;
            }
            if (r->state != ST_DONE) {
                e->running[w++] = r;
                continue;
            }
            map_remove(e, r->id);
            req_free(r);
        }
        e->nrunning = w;
    }
    e->steps++;
    e->busy += out->duration;
    /* vLLM's make_stats after update_from_output: the queues as this step
     * leaves them, seen at its end (requests submitted meanwhile are not in
     * them: vLLM adds them before the next step). */
    e->pend_running = e->nrunning;
    e->pend_waiting = e->nwaiting;
    e->pend_at = now + out->duration;
    e->pend = 1;
    out->n_updates = e->nups;
    out->n_events = kvg_sim_kvc_num_events(e->kvc);
    return 0;
}

/* ---- events, metrics, introspection */

void kvg_sim_events(struct kvg_sim *e, struct kvg_sim_events *out)
{
    kvg_sim_kvc_events(e->kvc, out);
}

void kvg_sim_events_clear(struct kvg_sim *e)
{
    kvg_sim_kvc_events_clear(e->kvc);
}

int kvg_sim_reset_prefix_cache(struct kvg_sim *e)
{
    return kvg_sim_kvc_reset(e->kvc);
}
