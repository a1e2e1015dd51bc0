/* KV-event batch decoder: every encoding variant of vLLM/SGLang EventBatch
 * into one flat struct kvg_kv_batch. See events.h for the accepted shapes.
 * Built on the in-place reader of mp.h so that hostile bytes cost at most
 * their own length in work and never more than the batch limits in memory. */
#include "kv/events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "kv/mp.h"

/* Event fields, in BlockStored's positional order after the tag. */
enum field {
    F_HASHES,
    F_PARENT,
    F_TOKENS,
    F_BLOCK_SIZE,
    F_LORA_ID,
    F_MEDIUM,
    F_LORA_NAME,
    F_EXTRA_KEYS,
    F_GROUP_IDX,
    F_SPEC_KIND,
    F_SPEC_SW,
    F_POSITIONAL, /* fields below only come by name (maps) */
    F_CACHE_SALT = F_POSITIONAL,
    F_COUNT
};

static const char *const field_names[F_COUNT] = {
    "block_hashes",
    "parent_block_hash",
    "token_ids",
    "block_size",
    "lora_id",
    "medium",
    "lora_name",
    "extra_keys",
    "group_idx",
    "kv_cache_spec_kind",
    "kv_cache_spec_sliding_window",
    "cache_salt",
};

/* Fields each event type reads; the others are skipped. */
#define BIT(f) (1u << (f))
#define STORED_FIELDS ((1u << F_COUNT) - 1)
#define REMOVED_FIELDS (BIT(F_HASHES) | BIT(F_MEDIUM) | BIT(F_GROUP_IDX))
/* SGLang's metadata map in a positional store: named extras only, never the
 * fields that fill the batch's hash and token arrays. */
#define META_FIELDS                                                                                \
    (STORED_FIELDS & ~(BIT(F_HASHES) | BIT(F_PARENT) | BIT(F_TOKENS) | BIT(F_BLOCK_SIZE)))

/* BlockRemoved's positional fields after the tag. */
static const enum field removed_order[] = {F_HASHES, F_MEDIUM, F_GROUP_IDX};

#define FAIL(b, msg) ((b)->err = (msg), KVG_EPARSE)

void kvg_kv_batch_init(struct kvg_kv_batch *b, const struct kvg_kv_batch_limits *lim)
{
    memset(b, 0, sizeof *b);
    if (lim) b->lim = *lim;
    if (!b->lim.max_events) b->lim.max_events = 65536;
    if (!b->lim.max_hashes) b->lim.max_hashes = 1u << 20;
    if (!b->lim.max_tokens) b->lim.max_tokens = 1u << 24;
    b->dp_rank = -1;
}

void kvg_kv_batch_free(struct kvg_kv_batch *b)
{
    free(b->events);
    free(b->hashes);
    free(b->tokens);
    free(b->scratch);
    memset(b, 0, sizeof *b);
}

/* Makes room for `need` elements in total; KVG_ETOOBIG past max. */
static int reserve(void **arr, uint32_t *cap, uint64_t need, size_t elem, uint32_t max)
{
    if (need <= *cap) return 0;
    if (need > max) return KVG_ETOOBIG;
    uint64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    if (c > max) c = max;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p) return -ENOMEM;
    *arr = p;
    *cap = (uint32_t)c;
    return 0;
}

int kvg_kv_batch_reserve(struct kvg_kv_batch *b, size_t events, size_t hashes, size_t tokens)
{
    int rc =
        reserve((void **)&b->events, &b->cap_events, events, sizeof *b->events, b->lim.max_events);
    if (!rc)
        rc = reserve((void **)&b->hashes, &b->cap_hashes, hashes, sizeof *b->hashes,
                     b->lim.max_hashes);
    if (!rc)
        rc = reserve((void **)&b->tokens, &b->cap_tokens, tokens, sizeof *b->tokens,
                     b->lim.max_tokens);
    return rc;
}

