/* Helpers shared by the sim unit tests: engine construction, random prompts
 * and a small virtual-time driver that records what each request saw.
 * Request ids are indexes into the driver's record array. Static functions
 * only: each test program includes this once. */
#ifndef KVG_TEST_SIM_HELPERS_H
#define KVG_TEST_SIM_HELPERS_H

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "sim/sim.h"
#include "support/test.h"

#define H_MAX_REQS 8192

struct h_rec {
    int submitted, done, preempted, first_seen;
    double arrival, t_first, t_done;
    uint32_t n_out, cached;
    enum kvg_sim_finish finish;
    uint64_t digest; /* of the emitted token ids, in order */
};

struct h_run {
    struct kvg_sim *e;
    double t;
    struct h_rec rec[H_MAX_REQS];
    uint64_t digest; /* of every update and duration */
    uint64_t steps;
    uint32_t max_running;
    /* called after every step (events, mirrors); may be NULL */
    void (*after_step)(struct h_run *, const struct kvg_sim_step *, void *);
    void *ctx;
};

static inline uint64_t h_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* Caller frees the engine. */
static inline struct kvg_sim *h_engine(const char *profile, uint32_t block_size, uint64_t capacity,
                                       uint64_t seed)
{
    const struct kvg_sim_profile *p = kvg_sim_profile_find(profile);
    if (!p) return NULL;
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, p);
    if (block_size) c.profile.block_size = block_size;
    if (capacity) c.profile.kv_capacity_tokens = capacity;
    c.seed = seed;
    struct kvg_sim *e = NULL;
    if (kvg_sim_create(&c, &e)) return NULL;
    return e;
}

static inline void h_tokens(uint32_t *t, size_t n, struct kvg_rng *rng, uint32_t vocab)
{
    for (size_t i = 0; i < n; i++) t[i] = (uint32_t)kvg_rng_below(rng, vocab);
}

static inline int h_submit(struct h_run *R, uint64_t id, const uint32_t *prompt, uint32_t len,
                           uint32_t max_tokens, int ignore_eos)
{
    struct kvg_sim_request q = {.id = id,
                                .prompt = prompt,
                                .prompt_len = len,
                                .max_tokens = max_tokens,
                                .ignore_eos = ignore_eos,
                                .arrival = R->t};
    int rc = kvg_sim_submit(R->e, &q);
    if (rc == 0 && id < H_MAX_REQS) {
        memset(&R->rec[id], 0, sizeof R->rec[id]);
        R->rec[id].submitted = 1;
        R->rec[id].arrival = R->t;
    }
    return rc;
}

/* One step at R->t; the clock moves to its end, where updates are recorded. */
static inline void h_step(struct h_run *R)
{
    struct kvg_sim_step st;
    CHECK_INT(kvg_sim_step(R->e, R->t, &st), 0);
    R->t += st.duration;
    R->steps++;
    uint64_t d;
    memcpy(&d, &st.duration, sizeof d);
    R->digest = h_mix(R->digest, d);
    for (size_t i = 0; i < st.n_updates; i++) {
        const struct kvg_sim_update *u = &st.updates[i];
        R->digest = h_mix(h_mix(h_mix(R->digest, u->id), u->flags), u->token);
        if (u->id >= H_MAX_REQS) continue;
        struct h_rec *r = &R->rec[u->id];
        if (u->flags & KVG_SIM_UP_PREEMPTED) r->preempted++;
        if (u->flags & KVG_SIM_UP_TOKEN) {
            r->digest = h_mix(r->digest, u->token);
            r->n_out = u->num_output;
        }
        if (u->flags & KVG_SIM_UP_FIRST) {
            r->first_seen = 1;
            r->t_first = R->t;
            r->cached = u->cached_tokens;
        }
        if (u->flags & KVG_SIM_UP_FINISHED) {
            r->done = 1;
            r->t_done = R->t;
            r->finish = u->finish;
        }
    }
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(R->e, &m);
    if (m.num_running > R->max_running) R->max_running = m.num_running;
    if (R->after_step) R->after_step(R, &st, R->ctx);
}

static inline void h_run_idle(struct h_run *R, uint64_t max_steps)
{
    for (uint64_t i = 0; i < max_steps && !kvg_sim_idle(R->e); i++) h_step(R);
    CHECK(kvg_sim_idle(R->e));
}

static inline struct h_run *h_run_new(struct kvg_sim *e)
{
    struct h_run *R = calloc(1, sizeof *R);
    if (R) R->e = e;
    return R;
}

#endif
