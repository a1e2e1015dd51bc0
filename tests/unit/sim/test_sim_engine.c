/* Unit tests for the simulated engine's scheduler and timing model:
 * determinism, output lengths, TTFT against prompt length and prefix hits,
 * queueing past max_num_seqs, preemption, aborts, submit errors, metrics. */
#include "support/test.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "base/err.h"
#include "sim/sim.h"
#include "unit/sim/sim_helpers.h"

/* A mixed workload with shared prefixes and staggered arrivals; returns the
 * run's digest (every update, token and duration). */
static uint64_t mixed_run(uint64_t seed, uint64_t *events_digest)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, seed);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 7);
    uint32_t prefix[3][300], prompt[700];
    for (int g = 0; g < 3; g++) h_tokens(prefix[g], 300, &rng, 5000);
    uint64_t ed = 0;
    for (uint64_t id = 0; id < 200; id++) {
        int g = (int)kvg_rng_below(&rng, 3);
        uint32_t qlen = 1 + (uint32_t)kvg_rng_below(&rng, 300);
        memcpy(prompt, prefix[g], sizeof prefix[g]);
        h_tokens(prompt + 300, qlen, &rng, 5000);
        CHECK_INT(h_submit(R, id, prompt, 300 + qlen, 1 + (uint32_t)kvg_rng_below(&rng, 64),
                           (int)(id & 1)),
                  0);
        for (int k = 0; k < 3 && !kvg_sim_idle(e); k++) {
            h_step(R);
            struct kvg_sim_events ev;
            kvg_sim_events(e, &ev);
            for (size_t i = 0; i < ev.n; i++)
                for (uint32_t j = 0; j < ev.ev[i].n_hashes; j++)
                    ed = h_mix(ed, ev.ev[i].hashes[j] ^ ev.ev[i].type);
            kvg_sim_events_clear(e);
        }
    }
    h_run_idle(R, 100000);
    for (uint64_t id = 0; id < 200; id++) CHECK(R->rec[id].done);
    uint64_t d = R->digest;
    free(R);
    kvg_sim_free(e);
    if (events_digest) *events_digest = ed;
    return d;
}

TEST(deterministic_for_a_seed)
{
    uint64_t ea, eb, ec;
    uint64_t a = mixed_run(1, &ea), b = mixed_run(1, &eb), c = mixed_run(2, &ec);
    CHECK(a == b);
    CHECK(ea == eb);
    CHECK(a != c); /* another seed: other tokens and lengths */
}

TEST(ignore_eos_gives_exactly_max_tokens_from_the_vocab)
{
    const struct kvg_sim_profile *p = kvg_sim_profile_find("tiny");
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, p);
    static const uint32_t vocab[] = {1000, 1001, 1002};
    c.output_vocab = vocab;
    c.n_output_vocab = 3;
    struct kvg_sim *e = NULL;
    CHECK_INT(kvg_sim_create(&c, &e), 0);
    uint32_t prompt[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct kvg_sim_request q = {
        .id = 5, .prompt = prompt, .prompt_len = 10, .max_tokens = 37, .ignore_eos = 1};
    CHECK_INT(kvg_sim_submit(e, &q), 0);
    uint32_t n = 0, finished = 0;
    double t = 0;
    while (!kvg_sim_idle(e)) {
        struct kvg_sim_step st;
        CHECK_INT(kvg_sim_step(e, t, &st), 0);
        t += st.duration;
        for (size_t i = 0; i < st.n_updates; i++) {
            const struct kvg_sim_update *u = &st.updates[i];
            if (!(u->flags & KVG_SIM_UP_TOKEN)) continue;
            CHECK(u->token >= 1000 && u->token <= 1002);
            CHECK_INT(u->num_output, ++n);
            if (u->flags & KVG_SIM_UP_FINISHED) {
                finished = 1;
                CHECK_INT(u->finish, KVG_SIM_FINISH_LENGTH);
            }
        }
    }
    CHECK_INT(n, 37);
    CHECK(finished);
    kvg_sim_free(e);
}