int kvg_kv_batch_scratch(struct kvg_kv_batch *b, size_t n)
{
    if (n <= b->cap_scratch) return 0;
    if (n > b->lim.max_tokens) return KVG_ETOOBIG;
    size_t c = b->cap_scratch ? b->cap_scratch : 64;
    while (c < n) c *= 2;
    uint64_t *p = realloc(b->scratch, c * sizeof *p);
    if (!p) return -ENOMEM;
    b->scratch = p;
    b->cap_scratch = c;
    return 0;
}

static int str_is(const struct kvg_kv_mpval *v, const char *lit)
{
    size_t n = strlen(lit);
    return v->type == KVG_KV_MP_STR && v->v.s.len == n && !memcmp(v->v.s.p, lit, n);
}

/* A block hash in any of its wire forms. */
static int hash_value(struct kvg_kv_batch *b, const struct kvg_kv_mpval *v, uint64_t *out)
{
    switch (v->type) {
    case KVG_KV_MP_UINT:
        *out = v->v.u;
        return 0;
    case KVG_KV_MP_INT:
        *out = (uint64_t)v->v.i;
        return 0;
    case KVG_KV_MP_BIN: {
        /* The last 8 bytes, big-endian; shorter values are left-padded. */
        uint32_t len = v->v.s.len, from = len > 8 ? len - 8 : 0;
        uint64_t h = 0;
        for (uint32_t i = from; i < len; i++) h = (h << 8) | v->v.s.p[i];
        *out = h;
        return 0;
    }
    default:
        return FAIL(b, "block hash is not an integer or bytes");
    }
}

static int rd_hashes(struct kvg_kv_batch *b, struct kvg_kv_mp *r, struct kvg_kv_event *ev)
{
    struct kvg_kv_mpval v;
    if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated block_hashes");
    if (v.type != KVG_KV_MP_ARRAY) return FAIL(b, "block_hashes is not an array");
    int rc = reserve((void **)&b->hashes, &b->cap_hashes, (uint64_t)b->n_hashes + v.v.n,
                     sizeof *b->hashes, b->lim.max_hashes);
    if (rc) return rc;
    ev->hash_off = b->n_hashes;
    ev->n_hashes = v.v.n;
    for (uint32_t i = 0; i < ev->n_hashes; i++) {
        struct kvg_kv_mpval h;
        if (kvg_kv_mp_read(r, &h)) return FAIL(b, "truncated block hash");
        if ((rc = hash_value(b, &h, &b->hashes[b->n_hashes + i]))) return rc;
    }
    b->n_hashes += ev->n_hashes;
    return 0;
}

static int rd_tokens(struct kvg_kv_batch *b, struct kvg_kv_mp *r, struct kvg_kv_event *ev)
{
    struct kvg_kv_mpval v;
    if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated token_ids");
    if (v.type != KVG_KV_MP_ARRAY) return FAIL(b, "token_ids is not an array");
    int rc = reserve((void **)&b->tokens, &b->cap_tokens, (uint64_t)b->n_tokens + v.v.n,
                     sizeof *b->tokens, b->lim.max_tokens);
    if (rc) return rc;
    ev->token_off = b->n_tokens;
    ev->n_tokens = v.v.n;
    uint32_t *out = b->tokens + b->n_tokens;
    for (uint32_t i = 0; i < ev->n_tokens; i++) {
        /* Positive fixint is by far the most common id encoding below 128;
         * everything else goes through the general reader. */
        if (r->p < r->end && *r->p <= 0x7f) {
            out[i] = *r->p++;
            continue;
        }
        struct kvg_kv_mpval t;
        if (kvg_kv_mp_read(r, &t)) return FAIL(b, "truncated token id");
        if (t.type == KVG_KV_MP_ARRAY) {
            /* EAGLE: [t, t+1]; the block's token is the first. */
            uint32_t m = t.v.n;
            if (m == 0) return FAIL(b, "empty token id pair");
            if (kvg_kv_mp_read(r, &t)) return FAIL(b, "truncated token id");
            for (uint32_t j = 1; j < m; j++)
                if (kvg_kv_mp_skip(r)) return FAIL(b, "truncated token id pair");
            ev->bigram_tokens = 1;
        }
        if (t.type != KVG_KV_MP_UINT || t.v.u > UINT32_MAX)
            return FAIL(b, "token id is not a 32-bit unsigned integer");
        out[i] = (uint32_t)t.v.u;
    }
    b->n_tokens += ev->n_tokens;
    return 0;
}

