/* KV-event batch decoding: every encoding variant, generated here with
 * msgpack-c's packer, and malformed input that must fail cleanly. */
#include <errno.h>
#include <msgpack.h>
#include <stdlib.h>

#include "base/err.h"
#include "kv/events.h"
#include "support/test.h"

struct pk {
    msgpack_sbuffer sb;
    msgpack_packer p;
};

static void pk_init(struct pk *k)
{
    msgpack_sbuffer_init(&k->sb);
    msgpack_packer_init(&k->p, &k->sb, msgpack_sbuffer_write);
}

static void str(struct pk *k, const char *s)
{
    msgpack_pack_str(&k->p, strlen(s));
    msgpack_pack_str_body(&k->p, s, strlen(s));
}

enum hkind { H_U64, H_I64, H_BIN32, H_BIN4 };

/* A block hash value v in one of its wire forms. H_I64 packs v as signed
 * (negative when the top bit is set); H_BIN4 only keeps v's low 32 bits. */
static void hash(struct pk *k, enum hkind kind, uint64_t v)
{
    unsigned char b[32];
    switch (kind) {
    case H_U64:
        msgpack_pack_uint64(&k->p, v);
        break;
    case H_I64:
        msgpack_pack_int64(&k->p, (int64_t)v);
        break;
    case H_BIN32:
        for (int i = 0; i < 24; i++) b[i] = (unsigned char)(0xa5 ^ i);
        for (int i = 0; i < 8; i++) b[24 + i] = (unsigned char)(v >> (56 - 8 * i));
        msgpack_pack_bin(&k->p, 32);
        msgpack_pack_bin_body(&k->p, b, 32);
        break;
    case H_BIN4:
        for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (24 - 8 * i));
        msgpack_pack_bin(&k->p, 4);
        msgpack_pack_bin_body(&k->p, b, 4);
        break;
    }
}

static const uint64_t H1 = 0xDEADBEEFCAFEF00Dull, H2 = 0x0123456789ABCDEFull,
                      HP = 0xF000000000000001ull;

static void tokens(struct pk *k, uint32_t n, uint32_t base)
{
    msgpack_pack_array(&k->p, n);
    for (uint32_t i = 0; i < n; i++) msgpack_pack_uint32(&k->p, base + i * 1000u);
}

/* ["BlockStored", [H1, H2], HP, tokens(2*bs), bs, lora_id, "GPU", "ad", [nil, nil], 0,
 *  "full_attention", nil][:nf] */
static void stored_array(struct pk *k, int nf, enum hkind hk, uint32_t bs)
{
    msgpack_pack_array(&k->p, (size_t)nf);
    str(k, "BlockStored");
    msgpack_pack_array(&k->p, 2);
    hash(k, hk, H1);
    hash(k, hk, H2);
    hash(k, hk, HP);
    tokens(k, 2 * bs, 70000);
    msgpack_pack_uint32(&k->p, bs);
    if (nf > 5) msgpack_pack_int64(&k->p, 7);
    if (nf > 6) str(k, "GPU");
    if (nf > 7) str(k, "ad");
    if (nf > 8) {
        msgpack_pack_array(&k->p, 2);
        msgpack_pack_nil(&k->p);
        msgpack_pack_nil(&k->p);
    }
    if (nf > 9) msgpack_pack_uint32(&k->p, 3);
    if (nf > 10) str(k, "full_attention");
    if (nf > 11) msgpack_pack_nil(&k->p);
    for (int i = 12; i < nf; i++) msgpack_pack_uint32(&k->p, 99); /* newer fields */
}

/* The same as a tagged map, keys in an order chosen by `order`, plus an
 * unknown key. */
