/* The storage under the precise index and the approximate (TTL) index
 * (internal to src/kv; callers hold the owner's lock: write lock for every
 * function except kvg_kv_tab_match, which only needs the read lock).
 *
 * What it stores: (block sequence hash, worker slot) entries.
 *   - A *node* per distinct sequence hash names the *holder set* of the
 *     worker slots holding that block, so the longest-prefix match walks the
 *     request's blocks once and ANDs bitmaps: O(blocks x bitmap words),
 *     whatever the number of workers.
 *   - Holder sets are shared: every node held by the same workers names one
 *     set (a bitmap, looked up by its content; table_set.c). A prompt's
 *     blocks mostly have the holders of the block before them (workers store
 *     prefixes), so the walk reads a bitmap only where the set changes: at
 *     1,024 slots a node is 24 B instead of 16 B + 128 B, and a block held
 *     as its parent is costs its node's line, not three.
 *   - An *entry* per (block, worker) carries the engine's key (its opaque
 *     block hash, or the sequence hash in approximate mode), a per-worker LRU
 *     list position and a stamp. Entries are found by (worker, key) through a
 *     per-worker chained hash table, which is what BlockRemoved and parent
 *     lookups need.
 * Nodes and entries live in paged pools indexed by uint32 (stable addresses,
 * no big reallocs) and are recycled through free lists. Sizes are chosen for
 * the <= 64 bytes per (block, worker) budget in the worst case where every
 * block sits on one worker: entry 28 B + node 24 B + two uint32 bucket
 * arrays (nodes: 1-2 items per bucket, worker keys: 2-4; both grow
 * incrementally, see struct kvg_kv_chain) + the holder sets, which are few
 * (at most one per node, in practice one per distinct holder pattern: one
 * per worker here).
 *
 * Two entries of one worker can name the same node when the engine reports
 * the same tokens under two block hashes (extra keys the router does not
 * hash). That rare case is counted in a small side map so that the worker's
 * bit is cleared only when its last such entry goes.
 *
 * The reverse, one engine hash naming blocks at several places, happens when
 * an engine hashes a page by its content only (older SGLang: a page repeated
 * within a prompt). Every place gets its entries, and a second side map
 * counts the extra references so that removing the hash forgets it only at
 * its last reference. */
#ifndef KVG_KV_TABLE_H
#define KVG_KV_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/heap.h"

#define KVG_KV_NIL UINT32_MAX
#define KVG_KV_LAST 0x80000000u   /* entry.node flag: last router block of an engine block */
#define KVG_KV_SALTED 0x40000000u /* entry.node flag: the block's chain carries a cache salt */
#define KVG_KV_NODE_MASK 0x3fffffffu
#define KVG_KV_MAX_WORKERS 4096
#define KVG_KV_PAGE_SHIFT 16 /* items per pool page: 1.5-1.8 MB, huge-page sized */

#define KVG_KV_SET_SHIFT 12 /* sets per set-pool page */

struct kvg_kv_node {       /* 24 bytes */
    uint64_t key;          /* sequence hash */
    _Atomic uint32_t used; /* clock of the last lookup that matched it */
    uint32_t next;         /* bucket chain; free-list link when free */
    uint32_t set;          /* holder set (never KVG_KV_NIL while the node lives) */
    uint32_t spare;
};

/* A holder set's header; it follows the set's bitmap of t->words words, so
 * that at >= 512 slots the bitmap starts on a cache line and spans whole
 * lines. Sets are immutable while shared (refs > 1): a node whose holders
 * change moves to the set of its new holders. */
struct kvg_kv_set {
    uint64_t hash;  /* XOR of its slots' keys: one slot in or out is O(1) */
    uint32_t refs;  /* nodes naming it */
    uint32_t next;  /* chain of sets by hash; free-list link when free */
    uint32_t count; /* slots in it (> 0) */
    uint32_t spare;
};

struct kvg_kv_entry { /* 28 bytes, 4-byte aligned */
    uint32_t key_lo, key_hi;
    uint32_t node;       /* node index | KVG_KV_LAST | KVG_KV_SALTED */
    uint32_t prev, next; /* worker's list; head = newest, prev points toward it */
    uint32_t chain;      /* worker's key chain; free-list link when free */
    uint32_t stamp;      /* list order key: clock (precise) or expiry (approx) */
};

enum { KVG_KV_W_FREE, KVG_KV_W_LIVE, KVG_KV_W_DRAINING };

