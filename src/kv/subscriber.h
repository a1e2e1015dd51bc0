/* KV-event subscriber: one ZeroMQ SUB socket per worker endpoint, feeding
 * the precise index of one pool.
 *
 * Wire (vLLM's, also SGLang's): each message is exactly three frames,
 * [topic, sequence number as 8-byte big-endian, msgpack EventBatch]; any
 * other shape counts as a decode error. All topics are subscribed.
 * Sequence numbers count batches per publisher, from 0:
 *   - next expected: decode and apply to the worker's slot;
 *   - a jump forward (lost batches): with a replay endpoint, ask it for the
 *     missing range (a DEALER speaking vLLM's replay protocol: send the start
 *     sequence as 8-byte big-endian, receive [seq, payload] messages until the
 *     end marker seq = -1) and apply them in order; without one, or when the
 *     replay fails or is incomplete, drop the worker's entries (the index
 *     must not claim blocks whose removal may have been lost) and log it;
 *   - back to 0 (or any step back): the engine restarted, drop the entries.
 * An unreadable event is skipped and the rest of its batch applied; if it
 * was a BlockRemoved the worker's entries are dropped (its removal is lost).
 * A first message with a sequence above 0 is a mid-stream join: if a replay
 * endpoint exists, whatever the engine still buffers is fetched first.
 *
 * Threads: `threads` background threads, worker slot s served by thread
 * s % threads (so one worker's batches stay in order). All ZeroMQ sockets
 * live on their thread; add/remove/stop are commands sent to it and are
 * synchronous for the caller. A replay blocks that thread for at most
 * replay_timeout_ms. Counters are atomics, readable at any time. */
#ifndef KVG_KV_SUBSCRIBER_H
#define KVG_KV_SUBSCRIBER_H

#include <stddef.h>
#include <stdint.h>

#include "kv/index.h"

struct kvg_kv_sub;

/* Called on the subscriber thread for every batch decoded from slot's
 * endpoint, before it is applied: dp_rank is the batch's
 * data_parallel_rank (-1: nil or absent, not data parallel), so the caller
 * can attribute it to the logical worker URL@rank. The batch is the
 * thread's scratch, valid only during the call. */
typedef void (*kvg_kv_sub_batch_cb)(void *arg, uint32_t slot, int64_t dp_rank,
                                    const struct kvg_kv_batch *b);

struct kvg_kv_sub_opts {
    kvg_kv_sub_batch_cb on_batch; /* nullable */
    void *on_batch_arg;
    uint32_t threads;           /* 0 = 1 */
    uint32_t replay_timeout_ms; /* 0 = 2000 */
    uint64_t max_msg_bytes;     /* per message (ZMQ_MAXMSGSIZE); 0 = 64 MiB */
    int rcvhwm;                 /* SUB receive high-water mark; 0 = 100000 */
    struct kvg_kv_batch_limits limits;
};

struct kvg_kv_sub_stats {
    uint64_t batches;         /* batches decoded and applied */
    uint64_t events;          /* events in them */
    uint64_t blocks_stored;   /* router blocks stored/refreshed */
    uint64_t blocks_removed;  /* entries removed by BlockRemoved */
    uint64_t clears;          /* AllBlocksCleared events */
    uint64_t gaps;            /* forward jumps in the sequence */
    uint64_t decode_errors;   /* bad framing or malformed batches */
    uint64_t replays;         /* replays that filled a gap completely */
    uint64_t replay_failures; /* replays that timed out or came back incomplete */
    uint64_t replayed_batches;
    uint64_t restarts;     /* sequence went back: engine restart */
    uint64_t drops;        /* times the worker's entries were dropped */
    uint64_t mismatches;   /* BlockStored skipped: block size not a multiple */
    uint64_t orphans;      /* BlockStored skipped: unknown parent */
    uint64_t inconsistent; /* BlockStored skipped: tokens != hashes x size */
    uint64_t bad_events;   /* events skipped as unreadable (their batches kept) */
    int64_t dp_rank;       /* data_parallel_rank of the last batch, -1 for none */
    int64_t last_seq;      /* last sequence applied, -1 before the first */
    int active;            /* the slot is subscribed */
};

/* Creates a stopped subscriber feeding idx (not owned; must outlive it).
 * *out is owned by the caller: kvg_kv_sub_free. */
int kvg_kv_sub_new(struct kvg_kv_index *idx, const struct kvg_kv_sub_opts *o,
                   struct kvg_kv_sub **out);
/* Starts the threads. 0 or a negative code. */
int kvg_kv_sub_start(struct kvg_kv_sub *s);
/* Subscribes slot to endpoint ("tcp://host:port"), with an optional replay
 * endpoint (NULL: none). The slot must be live in the index for events to
 * land. Strings are copied. -EEXIST if subscribed, -EINVAL for a bad
 * endpoint, KVG_ECLOSED if not started. */
int kvg_kv_sub_add_worker(struct kvg_kv_sub *s, uint32_t slot, const char *endpoint,
                          const char *replay_endpoint);
/* Unsubscribes slot (its index entries are the pool's to remove). -ENOENT. */
int kvg_kv_sub_remove_worker(struct kvg_kv_sub *s, uint32_t slot);
/* Copies slot's counters (they survive removal until the slot is re-added). */
int kvg_kv_sub_stats(struct kvg_kv_sub *s, uint32_t slot, struct kvg_kv_sub_stats *out);
/* Stops and joins the threads, closing every socket. Idempotent. */
void kvg_kv_sub_stop(struct kvg_kv_sub *s);
/* Stops if needed and frees. */
void kvg_kv_sub_free(struct kvg_kv_sub *s);

#endif