static void stored_map(struct pk *k, int order, enum hkind hk, uint32_t bs)
{
    msgpack_pack_map(&k->p, 9);
    for (int i = 0; i < 9; i++) {
        switch ((i + order) % 9) {
        case 0:
            str(k, "type"), str(k, "BlockStored");
            break;
        case 1:
            str(k, "block_hashes");
            msgpack_pack_array(&k->p, 2);
            hash(k, hk, H1);
            hash(k, hk, H2);
            break;
        case 2:
            str(k, "parent_block_hash"), hash(k, hk, HP);
            break;
        case 3:
            str(k, "token_ids"), tokens(k, 2 * bs, 70000);
            break;
        case 4:
            str(k, "block_size"), msgpack_pack_uint32(&k->p, bs);
            break;
        case 5:
            str(k, "medium"), str(k, "GPU");
            break;
        case 6:
            str(k, "lora_name"), msgpack_pack_nil(&k->p);
            break;
        case 7:
            str(k, "group_idx"), msgpack_pack_uint32(&k->p, 0);
            break;
        case 8:
            str(k, "locality"); /* unknown to us: skipped whatever it holds */
            msgpack_pack_map(&k->p, 1);
            str(k, "x");
            msgpack_pack_array(&k->p, 1);
            msgpack_pack_double(&k->p, 1.5);
            break;
        }
    }
}

static void removed_array(struct pk *k, int nf, enum hkind hk)
{
    msgpack_pack_array(&k->p, (size_t)nf);
    str(k, "BlockRemoved");
    msgpack_pack_array(&k->p, 1);
    hash(k, hk, H2);
    if (nf > 2) str(k, "CPU");
    if (nf > 3) msgpack_pack_uint32(&k->p, 1);
}

static void removed_map(struct pk *k, enum hkind hk)
{
    msgpack_pack_map(&k->p, 3);
    str(k, "block_hashes");
    msgpack_pack_array(&k->p, 1);
    hash(k, hk, H2);
    str(k, "medium");
    msgpack_pack_nil(&k->p);
    str(k, "type");
    str(k, "BlockRemoved");
}

static void cleared(struct pk *k, int as_map)
{
    if (as_map) {
        msgpack_pack_map(&k->p, 1);
        str(k, "type");
    } else {
        msgpack_pack_array(&k->p, 1);
    }
    str(k, "AllBlocksCleared");
}

/* Outer batch: shape 0 = [ts, ev], 1 = [ts, ev, dp], 2 = [ts, ev, nil],
 * 3 = [ts, ev, dp, extra], 4 = map, 5 = map with events first + unknown key. */
static void batch_begin(struct pk *k, int shape, int nev)
{
    switch (shape) {
    case 0:
        msgpack_pack_array(&k->p, 2);
        break;
    case 1:
    case 2:
        msgpack_pack_array(&k->p, 3);
        break;
    case 3:
        msgpack_pack_array(&k->p, 4);
        break;
    case 4:
        msgpack_pack_map(&k->p, 3);
        str(k, "ts");
        msgpack_pack_double(&k->p, 12.5);
        str(k, "data_parallel_rank");
        msgpack_pack_uint32(&k->p, 2);
        str(k, "events");
        msgpack_pack_array(&k->p, (size_t)nev);
        return;
    case 5:
        msgpack_pack_map(&k->p, 3);
        str(k, "events");
        msgpack_pack_array(&k->p, (size_t)nev);
        return;
    }
    msgpack_pack_double(&k->p, 12.5);
    msgpack_pack_array(&k->p, (size_t)nev);
}

static void batch_end(struct pk *k, int shape)
{
    switch (shape) {
    case 1:
        msgpack_pack_uint32(&k->p, 2);
        break;
    case 2:
        msgpack_pack_nil(&k->p);
        break;
    case 3:
        msgpack_pack_uint32(&k->p, 2), str(k, "future");
        break;
    case 5:
        str(k, "extra");
        msgpack_pack_true(&k->p);
        str(k, "ts");
        msgpack_pack_uint32(&k->p, 12);
        break;
    }
}

static void check_stored(const struct kvg_kv_batch *b, const struct kvg_kv_event *ev, enum hkind hk,
                         uint32_t bs)
{
    uint64_t want1 = hk == H_BIN4 ? (uint32_t)H1 : H1, want2 = hk == H_BIN4 ? (uint32_t)H2 : H2,
             wantp = hk == H_BIN4 ? (uint32_t)HP : HP;
    CHECK_INT(ev->type, KVG_KV_EV_STORED);
    CHECK_INT(ev->n_hashes, 2);
    CHECK(b->hashes[ev->hash_off] == want1);
    CHECK(b->hashes[ev->hash_off + 1] == want2);
    CHECK(ev->has_parent && ev->parent == wantp);
    CHECK_INT(ev->n_tokens, 2 * bs);
    CHECK_INT(b->tokens[ev->token_off], 70000);
    CHECK_INT(b->tokens[ev->token_off + 2 * bs - 1], 70000 + (2 * bs - 1) * 1000);
    CHECK_INT(ev->block_size, bs);
}