/* nil (absent) or an integer. */
static int rd_opt_int(struct kvg_kv_batch *b, struct kvg_kv_mp *r, int *has, int64_t *out)
{
    struct kvg_kv_mpval v;
    if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated integer field");
    if (v.type == KVG_KV_MP_NIL) return 0;
    if (v.type == KVG_KV_MP_UINT && v.v.u <= INT64_MAX)
        *out = (int64_t)v.v.u;
    else if (v.type == KVG_KV_MP_INT)
        *out = v.v.i;
    else
        return FAIL(b, "integer field has another type");
    if (has) *has = 1;
    return 0;
}

/* nil (absent) or a string. */
static int rd_opt_str(struct kvg_kv_batch *b, struct kvg_kv_mp *r, struct kvg_str *out)
{
    struct kvg_kv_mpval v;
    if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated string field");
    if (v.type == KVG_KV_MP_NIL) return 0;
    if (v.type != KVG_KV_MP_STR) return FAIL(b, "string field has another type");
    out->p = (const char *)v.v.s.p;
    out->len = v.v.s.len;
    return 0;
}

static int same_str(struct kvg_str a, const struct kvg_kv_mpval *v)
{
    return a.len == v->v.s.len && !memcmp(a.p, v->v.s.p, a.len);
}

static void set_salt(struct kvg_kv_event *ev, const struct kvg_kv_mpval *v, uint32_t block)
{
    if (ev->cache_salt.len || !v->v.s.len) return; /* the first salt counts */
    ev->cache_salt.p = (const char *)v->v.s.p;
    ev->cache_salt.len = v->v.s.len;
    ev->salt_block = block;
}

/* A typed extra key {"type": "cache_salt", "salt": s, ...}: n pairs. */
static int rd_typed_key(struct kvg_kv_batch *b, struct kvg_kv_mp *r, uint32_t n,
                        struct kvg_kv_event *ev, uint32_t block)
{
    struct kvg_kv_mpval salt = {.type = KVG_KV_MP_NIL};
    int is_salt = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct kvg_kv_mpval k, v;
        struct kvg_kv_mp at;
        if (kvg_kv_mp_read(r, &k)) return FAIL(b, "truncated extra key");
        at = *r;
        if (kvg_kv_mp_read(&at, &v)) return FAIL(b, "truncated extra key");
        if (str_is(&k, "type") && str_is(&v, "cache_salt")) is_salt = 1;
        if (str_is(&k, "salt") && v.type == KVG_KV_MP_STR) salt = v;
        if (kvg_kv_mp_skip(r)) return FAIL(b, "truncated extra key");
    }
    if (is_salt && salt.type == KVG_KV_MP_STR) set_salt(ev, &salt, block);
    return 0;
}

/* extra_keys: nil, or one entry per block, each nil or a list of keys. Only
 * the cache salt matters to routing (LoRA is lora_name; multimodal and
 * prompt-embeds hashes are opaque here). Untyped (tuple) form: LoRA name,
 * multimodal (id, offset) tuples, the salt as a plain string, embeds hash as
 * bytes; so a string that is not the lora_name is the salt. */