TEST(lengths_without_ignore_eos_follow_the_mean_and_cap)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 3);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    uint32_t prompt[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    /* mean 256, cap 1000: the geometric mean capped at 1000 is ~250 */
    uint64_t sum = 0, stops = 0, lengths = 0;
    for (uint64_t id = 0; id < 400; id++) {
        prompt[0] = (uint32_t)id;
        CHECK_INT(h_submit(R, id, prompt, 8, 1000, 0), 0);
    }
    h_run_idle(R, 1000000);
    for (uint64_t id = 0; id < 400; id++) {
        CHECK(R->rec[id].done);
        CHECK(R->rec[id].n_out >= 1 && R->rec[id].n_out <= 1000);
        sum += R->rec[id].n_out;
        stops += R->rec[id].finish == KVG_SIM_FINISH_STOP;
        lengths += R->rec[id].finish == KVG_SIM_FINISH_LENGTH;
        if (R->rec[id].finish == KVG_SIM_FINISH_LENGTH) CHECK_INT(R->rec[id].n_out, 1000);
    }
    double mean = (double)sum / 400;
    CHECK(mean > 200 && mean < 300);
    CHECK(stops > 350);
    CHECK_INT(stops + lengths, 400);
    free(R);
    kvg_sim_free(e);
}

/* TTFT of one request alone on a fresh engine. */
static double lone_ttft(const char *profile, const uint32_t *prompt, uint32_t len, uint32_t *cached,
                        struct kvg_sim *reuse)
{
    struct kvg_sim *e = reuse ? reuse : h_engine(profile, 0, 0, 1);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    CHECK_INT(h_submit(R, 1, prompt, len, 4, 1), 0);
    h_run_idle(R, 100000);
    double t = R->rec[1].t_first;
    if (cached) *cached = R->rec[1].cached;
    free(R);
    if (!reuse) kvg_sim_free(e);
    return t;
}

TEST(ttft_grows_with_uncached_prompt_length)
{
    static uint32_t prompt[2048];
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 11);
    h_tokens(prompt, 2048, &rng, 30000);
    const uint32_t lens[] = {1, 50, 200, 511, 513, 1000, 1500, 2040};
    double prev = 0;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        double t = lone_ttft("tiny", prompt, lens[i], NULL, NULL);
        CHECK(t > prev);
        prev = t;
    }
    /* One chunk: exactly the step-time formula. */
    const struct kvg_sim_profile *p = kvg_sim_profile_find("tiny");
    struct kvg_sim_batch_shape b = {
        .num_seqs = 1, .prefill_tokens = 200, .prefill_attn_pairs = 200 * (0 + 201 / 2.0)};
    CHECK_NEAR(lone_ttft("tiny", prompt, 200, NULL, NULL), kvg_sim_step_time(p, &b), 1e-12);
}

TEST(cached_prompt_ttft_is_far_lower)
{
    static uint32_t prompt[10000];
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 12);
    h_tokens(prompt, 10000, &rng, 150000);
    struct kvg_sim *e = h_engine("qwen3-32b-h100-tp2", 0, 0, 1);
    CHECK(e);
    uint32_t cached = 1;
    double cold = lone_ttft(NULL, prompt, 10000, &cached, e);
    CHECK_INT(cached, 0);
    double warm = lone_ttft(NULL, prompt, 10000, &cached, e);
    /* blog: ~4.3 s cold, 0.6 s cached; the model recomputes 16 tokens */
    CHECK(cold > 4.0 && cold < 4.6);
    CHECK(warm < 0.6);
    CHECK(warm * 20 < cold);
    CHECK_INT(cached, 9984);
    kvg_sim_free(e);

    double roof = lone_ttft("qwen3-32b-h100-tp2-roofline", prompt, 10000, NULL, NULL);
    CHECK(roof > 0.6 && roof < 1.0);
}