TEST(stored_positional_every_field_count_every_hash_form)
{
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    for (int nf = 5; nf <= 13; nf++) {
        for (int hk = H_U64; hk <= H_BIN4; hk++) {
            struct pk k;
            pk_init(&k);
            batch_begin(&k, 1, 1);
            stored_array(&k, nf, (enum hkind)hk, 16);
            batch_end(&k, 1);
            CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), 1);
            check_stored(&b, &b.events[0], (enum hkind)hk, 16);
            CHECK_INT(b.dp_rank, 2);
            CHECK_NEAR(b.ts, 12.5, 1e-9);
            CHECK_INT(b.events[0].has_lora_id, nf > 5);
            if (nf > 5) CHECK_INT(b.events[0].lora_id, 7);
            CHECK_INT(b.events[0].medium.len, nf > 6 ? 3 : 0);
            CHECK_INT(b.events[0].lora_name.len, nf > 7 ? 2 : 0);
            CHECK_INT(b.events[0].group_idx, nf > 9 ? 3 : -1);
            CHECK_INT(b.events[0].spec_kind.len, nf > 10 ? 14 : 0);
            msgpack_sbuffer_destroy(&k.sb);
        }
    }
    kvg_kv_batch_free(&b);
}

TEST(stored_map_any_key_order_unknown_keys_ignored)
{
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    for (int order = 0; order < 9; order++) {
        for (int hk = H_U64; hk <= H_BIN32; hk++) {
            struct pk k;
            pk_init(&k);
            batch_begin(&k, order % 6, 1);
            stored_map(&k, order, (enum hkind)hk, 4);
            batch_end(&k, order % 6);
            CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), 1);
            check_stored(&b, &b.events[0], (enum hkind)hk, 4);
            CHECK(b.events[0].medium.len == 3 && !memcmp(b.events[0].medium.p, "GPU", 3));
            CHECK_INT(b.events[0].lora_name.len, 0);
            CHECK_INT(b.events[0].group_idx, 0);
            msgpack_sbuffer_destroy(&k.sb);
        }
    }
    kvg_kv_batch_free(&b);
}

TEST(removed_and_cleared_both_encodings_every_batch_shape)
{
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    for (int shape = 0; shape < 6; shape++) {
        struct pk k;
        pk_init(&k);
        batch_begin(&k, shape, 7);
        removed_array(&k, 2, H_U64);
        removed_array(&k, 3, H_I64);
        removed_array(&k, 4, H_BIN32);
        removed_map(&k, H_U64);
        cleared(&k, 0);
        cleared(&k, 1);
        stored_map(&k, 3, H_I64, 16);
        batch_end(&k, shape);
        CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), 7);
        for (int i = 0; i < 4; i++) {
            CHECK_INT(b.events[i].type, KVG_KV_EV_REMOVED);
            CHECK_INT(b.events[i].n_hashes, 1);
            CHECK(b.hashes[b.events[i].hash_off] == H2);
        }
        CHECK_INT(b.events[1].medium.len, 3);
        CHECK_INT(b.events[2].group_idx, 1);
        CHECK_INT(b.events[4].type, KVG_KV_EV_CLEARED);
        CHECK_INT(b.events[5].type, KVG_KV_EV_CLEARED);
        check_stored(&b, &b.events[6], H_I64, 16);
        CHECK_INT(b.dp_rank, (shape == 0 || shape == 2 || shape == 5) ? -1 : 2);
        CHECK_NEAR(b.ts, shape == 5 ? 12.0 : 12.5, 1e-9);
        msgpack_sbuffer_destroy(&k.sb);
    }
    kvg_kv_batch_free(&b);
}