static int rd_extra_keys(struct kvg_kv_batch *b, struct kvg_kv_mp *r, struct kvg_kv_event *ev)
{
    struct kvg_kv_mpval v;
    if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated extra_keys");
    if (v.type == KVG_KV_MP_NIL) return 0;
    if (v.type != KVG_KV_MP_ARRAY) return FAIL(b, "extra_keys is not a list");
    for (uint32_t blk = 0; blk < v.v.n; blk++) {
        struct kvg_kv_mp at = *r;
        struct kvg_kv_mpval e;
        if (kvg_kv_mp_read(&at, &e)) return FAIL(b, "truncated extra_keys");
        if (e.type != KVG_KV_MP_ARRAY) { /* nil, or a shape we do not know */
            if (kvg_kv_mp_skip(r)) return FAIL(b, "truncated extra_keys");
            continue;
        }
        *r = at;
        for (uint32_t i = 0; i < e.v.n; i++) {
            struct kvg_kv_mpval x;
            at = *r;
            if (kvg_kv_mp_read(&at, &x)) return FAIL(b, "truncated extra key");
            if (x.type == KVG_KV_MP_STR) {
                if (!same_str(ev->lora_name, &x)) set_salt(ev, &x, blk);
                *r = at;
            } else if (x.type == KVG_KV_MP_MAP) {
                *r = at;
                int rc = rd_typed_key(b, r, x.v.n, ev, blk);
                if (rc) return rc;
            } else if (kvg_kv_mp_skip(r)) {
                return FAIL(b, "truncated extra key");
            }
        }
    }
    return 0;
}

static int rd_field(struct kvg_kv_batch *b, struct kvg_kv_mp *r, enum field f,
                    struct kvg_kv_event *ev, unsigned *seen)
{
    struct kvg_kv_mpval v;
    int64_t x = 0;
    int rc = 0;
    *seen |= 1u << f;
    switch (f) {
    case F_HASHES:
        return rd_hashes(b, r, ev);
    case F_TOKENS:
        return rd_tokens(b, r, ev);
    case F_PARENT:
        if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated parent_block_hash");
        if (v.type == KVG_KV_MP_NIL) return 0;
        ev->has_parent = 1;
        return hash_value(b, &v, &ev->parent);
    case F_BLOCK_SIZE:
        if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated block_size");
        /* 0: vLLM's offloading connector, whose stores carry no tokens (the
         * index then copies holdings it has; with tokens, 0 is refused). */
        if (v.type != KVG_KV_MP_UINT || v.v.u > (1u << 20))
            return FAIL(b, "block_size is not a non-negative integer");
        ev->block_size = (uint32_t)v.v.u;
        return 0;
    case F_LORA_ID:
        return rd_opt_int(b, r, &ev->has_lora_id, &ev->lora_id);
    case F_MEDIUM:
        return rd_opt_str(b, r, &ev->medium);
    case F_LORA_NAME:
        return rd_opt_str(b, r, &ev->lora_name);
    case F_SPEC_KIND:
        return rd_opt_str(b, r, &ev->spec_kind);
    case F_GROUP_IDX: {
        int has = 0;
        if (!(rc = rd_opt_int(b, r, &has, &ev->group_idx)) && has && ev->group_idx < 0)
            return FAIL(b, "negative group_idx");
        return rc;
    }
    case F_SPEC_SW: { /* nil is "no window", never a window of 0 */
        int has = 0;
        if ((rc = rd_opt_int(b, r, &has, &x))) return rc;
        ev->sliding_window = has ? x : -1;
        return 0;
    }
    case F_EXTRA_KEYS:
        return rd_extra_keys(b, r, ev);
    case F_CACHE_SALT: {
        struct kvg_str salt = {0};
        if ((rc = rd_opt_str(b, r, &salt))) return rc;
        if (salt.len) {
            ev->cache_salt = salt; /* SGLang's salt covers the whole event */
            ev->salt_block = 0;
        }
        return 0;
    }
    default:
        return kvg_kv_mp_skip(r) ? FAIL(b, "truncated field") : 0;
    }
}

static int tag_type(const struct kvg_kv_mpval *tag)
{
    if (str_is(tag, "BlockStored")) return KVG_KV_EV_STORED;
    if (str_is(tag, "BlockRemoved")) return KVG_KV_EV_REMOVED;
    if (str_is(tag, "AllBlocksCleared")) return KVG_KV_EV_CLEARED;
    return 0;
}