TEST(decode_step_time_matches_the_itl_target)
{
    /* 60 sequences decoding at 7,500 tokens of context: ~24 ms (sim/profile.c). */
    const struct kvg_sim_profile *p = kvg_sim_profile_find("qwen3-32b-h100-tp2");
    struct kvg_sim_batch_shape b = {.num_seqs = 60, .decode_ctx_tokens = 60 * 7500};
    double t = kvg_sim_step_time(p, &b);
    CHECK(t > 0.020 && t < 0.030);
    b.num_seqs = 0;
    CHECK_NEAR(kvg_sim_step_time(p, &b), 0, 0);
}

TEST(queueing_appears_past_max_num_seqs)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 1);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    uint32_t prompt[20];
    for (uint64_t id = 0; id < 40; id++) {
        for (int i = 0; i < 20; i++) prompt[i] = (uint32_t)(id * 100 + i);
        CHECK_INT(h_submit(R, id, prompt, 20, 30, 1), 0);
    }
    h_step(R);
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    CHECK_INT(m.num_running, 16);
    CHECK_INT(m.num_waiting, 24);
    h_run_idle(R, 100000);
    CHECK_INT(R->max_running, 16);
    /* The first 16 start at once; the 17th waits for one of them to finish. */
    for (uint64_t id = 1; id < 16; id++) CHECK_NEAR(R->rec[id].t_first, R->rec[0].t_first, 0);
    CHECK(R->rec[16].t_first >= R->rec[0].t_done);
    CHECK(R->rec[39].t_first > R->rec[16].t_first);
    free(R);
    kvg_sim_free(e);
}

/* Runs 16 long requests on a given capacity; returns their token digests. */
static void long_batch(uint64_t capacity, uint64_t digests[16], uint64_t *preemptions)
{
    struct kvg_sim *e = h_engine("tiny", 0, capacity, 9);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    uint32_t prompt[200];
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 5);
    for (uint64_t id = 0; id < 16; id++) {
        h_tokens(prompt, 200, &rng, 30000);
        CHECK_INT(h_submit(R, id, prompt, 200, 400, 1), 0);
    }
    for (int i = 0; i < 1000000 && !kvg_sim_idle(e); i++) {
        h_step(R);
        struct kvg_sim_metrics m;
        kvg_sim_get_metrics(e, &m);
        CHECK(m.kv_usage >= 0 && m.kv_usage <= 1);
        kvg_sim_events_clear(e);
    }
    CHECK(kvg_sim_idle(e));
    uint64_t pre = 0;
    for (uint64_t id = 0; id < 16; id++) {
        CHECK(R->rec[id].done);
        CHECK_INT(R->rec[id].n_out, 400);
        digests[id] = R->rec[id].digest;
        pre += R->rec[id].preempted;
    }
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    CHECK_INT(m.num_preemptions, pre);
    CHECK_NEAR(m.kv_usage, 0, 0);
    *preemptions = pre;
    free(R);
    kvg_sim_free(e);
}

TEST(preemption_when_blocks_run_out_keeps_outputs)
{
    /* 16 x (200 + 400) tokens = 608 blocks of 16 against 256: must preempt. */
    uint64_t small[16], big[16], p_small, p_big;
    long_batch(4096, small, &p_small);
    long_batch(16384, big, &p_big);
    CHECK(p_small > 0);
    CHECK_INT(p_big, 0);
    for (int i = 0; i < 16; i++) CHECK(small[i] == big[i]); /* recompute changes nothing */
}