/* Bucket heads of an intrusive chained hash table that doubles
 * incrementally: while `ob` is set, buckets of the old array below `mpos`
 * have been moved to `b`, the others are still searched in `ob`. Each write
 * moves a few buckets, so no write holds the lock for a whole rehash of
 * millions of items (which would stall every lookup). */
struct kvg_kv_chain {
    uint32_t *b, mask;
    uint32_t *ob, omask, mpos;
};

struct kvg_kv_wslot {
    uint32_t head, tail, count;
    struct kvg_kv_chain kc; /* entries by key; b is NULL while FREE */
    int state;
};

/* Open-addressing counters keyed by non-zero 64-bit keys (side maps). */
struct kvg_kv_cnt {
    uint64_t *keys;
    uint32_t *cnt, mask, n;
};

struct kvg_kv_tab {
    uint32_t max_workers, words;
    size_t node_size, set_size;
    uint8_t **spages; /* holder sets: 1 << KVG_KV_SET_SHIFT per page */
    uint32_t n_spages, set_hw, set_free, n_sets;
    struct kvg_kv_chain sc; /* sets by hash */
    uint8_t **npages;
    uint32_t n_npages, node_hw, node_free, n_nodes;
    struct kvg_kv_chain nc; /* nodes by sequence hash */
    struct kvg_kv_entry **epages;
    uint32_t n_epages, entry_hw, entry_free, n_entries;
    struct kvg_kv_wslot *w;
    uint32_t *tail_stamp;  /* w[i].tail's stamp, contiguous for the oldest scan */
    uint64_t *live;        /* bitmap of LIVE slots: lookups start from it */
    struct kvg_kv_cnt dup; /* (node << 32 | worker | 1 << 63) -> extra entries */
    uint64_t dup_entries;
    struct kvg_kv_cnt refs; /* (worker, engine key) -> extra references */
    uint64_t ref_extra;     /* their sum */
    /* Age order (kvg_kv_tab_age_enable): a min-heap of (tail stamp, slot),
     * pushed on every tail change; an element whose slot's tail has moved on
     * is stale and dropped when it surfaces. Every slot with entries has an
     * element carrying its current tail stamp, so the top valid element is
     * the oldest tail: O(log slots) per change instead of a scan of every
     * slot per pruned entry. age_bad: a push failed (out of memory), scan
     * until the next rebuild. */
    struct kvg_heap age;
    int age_on, age_bad;
    uint32_t age_slots; /* slots with entries */
};

/* Shared by table.c and table_set.c: the doubling bucket arrays (see struct
 * kvg_kv_chain). */
int kvg_kv_chain_init(struct kvg_kv_chain *c, uint32_t nbuckets);
void kvg_kv_chain_free(struct kvg_kv_chain *c);
size_t kvg_kv_chain_bytes(const struct kvg_kv_chain *c);
/* Starts doubling once there are more than `load` items per bucket. */
void kvg_kv_chain_maybe_grow(struct kvg_kv_chain *c, uint32_t items, uint32_t load);
/* The bucket `mpos` of the old array has been moved. */
void kvg_kv_chain_done_bucket(struct kvg_kv_chain *c);

int kvg_kv_tab_init(struct kvg_kv_tab *t, uint32_t max_workers);
void kvg_kv_tab_free(struct kvg_kv_tab *t);
/* Bytes allocated (pools, buckets, side map, slot arrays). */
size_t kvg_kv_tab_bytes(const struct kvg_kv_tab *t);

/* Keys are hashes already, but engine hashes in tests and from old engines
 * can be small integers: multiply so that the bucket bits are mixed. */