TEST(negative_int64_hash_is_reinterpreted)
{
    struct kvg_kv_batch b;
    struct pk k;
    kvg_kv_batch_init(&b, NULL);
    pk_init(&k);
    batch_begin(&k, 0, 1);
    msgpack_pack_array(&k.p, 2);
    str(&k, "BlockRemoved");
    msgpack_pack_array(&k.p, 2);
    msgpack_pack_int64(&k.p, -1);
    msgpack_pack_int64(&k.p, INT64_MIN);
    CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), 1);
    CHECK(b.hashes[0] == UINT64_MAX);
    CHECK(b.hashes[1] == 0x8000000000000000ull);
    msgpack_sbuffer_destroy(&k.sb);
    kvg_kv_batch_free(&b);
}

TEST(unknown_event_tags_are_skipped)
{
    struct kvg_kv_batch b;
    struct pk k;
    kvg_kv_batch_init(&b, NULL);
    pk_init(&k);
    batch_begin(&k, 0, 3);
    msgpack_pack_array(&k.p, 3);
    str(&k, "BlockPinned");
    msgpack_pack_array(&k.p, 1);
    msgpack_pack_uint32(&k.p, 1);
    msgpack_pack_nil(&k.p);
    cleared(&k, 0);
    msgpack_pack_map(&k.p, 2);
    str(&k, "stuff");
    msgpack_pack_uint32(&k.p, 1);
    str(&k, "type");
    str(&k, "SomethingNew");
    CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), 1);
    CHECK_INT(b.n_unknown, 2);
    CHECK_INT(b.events[0].type, KVG_KV_EV_CLEARED);
    msgpack_sbuffer_destroy(&k.sb);
    kvg_kv_batch_free(&b);
}

/* Decodes bytes that must be rejected; checks the batch is left empty. */
static int reject(struct kvg_kv_batch *b, const void *p, size_t n)
{
    int rc = kvg_kv_decode_batch(b, p, n);
    if (rc >= 0) return 0;
    return b->n_events == 0 && b->err != NULL ? rc : 0;
}

#define B(lit)                                                                                     \
    {                                                                                              \
        lit, sizeof(lit) - 1                                                                       \
    }

TEST(malformed_batches_are_errors)
{
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    struct {
        const char *bytes;
        size_t n;
    } cases[] = {
        B(""),
        B("\xc1"),                             /* never-used byte */
        B("\x91\xcb"),                         /* [ts] only, truncated */
        B("\x92\x01\x01"),                     /* events not an array */
        B("\x92\x01\x90\x00"),                 /* trailing byte */
        B("\xdd\xff\xff\xff\xff"),             /* 4G-element array in 5 bytes */
        B("\x92\x01\xdd\x7f\xff\xff\xff\x90"), /* events claims 2^31 */
        B("\x92\x01\x91\x92\xa9"
          "AllBlocks"),        /* truncated tag */
        B("\x81\xa2ts\x01"),   /* map without events */
        B("\x92\xc0\x90"),     /* ts nil */
        B("\x93\x01\x90\xff"), /* dp rank -1 on the wire */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = reject(&b, cases[i].bytes, cases[i].n);
        if (rc != KVG_EPARSE) {
            printf("  case %zu: rc %d\n", i, kvg_kv_decode_batch(&b, cases[i].bytes, cases[i].n));
            CHECK_INT(rc, KVG_EPARSE);
        }
    }
    kvg_kv_batch_free(&b);
}

/* Events whose fields are unreadable: each is skipped and counted, and the
 * AllBlocksCleared after it is still decoded (the old decoder dropped the
 * whole batch). */