TEST(abort_and_submit_errors)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 1);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    uint32_t prompt[3000] = {0};
    CHECK_INT(h_submit(R, 1, prompt, 0, 5, 1), -EINVAL);
    CHECK_INT(h_submit(R, 1, prompt, 5, 0, 1), -EINVAL);
    CHECK_INT(h_submit(R, 1, prompt, 2000, 49, 1), KVG_ETOOBIG); /* max_model_len 2048 */
    CHECK_INT(h_submit(R, 1, prompt, 2000, 48, 1), 0);
    CHECK_INT(h_submit(R, 1, prompt, 10, 5, 1), -EEXIST);
    for (uint64_t id = 2; id < 30; id++) {
        prompt[0] = (uint32_t)id;
        CHECK_INT(h_submit(R, id, prompt, 100, 50, 1), 0);
    }
    h_step(R);
    struct kvg_sim_request_info info;
    CHECK_INT(kvg_sim_request_get(e, 1, &info), 0);
    CHECK_INT(info.state, KVG_SIM_RUNNING);
    CHECK(info.num_blocks > 0);
    CHECK_INT(kvg_sim_request_get(e, 29, &info), 0);
    CHECK_INT(info.state, KVG_SIM_WAITING);
    CHECK_INT(kvg_sim_abort(e, 1), 0);
    CHECK_INT(kvg_sim_abort(e, 29), 0);
    CHECK_INT(kvg_sim_abort(e, 29), KVG_ENOTFOUND);
    CHECK_INT(kvg_sim_request_get(e, 1, &info), KVG_ENOTFOUND);
    h_run_idle(R, 100000);
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    CHECK_INT(m.aborted, 2);
    CHECK_INT(m.finished_length, 27);
    CHECK_NEAR(m.kv_usage, 0, 0);
    CHECK(!R->rec[1].done && !R->rec[29].done);
    /* an idle engine steps in zero time */
    struct kvg_sim_step st;
    CHECK_INT(kvg_sim_step(e, R->t, &st), 0);
    CHECK_NEAR(st.duration, 0, 0);
    CHECK_INT(st.n_updates, 0);
    free(R);
    kvg_sim_free(e);
}

TEST(prefix_cache_counters_and_token_totals)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 1);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    uint32_t prompt[64];
    for (int i = 0; i < 64; i++) prompt[i] = (uint32_t)(i + 7);
    CHECK_INT(h_submit(R, 1, prompt, 64, 3, 1), 0);
    h_run_idle(R, 1000);
    CHECK_INT(h_submit(R, 2, prompt, 64, 3, 1), 0);
    h_run_idle(R, 1000);
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    CHECK_INT(m.prefix_cache_queries, 128);
    CHECK_INT(m.prefix_cache_hits, 48); /* the last token is always recomputed */
    CHECK_INT(R->rec[2].cached, 48);
    CHECK_INT(m.prompt_tokens, 128);
    CHECK_INT(m.generation_tokens, 6);
    CHECK_INT(m.block_size, 16);
    CHECK_INT(m.num_blocks, 256);
    CHECK_INT(m.num_cached_blocks, 4);
    CHECK(R->rec[2].t_first - R->rec[2].arrival < R->rec[1].t_first - R->rec[1].arrival);
    free(R);
    kvg_sim_free(e);
}

