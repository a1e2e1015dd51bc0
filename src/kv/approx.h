/* Dynamo's approximate KV mode, for engines that publish no KV events: the
 * router remembers which blocks it sent to which worker and assumes they stay
 * cached for a while. Each (block, worker) record expires ttl after it was
 * last routed (Dynamo's --router-ttl-secs, default 120 s); when more than
 * max_blocks records exist the oldest are pruned down to prune_target of it
 * (Dynamo: --router-max-tree-size 2^20, --router-prune-target-ratio 0.8).
 * Lookups return, per worker, the longest run of leading blocks with a live
 * record, exactly like the precise index.
 *
 * Times are the caller's monotonic milliseconds (kvg_now_ms()), passed in so
 * that tests and the offline simulator can drive the clock. Thread-safe:
 * lookups share a lock; records, expiry and slot changes take it exclusively
 * (a record holds it for at most 128 blocks at a time: microseconds).
 *
 * An event loop must not wait for that lock: the thread holding it may be a
 * work thread at a lower priority, preempted mid-hold, and the loop would
 * then wait as long as the scheduler keeps that thread off the CPU (measured:
 * short requests' p99 at 100-200 ms beside 100k-token prompts). The _nowait
 * calls try the lock for a few microseconds (a hold that runs ends by then):
 * a lookup that does not get it reports -EBUSY and no match (the caller routes
 * as on a miss; counted in busy_lookups); a record that does not get it is
 * deferred, made by the next holder of the exclusive lock before its own
 * change (counted in deferred_records; past 65,536 waiting blocks it is
 * dropped and counted in dropped_records). */
#ifndef KVG_KV_APPROX_H
#define KVG_KV_APPROX_H

#include <stddef.h>
#include <stdint.h>

struct kvg_kv_approx;

struct kvg_kv_approx_opts {
    uint32_t max_workers; /* 0 = 64; at most 4096 */
    uint32_t ttl_ms;      /* 0 = 120000; at most 2^30 */
    uint64_t max_blocks;  /* (block, worker) records; 0 = 1 << 20 */
    double prune_target;  /* fraction of max_blocks kept after a prune; 0 = 0.8 */
};

struct kvg_kv_approx_stats {
    uint64_t entries, nodes, bytes, expired, pruned;
    uint64_t busy_lookups, deferred_records, dropped_records; /* the _nowait calls' */
    uint32_t workers;
};

/* *out is owned by the caller: kvg_kv_approx_free. */
int kvg_kv_approx_new(const struct kvg_kv_approx_opts *o, struct kvg_kv_approx **out);
void kvg_kv_approx_free(struct kvg_kv_approx *a);

int kvg_kv_approx_add_worker(struct kvg_kv_approx *a, uint32_t slot);
/* Drops the slot's records and frees it; returns how many went. */
int kvg_kv_approx_remove_worker(struct kvg_kv_approx *a, uint32_t slot);

/* The request with these sequence hashes was routed to slot at now_ms:
 * every block gets (or renews) a record expiring at now_ms + ttl. The
 * exclusive lock is let go every few thousand blocks, so a huge record never
 * holds lookups back for long. Returns the number of blocks recorded, KVG_ENOTFOUND for a slot that
 * is not live, -ENOMEM. */
int kvg_kv_approx_record(struct kvg_kv_approx *a, uint32_t slot, const uint64_t *seq, size_t n,
                         uint64_t now_ms);
/* Longest prefix of live records per slot (see kvg_kv_index_match);
 * records expired at now_ms are dropped first. Returns the largest. */
int kvg_kv_approx_match(struct kvg_kv_approx *a, const uint64_t *seq, size_t n, uint32_t *matched,
                        size_t nslots, uint64_t now_ms);
/* The same for a caller that must not wait (see the top): the record's
 * count, or -EBUSY when it could not be deferred either; the match's, or
 * -EBUSY with matched[] zero. */
int kvg_kv_approx_record_nowait(struct kvg_kv_approx *a, uint32_t slot, const uint64_t *seq,
                                size_t n, uint64_t now_ms);
int kvg_kv_approx_match_nowait(struct kvg_kv_approx *a, const uint64_t *seq, size_t n,
                               uint32_t *matched, size_t nslots, uint64_t now_ms);
/* Drops the records expired at now_ms; returns how many. */
int kvg_kv_approx_expire(struct kvg_kv_approx *a, uint64_t now_ms);

void kvg_kv_approx_stats(struct kvg_kv_approx *a, struct kvg_kv_approx_stats *st);

#endif
