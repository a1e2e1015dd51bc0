/* ZeroMQ publisher of KV event batches, as vLLM's ZmqEventPublisher does it:
 *   - a PUB socket sending each batch as 3 frames
 *       [topic, seq (8-byte big-endian, from 0, one per batch), payload]
 *   - optionally a ROUTER "replay" socket keeping the last buffer_steps
 *     batches: a client sends [start_seq (8-byte BE)] (a DEALER prefixes an
 *     empty frame; a REQ does so itself), i.e. the server receives exactly
 *     [identity, "", start_seq], and answers every buffered batch with
 *     seq >= start_seq as [identity, "", seq, payload], then the end marker
 *     [identity, "", FF FF FF FF FF FF FF FF, ""].
 * Sockets live on a publisher thread; kvg_simsrv_kvpub_publish() only queues the
 * payload (bounded, never blocks), so the caller's loop never waits on the
 * network.
 *
 * Bind or connect: vLLM binds when the endpoint has '*' or '::' or is ipc://
 * or inproc://, and connects otherwise (so a router can bind and engines
 * connect). Here the PUB endpoint is bound unless config.connect is set: a
 * `kvgate sim` on tcp://127.0.0.1:5557 then behaves like a vLLM bound to its
 * default wildcard endpoint on port 5557, which is what tests want. A
 * wildcard port (tcp://HOST:*) binds an ephemeral port;
 * kvg_simsrv_kvpub_endpoint() tells which. The replay socket is always bound.
 *
 * drop_prob > 0 skips sending a batch with that probability (the sequence
 * number is still used, so subscribers see a gap). A dropped batch is still
 * kept for replay, as a batch lost in the network would be. */
#ifndef KVG_SIMSRV_KVPUB_H
#define KVG_SIMSRV_KVPUB_H

#include <stddef.h>
#include <stdint.h>

struct kvg_simsrv_kvpub_config {
    const char *endpoint;        /* e.g. "tcp://127.0.0.1:5557"; required */
    int connect;                 /* connect the PUB socket instead of binding it */
    const char *replay_endpoint; /* ROUTER; NULL for none */
    const char *topic;           /* topic frame; NULL = "" */
    size_t buffer_steps;         /* batches kept for replay (vLLM: 10000) */
    size_t max_queue;            /* batches waiting for the thread (vLLM: 100000) */
    int hwm;                     /* PUB send high-water mark (vLLM: 100000) */
    double drop_prob;            /* 0..1 */
    uint64_t seed;               /* for drop_prob */
};

/* vLLM's defaults, no endpoint. */
void kvg_simsrv_kvpub_config_init(struct kvg_simsrv_kvpub_config *c);

struct kvg_simsrv_kvpub;

/* Creates the sockets, binds/connects them (errors are reported here, with a
 * message in err[errlen]: -EINVAL for a bad config, ZeroMQ's -errno such as
 * -EADDRINUSE) and starts the thread. On success *out is the caller's:
 * kvg_simsrv_kvpub_stop(). */
int kvg_simsrv_kvpub_start(const struct kvg_simsrv_kvpub_config *c, struct kvg_simsrv_kvpub **out,
                           char *err, size_t errlen);

/* The endpoints actually bound (wildcard ports resolved); valid until stop. */
const char *kvg_simsrv_kvpub_endpoint(const struct kvg_simsrv_kvpub *p);
const char *kvg_simsrv_kvpub_replay_endpoint(const struct kvg_simsrv_kvpub *p);

/* Queues one encoded batch (kvg_sim_kv_encode) and takes ownership of
 * payload (malloc'd; freed by the publisher in every case). Returns the
 * batch's sequence number, or -EAGAIN when the queue is full: the batch is
 * dropped but its sequence number is used up, so subscribers see the gap.
 * Safe to call from any thread. */
int64_t kvg_simsrv_kvpub_publish(struct kvg_simsrv_kvpub *p, void *payload, size_t len);

struct kvg_simsrv_kvpub_stats {
    uint64_t published;       /* batches accepted by publish() */
    uint64_t sent;            /* sent on PUB */
    uint64_t dropped_random;  /* skipped by drop_prob */
    uint64_t dropped_queue;   /* queue full */
    uint64_t replay_requests; /* well-formed replay requests answered */
    uint64_t replayed;        /* batches sent on the replay socket */
};
void kvg_simsrv_kvpub_get_stats(struct kvg_simsrv_kvpub *p, struct kvg_simsrv_kvpub_stats *s);

/* Sends what is queued, stops the thread, closes the sockets (waiting at
 * most ~1 s for unsent messages) and frees p. NULL is a no-op. */
void kvg_simsrv_kvpub_stop(struct kvg_simsrv_kvpub *p);

#endif