TEST(decode_tokens_fill_blocks_and_are_stored)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 1);
    CHECK(e);
    uint32_t prompt[16];
    for (int i = 0; i < 16; i++) prompt[i] = (uint32_t)(100 + i);
    struct kvg_sim_request q = {
        .id = 1, .prompt = prompt, .prompt_len = 16, .max_tokens = 40, .ignore_eos = 1};
    CHECK_INT(kvg_sim_submit(e, &q), 0);
    uint32_t out[64], nout = 0, stored[64], nstored = 0;
    double t = 0;
    uint64_t parent = kvg_sim_root_hash(42);
    while (!kvg_sim_idle(e)) {
        struct kvg_sim_step st;
        CHECK_INT(kvg_sim_step(e, t, &st), 0);
        t += st.duration;
        for (size_t i = 0; i < st.n_updates; i++)
            if (st.updates[i].flags & KVG_SIM_UP_TOKEN) out[nout++] = st.updates[i].token;
        struct kvg_sim_events ev;
        kvg_sim_events(e, &ev);
        for (size_t i = 0; i < ev.n; i++) {
            CHECK_INT(ev.ev[i].type, KVG_SIM_EV_STORED);
            for (uint32_t b = 0; b < ev.ev[i].n_hashes; b++) {
                const uint32_t *tk = ev.ev[i].tokens + b * 16;
                CHECK(ev.ev[i].hashes[b] == kvg_sim_block_hash(parent, tk, 16));
                parent = ev.ev[i].hashes[b];
                memcpy(stored + nstored, tk, 16 * sizeof *tk);
                nstored += 16;
            }
        }
        kvg_sim_events_clear(e);
    }
    CHECK_INT(nout, 40);
    /* 16 + 40 tokens, 55 computed: 3 full blocks, the last two of output */
    CHECK_INT(nstored, 48);
    CHECK(!memcmp(stored, prompt, sizeof prompt));
    CHECK(!memcmp(stored + 16, out, 32 * sizeof *out));
    kvg_sim_free(e);
}

TEST(config_is_validated_and_profiles_enumerate)
{
    CHECK(kvg_sim_profile_find("nope") == NULL);
    size_t n = 0;
    while (kvg_sim_profile_at(n)) n++;
    CHECK(n >= 3);
    const struct kvg_sim_profile *q = kvg_sim_profile_find("qwen3-32b-h100-tp2");
    CHECK(q && q->block_size == 64 && q->kv_capacity_tokens == 307328);
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, kvg_sim_profile_find("tiny"));
    struct kvg_sim *e = NULL;
    c.profile.kv_capacity_tokens = 1024; /* smaller than max_model_len 2048 */
    CHECK_INT(kvg_sim_create(&c, &e), KVG_ECONFIG);
    c.profile.kv_capacity_tokens = 4096;
    c.profile.block_size = 0;
    CHECK_INT(kvg_sim_create(&c, &e), KVG_ECONFIG);
    c.profile.block_size = 64;
    c.profile.t_fixed = 0;
    CHECK_INT(kvg_sim_create(&c, &e), KVG_ECONFIG);
    c.profile.t_fixed = 1e-3;
    CHECK_INT(kvg_sim_create(&c, &e), 0);
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    CHECK_INT(m.num_blocks, 64);
    kvg_sim_free(e);
}

TEST(request_seed_overrides_engine_seed_and_id)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 1);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    uint32_t prompt[12] = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    for (uint64_t id = 0; id < 4; id++) {
        struct kvg_sim_request q = {.id = id,
                                    .prompt = prompt,
                                    .prompt_len = 12,
                                    .max_tokens = 50,
                                    .has_seed = id < 2,
                                    .seed = 1234};
        CHECK_INT(kvg_sim_submit(e, &q), 0);
        R->rec[id].submitted = 1;
    }
    h_run_idle(R, 10000);
    /* same request seed: same length and tokens whatever the id */
    CHECK_INT(R->rec[0].n_out, R->rec[1].n_out);
    CHECK(R->rec[0].digest == R->rec[1].digest);
    /* engine seed + id: each request its own */
    CHECK(R->rec[2].digest != R->rec[3].digest);
    CHECK(R->rec[0].digest != R->rec[2].digest);
    free(R);
    kvg_sim_free(e);
}

/* An abort that empties the engine: vLLM's next (empty) step publishes
 * 0 / 0, at the end of the step in flight if there is one, else at once. */
