/* libFuzzer target for the simulated engine model: the input is a program of
 * submits (prompts over a tiny vocabulary, so prefixes are shared), steps,
 * aborts and prefix-cache resets on a small engine whose block size and
 * capacity come from the first bytes. After every call the KV events are
 * replayed into a mirror set; the mirror must match the engine's resident
 * blocks, kv usage must stay within [0, 1], and the engine must drain. Any
 * violation traps. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define SET_CAP 4096 /* > the largest pool below */

struct mirror {
    uint64_t k[SET_CAP];
    size_t n;
};

static size_t home(uint64_t h)
{
    return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 40) & (SET_CAP - 1);
}

static int has(const struct mirror *m, uint64_t h)
{
    for (size_t i = home(h);; i = (i + 1) & (SET_CAP - 1)) {
        if (m->k[i] == h) return 1;
        if (!m->k[i]) return 0;
    }
}

static void add(struct mirror *m, uint64_t h)
{
    size_t i = home(h);
    while (m->k[i]) i = (i + 1) & (SET_CAP - 1);
    m->k[i] = h;
    m->n++;
}

static void del(struct mirror *m, uint64_t h)
{
    size_t i = home(h);
    while (m->k[i] != h) i = (i + 1) & (SET_CAP - 1);
    for (size_t j = i;;) {
        j = (j + 1) & (SET_CAP - 1);
        if (!m->k[j]) break;
        size_t hj = home(m->k[j]);
        if (i <= j ? (hj > i && hj <= j) : (hj > i || hj <= j)) continue;
        m->k[i] = m->k[j];
        i = j;
    }
    m->k[i] = 0;
    m->n--;
}

static void apply(struct kvg_sim *e, struct mirror *m)
{
    struct kvg_sim_events ev;
    kvg_sim_events(e, &ev);
    for (size_t i = 0; i < ev.n; i++) {
        const struct kvg_sim_event *x = &ev.ev[i];
        for (uint32_t b = 0; b < x->n_hashes; b++) {
            uint64_t h = x->hashes[b];
            if (x->type == KVG_SIM_EV_STORED) {
                if (has(m, h)) __builtin_trap();
                add(m, h);
            } else if (x->type == KVG_SIM_EV_REMOVED) {
                if (!has(m, h)) __builtin_trap();
                del(m, h);
            }
        }
        if (x->type == KVG_SIM_EV_CLEARED) {
            memset(m->k, 0, sizeof m->k);
            m->n = 0;
        }
    }
    kvg_sim_events_clear(e);
    struct kvg_sim_metrics mt;
    kvg_sim_get_metrics(e, &mt);
    if (mt.num_cached_blocks != m->n || mt.kv_usage < 0 || mt.kv_usage > 1) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    static const uint32_t sizes[] = {1, 2, 16, 64};
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, kvg_sim_profile_find("tiny"));
    c.profile.block_size = sizes[data[0] & 3];
    c.profile.kv_capacity_tokens = 256 + 64 * (uint64_t)(data[1] & 31); /* 256..2240 */
    c.profile.max_model_len = 256;
    c.profile.max_num_seqs = 1 + (data[2] & 7);
    c.profile.max_num_batched_tokens = 1 + (uint32_t)(data[2] >> 3) * 16;
    struct kvg_sim *e = NULL;
    if (kvg_sim_create(&c, &e)) return 0;
    static struct mirror m;
    memset(&m, 0, sizeof m);
    uint32_t prompt[256];
    uint64_t next_id = 0;
    double t = 0;
    for (size_t i = 3; i + 1 < size; i += 2) {
        uint8_t op = data[i], arg = data[i + 1];
        switch (op & 3) {
        case 0: { /* submit: length from arg, tokens from the following bytes */
            uint32_t len = 1 + arg % 200;
            for (uint32_t k = 0; k < len; k++) prompt[k] = data[(i + k) % size] & 7;
            struct kvg_sim_request q = {.id = next_id++,
                                        .prompt = prompt,
                                        .prompt_len = len,
                                        .max_tokens = 1 + (op >> 2) % 48,
                                        .ignore_eos = op >> 7};
            kvg_sim_submit(e, &q);
            break;
        }
        case 1: { /* steps */
            for (int k = 0; k <= arg % 8; k++) {
                struct kvg_sim_step st;
                kvg_sim_step(e, t, &st);
                t += st.duration;
                apply(e, &m);
            }
            break;
        }
        case 2:
            if (next_id) kvg_sim_abort(e, arg % next_id);
            apply(e, &m);
            break;
        case 3:
            kvg_sim_reset_prefix_cache(e);
            apply(e, &m);
            break;
        }
    }
    for (int k = 0; k < 200000 && !kvg_sim_idle(e); k++) {
        struct kvg_sim_step st;
        kvg_sim_step(e, t, &st);
        t += st.duration;
        apply(e, &m);
    }
    if (!kvg_sim_idle(e)) __builtin_trap();
    size_t n = kvg_sim_cached_hashes(e, NULL, 0);
    uint64_t *h = malloc((n + 1) * sizeof *h);
    if (h) {
        kvg_sim_cached_hashes(e, h, n);
        for (size_t k = 0; k < n; k++)
            if (!has(&m, h[k])) __builtin_trap();
    }
    free(h);
    struct kvg_sim_metrics mt;
    kvg_sim_get_metrics(e, &mt);
    if (mt.kv_usage != 0 || n != m.n) __builtin_trap();
    kvg_sim_free(e);
    return 0;
}
