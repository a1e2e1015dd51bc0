/* The KV-event subscriber against ZeroMQ sockets in this process on
 * 127.0.0.1: in-order batches, framing errors, a gap with no replay endpoint
 * (the worker's entries are dropped), engine restart, a gap filled by vLLM's
 * replay protocol from a ROUTER served here, an incomplete and a timed-out
 * replay, a mid-stream join, and workers added and removed at run time.
 * Every wait is bounded. */
#include <errno.h>
#include <msgpack.h>
#include <stdlib.h>
#include <time.h>
#include <zmq.h>

#include "base/err.h"
#include "base/util.h"
#include "kv/hash.h"
#include "kv/index.h"
#include "kv/subscriber.h"
#include "support/test.h"

#define BS 4
#define NB 12

static void *g_ctx;
/* Sockets of g_ctx still open: a failed CHECK skips a test's cleanup, and
 * zmq_ctx_term would then wait forever; the last test closes leftovers. */
static void *g_socks[16];

static void *track(void *sock)
{
    for (int i = 0; i < 16; i++)
        if (!g_socks[i]) {
            g_socks[i] = sock;
            break;
        }
    return sock;
}

static void sock_close(void *sock)
{
    for (int i = 0; i < 16; i++)
        if (g_socks[i] == sock) g_socks[i] = NULL;
    zmq_close(sock);
}
static uint32_t g_tok[NB * BS];
static uint64_t g_seq[NB];

static void setup(void)
{
    if (!g_ctx) g_ctx = zmq_ctx_new();
    for (int i = 0; i < NB * BS; i++) g_tok[i] = 5000u + (uint32_t)i * 13u;
    kvg_kv_hash_tokens(g_tok, NB * BS, BS, g_seq, NB);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void str(msgpack_packer *p, const char *s)
{
    msgpack_pack_str(p, strlen(s));
    msgpack_pack_str_body(p, s, strlen(s));
}

/* A batch storing blocks [from, to) of g_tok, engine hashes 100 + i. */
static void pack_store(msgpack_sbuffer *sb, int from, int to)
{
    msgpack_packer p;
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&p, sb, msgpack_sbuffer_write);
    msgpack_pack_array(&p, 3);
    msgpack_pack_double(&p, 1.0);
    msgpack_pack_array(&p, 1);
    msgpack_pack_array(&p, 5);
    str(&p, "BlockStored");
    msgpack_pack_array(&p, (size_t)(to - from));
    for (int i = from; i < to; i++) msgpack_pack_uint64(&p, 100u + (uint64_t)i);
    if (from > 0)
        msgpack_pack_uint64(&p, 100u + (uint64_t)from - 1);
    else
        msgpack_pack_nil(&p);
    msgpack_pack_array(&p, (size_t)(to - from) * BS);
    for (int i = from * BS; i < to * BS; i++) msgpack_pack_uint32(&p, g_tok[i]);
    msgpack_pack_uint32(&p, BS);
    msgpack_pack_uint32(&p, 0);
}

static void be(unsigned char *b, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8) b[i] = (unsigned char)v;
}

static void publish(void *pub, uint64_t seq, int from, int to)
{
    msgpack_sbuffer sb;
    unsigned char s[8];
    pack_store(&sb, from, to);
    be(s, seq);
    zmq_send(pub, "kv@test", 7, ZMQ_SNDMORE);
    zmq_send(pub, s, 8, ZMQ_SNDMORE);
    zmq_send(pub, sb.data, sb.size, 0);
    msgpack_sbuffer_destroy(&sb);
}

/* An XPUB bound to an ephemeral port; *ep gets its address. */
static void *mk_pub(char *ep, size_t n)
{
    void *s = track(zmq_socket(g_ctx, ZMQ_XPUB));
    int linger = 0, verbose = 1;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    /* Report every subscription, duplicates included: a re-added worker's
     * subscription may arrive before its old socket's unsubscription, and
     * a non-verbose XPUB would then swallow it. */
    zmq_setsockopt(s, ZMQ_XPUB_VERBOSE, &verbose, sizeof verbose);
    CHECK_INT(zmq_bind(s, "tcp://127.0.0.1:*"), 0);
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &n);
    return s;
}

/* Waits (bounded) until the subscriber's SUB has subscribed: from then on
 * nothing published is lost to the slow-joiner race. */