TEST(reported_counts_drop_when_an_abort_empties_the_engine)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 1);
    CHECK(e);
    uint32_t prompt[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, run, wait;
    struct kvg_sim_request a = {
        .id = 1, .prompt = prompt, .prompt_len = 10, .max_tokens = 50, .ignore_eos = 1};
    struct kvg_sim_request b = a;
    b.id = 2;
    CHECK_INT(kvg_sim_submit(e, &a), 0);
    CHECK_INT(kvg_sim_submit(e, &b), 0);
    struct kvg_sim_step st;
    CHECK_INT(kvg_sim_step(e, 0, &st), 0);
    double t1 = st.duration;
    CHECK_INT(kvg_sim_abort(e, 1), 0); /* during the step, b still there */
    kvg_sim_reported_counts(e, t1, &run, &wait);
    CHECK_INT(run + wait, 2); /* the busy engine publishes at its next step's end */
    CHECK_INT(kvg_sim_abort(e, 2), 0); /* the engine is empty now */
    kvg_sim_reported_counts(e, t1, &run, &wait);
    CHECK_INT(run, 0);
    CHECK_INT(wait, 0);
    /* Idle between steps (the last one ended and was rolled): at once. */
    a.id = 3;
    CHECK_INT(kvg_sim_submit(e, &a), 0);
    CHECK_INT(kvg_sim_step(e, t1, &st), 0);
    double t2 = t1 + st.duration;
    CHECK_INT(kvg_sim_step(e, t2, &st), 0);
    double t3 = t2 + st.duration;
    kvg_sim_reported_counts(e, (t2 + t3) / 2, &run, &wait);
    CHECK_INT(run, 1);
    CHECK_INT(kvg_sim_abort(e, 3), 0);
    kvg_sim_reported_counts(e, (t2 + t3) / 2, &run, &wait);
    CHECK_INT(run, 1); /* the step in flight still shows it until it ends */
    kvg_sim_reported_counts(e, t3, &run, &wait);
    CHECK_INT(run, 0);
    CHECK_INT(wait, 0);
    kvg_sim_free(e);
}

/* vLLM's gauges (Scheduler.make_stats at the end of update_from_output): a
 * request counts as running until its last step ends, and one submitted
 * during a step shows only when the next step ends. */
TEST(reported_counts_change_at_a_step_end)
{
    struct kvg_sim *e = h_engine("tiny", 0, 0, 1);
    CHECK(e);
    uint32_t prompt[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, run, wait;
    struct kvg_sim_request a = {
        .id = 1, .prompt = prompt, .prompt_len = 10, .max_tokens = 2, .ignore_eos = 1};
    struct kvg_sim_request b = a;
    b.id = 2;
    CHECK_INT(kvg_sim_submit(e, &a), 0);
    struct kvg_sim_step st;
    CHECK_INT(kvg_sim_step(e, 0, &st), 0); /* a's prefill and first token */
    double t1 = st.duration;
    kvg_sim_reported_counts(e, t1 / 2, &run, &wait);
    CHECK_INT(run, 0); /* nothing published before the first step's end */
    CHECK_INT(wait, 0);
    kvg_sim_reported_counts(e, t1, &run, &wait);
    CHECK_INT(run, 1);
    CHECK_INT(wait, 0);
    CHECK_INT(kvg_sim_step(e, t1, &st), 0); /* a's last token */
    CHECK(st.n_updates == 1 && (st.updates[0].flags & KVG_SIM_UP_FINISHED));
    double t2 = t1 + st.duration;
    CHECK_INT(kvg_sim_submit(e, &b), 0); /* during the step */
    kvg_sim_reported_counts(e, (t1 + t2) / 2, &run, &wait);
    CHECK_INT(run, 1); /* a runs until its last step ends */
    CHECK_INT(wait, 0);
    kvg_sim_reported_counts(e, t2, &run, &wait);
    CHECK_INT(run, 0);
    CHECK_INT(wait, 0); /* b joins the queue before the next step */
    CHECK_INT(kvg_sim_step(e, t2, &st), 0);
    kvg_sim_reported_counts(e, t2 + st.duration, &run, &wait);
    CHECK_INT(run, 1);
    CHECK_INT(wait, 0);
    kvg_sim_free(e);
}
