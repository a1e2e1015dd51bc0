/* The approximate, text-keyed radix tree of sglang's and vllm-router's
 * `cache_aware` policy, with the classic semantics (sgl-router's tree.rs):
 * what text was routed to which worker ("tenant"), so that a request
 * sharing a long prefix with earlier ones can go where that prefix was sent.
 *
 *   - Keyed by Unicode characters: edges are UTF-8 text, lengths and match
 *     counts are in characters (code points), never bytes. Invalid UTF-8
 *     counts one character per offending byte.
 *   - insert(text, tenant): walk from the root by first character, splitting
 *     an edge where the text diverges; every node on the path then carries
 *     the tenant with a fresh timestamp. tenant_chars(t) = total characters of
 *     the edges carrying t. insert("") only registers the tenant.
 *   - prefix_match(text): longest match (a partial edge counts its shared
 *     characters and stops there); the tenant returned is one carried by the
 *     final node (here: its most recently used; -1 = "empty"), whose
 *     timestamps are then refreshed on that node and all its ancestors.
 *   - smallest_tenant(): the tenant with the fewest characters (ties: lowest id).
 *   - evict_by_size(max): per tenant, least recently used leaves-for-that-
 *     tenant go first until the tenant holds at most max characters; emptied
 *     nodes are deleted and a parent that becomes a leaf for the tenant joins
 *     the queue.
 *   - remove_tenant(t): t leaves every node; emptied nodes are deleted.
 * Timestamps are a per-tree logical clock (one tick per operation), so LRU
 * order is exact even within one millisecond.
 *
 * The routing policy (thresholds, imbalance rule) lives in the router; this
 * is the data structure. Tenants are worker slots 0..65535. Every function
 * is thread-safe (one mutex per tree). */
#ifndef KVG_KV_RADIX_H
#define KVG_KV_RADIX_H

#include <stddef.h>
#include <stdint.h>

#define KVG_KV_RADIX_MAX_TENANT 65535

struct kvg_kv_radix;

struct kvg_kv_radix_match {
    size_t matched_chars; /* characters of text matched */
    size_t matched_bytes; /* the same prefix in bytes */
    size_t text_chars;    /* characters of the whole text (for the match ratio) */
    int tenant;           /* tenant at the final node, -1 if none ("empty") */
};

struct kvg_kv_radix_stats {
    uint64_t nodes, bytes, total_chars;
    uint32_t tenants;
    uint64_t busy, deferred_inserts, dropped_inserts; /* the _nowait calls' */
};

/* *out is owned by the caller: kvg_kv_radix_free. */
int kvg_kv_radix_new(struct kvg_kv_radix **out);
void kvg_kv_radix_free(struct kvg_kv_radix *t);

/* 0, -EINVAL (tenant out of range), -ENOMEM (the tree stays consistent). */
int kvg_kv_radix_insert(struct kvg_kv_radix *t, const char *text, size_t len, int tenant);
int kvg_kv_radix_prefix_match(struct kvg_kv_radix *t, const char *text, size_t len,
                              struct kvg_kv_radix_match *m);
/* For an event loop, which must not wait for the tree's lock (a work thread
 * at a lower priority may hold it, preempted): the lock is tried for
 * KVG_LOCK_TRY_NS (base/lock.h). When it is not had, a match answers -EBUSY
 * with nothing matched (tenant -1), the smallest tenant -EBUSY, and an
 * insert is deferred: the next holder of the lock makes it first (up to
 * KVG_KV_RADIX_DEFER_MAX bytes waiting; past it, -EBUSY and dropped). */
#define KVG_KV_RADIX_DEFER_MAX (4u << 20)
int kvg_kv_radix_insert_nowait(struct kvg_kv_radix *t, const char *text, size_t len, int tenant);
int kvg_kv_radix_prefix_match_nowait(struct kvg_kv_radix *t, const char *text, size_t len,
                                     struct kvg_kv_radix_match *m);
int kvg_kv_radix_smallest_tenant_nowait(struct kvg_kv_radix *t);
/* Match walking only nodes that carry tenant; returns matched characters
 * (refreshing that tenant's timestamps on the walked path). */
size_t kvg_kv_radix_prefix_match_tenant(struct kvg_kv_radix *t, const char *text, size_t len,
                                        int tenant);
int kvg_kv_radix_smallest_tenant(struct kvg_kv_radix *t);
/* Characters carried by tenant (0 if unknown). */
uint64_t kvg_kv_radix_tenant_chars(struct kvg_kv_radix *t, int tenant);
/* 1 if the tenant is registered in the tree. */
int kvg_kv_radix_has_tenant(struct kvg_kv_radix *t, int tenant);
/* Returns the number of (node, tenant) pairs evicted. */
int kvg_kv_radix_evict_by_size(struct kvg_kv_radix *t, uint64_t max_chars);
/* 0, or -ENOENT for a tenant the tree does not know. */
int kvg_kv_radix_remove_tenant(struct kvg_kv_radix *t, int tenant);
void kvg_kv_radix_stats(struct kvg_kv_radix *t, struct kvg_kv_radix_stats *st);

/* Characters (code points; one per invalid byte) in s[0..len). */
size_t kvg_kv_utf8_chars(const char *s, size_t len);

/* One tree per model, as the peers keep them. An empty or "unknown" model
 * name maps to "default". Thread-safe; trees live until the forest is freed. */
struct kvg_kv_radix_forest;
int kvg_kv_radix_forest_new(struct kvg_kv_radix_forest **out);
void kvg_kv_radix_forest_free(struct kvg_kv_radix_forest *f);
/* The model's tree (created when create is set); NULL if absent or ENOMEM.
 * The tree is owned by the forest. */
struct kvg_kv_radix *kvg_kv_radix_forest_get(struct kvg_kv_radix_forest *f, const char *model,
                                             int create);
/* evict_by_size on every tree (the periodic eviction task); returns pairs evicted. */
int kvg_kv_radix_forest_evict(struct kvg_kv_radix_forest *f, uint64_t max_chars);
/* remove_tenant on every tree (a worker left the pool). */
void kvg_kv_radix_forest_remove_tenant(struct kvg_kv_radix_forest *f, int tenant);

#endif