static int wait_subscribed(void *xpub)
{
    /* An earlier subscriber's unsubscription (first byte 0) may come first. */
    for (int i = 0; i < 8; i++) {
        zmq_pollitem_t it = {xpub, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, 5000) != 1) return 0;
        char buf[64];
        if (zmq_recv(xpub, buf, sizeof buf, 0) >= 1 && buf[0] == 1) return 1;
    }
    return 0;
}

static struct kvg_kv_sub_stats stats(struct kvg_kv_sub *s, uint32_t slot)
{
    struct kvg_kv_sub_stats st;
    kvg_kv_sub_stats(s, slot, &st);
    return st;
}

/* Waits (bounded) until slot has seen `n` batches + decode errors. */
static int wait_seen(struct kvg_kv_sub *s, uint32_t slot, uint64_t n)
{
    for (int i = 0; i < 2500; i++) {
        struct kvg_kv_sub_stats st = stats(s, slot);
        if (st.batches + st.decode_errors >= n) return 1;
        sleep_ms(2);
    }
    return 0;
}

static uint32_t matched(struct kvg_kv_index *idx, uint32_t slot)
{
    uint32_t out[4];
    kvg_kv_index_match(idx, g_seq, NB, out, 4);
    return out[slot];
}

static struct kvg_kv_index *mk_index(void)
{
    struct kvg_kv_index_opts o = {.block_size = BS, .max_workers = 4};
    struct kvg_kv_index *idx;
    CHECK_INT(kvg_kv_index_new(&o, &idx), 0);
    for (uint32_t w = 0; w < 4; w++) kvg_kv_index_add_worker(idx, w);
    return idx;
}

TEST(in_order_gap_without_replay_restart_and_bad_frames)
{
    setup();
    struct kvg_kv_index *idx = mk_index();
    struct kvg_kv_sub *s;
    struct kvg_kv_sub_opts o = {.threads = 2};
    CHECK_INT(kvg_kv_sub_new(idx, &o, &s), 0);
    CHECK_INT(kvg_kv_sub_add_worker(s, 0, "tcp://127.0.0.1:1", NULL), KVG_ECLOSED);
    CHECK_INT(kvg_kv_sub_start(s), 0);
    char ep[128];
    void *pub = mk_pub(ep, sizeof ep);
    CHECK_INT(kvg_kv_sub_add_worker(s, 0, ep, NULL), 0);
    CHECK_INT(kvg_kv_sub_add_worker(s, 0, ep, NULL), -EEXIST);
    CHECK_INT(kvg_kv_sub_add_worker(s, 1, "nonsense", NULL), -EINVAL);
    CHECK(wait_subscribed(pub));

    publish(pub, 0, 0, 4);
    publish(pub, 1, 4, 6);
    CHECK(wait_seen(s, 0, 2));
    CHECK_INT(matched(idx, 0), 6);
    struct kvg_kv_sub_stats st = stats(s, 0);
    CHECK_INT(st.last_seq, 1);
    CHECK_INT(st.blocks_stored, 6);
    CHECK_INT(st.events, 2);
    CHECK_INT(st.gaps, 0);
    CHECK_INT(st.active, 1);

    /* Seq 2..4 lost, no replay endpoint: everything of worker 0 goes, and
     * the batch that revealed the gap is applied (a new root here). */
    publish(pub, 5, 0, 2);
    CHECK(wait_seen(s, 0, 3));
    st = stats(s, 0);
    CHECK_INT(st.gaps, 1);
    CHECK_INT(st.drops, 1);
    CHECK_INT(matched(idx, 0), 2);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 0), 2);

    /* Framing errors: 2 frames, 4 frames, a 4-byte sequence, a bad payload. */
    zmq_send(pub, "t", 1, ZMQ_SNDMORE);
    zmq_send(pub, "12345678", 8, 0);
    zmq_send(pub, "t", 1, ZMQ_SNDMORE);
    zmq_send(pub, "12345678", 8, ZMQ_SNDMORE);
    zmq_send(pub, "x", 1, ZMQ_SNDMORE);
    zmq_send(pub, "y", 1, 0);
    zmq_send(pub, "t", 1, ZMQ_SNDMORE);
    zmq_send(pub, "1234", 4, ZMQ_SNDMORE);
    zmq_send(pub, "\x90", 1, 0);
    unsigned char sq[8];
    be(sq, 6);
    zmq_send(pub, "t", 1, ZMQ_SNDMORE);
    zmq_send(pub, sq, 8, ZMQ_SNDMORE);
    zmq_send(pub, "\xc1", 1, 0);
    CHECK(wait_seen(s, 0, 7));
    st = stats(s, 0);
    CHECK_INT(st.decode_errors, 4);
    CHECK_INT(st.last_seq, 6);
    CHECK_INT(matched(idx, 0), 2);

    /* Back to 0: the engine restarted. */
    publish(pub, 0, 0, 3);
    CHECK(wait_seen(s, 0, 8));
    st = stats(s, 0);
    CHECK_INT(st.restarts, 1);
    CHECK_INT(st.drops, 2);
    CHECK_INT(matched(idx, 0), 3);

    /* Removal at run time: nothing more arrives for the slot. */
    CHECK_INT(kvg_kv_sub_remove_worker(s, 0), 0);
    CHECK_INT(kvg_kv_sub_remove_worker(s, 0), -ENOENT);
    CHECK_INT(stats(s, 0).active, 0);
    publish(pub, 1, 3, 5);
    sleep_ms(50);
    CHECK_INT(stats(s, 0).batches, 4);
    CHECK_INT(matched(idx, 0), 3);

    /* And back, on the same slot. */
    CHECK_INT(kvg_kv_sub_add_worker(s, 0, ep, NULL), 0);
    CHECK(wait_subscribed(pub));
    publish(pub, 2, 3, 5);
    CHECK(wait_seen(s, 0, 1));
    CHECK_INT(matched(idx, 0), 5);
    CHECK_INT(stats(s, 0).gaps, 0); /* a first message sets the baseline */

    kvg_kv_sub_stop(s);
    kvg_kv_sub_stop(s);
    CHECK_INT(kvg_kv_sub_add_worker(s, 1, ep, NULL), KVG_ECLOSED);
    kvg_kv_sub_free(s);
    sock_close(pub);
    kvg_kv_index_free(idx);
}

