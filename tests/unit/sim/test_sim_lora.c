/* The engine model's LoRA adapter slots: residency, LRU eviction that spares
 * the adapters of running requests, the load's cost in step time, the
 * max_loras bound on one batch (a request one adapter too many waits and
 * later ones go first), and the running/waiting lists vllm:lora_requests_info
 * exports. */
#include <errno.h>
#include <string.h>

#include "sim/lora_slots.h"
#include "sim/sim.h"
#include "support/test.h"

TEST(slots_load_once_then_evict_the_least_recently_used_unpinned)
{
    struct kvg_sim_lora_slots s;
    CHECK_INT(kvg_sim_lora_slots_init(&s, 2), 0);
    static const char a[] = "a", b[] = "b", c[] = "c";
    CHECK_INT(kvg_sim_lora_slots_acquire(&s, a, NULL, 0), 1); /* cold: loaded */
    CHECK_INT(kvg_sim_lora_slots_acquire(&s, a, NULL, 0), 0); /* resident: free */
    CHECK_INT(kvg_sim_lora_slots_acquire(&s, b, NULL, 0), 1);
    CHECK_INT((int)s.evictions, 0);
    CHECK_INT(kvg_sim_lora_slots_acquire(&s, a, NULL, 0), 0); /* a is now the newer */
    CHECK_INT(kvg_sim_lora_slots_acquire(&s, c, NULL, 0), 1); /* evicts b */
    CHECK(kvg_sim_lora_slots_find(&s, b) < 0);
    CHECK(kvg_sim_lora_slots_find(&s, a) >= 0);
    CHECK_INT((int)s.evictions, 1);
    /* a is older than c now, but pinned (a running request uses it): c goes. */
    const char *pin[] = {a};
    CHECK_INT(kvg_sim_lora_slots_acquire(&s, b, pin, 1), 1);
    CHECK(kvg_sim_lora_slots_find(&s, c) < 0);
    CHECK(kvg_sim_lora_slots_find(&s, a) >= 0);
    const char *both[] = {a, b};
    CHECK_INT(kvg_sim_lora_slots_acquire(&s, c, both, 2), -EBUSY);
    CHECK_INT((int)s.loads, 4);
    kvg_sim_lora_slots_free(&s);
    /* No slot model: everything is resident and free. */
    CHECK_INT(kvg_sim_lora_slots_init(&s, 0), 0);
    CHECK_INT(kvg_sim_lora_slots_acquire(&s, a, NULL, 0), 0);
    kvg_sim_lora_slots_free(&s);
}

static struct kvg_sim *engine(uint32_t max_loras, double load_s)
{
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, kvg_sim_profile_find("tiny"));
    c.max_loras = max_loras;
    c.lora_load_s = load_s;
    struct kvg_sim *e = NULL;
    return kvg_sim_create(&c, &e) ? NULL : e;
}

static int submit(struct kvg_sim *e, uint64_t id, const char *lora, uint32_t max_tokens)
{
    uint32_t p[40];
    for (uint32_t i = 0; i < 40; i++) p[i] = 100 + (uint32_t)id * 50 + i;
    struct kvg_sim_request r = {.id = id,
                                .prompt = p,
                                .prompt_len = 40,
                                .max_tokens = max_tokens,
                                .ignore_eos = 1,
                                .has_seed = 0,
                                .seed = 0,
                                .arrival = 0,
                                .lora_name = lora,
                                .lora_id = lora ? 1 : 0,
                                .cache_salt = NULL};
    return kvg_sim_submit(e, &r);
}

/* The request's state, -1 when it is not live. */
static int state(struct kvg_sim *e, uint64_t id)
{
    struct kvg_sim_request_info info;
    return kvg_sim_request_get(e, id, &info) ? -1 : (int)info.state;
}