static int check_required(struct kvg_kv_batch *b, const struct kvg_kv_event *ev, unsigned seen)
{
    if (ev->type == KVG_KV_EV_STORED) {
        unsigned need = 1u << F_HASHES | 1u << F_TOKENS | 1u << F_BLOCK_SIZE;
        if ((seen & need) != need) return FAIL(b, "BlockStored lacks a required field");
    } else if (ev->type == KVG_KV_EV_REMOVED && !(seen & 1u << F_HASHES)) {
        return FAIL(b, "BlockRemoved lacks block_hashes");
    }
    return 0;
}

/* Named fields of one map, n pairs after its header: a tagged event
 * ({"type": "Tag", ...}, have_tag non-NULL) or SGLang's metadata map. The
 * tag may come last, so the first pass notes where each known field's value
 * starts and the second parses those the event type reads (mask). */
static int map_fields(struct kvg_kv_batch *b, struct kvg_kv_mp *r, uint32_t n,
                      struct kvg_kv_event *ev, unsigned mask, unsigned *seen, int *have_tag)
{
    struct kvg_kv_mp at[F_COUNT];
    unsigned present = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct kvg_kv_mpval k;
        if (kvg_kv_mp_read(r, &k)) return FAIL(b, "truncated event key");
        if (k.type != KVG_KV_MP_STR) return FAIL(b, "event key is not a string");
        if (have_tag && str_is(&k, "type")) {
            struct kvg_kv_mpval tag;
            if (kvg_kv_mp_read(r, &tag)) return FAIL(b, "truncated event tag");
            if (tag.type != KVG_KV_MP_STR) return FAIL(b, "event tag is not a string");
            ev->type = tag_type(&tag);
            *have_tag = 1;
            continue;
        }
        for (int f = 0; f < F_COUNT; f++) {
            if (str_is(&k, field_names[f])) {
                at[f] = *r;
                present |= BIT(f);
                break;
            }
        }
        if (kvg_kv_mp_skip(r)) return FAIL(b, "truncated event value");
    }
    if (have_tag) {
        if (!*have_tag) return FAIL(b, "event map lacks \"type\"");
        mask = ev->type == KVG_KV_EV_STORED    ? STORED_FIELDS
               : ev->type == KVG_KV_EV_REMOVED ? REMOVED_FIELDS
                                               : 0;
    }
    for (int f = 0; f < F_COUNT; f++) {
        if (!(present & mask & BIT(f))) continue;
        struct kvg_kv_mp sub = at[f];
        int rc = rd_field(b, &sub, (enum field)f, ev, seen);
        if (rc) return rc;
    }
    return 0;
}

/* ["Tag", field, field, ...]: n elements, the header already read. */
static int event_array(struct kvg_kv_batch *b, struct kvg_kv_mp *r, uint32_t n,
                       struct kvg_kv_event *ev, int *keep)
{
    struct kvg_kv_mpval tag;
    unsigned seen = 0;
    int rc;
    if (n == 0) return FAIL(b, "empty event array");
    if (kvg_kv_mp_read(r, &tag)) return FAIL(b, "truncated event tag");
    if (tag.type != KVG_KV_MP_STR) return FAIL(b, "event tag is not a string");
    ev->type = tag_type(&tag);
    if (ev->type == KVG_KV_EV_STORED && n < 5) return FAIL(b, "BlockStored has under 5 elements");
    if (ev->type == KVG_KV_EV_REMOVED && n < 2) return FAIL(b, "BlockRemoved has under 2 elements");
    for (uint32_t i = 1; i < n; i++) {
        uint32_t k = i - 1;
        struct kvg_kv_mp at = *r;
        struct kvg_kv_mpval h;
        if (ev->type == KVG_KV_EV_STORED && k > F_BLOCK_SIZE && !kvg_kv_mp_read(&at, &h) &&
            h.type == KVG_KV_MP_MAP) {
            /* BlockStoredWithMetadata: named extras where vLLM has lora_name. */
            *r = at;
            rc = map_fields(b, r, h.v.n, ev, META_FIELDS, &seen, NULL);
        } else if (ev->type == KVG_KV_EV_STORED && k < F_POSITIONAL) {
            rc = rd_field(b, r, (enum field)k, ev, &seen);
        } else if (ev->type == KVG_KV_EV_REMOVED && k < 3) {
            rc = rd_field(b, r, removed_order[k], ev, &seen);
        } else {
            rc = kvg_kv_mp_skip(r) ? FAIL(b, "truncated event") : 0;
        }
        if (rc) return rc;
    }
    *keep = ev->type != 0;
    return *keep ? check_required(b, ev, seen) : 0;
}