/* Serves one replay request on router: answers the given sequence numbers
 * (payload: blocks [2*q, 2*q + 2) for seq q) then the end marker unless
 * `no_end`. Returns the start sequence asked for, or -1 if none came. */
static int64_t serve_replay(void *router, const uint64_t *seqs, int n, int no_end)
{
    zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 5000) != 1) return -1;
    zmq_msg_t id;
    char empty[8];
    unsigned char start[16];
    zmq_msg_init(&id);
    zmq_msg_recv(&id, router, 0);
    if (zmq_recv(router, empty, sizeof empty, 0) != 0) return -1;
    if (zmq_recv(router, start, sizeof start, 0) != 8) return -1;
    uint64_t from = 0;
    for (int i = 0; i < 8; i++) from = from << 8 | start[i];
    for (int i = 0; i <= n; i++) {
        if (i == n && no_end) break;
        unsigned char sq[8];
        msgpack_sbuffer sb;
        if (i < n) {
            pack_store(&sb, (int)seqs[i] * 2, (int)seqs[i] * 2 + 2);
            be(sq, seqs[i]);
        } else {
            msgpack_sbuffer_init(&sb);
            memset(sq, 0xff, 8);
        }
        zmq_send(router, zmq_msg_data(&id), zmq_msg_size(&id), ZMQ_SNDMORE);
        zmq_send(router, "", 0, ZMQ_SNDMORE);
        zmq_send(router, sq, 8, ZMQ_SNDMORE);
        zmq_send(router, sb.data ? sb.data : "", sb.size, 0);
        msgpack_sbuffer_destroy(&sb);
    }
    zmq_msg_close(&id);
    return (int64_t)from;
}

