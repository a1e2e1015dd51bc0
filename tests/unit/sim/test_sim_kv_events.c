/* Unit tests for the msgpack encoding of KV event batches: both encodings
 * are decoded back with libmsgpack's own unpacker and compared field by
 * field with what was encoded, for hand-made events (uint64 hashes above
 * 2^63 included) and for the events a real engine run produced. */
#include "support/test.h"

#include <msgpack.h>
#include <stdlib.h>

#include "sim/kv_events.h"
#include "sim/sim.h"
#include "unit/sim/sim_helpers.h"

static int str_is(const msgpack_object *o, const char *s)
{
    return o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
           !memcmp(o->via.str.ptr, s, o->via.str.size);
}

static const msgpack_object *map_get(const msgpack_object *m, const char *key)
{
    if (m->type != MSGPACK_OBJECT_MAP) return NULL;
    for (uint32_t i = 0; i < m->via.map.size; i++)
        if (str_is(&m->via.map.ptr[i].key, key)) return &m->via.map.ptr[i].val;
    return NULL;
}

static void check_u64_list(const msgpack_object *o, const uint64_t *v, uint32_t n)
{
    CHECK(o && o->type == MSGPACK_OBJECT_ARRAY);
    CHECK_INT(o->via.array.size, n);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(o->via.array.ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER);
        CHECK(o->via.array.ptr[i].via.u64 == v[i]);
    }
}

static void check_u32_list(const msgpack_object *o, const uint32_t *v, uint32_t n)
{
    CHECK(o && o->type == MSGPACK_OBJECT_ARRAY);
    CHECK_INT(o->via.array.size, n);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(o->via.array.ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER);
        CHECK(o->via.array.ptr[i].via.u64 == v[i]);
    }
}

static void check_parent(const msgpack_object *o, const struct kvg_sim_event *e)
{
    CHECK(o);
    if (!e->has_parent) {
        CHECK(o->type == MSGPACK_OBJECT_NIL);
        return;
    }
    CHECK(o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 == e->parent);
}

static void check_array_event(const msgpack_object *o, const struct kvg_sim_event *e)
{
    CHECK(o->type == MSGPACK_OBJECT_ARRAY);
    const msgpack_object *f = o->via.array.ptr;
    uint32_t n = o->via.array.size;
    switch (e->type) {
    case KVG_SIM_EV_STORED:
        CHECK_INT(n, 7);
        CHECK(str_is(&f[0], "BlockStored"));
        check_u64_list(&f[1], e->hashes, e->n_hashes);
        check_parent(&f[2], e);
        check_u32_list(&f[3], e->tokens, e->n_tokens);
        CHECK(f[4].type == MSGPACK_OBJECT_POSITIVE_INTEGER && f[4].via.u64 == e->block_size);
        CHECK(f[5].type == MSGPACK_OBJECT_NIL);
        CHECK(str_is(&f[6], "GPU"));
        break;
    case KVG_SIM_EV_REMOVED:
        CHECK_INT(n, 3);
        CHECK(str_is(&f[0], "BlockRemoved"));
        check_u64_list(&f[1], e->hashes, e->n_hashes);
        CHECK(str_is(&f[2], "GPU"));
        break;
    case KVG_SIM_EV_CLEARED:
        CHECK_INT(n, 1);
        CHECK(str_is(&f[0], "AllBlocksCleared"));
        break;
    }
}

static void check_map_event(const msgpack_object *o, const struct kvg_sim_event *e)
{
    CHECK(o->type == MSGPACK_OBJECT_MAP);
    const msgpack_object *t = map_get(o, "type");
    CHECK(t);
    switch (e->type) {
    case KVG_SIM_EV_STORED: {
        CHECK(str_is(t, "BlockStored"));
        check_u64_list(map_get(o, "block_hashes"), e->hashes, e->n_hashes);
        check_parent(map_get(o, "parent_block_hash"), e);
        check_u32_list(map_get(o, "token_ids"), e->tokens, e->n_tokens);
        const msgpack_object *bs = map_get(o, "block_size");
        CHECK(bs && bs->via.u64 == e->block_size);
        const msgpack_object *lora = map_get(o, "lora_id");
        CHECK(lora && lora->type == MSGPACK_OBJECT_NIL);
        CHECK(str_is(map_get(o, "medium"), "GPU"));
        const msgpack_object *ek = map_get(o, "extra_keys");
        CHECK(ek && ek->type == MSGPACK_OBJECT_ARRAY && ek->via.array.size == e->n_hashes);
        break;
    }
    case KVG_SIM_EV_REMOVED:
        CHECK(str_is(t, "BlockRemoved"));
        check_u64_list(map_get(o, "block_hashes"), e->hashes, e->n_hashes);
        CHECK(str_is(map_get(o, "medium"), "GPU"));
        break;
    case KVG_SIM_EV_CLEARED:
        CHECK(str_is(t, "AllBlocksCleared"));
        CHECK_INT(o->via.map.size, 1);
        break;
    }
}

