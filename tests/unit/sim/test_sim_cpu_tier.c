/* Unit tests for the simulated engine's CPU tier (vLLM's CPU offloading):
 * GPU evictions move blocks there with a medium "CPU" BlockStored logged
 * before the GPU's BlockRemoved, the tier evicts its own LRU block with a
 * "CPU" BlockRemoved, and a request whose prefix continues there gets those
 * blocks back (cached_tokens counts them, the step pays the copy, they are
 * GPU blocks again). */
#include "support/test.h"

#include "sim/kv_events.h"
#include "unit/sim/sim_helpers.h"

/* tiny with 8 GPU blocks (128 tokens) and a CPU tier of cpu_tokens. */
static struct kvg_sim *cpu_engine(uint64_t cpu_tokens)
{
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, kvg_sim_profile_find("tiny"));
    c.profile.kv_capacity_tokens = 128;
    c.profile.max_model_len = 128;
    c.cpu_kv_capacity_tokens = cpu_tokens;
    struct kvg_sim *e = NULL;
    CHECK_INT(kvg_sim_create(&c, &e), 0);
    return e;
}

struct ev_seen {
    int cpu_stored, cpu_removed, gpu_removed, stored_before_removed, bad_order;
    uint64_t cpu_hashes[64];
    int ncpu;
};

static void record_events(struct h_run *R, const struct kvg_sim_step *st, void *ctx)
{
    (void)st;
    struct ev_seen *s = ctx;
    struct kvg_sim_events ev;
    kvg_sim_events(R->e, &ev);
    for (size_t i = 0; i < ev.n; i++) {
        const struct kvg_sim_event *e = &ev.ev[i];
        if (e->type == KVG_SIM_EV_STORED && e->cpu) {
            s->cpu_stored++;
            CHECK_INT(e->n_hashes, 1);
            CHECK_INT(e->n_tokens, e->block_size);
            if (s->ncpu < 64) s->cpu_hashes[s->ncpu++] = e->hashes[0];
            /* its GPU removal follows in the same step */
            int later = 0;
            for (size_t j = i + 1; j < ev.n; j++)
                later |= ev.ev[j].type == KVG_SIM_EV_REMOVED && !ev.ev[j].cpu &&
                         ev.ev[j].hashes[0] == e->hashes[0];
            s->stored_before_removed += later;
            s->bad_order += !later;
        }
        if (e->type == KVG_SIM_EV_REMOVED) {
            if (e->cpu)
                s->cpu_removed++;
            else
                s->gpu_removed++;
        }
    }
    kvg_sim_events_clear(R->e);
}

static void run_prompt(struct h_run *R, uint64_t id, const uint32_t *p, uint32_t len)
{
    CHECK_INT(h_submit(R, id, p, len, 1, 1), 0);
    h_run_idle(R, 1000);
}

/* A run recording events, and two prompts: a (4 full blocks) and b, which
 * needs all 8 GPU blocks. */
static struct h_run *setup(uint64_t cpu_tokens, uint64_t seed, struct ev_seen *seen, uint32_t *a,
                           uint32_t *b)
{
    struct h_run *R = h_run_new(cpu_engine(cpu_tokens));
    R->after_step = record_events;
    R->ctx = seen;
    struct kvg_rng rng;
    kvg_rng_seed(&rng, seed);
    h_tokens(a, 65, &rng, 1000);
    h_tokens(b, 113, &rng, 1000);
    return R;
}