static inline uint32_t kvg_kv_bucket(uint64_t k, uint32_t mask)
{
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* The old bucket that still holds key's chain, or NULL. */
static inline uint32_t *kvg_kv_chain_old(const struct kvg_kv_chain *c, uint64_t key)
{
    if (!c->ob) return NULL;
    uint32_t o = kvg_kv_bucket(key, c->omask);
    return o >= c->mpos ? &c->ob[o] : NULL;
}

static inline struct kvg_kv_node *kvg_kv_tab_node(const struct kvg_kv_tab *t, uint32_t i)
{
    return (struct kvg_kv_node *)(t->npages[i >> KVG_KV_PAGE_SHIFT] +
                                  (size_t)(i & ((1u << KVG_KV_PAGE_SHIFT) - 1)) * t->node_size);
}
static inline struct kvg_kv_entry *kvg_kv_tab_entry(const struct kvg_kv_tab *t, uint32_t i)
{
    return &t->epages[i >> KVG_KV_PAGE_SHIFT][i & ((1u << KVG_KV_PAGE_SHIFT) - 1)];
}
static inline uint64_t kvg_kv_entry_key(const struct kvg_kv_entry *e)
{
    return (uint64_t)e->key_hi << 32 | e->key_lo;
}

/* Holder set s's bitmap and header. */
static inline uint64_t *kvg_kv_tab_set_bits(const struct kvg_kv_tab *t, uint32_t s)
{
    return (uint64_t *)(t->spages[s >> KVG_KV_SET_SHIFT] +
                        (size_t)(s & ((1u << KVG_KV_SET_SHIFT) - 1)) * t->set_size);
}
static inline struct kvg_kv_set *kvg_kv_tab_set(const struct kvg_kv_tab *t, uint32_t s)
{
    return (struct kvg_kv_set *)(kvg_kv_tab_set_bits(t, s) + t->words);
}
/* out[k] = v for each bit k set in bits: the walks' answer for the slots of
 * one bitmap word. A full word (every slot of it still a candidate, the
 * common case of a fleet that holds a shared prefix) is 64 stores in a row,
 * which the compiler turns into a few vector stores; bit by bit they were a
 * third of a 1,024-slot walk over the tiers. */
static inline void kvg_kv_put_bits(uint32_t *out, uint64_t bits, uint32_t v)
{
    if (bits == ~0ull) {
        for (int k = 0; k < 64; k++) out[k] = v;
        return;
    }
    for (; bits; bits &= bits - 1) out[__builtin_ctzll(bits)] = v;
}

/* Whether node ni's block is held by slot w. */
static inline int kvg_kv_tab_node_has(const struct kvg_kv_tab *t, uint32_t ni, uint32_t w)
{
    const uint64_t *b = kvg_kv_tab_set_bits(t, kvg_kv_tab_node(t, ni)->set);
    return (int)(b[w / 64] >> (w % 64) & 1);
}

/* Holder sets (table_set.c). init/free go with the table's. reserve makes
 * room for as many sets as `nodes`: sets live only while a node names them,
 * so with room for every node a removal never needs memory (-ENOMEM).
 * set_add returns the set of s's slots and w (s = KVG_KV_NIL: none), or
 * KVG_KV_NIL when out of memory (s unchanged); set_del the set of s's slots
 * but w, or KVG_KV_NIL when that is empty. Both release the caller's
 * reference to s and hand it one to the result. */
int kvg_kv_tab_sets_init(struct kvg_kv_tab *t);
void kvg_kv_tab_sets_free(struct kvg_kv_tab *t);
size_t kvg_kv_tab_sets_bytes(const struct kvg_kv_tab *t);
int kvg_kv_tab_set_reserve(struct kvg_kv_tab *t, uint32_t nodes);
uint32_t kvg_kv_tab_set_add(struct kvg_kv_tab *t, uint32_t s, uint32_t w);
uint32_t kvg_kv_tab_set_del(struct kvg_kv_tab *t, uint32_t s, uint32_t w);
/* Consistency of the sets against the nodes (tests): every live node's set
 * is live, refs equal the nodes naming each set, counts and hashes match
 * the bitmaps, no two live sets are equal, and every set is in its hash
 * chain. 0 or -1. */
int kvg_kv_tab_sets_check(const struct kvg_kv_tab *t);

/* Slot lifecycle: open makes a FREE slot LIVE (-EEXIST/-EBUSY otherwise),
 * close frees a slot's buckets once its entries are gone. */
int kvg_kv_tab_worker_open(struct kvg_kv_tab *t, uint32_t w);
void kvg_kv_tab_worker_close(struct kvg_kv_tab *t, uint32_t w);

uint32_t kvg_kv_tab_find_node(const struct kvg_kv_tab *t, uint64_t seq);
/* Cache hints for a coming find/add/remove by key or by sequence hash: the
 * callers know a whole event's keys ahead and can overlap the misses. Each
 * walks a chain to a depth: 0 fetches the bucket, d >= 1 the chain's item d
 * (the items before it having been fetched by depth d - 1 earlier).
 * Removal: stages 0 .. KVG_KV_PF_KEY_DEPTH - 1 walk the key chain, the next
 * fetches the entry's node and list neighbours, the next the node's bucket
 * and the last KVG_KV_PF_REMOVE_STAGES - KVG_KV_PF_KEY_DEPTH - 2 the node's
 * chain. Earliest stage furthest ahead. */
#define KVG_KV_PF_KEY_DEPTH 3
#define KVG_KV_PF_REMOVE_STAGES 7
void kvg_kv_tab_prefetch_key(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, int depth);
void kvg_kv_tab_prefetch_node(const struct kvg_kv_tab *t, uint64_t seq, int depth);
void kvg_kv_tab_prefetch_remove(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, int stage);
/* Entry of worker w with this key; want_last picks the one flagged LAST. */
uint32_t kvg_kv_tab_key_find(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, int want_last);
/* Every entry of worker w with this key (the router blocks of one engine
 * block, or a repeated one) into out[0..max); returns how many. */
uint32_t kvg_kv_tab_key_all(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, uint32_t *out,
                            uint32_t max);
/* Entry of worker w with this key on the node of sequence hash seq. */
uint32_t kvg_kv_tab_key_find_at(const struct kvg_kv_tab *t, uint32_t w, uint64_t key, uint64_t seq);
/* Adds entry (w, seq) with key, flags (KVG_KV_LAST, KVG_KV_SALTED) and
 * stamp at the head of w's list. Returns the entry index or KVG_KV_NIL when
 * out of memory or index space. */
uint32_t kvg_kv_tab_add(struct kvg_kv_tab *t, uint32_t w, uint64_t seq, uint64_t key,
                        uint32_t flags, uint32_t stamp);
void kvg_kv_tab_remove(struct kvg_kv_tab *t, uint32_t w, uint32_t e);
/* One more reference to key on w (it names blocks at another place too).
 * 0 or -ENOMEM. */
int kvg_kv_tab_ref(struct kvg_kv_tab *t, uint32_t w, uint64_t key);
/* Drops one reference to key on w: when it has extra references, one goes
 * and 0 is returned; otherwise every entry of w with this key is removed
 * and their number returned. */
uint32_t kvg_kv_tab_remove_key(struct kvg_kv_tab *t, uint32_t w, uint64_t key);
/* Moves e to the head of w's list with a new stamp. */
void kvg_kv_tab_touch(struct kvg_kv_tab *t, uint32_t w, uint32_t e, uint32_t stamp);
/* Keeps the age order from now on (the table must be empty): for tables
 * whose stamps all lie within 2^31 of each other (expiry times, clocks). */
void kvg_kv_tab_age_enable(struct kvg_kv_tab *t);
/* Slot whose list tail is oldest relative to ref (largest ref - stamp; the
 * lowest slot among equals), or -1. With the age order on, O(log slots)
 * amortised (it drops stale heap elements); else a scan of every slot. */
int kvg_kv_tab_oldest(struct kvg_kv_tab *t, uint32_t ref);
/* The same by scanning every slot (the reference for the age order). */
int kvg_kv_tab_oldest_scan(const struct kvg_kv_tab *t, uint32_t ref);
/* w's tail changed (its list is not empty): table.c tells the age order. */
void kvg_kv_tab_age_note(struct kvg_kv_tab *t, uint32_t w);
/* Removes up to max entries of w, oldest first; returns how many. */
uint32_t kvg_kv_tab_drain(struct kvg_kv_tab *t, uint32_t w, uint32_t max);

/* Longest prefix per worker: out[w] (w < nslots) = number of leading seq[]
 * blocks all present on w, for LIVE workers (0 for others). When stamp_used
 * is set, every node walked that some worker still matched gets used = stamp
 * (a relaxed atomic store, safe under a shared read lock). Returns the
 * largest out[w]. */
uint32_t kvg_kv_tab_match(const struct kvg_kv_tab *t, const uint64_t *seq, size_t n, uint32_t *out,
                          size_t nslots, int stamp_used, uint32_t stamp);

/* The same over tabs[0..ntabs) (same max_workers; tabs[0]'s live slots
 * count), by levels: out[l * nslots + w] = leading blocks worker w holds in
 * the union of tabs[0..l]. Returns the largest at the last level. ntabs is
 * at most KVG_KV_MATCH_LEVELS. */
#define KVG_KV_MATCH_LEVELS 4
uint32_t kvg_kv_tab_match_levels(const struct kvg_kv_tab *const *tabs, uint32_t ntabs,
                                 const uint64_t *seq, size_t n, uint32_t *out, size_t nslots,
                                 int stamp_used, uint32_t stamp);

#endif
