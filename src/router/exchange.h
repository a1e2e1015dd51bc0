/* The routing history kvgate replicas exchange (issue 37): without engine KV
 * events each replica's approximate index is only what it routed itself,
 * 1/N of the fleet's (bench/results/fleet.md). Every pick is published as a
 * record (the worker's URL, the model, the prompt's chained block hashes and
 * token count); every E ms a replica sends the records it made since its
 * last batch to its peers, and a peer applies each one through its policy's
 * `place` hook (router/policy.h) exactly as a pick of that worker would: the
 * same approximate index, the same placement count. The offline simulator
 * (src/bench/des_fleet.c) and kvgate serve (src/serve/peers.c) use this one
 * outbox, encoding and decoder.
 *
 * The outbox is bounded in bytes (a batch's cap): past it the oldest
 * records go (counted), since a late record is worth less than a new one.
 *
 * A policy whose history is the prompt's text, not its blocks (cache_aware's
 * character tree: policy.h, places_text), has its records carry the routing
 * text too: its first KVG_EXCHANGE_MAX_TEXT bytes, fewer if the record
 * would otherwise fill more than half a batch (a prefix of the text is
 * still a prefix its tree can match). A policy that says what its records
 * carry instead (policy.h, record_text: manual's routing key) has that as
 * the text. A batch with such a record is
 * version 2; one without is version 1, byte for byte what replicas before
 * version 2 send and read, so a fleet of prefix_affinity upgrades in any
 * order. A replica that reads only version 1 refuses a version 2 batch
 * whole (400), which its sender counts as a failed call.
 *
 * An outbox given a pool (kvg_exchange_set_loads) also sends, in every
 * batch, the sender's in-flight count of each of the pool's workers
 * (version 3): with N replicas behind a balancer each counts about 1/N of
 * a worker's requests, and the engine's own gauges lag the picks of their
 * last step or two (vLLM publishes them at a step's end), so a load guard
 * read on either let 8 replicas of `prefix_hash` pile chat sessions onto
 * one worker (p90 TTFT 4.17x one replica's, bench/results/fleet.md). The
 * receiver keeps each sender's last counts (struct kvg_exchange_peers) and
 * a worker's load becomes its own count plus the peers' (policy.h,
 * kvg_policy_shared_load). A reader of versions 1 and 2 only refuses a
 * version 3 batch whole, as version 2 was: such a replica routes without
 * its newer peers' history until it is upgraded.
 *
 * A batch on the wire (little-endian):
 *   "KVGX" u8 version (1, 2 or 3) u8 0 u16 nstr u64 sender u64 seq u16 from u32 nrec
 *   nstr x (u16 len, len bytes: printable ASCII, 1..KVG_EXCHANGE_MAX_STR)
 *   [version 3: u16 nload, nload x (u16 worker, u32 in_flight)]
 *   nrec x (u16 worker, u16 model, u32 block_size, u32 ntokens, u32 nblocks,
 *           [version 2, 3: u32 text_len,] nblocks x u64 hash, [text_len bytes])
 * worker, model and from index the strings (model and from 0xffff: none);
 * sender is a random id of the sending process (a replica ignores its own
 * batches), seq counts its batches. A record holds the prompt's full blocks
 * only: ntokens / block_size == nblocks, nblocks <= KVG_EXCHANGE_MAX_BLOCKS
 * (a longer prompt's first blocks, its ntokens cut to match), and
 * 1 <= nblocks unless it has text (a router that does not tokenize for its
 * policy sends the text alone); text_len <= KVG_EXCHANGE_MAX_TEXT, any
 * bytes; a load's worker indexes the strings, in_flight <= KVG_EXCHANGE_MAX_INFLIGHT.
 * Anything else, trailing bytes included, refuses the whole batch. */
#ifndef KVG_ROUTER_EXCHANGE_H
#define KVG_ROUTER_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "router/policy.h"

#define KVG_EXCHANGE_VERSION 3 /* the highest this build writes and reads */
/* A load's in-flight count at most: more is not a count kvgate keeps. */
#define KVG_EXCHANGE_MAX_INFLIGHT 1000000u
/* A record's text at most: 32k tokens at 4 characters a token. Past it
 * a peer's tree holds the prompt's first 128 KiB only. */
#define KVG_EXCHANGE_MAX_TEXT (128u * 1024)
#define KVG_EXCHANGE_MAX_STR 512
#define KVG_EXCHANGE_MAX_BLOCKS 8192 /* 128k tokens at 16 a block */
#define KVG_EXCHANGE_MAX_BLOCK_SIZE 4096
#define KVG_EXCHANGE_NONE 0xffffu
/* The default cap of a batch (and of the outbox): 256 KiB, about 32,000
 * blocks, applied by a peer in a few milliseconds. */
#define KVG_EXCHANGE_DEFAULT_BYTES (256u * 1024)
#define KVG_EXCHANGE_CONTENT_TYPE "application/x-kvgate-exchange"

struct kvg_pool;
struct kvg_exchange;

struct kvg_exchange_stats {
    uint64_t published, dropped, batches, records_sent;
    size_t queued, queued_bytes;
};

/* max_bytes: the cap of one encoded batch (0: the default; at least 4 KiB).
 * *out is the caller's: kvg_exchange_free. 0, -EINVAL or -ENOMEM. */