TEST(gap_filled_by_replay_then_incomplete_and_timed_out_replays)
{
    setup();
    struct kvg_kv_index *idx = mk_index();
    struct kvg_kv_sub *s;
    struct kvg_kv_sub_opts o = {.replay_timeout_ms = 400};
    CHECK_INT(kvg_kv_sub_new(idx, &o, &s), 0);
    CHECK_INT(kvg_kv_sub_start(s), 0);
    char ep[128], rep[128];
    size_t n = sizeof rep;
    void *pub = mk_pub(ep, sizeof ep);
    void *router = track(zmq_socket(g_ctx, ZMQ_ROUTER));
    int linger = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    CHECK_INT(zmq_bind(router, "tcp://127.0.0.1:*"), 0);
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, rep, &n);
    CHECK_INT(kvg_kv_sub_add_worker(s, 1, ep, rep), 0);
    CHECK(wait_subscribed(pub));

    /* seq q stores blocks [2q, 2q + 2): seq 0 here, 1 and 2 lost, 3 published. */
    publish(pub, 0, 0, 2);
    CHECK(wait_seen(s, 1, 1));
    publish(pub, 3, 6, 8);
    uint64_t have[3] = {1, 2, 3}; /* 3 is past the gap: must be ignored */
    CHECK_INT(serve_replay(router, have, 3, 0), 1);
    CHECK(wait_seen(s, 1, 4));
    struct kvg_kv_sub_stats st = stats(s, 1);
    CHECK_INT(st.gaps, 1);
    CHECK_INT(st.replays, 1);
    CHECK_INT(st.replayed_batches, 2);
    CHECK_INT(st.drops, 0);
    CHECK_INT(st.last_seq, 3);
    CHECK_INT(matched(idx, 1), 8);

    /* Gap 4..5 but the engine only has 5: a hole, so the worker is dropped.
     * Seq 5 then continues a chain the index no longer has (orphan); seq 6
     * starts a new one. */
    publish(pub, 6, 0, 2);
    uint64_t only5[1] = {5};
    CHECK_INT(serve_replay(router, only5, 1, 0), 4);
    CHECK(wait_seen(s, 1, 6));
    st = stats(s, 1);
    CHECK_INT(st.gaps, 2);
    CHECK_INT(st.replay_failures, 1);
    CHECK_INT(st.drops, 1);
    CHECK_INT(st.orphans, 1);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 1), 2);
    CHECK_INT(matched(idx, 1), 2);

    /* Gap with a replay that never ends: timeout, dropped. */
    publish(pub, 9, 0, 1);
    CHECK_INT(serve_replay(router, NULL, 0, 1), 7);
    CHECK(wait_seen(s, 1, 7));
    st = stats(s, 1);
    CHECK_INT(st.gaps, 3);
    CHECK_INT(st.replay_failures, 2);
    CHECK_INT(st.drops, 2);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 1), 1);

    /* A worker joining mid-stream fetches what the engine still buffers. */
    char ep2[128];
    void *pub2 = mk_pub(ep2, sizeof ep2);
    CHECK_INT(kvg_kv_sub_add_worker(s, 2, ep2, rep), 0);
    CHECK(wait_subscribed(pub2));
    publish(pub2, 3, 6, 8);
    uint64_t buffered[2] = {1, 2}; /* 0 is gone from the engine's buffer */
    CHECK_INT(serve_replay(router, buffered, 2, 0), 0);
    CHECK(wait_seen(s, 2, 3));
    st = stats(s, 2);
    CHECK_INT(st.gaps, 0);
    CHECK_INT(st.replays, 1);
    CHECK_INT(st.drops, 0);
    CHECK_INT(st.orphans, 3); /* their parents were in the lost seq 0 */

    kvg_kv_sub_free(s);
    sock_close(pub);
    sock_close(pub2);
    sock_close(router);
    kvg_kv_index_free(idx);
}

TEST(events_for_a_slot_the_index_removed_are_harmless)
{
    setup();
    struct kvg_kv_index *idx = mk_index();
    struct kvg_kv_sub *s;
    CHECK_INT(kvg_kv_sub_new(idx, NULL, &s), 0);
    CHECK_INT(kvg_kv_sub_start(s), 0);
    char ep[128];
    void *pub = mk_pub(ep, sizeof ep);
    CHECK_INT(kvg_kv_sub_add_worker(s, 3, ep, NULL), 0);
    CHECK(wait_subscribed(pub));
    CHECK_INT(kvg_kv_index_remove_worker(idx, 3), 0);
    publish(pub, 0, 0, 4);
    CHECK(wait_seen(s, 3, 1));
    CHECK_INT(matched(idx, 3), 0);
    CHECK_INT(kvg_kv_index_worker_entries(idx, 3), 0);
    kvg_kv_sub_free(s);
    sock_close(pub);
    kvg_kv_index_free(idx);
    for (int i = 0; i < 16; i++)
        if (g_socks[i]) sock_close(g_socks[i]);
    zmq_ctx_term(g_ctx);
    g_ctx = NULL;
}