static int event_map(struct kvg_kv_batch *b, struct kvg_kv_mp *r, uint32_t n,
                     struct kvg_kv_event *ev, int *keep)
{
    unsigned seen = 0;
    int have_tag = 0;
    int rc = map_fields(b, r, n, ev, 0, &seen, &have_tag);
    if (rc) return rc;
    *keep = ev->type != 0;
    return *keep ? check_required(b, ev, seen) : 0;
}

/* One event at r. KVG_EPARSE here is about this event only: the caller
 * skips it and keeps the batch. */
static int one_event(struct kvg_kv_batch *b, struct kvg_kv_mp *r, struct kvg_kv_event *ev,
                     int *keep)
{
    struct kvg_kv_mpval e;
    memset(ev, 0, sizeof *ev);
    ev->group_idx = -1;
    ev->sliding_window = -1;
    if (kvg_kv_mp_read(r, &e)) return FAIL(b, "truncated event");
    int rc;
    if (e.type == KVG_KV_MP_ARRAY)
        rc = event_array(b, r, e.v.n, ev, keep);
    else if (e.type == KVG_KV_MP_MAP)
        rc = event_map(b, r, e.v.n, ev, keep);
    else
        rc = FAIL(b, "event is neither an array nor a map");
    if (!rc && ev->type == KVG_KV_EV_STORED && !ev->block_size && ev->n_tokens)
        rc = FAIL(b, "block_size 0 with tokens");
    if (!rc && ev->type == KVG_KV_EV_STORED && ev->salt_block > ev->n_hashes)
        ev->salt_block = ev->n_hashes; /* a salt past the blocks salts none */
    ev->tier = kvg_kv_medium_tier(ev->medium);
    return rc;
}

static int events_list(struct kvg_kv_batch *b, struct kvg_kv_mp *r)
{
    struct kvg_kv_mpval v;
    const char *first_bad = NULL;
    if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated events");
    if (v.type != KVG_KV_MP_ARRAY) return FAIL(b, "events is not an array");
    int rc = reserve((void **)&b->events, &b->cap_events, (uint64_t)v.v.n, sizeof *b->events,
                     b->lim.max_events);
    if (rc) return rc;
    for (uint32_t i = 0; i < v.v.n; i++) {
        struct kvg_kv_event *ev = &b->events[b->n_events];
        struct kvg_kv_mp start = *r;
        uint32_t nh = b->n_hashes, nt = b->n_tokens;
        int keep = 0;
        rc = one_event(b, r, ev, &keep);
        if (rc == KVG_EPARSE) {
            /* Skip the whole event from its start; only a batch cut short
             * (nothing to resynchronise on) fails as a whole. */
            *r = start;
            if (kvg_kv_mp_skip(r)) return FAIL(b, "truncated event");
            if (!first_bad) first_bad = b->err;
            b->n_hashes = nh;
            b->n_tokens = nt;
            b->n_bad++;
            if (ev->type == KVG_KV_EV_REMOVED) b->n_bad_removed++;
            continue;
        }
        if (rc) return rc;
        if (keep)
            b->n_events++;
        else
            b->n_unknown++;
    }
    b->err = first_bad;
    return 0;
}