int kvg_exchange_new(size_t max_bytes, struct kvg_exchange **out);
void kvg_exchange_free(struct kvg_exchange *x);

/* Queues a record (copied; text {NULL, 0} for none, else cut as above).
 * Thread-safe. 1 queued, 0 nothing to share (neither blocks nor text, a
 * string too long), -ENOMEM. */
int kvg_exchange_publish(struct kvg_exchange *x, const char *worker, struct kvg_str model,
                         uint32_t block_size, uint32_t ntokens, const uint64_t *hashes, size_t n,
                         struct kvg_str text);
/* The pool's on_pick hook (router/pool.h): publishes the pick's record,
 * with the routing text when the policy that picked places on it. ud is
 * the struct kvg_exchange. */
void kvg_exchange_on_pick(void *ud, struct kvg_worker *w, const struct kvg_policy *policy,
                          const struct kvg_route_ctx *ctx);

/* Every batch from now on carries p's workers' in-flight counts (version 3);
 * NULL: none (versions 1 and 2). p outlives x's flushes; its read lock is
 * taken while a batch is encoded. */
void kvg_exchange_set_loads(struct kvg_exchange *x, struct kvg_pool *p);

/* Takes every queued record and encodes them as one batch, appended to out
 * (from: the sender's own address, or NULL); with none queued, a batch of
 * no records (a heartbeat). Returns the records encoded, or a negative code
 * (the records are dropped then, counted). Thread-safe. */
int kvg_exchange_flush(struct kvg_exchange *x, uint64_t sender, uint64_t seq, const char *from,
                       struct kvg_buf *out);

void kvg_exchange_stats(struct kvg_exchange *x, struct kvg_exchange_stats *st);

/* A decoded batch's head and one of its records (views into the batch,
 * hashes copied into aligned memory). */
struct kvg_exchange_head {
    uint32_t version;
    uint64_t sender, seq;
    struct kvg_str from; /* {NULL, 0}: none */
    uint32_t nrec;
};
struct kvg_exchange_rec {
    struct kvg_str worker, model; /* model {NULL, 0}: none */
    uint32_t block_size, ntokens;
    const uint64_t *hashes; /* NULL when nblocks is 0 */
    size_t nblocks;
    struct kvg_str text; /* the routing text's first bytes, any bytes; {NULL, 0}: none */
};

/* Checks the whole batch (len bytes, at most max_bytes) first; only a valid
 * one is then walked, each record given to each (a non-zero return stops
 * the walk and is returned). h (optional) gets the head. Returns the
 * records walked, KVG_ETOOBIG past max_bytes, KVG_EPARSE with why (a short
 * phrase) for anything malformed, -ENOMEM. */
int kvg_exchange_decode(const void *data, size_t len, size_t max_bytes, struct kvg_exchange_head *h,
                        int (*each)(void *ud, const struct kvg_exchange_rec *r), void *ud,
                        const char **why);

/* The peers' in-flight counts as last heard, one entry per sender (its
 * random id), at most KVG_EXCHANGE_MAX_PEERS (past it the one heard longest
 * ago goes). A sender not heard within ttl_ms is forgotten (a replica that
 * died or is cut off stops counting), and with no sender left a worker's
 * load is what it was before the exchange (the engine's sample). Each
 * change writes every worker's peer_in_flight (worker.h): the sum of the
 * live senders' counts of its URL. Thread-safe; *out is the caller's. */
#define KVG_EXCHANGE_MAX_PEERS 64
struct kvg_exchange_peers;
int kvg_exchange_peers_new(uint64_t ttl_ms, struct kvg_exchange_peers **out);
/* The ttl for a batch period: three periods, 2.5 s at least (a quiet
 * replica sends a heartbeat every second). serve and the offline fleet
 * both forget a peer by it. */
uint64_t kvg_exchange_peers_ttl_ms(uint32_t exchange_ms);
void kvg_exchange_peers_free(struct kvg_exchange_peers *t);
/* The load section of a batch kvg_exchange_decode accepted (h its head),
 * as its sender's counts from now on, into t and p's workers. Returns the
 * counts read (0 for a batch of version 1 or 2, which says nothing of the
 * sender's load and leaves its entry as it was), or a negative code. */
int kvg_exchange_peers_apply(struct kvg_exchange_peers *t, struct kvg_pool *p,
                             const struct kvg_exchange_head *h, const void *data, size_t len,
                             uint64_t now_ms);
/* Forgets the senders not heard within the ttl and writes p's workers
 * again (also after p's workers change). Returns the senders left. */
size_t kvg_exchange_peers_expire(struct kvg_exchange_peers *t, struct kvg_pool *p, uint64_t now_ms);

/* Applies r to pool p as a pick of its worker would be remembered
 * (kvg_pool_place): policy is the one its model routes with (NULL: the
 * pool's); nowait as struct kvg_route_ctx's (on an event loop). Every
 * record also counts as a pick of the worker until its engine's next load
 * sample (kvg_pool_peer_pick, policy.h kvg_policy_shared_load). A record of
 * text alone is not placed for a policy that does not place on text (it
 * would count a placement of nothing). 0, or KVG_ENOTFOUND when p has no
 * worker of that URL (the peer knows another). */
int kvg_exchange_apply(struct kvg_pool *p, struct kvg_policy *policy,
                       const struct kvg_exchange_rec *r, uint64_t now_ms, int nowait);

#endif