TEST(bad_events_are_skipped_the_rest_kept)
{
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, NULL);
    struct {
        const char *bytes;
        size_t n;
        int removed;
    } cases[] = {
        {"\x01", 1, 0},          /* event neither array nor map */
        {"\x91\x01", 2, 0},      /* tag not a string */
        {"\x81\xa1x\x01", 4, 0}, /* event map without type */
        {"\x94\xab"
         "BlockStored\x90\xc0\x90",
         16, 0}, /* Stored with 4 elements */
        {"\x91\xac"
         "BlockRemoved",
         14, 1}, /* Removed without hashes */
        {"\x92\xac"
         "BlockRemoved\x91\xa1x",
         17, 1}, /* hash is a string */
        {"\x95\xab"
         "BlockStored\x90\xc0\x91\xff\x10",
         18, 0}, /* token -1 */
        {"\x95\xab"
         "BlockStored\x90\xc0\x91\xcf\x00\x00\x00\x01\x00\x00\x00\x00\x10",
         26, 0}, /* token 2^32 */
        {"\x95\xab"
         "BlockStored\x90\xc0\x91\x07\x00",
         18, 0}, /* block_size 0 with tokens (without, it is the offloading shape) */
        {"\x97\xab"
         "BlockStored\x90\xc0\x90\x10\xc0\x81\xaa"
         "cache_salt\x01",
         31, 0},
        /* a salt that is not a string */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        size_t n = 0;
        memcpy(buf, "\x92\x01\x92", 3);
        n = 3;
        memcpy(buf + n, cases[i].bytes, cases[i].n);
        n += cases[i].n;
        memcpy(buf + n,
               "\x91\xb0"
               "AllBlocksCleared",
               18);
        n += 18;
        int rc = kvg_kv_decode_batch(&b, buf, n);
        if (rc != 1) printf("  case %zu: rc %d (%s)\n", i, rc, b.err ? b.err : "");
        CHECK_INT(rc, 1);
        CHECK_INT(b.n_bad, 1);
        CHECK_INT(b.n_bad_removed, cases[i].removed);
        CHECK(b.err != NULL);
        CHECK_INT(b.events[0].type, KVG_KV_EV_CLEARED);
        CHECK_INT(b.n_hashes, 0);
        CHECK_INT(b.n_tokens, 0);
    }
    kvg_kv_batch_free(&b);
}

TEST(every_truncation_of_a_valid_batch_fails_cleanly)
{
    struct kvg_kv_batch b;
    struct pk k;
    kvg_kv_batch_init(&b, NULL);
    pk_init(&k);
    batch_begin(&k, 3, 4);
    stored_array(&k, 12, H_BIN32, 4);
    stored_map(&k, 5, H_U64, 4);
    removed_map(&k, H_BIN4);
    cleared(&k, 1);
    batch_end(&k, 3);
    CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), 4);
    for (size_t n = 0; n < k.sb.size; n++) {
        /* A copy of exactly n bytes, so ASan sees any read past the end. */
        char *p = malloc(n ? n : 1);
        memcpy(p, k.sb.data, n);
        CHECK_INT(reject(&b, p, n), KVG_EPARSE);
        free(p);
    }
    /* Single-byte corruptions: an error or a decode, never a crash. */
    char *p = malloc(k.sb.size);
    for (size_t i = 0; i < k.sb.size; i++) {
        for (int v = 0; v < 256; v += 17) {
            memcpy(p, k.sb.data, k.sb.size);
            p[i] = (char)v;
            int rc = kvg_kv_decode_batch(&b, p, k.sb.size);
            CHECK(rc >= 0 || rc == KVG_EPARSE || rc == KVG_ETOOBIG);
        }
    }
    free(p);
    msgpack_sbuffer_destroy(&k.sb);
    kvg_kv_batch_free(&b);
}

TEST(limits_are_enforced)
{
    struct kvg_kv_batch_limits lim = {.max_events = 2, .max_hashes = 3, .max_tokens = 40};
    struct kvg_kv_batch b;
    struct pk k;
    kvg_kv_batch_init(&b, &lim);
    pk_init(&k);
    batch_begin(&k, 0, 3);
    for (int i = 0; i < 3; i++) cleared(&k, 0);
    CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), KVG_ETOOBIG);
    msgpack_sbuffer_destroy(&k.sb);
    pk_init(&k);
    batch_begin(&k, 0, 2);
    stored_array(&k, 5, H_U64, 16); /* 32 tokens, 3 hashes with the parent: fine */
    stored_array(&k, 5, H_U64, 16); /* 64 tokens: over */
    CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), KVG_ETOOBIG);
    CHECK_INT(b.n_events, 0);
    msgpack_sbuffer_destroy(&k.sb);
    /* The batch is reusable after a failure. */
    pk_init(&k);
    batch_begin(&k, 0, 1);
    stored_array(&k, 5, H_U64, 16);
    CHECK_INT(kvg_kv_decode_batch(&b, k.sb.data, k.sb.size), 1);
    check_stored(&b, &b.events[0], H_U64, 16);
    msgpack_sbuffer_destroy(&k.sb);
    kvg_kv_batch_free(&b);
}