TEST(gpu_evictions_move_to_the_cpu_tier_and_come_back)
{
    static uint32_t a[65], b[113];
    struct ev_seen seen = {0};
    struct h_run *R = setup(64 * 16, 5, &seen, a, b);
    struct kvg_sim *e = R->e;
    run_prompt(R, 1, a, 65); /* 4 full blocks cached on the GPU */
    CHECK_INT(seen.cpu_stored, 0);
    run_prompt(R, 2, b, 113); /* needs 8 blocks: every block of a is evicted */
    CHECK_INT(seen.cpu_stored, 4);
    CHECK_INT(seen.bad_order, 0);
    CHECK_INT(seen.cpu_removed, 0);
    uint64_t cpu[64];
    CHECK_INT(kvg_sim_cpu_cached_hashes(e, cpu, 64), 4);

    /* a again: its 4 blocks come back from the CPU tier at a copy cost. */
    struct kvg_sim_metrics m0, m1;
    kvg_sim_get_metrics(e, &m0);
    CHECK_INT(h_submit(R, 3, a, 65, 1, 1), 0);
    struct kvg_sim_step st;
    CHECK_INT(kvg_sim_step(e, R->t, &st), 0);
    CHECK_INT(st.shape.cpu_load_tokens, 64);
    CHECK_INT(st.shape.prefill_tokens, 1);
    const struct kvg_sim_profile *p = kvg_sim_profile_find("tiny");
    CHECK(st.duration > p->t_fixed + 64 * p->t_cpu_load_token * 0.99);
    CHECK_INT(st.updates[0].cached_tokens, 64);
    kvg_sim_get_metrics(e, &m1);
    CHECK_INT(m1.cpu_hit_tokens - m0.cpu_hit_tokens, 64);
    CHECK_INT(m1.prefix_cache_hits, m0.prefix_cache_hits);
    /* They are GPU blocks again (and still in the CPU tier). */
    uint64_t gpu[16];
    size_t ng = kvg_sim_cached_hashes(e, gpu, 16);
    int back = 0;
    for (size_t i = 0; i < ng; i++)
        for (int j = 0; j < seen.ncpu; j++) back += gpu[i] == seen.cpu_hashes[j];
    CHECK_INT(back, 4);
    /* b's blocks made room for them: the CPU tier holds those too now */
    CHECK(kvg_sim_cpu_cached_hashes(e, cpu, 64) > 4);
    h_run_idle(R, 1000);
    free(R);
    kvg_sim_free(e);
}

TEST(a_full_cpu_tier_evicts_its_oldest_block)
{
    static uint32_t a[65], b[113];
    struct ev_seen seen = {0};
    struct h_run *R = setup(2 * 16, 6, &seen, a, b); /* room for 2 blocks */
    struct kvg_sim *e = R->e;
    run_prompt(R, 1, a, 65);
    run_prompt(R, 2, b, 113);
    CHECK_INT(seen.cpu_stored, 4);
    CHECK_INT(seen.cpu_removed, 2);
    uint64_t cpu[4];
    CHECK_INT(kvg_sim_cpu_cached_hashes(e, cpu, 4), 2);
    free(R);
    kvg_sim_free(e);
}

TEST(cpu_events_encode_medium_cpu)
{
    uint64_t h = 77;
    uint32_t t[16] = {0};
    struct kvg_sim_event ev[2] = {
        {.type = KVG_SIM_EV_STORED,
         .hashes = &h,
         .n_hashes = 1,
         .tokens = t,
         .n_tokens = 16,
         .block_size = 16,
         .cpu = 1},
        {.type = KVG_SIM_EV_REMOVED, .hashes = &h, .n_hashes = 1, .cpu = 1}};
    for (int enc = 0; enc < 2; enc++) {
        void *out;
        size_t len;
        CHECK_INT(kvg_sim_kv_encode(ev, 2, 1.0, 3, enc, &out, &len), 0);
        /* "CPU" appears twice, "GPU" never */
        int cpu = 0, gpu = 0;
        for (size_t i = 0; i + 3 <= len; i++) {
            cpu += !memcmp((char *)out + i, "CPU", 3);
            gpu += !memcmp((char *)out + i, "GPU", 3);
        }
        CHECK_INT(cpu, 2);
        CHECK_INT(gpu, 0);
        free(out);
    }
}

TEST(reset_clears_the_cpu_tier_too)
{
    static uint32_t a[65], b[113];
    struct ev_seen seen = {0};
    struct h_run *R = setup(64 * 16, 7, &seen, a, b);
    struct kvg_sim *e = R->e;
    run_prompt(R, 1, a, 65);
    run_prompt(R, 2, b, 113);
    uint64_t cpu[8];
    CHECK(kvg_sim_cpu_cached_hashes(e, cpu, 8) > 0);
    CHECK_INT(kvg_sim_reset_prefix_cache(e), 0);
    CHECK_INT(kvg_sim_cpu_cached_hashes(e, cpu, 8), 0);
    free(R);
    kvg_sim_free(e);
}