/* Encodes, decodes with msgpack_unpack_next and checks every field. */
static void round_trip(const struct kvg_sim_event *ev, size_t n, double ts, int dp,
                       enum kvg_sim_kv_encoding enc)
{
    void *buf = NULL;
    size_t len = 0;
    CHECK_INT(kvg_sim_kv_encode(ev, n, ts, dp, enc, &buf, &len), 0);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    CHECK_INT(msgpack_unpack_next(&u, buf, len, &off), MSGPACK_UNPACK_SUCCESS);
    CHECK_INT(off, len); /* exactly one object */
    const msgpack_object *b = &u.data;
    CHECK(b->type == MSGPACK_OBJECT_ARRAY);
    CHECK_INT(b->via.array.size, dp >= 0 ? 3 : 2);
    CHECK(b->via.array.ptr[0].type == MSGPACK_OBJECT_FLOAT64);
    CHECK(b->via.array.ptr[0].via.f64 == ts);
    const msgpack_object *evs = &b->via.array.ptr[1];
    CHECK(evs->type == MSGPACK_OBJECT_ARRAY);
    CHECK_INT(evs->via.array.size, n);
    for (size_t i = 0; i < n; i++) {
        if (enc == KVG_SIM_KV_MAP)
            check_map_event(&evs->via.array.ptr[i], &ev[i]);
        else
            check_array_event(&evs->via.array.ptr[i], &ev[i]);
    }
    if (dp >= 0) CHECK(b->via.array.ptr[2].via.u64 == (uint64_t)dp);
    msgpack_unpacked_destroy(&u);
    free(buf);
}

TEST(hand_made_events_round_trip_in_both_encodings)
{
    static const uint64_t h1[] = {1, 0xffffffffffffffffull, 0x8000000000000001ull};
    static const uint64_t h2[] = {12345678901234567ull};
    uint32_t toks[3 * 4];
    for (int i = 0; i < 12; i++) toks[i] = (uint32_t)(i * 40000); /* 1..5-byte ints */
    toks[11] = 0xffffffffu;
    struct kvg_sim_event ev[4] = {
        {.type = KVG_SIM_EV_STORED,
         .has_parent = 0,
         .hashes = h1,
         .n_hashes = 3,
         .tokens = toks,
         .n_tokens = 12,
         .block_size = 4},
        {.type = KVG_SIM_EV_STORED,
         .has_parent = 1,
         .parent = 0xfedcba9876543210ull,
         .hashes = h2,
         .n_hashes = 1,
         .tokens = toks,
         .n_tokens = 4,
         .block_size = 4},
        {.type = KVG_SIM_EV_REMOVED, .hashes = h1 + 1, .n_hashes = 2, .block_size = 4},
        {.type = KVG_SIM_EV_CLEARED, .block_size = 4},
    };
    round_trip(ev, 4, 1712345678.25, 0, KVG_SIM_KV_ARRAY);
    round_trip(ev, 4, 1712345678.25, 0, KVG_SIM_KV_MAP);
    round_trip(ev, 4, 0.5, -1, KVG_SIM_KV_ARRAY); /* no dp rank: 2-element batch */
    round_trip(ev, 4, 3.0, 7, KVG_SIM_KV_MAP);
    round_trip(ev, 0, 9.0, 0, KVG_SIM_KV_ARRAY); /* an empty batch is still valid */
}

TEST(encoding_names_parse)
{
    CHECK_INT(kvg_sim_kv_encoding_parse("array"), KVG_SIM_KV_ARRAY);
    CHECK_INT(kvg_sim_kv_encoding_parse("map"), KVG_SIM_KV_MAP);
    CHECK(kvg_sim_kv_encoding_parse("msgpack") < 0);
    CHECK(kvg_sim_kv_encoding_parse(NULL) < 0);
}

TEST(array_encoding_matches_vllm_bytes)
{
    /* [0.0, [["BlockRemoved", [5], "GPU"]], 0] written out by hand. */
    static const uint64_t h[] = {5};
    struct kvg_sim_event ev = {.type = KVG_SIM_EV_REMOVED, .hashes = h, .n_hashes = 1};
    static const uint8_t want[] = {0x93, 0xcb, 0,   0,    0,    0,    0,   0,   0,   0,   0x91,
                                   0x93, 0xac, 'B', 'l',  'o',  'c',  'k', 'R', 'e', 'm', 'o',
                                   'v',  'e',  'd', 0x91, 0x05, 0xa3, 'G', 'P', 'U', 0x00};
    void *buf = NULL;
    size_t len = 0;
    CHECK_INT(kvg_sim_kv_encode(&ev, 1, 0.0, 0, KVG_SIM_KV_ARRAY, &buf, &len), 0);
    CHECK_INT(len, sizeof want);
    CHECK(!memcmp(buf, want, len));
    free(buf);
}

TEST(engine_events_round_trip)
{
    struct kvg_sim *e = h_engine("tiny", 0, 1024, 3);
    CHECK(e == NULL); /* 1024 tokens < max_model_len 2048: rejected */
    e = h_engine("tiny", 0, 0, 3);
    struct h_run *R = h_run_new(e);
    CHECK(e && R);
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 4);
    static uint32_t prompt[1500];
    size_t total = 0, kinds[3] = {0};
    for (uint64_t id = 0; id < 60; id++) {
        uint32_t len = 1 + (uint32_t)kvg_rng_below(&rng, 1500);
        h_tokens(prompt, len, &rng, 100000);
        CHECK_INT(h_submit(R, id, prompt, len, 20, 1), 0);
        for (int s = 0; s < 5 && !kvg_sim_idle(e); s++) {
            h_step(R);
            struct kvg_sim_events ev;
            kvg_sim_events(e, &ev);
            for (size_t i = 0; i < ev.n; i++) kinds[ev.ev[i].type]++;
            round_trip(ev.ev, ev.n, R->t, 0, KVG_SIM_KV_ARRAY);
            round_trip(ev.ev, ev.n, R->t, 0, KVG_SIM_KV_MAP);
            total += ev.n;
            kvg_sim_events_clear(e);
        }
    }
    CHECK(kinds[KVG_SIM_EV_STORED] > 0 && kinds[KVG_SIM_EV_REMOVED] > 0);
    CHECK(total > 100);
    free(R);
    kvg_sim_free(e);
}
