/* Unit tests for the engine's disaggregated-serving hooks: a prefill that
 * holds its blocks after finishing (until released or aborted), and a decode
 * whose prompt KV arrived from a remote prefill (only the last prompt token
 * computed, the rest reported cached). */
#include "support/test.h"

#include "base/err.h"
#include "sim/sim.h"
#include "unit/sim/sim_helpers.h"

/* Steps e until idle (bounded); returns the last update seen for id. */
static struct kvg_sim_update run_until_idle(struct kvg_sim *e, uint64_t id)
{
    struct kvg_sim_update last = {0};
    struct kvg_sim_step st;
    for (int i = 0; i < 10000 && !kvg_sim_idle(e); i++) {
        kvg_sim_step(e, 0, &st);
        for (size_t k = 0; k < st.n_updates; k++)
            if (st.updates[k].id == id) last = st.updates[k];
    }
    return last;
}

TEST(prefill_holds_blocks_until_released)
{
    struct kvg_sim *e = h_engine("tiny", 16, 4096, 1);
    CHECK(e != NULL);
    uint32_t prompt[100];
    for (int i = 0; i < 100; i++) prompt[i] = 100 + (uint32_t)i;
    struct kvg_sim_request r = {
        .id = 1, .prompt = prompt, .prompt_len = 100, .max_tokens = 1, .hold_blocks = 1};
    CHECK_INT(kvg_sim_submit(e, &r), 0);
    struct kvg_sim_update u = run_until_idle(e, 1);
    CHECK(u.flags & KVG_SIM_UP_FINISHED);
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    CHECK(m.kv_usage > 0); /* 7 blocks still held */
    CHECK(kvg_sim_idle(e));
    CHECK_INT(kvg_sim_release(e, 1), 0);
    kvg_sim_get_metrics(e, &m);
    CHECK_NEAR(m.kv_usage, 0, 1e-9);
    CHECK_INT(kvg_sim_release(e, 1), KVG_ENOTFOUND);
    /* A held request can be aborted too. */
    r.id = 2;
    CHECK_INT(kvg_sim_submit(e, &r), 0);
    run_until_idle(e, 2);
    CHECK_INT(kvg_sim_abort(e, 2), 0);
    kvg_sim_get_metrics(e, &m);
    CHECK_NEAR(m.kv_usage, 0, 1e-9);
    kvg_sim_free(e);
}

TEST(decode_with_remote_kv_computes_one_token)
{
    struct kvg_sim *e = h_engine("tiny", 16, 4096, 1);
    CHECK(e != NULL);
    uint32_t prompt[400];
    for (int i = 0; i < 400; i++) prompt[i] = 7 + (uint32_t)i;
    struct kvg_sim_request r = {.id = 1,
                                .prompt = prompt,
                                .prompt_len = 400,
                                .max_tokens = 3,
                                .ignore_eos = 1,
                                .remote_tokens = 400};
    CHECK_INT(kvg_sim_submit(e, &r), 0);
    struct kvg_sim_step st;
    kvg_sim_step(e, 0, &st);
    CHECK_INT(st.shape.prefill_tokens, 1); /* the last prompt token, as vLLM */
    CHECK_INT(st.n_updates, 1);
    CHECK_INT(st.updates[0].cached_tokens, 399);
    CHECK(st.updates[0].flags & KVG_SIM_UP_FIRST);
    run_until_idle(e, 1);
    /* Without remote KV the same prompt prefills in chunks. */
    uint32_t other[400];
    for (int i = 0; i < 400; i++) other[i] = 9000 + (uint32_t)i;
    r = (struct kvg_sim_request){.id = 2, .prompt = other, .prompt_len = 400, .max_tokens = 3};
    CHECK_INT(kvg_sim_submit(e, &r), 0);
    kvg_sim_step(e, 0, &st);
    CHECK(st.shape.prefill_tokens == 400);
    kvg_sim_free(e);
}