/* Steps until idle; returns the total duration and the loads seen. */
static double drain(struct kvg_sim *e, uint32_t *loads)
{
    double t = 0;
    *loads = 0;
    struct kvg_sim_step st;
    for (int i = 0; i < 10000 && !kvg_sim_idle(e); i++) {
        kvg_sim_step(e, t, &st);
        t += st.duration;
        *loads += st.lora_loads;
    }
    return t;
}

TEST(a_cold_adapter_costs_its_load_once)
{
    struct kvg_sim *base = engine(2, 0.5), *lora = engine(2, 0.5);
    CHECK(base && lora);
    CHECK_INT(submit(base, 1, NULL, 4), 0);
    CHECK_INT(submit(lora, 1, "ad-a", 4), 0);
    uint32_t lb, ll;
    double tb = drain(base, &lb), tl = drain(lora, &ll);
    CHECK_INT((int)lb, 0);
    CHECK_INT((int)ll, 1);
    CHECK_NEAR(tl - tb, 0.5, 1e-9);
    /* Resident now: the second request on it loads nothing. */
    CHECK_INT(submit(lora, 2, "ad-a", 4), 0);
    drain(lora, &ll);
    CHECK_INT((int)ll, 0);
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(lora, &m);
    CHECK_INT((int)m.max_loras, 2);
    CHECK_INT((int)m.lora_loads, 1);
    CHECK_INT((int)m.lora_evictions, 0);
    kvg_sim_free(base);
    kvg_sim_free(lora);
}

TEST(max_loras_bounds_one_batch_and_later_requests_go_first)
{
    struct kvg_sim *e = engine(1, 0.01);
    CHECK(e);
    CHECK_INT(submit(e, 1, "ad-a", 8), 0);
    CHECK_INT(submit(e, 2, "ad-b", 8), 0); /* one adapter too many: waits */
    CHECK_INT(submit(e, 3, NULL, 8), 0);   /* the base model: goes past it */
    CHECK_INT(submit(e, 4, "ad-a", 8), 0); /* the batch's adapter: goes past it */
    struct kvg_sim_step st;
    kvg_sim_step(e, 0, &st);
    CHECK_INT((int)st.lora_loads, 1);
    CHECK_INT(state(e, 1), KVG_SIM_RUNNING);
    CHECK_INT(state(e, 2), KVG_SIM_WAITING);
    CHECK_INT(state(e, 3), KVG_SIM_RUNNING);
    CHECK_INT(state(e, 4), KVG_SIM_RUNNING);
    char run[64], wait[64];
    kvg_sim_lora_requests(e, run, sizeof run, wait, sizeof wait);
    CHECK_STR(run, "ad-a");
    CHECK_STR(wait, "ad-b");
    const char *res[2];
    CHECK_INT((int)kvg_sim_lora_resident(e, res, 2), 1);
    CHECK_STR(res[0], "ad-a");
    /* Once ad-a's requests end, ad-b is loaded over it. */
    uint32_t loads;
    drain(e, &loads);
    CHECK_INT((int)loads, 1);
    CHECK_INT((int)kvg_sim_lora_resident(e, res, 2), 1);
    CHECK_STR(res[0], "ad-b");
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(e, &m);
    CHECK_INT((int)m.lora_evictions, 1);
    kvg_sim_free(e);
}

TEST(no_slot_model_by_default)
{
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, kvg_sim_profile_find("tiny"));
    CHECK_INT((int)c.max_loras, 0);
    CHECK_NEAR(c.lora_load_s, KVG_SIM_LORA_LOAD_S, 1e-12);
    struct kvg_sim *e = NULL;
    CHECK_INT(kvg_sim_create(&c, &e), 0);
    CHECK_INT(submit(e, 1, "ad-a", 4), 0);
    CHECK_INT(submit(e, 2, "ad-b", 4), 0);
    struct kvg_sim_step st;
    kvg_sim_step(e, 0, &st);
    CHECK_INT((int)st.lora_loads, 0);
    CHECK_INT(state(e, 2), KVG_SIM_RUNNING);
    kvg_sim_free(e);
}