enum kvg_kv_tier kvg_kv_medium_tier(struct kvg_str m)
{
    static const char *const host[] = {"CPU", "CPU_PINNED", "HOST", "PINNED"};
    if (!m.len || (m.len == 3 && !strncasecmp(m.p, "GPU", 3)) ||
        (m.len == 4 && !strncasecmp(m.p, "CUDA", 4)))
        return KVG_KV_TIER_GPU;
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        if (m.len == strlen(host[i]) && !strncasecmp(m.p, host[i], m.len)) return KVG_KV_TIER_HOST;
    return KVG_KV_TIER_OTHER;
}

static int rd_ts(struct kvg_kv_batch *b, struct kvg_kv_mp *r)
{
    struct kvg_kv_mpval v;
    if (kvg_kv_mp_read(r, &v)) return FAIL(b, "truncated ts");
    if (v.type == KVG_KV_MP_FLOAT)
        b->ts = v.v.f;
    else if (v.type == KVG_KV_MP_UINT)
        b->ts = (double)v.v.u;
    else if (v.type == KVG_KV_MP_INT)
        b->ts = (double)v.v.i;
    else
        return FAIL(b, "ts is not a number");
    return 0;
}

static int rd_dp_rank(struct kvg_kv_batch *b, struct kvg_kv_mp *r)
{
    int64_t x = -1;
    int has = 0, rc = rd_opt_int(b, r, &has, &x);
    if (rc) return rc;
    if (has && x < 0) return FAIL(b, "negative data_parallel_rank");
    b->dp_rank = x;
    return 0;
}

static int batch_body(struct kvg_kv_batch *b, struct kvg_kv_mp *r)
{
    struct kvg_kv_mpval v;
    int rc = 0, have_events = 0;
    if (kvg_kv_mp_read(r, &v)) return FAIL(b, "empty or truncated batch");
    if (v.type == KVG_KV_MP_ARRAY) {
        if (v.v.n < 2) return FAIL(b, "batch array has under 2 elements");
        if ((rc = rd_ts(b, r)) || (rc = events_list(b, r))) return rc;
        if (v.v.n >= 3 && (rc = rd_dp_rank(b, r))) return rc;
        for (uint32_t i = 3; i < v.v.n; i++)
            if (kvg_kv_mp_skip(r)) return FAIL(b, "truncated batch");
        return 0;
    }
    if (v.type != KVG_KV_MP_MAP) return FAIL(b, "batch is neither an array nor a map");
    for (uint32_t i = 0; i < v.v.n; i++) {
        struct kvg_kv_mpval k;
        if (kvg_kv_mp_read(r, &k)) return FAIL(b, "truncated batch key");
        if (k.type != KVG_KV_MP_STR) return FAIL(b, "batch key is not a string");
        if (str_is(&k, "ts")) {
            rc = rd_ts(b, r);
        } else if (str_is(&k, "events")) {
            if (have_events) return FAIL(b, "batch has two \"events\"");
            have_events = 1;
            rc = events_list(b, r);
        } else if (str_is(&k, "data_parallel_rank")) {
            rc = rd_dp_rank(b, r);
        } else {
            rc = kvg_kv_mp_skip(r) ? FAIL(b, "truncated batch value") : 0;
        }
        if (rc) return rc;
    }
    return have_events ? 0 : FAIL(b, "batch map lacks \"events\"");
}

int kvg_kv_decode_batch(struct kvg_kv_batch *b, const void *buf, size_t len)
{
    struct kvg_kv_mp r = {(const uint8_t *)buf, (const uint8_t *)buf + len};
    b->ts = 0;
    b->dp_rank = -1;
    b->n_events = b->n_hashes = b->n_tokens = b->n_unknown = b->n_bad = b->n_bad_removed = 0;
    b->err = NULL;
    int rc = buf ? batch_body(b, &r) : FAIL(b, "no payload");
    if (!rc && r.p != r.end) rc = FAIL(b, "trailing bytes after the batch");
    if (rc) {
        if (!b->err) b->err = rc == KVG_ETOOBIG ? "batch over a decode limit" : "out of memory";
        b->n_events = b->n_hashes = b->n_tokens = b->n_unknown = b->n_bad = b->n_bad_removed = 0;
        return rc;
    }
    return (int)b->n_events;
}
