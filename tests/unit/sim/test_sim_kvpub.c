/* Unit tests for the ZeroMQ KV event publisher, over loopback TCP with
 * ephemeral ports: frames and sequence numbers on PUB, vLLM's replay
 * protocol on ROUTER (malformed requests ignored), random drops leaving
 * gaps that replay fills, connect mode, and bind errors. Every wait is
 * bounded by a receive timeout and a retry count. */
#include "support/test.h"

#include <errno.h>
#include <stdlib.h>
#include <zmq.h>

#include "simsrv/kvpub.h"

static uint64_t be64(const void *p)
{
    const uint8_t *b = p;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | b[i];
    return v;
}

static void put_be64(uint8_t *b, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8) b[i] = (uint8_t)v;
}

static int64_t pub_str(struct kvg_simsrv_kvpub *p, const char *s)
{
    char *d = strdup(s);
    CHECK(d);
    return kvg_simsrv_kvpub_publish(p, d, strlen(s));
}

struct got {
    int nframes;
    char topic[64];
    uint64_t seq;
    char payload[64];
};

/* Receives one multipart message (timeout set on the socket); 0 on timeout. */
static int recv_msg(void *s, struct got *g)
{
    memset(g, 0, sizeof *g);
    int more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < 0) {
            zmq_msg_close(&m);
            return g->nframes;
        }
        size_t n = zmq_msg_size(&m);
        const char *d = zmq_msg_data(&m);
        if (g->nframes == 0) memcpy(g->topic, d, n < 63 ? n : 63);
        if (g->nframes == 1 && n == 8) g->seq = be64(d);
        if (g->nframes == 2) memcpy(g->payload, d, n < 63 ? n : 63);
        g->nframes++;
        more = zmq_msg_more(&m);
        zmq_msg_close(&m);
    }
    return g->nframes;
}

/* Publishes probes until the subscriber sees one (PUB/SUB joins are
 * asynchronous), then drains stragglers. Returns the last probe's seq. */
static int64_t handshake(struct kvg_simsrv_kvpub *p, void *sub)
{
    int64_t last = -1;
    int seen = 0;
    struct got g;
    for (int i = 0; i < 100 && !seen; i++) {
        last = pub_str(p, "probe");
        CHECK(last >= 0);
        seen = recv_msg(sub, &g) == 3;
    }
    CHECK(seen);
    while (recv_msg(sub, &g)) continue;
    return last;
}

static void *mk_sub(void *ctx, const char *ep, int bind, char *bound)
{
    void *s = zmq_socket(ctx, ZMQ_SUB);
    int to = 100, linger = 0;
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &to, sizeof to);
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SUBSCRIBE, "kv@", 3);
    if (bind) {
        CHECK_INT(zmq_bind(s, ep), 0);
        size_t sz = 256;
        zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, bound, &sz);
    } else {
        CHECK_INT(zmq_connect(s, ep), 0);
    }
    return s;
}

/* Sends a replay request from start and collects the answer's seqs;
 * returns how many batches came before the end marker (-1: no end). */
static int replay(void *dealer, uint64_t start, uint64_t *seqs, int cap)
{
    uint8_t b[8];
    put_be64(b, start);
    CHECK(zmq_send(dealer, "", 0, ZMQ_SNDMORE) == 0);
    CHECK(zmq_send(dealer, b, 8, 0) == 8);
    int n = 0;
    for (int i = 0; i < cap + 1; i++) {
        struct got g;
        /* DEALER sees ["", seq, payload]: shift fields by one */
        if (recv_msg(dealer, &g) != 3) return -1;
        if (g.topic[0] != 0) return -1;
        /* recv_msg put frame 1 (seq) in g.seq and frame 2 in payload */
        if (g.seq == UINT64_MAX) return g.payload[0] == 0 ? n : -1;
        seqs[n++] = g.seq;
    }
    return -1;
}

TEST(pub_frames_sequence_and_replay)
{
    struct kvg_simsrv_kvpub_config c;
    kvg_simsrv_kvpub_config_init(&c);
    c.endpoint = "tcp://127.0.0.1:*";
    c.replay_endpoint = "tcp://127.0.0.1:*";
    c.topic = "kv@pod-1@m";
    c.buffer_steps = 1000;
    char err[200] = "";
    struct kvg_simsrv_kvpub *p = NULL;
    CHECK_INT(kvg_simsrv_kvpub_start(&c, &p, err, sizeof err), 0);
    CHECK(!strncmp(kvg_simsrv_kvpub_endpoint(p), "tcp://127.0.0.1:", 16));
    void *ctx = zmq_ctx_new();
    void *sub = mk_sub(ctx, kvg_simsrv_kvpub_endpoint(p), 0, NULL);
    int64_t base = handshake(p, sub) + 1;

    char buf[32];
    for (int i = 0; i < 100; i++) {
        snprintf(buf, sizeof buf, "batch-%d", i);
        CHECK_INT(pub_str(p, buf), base + i);
    }
    for (int i = 0; i < 100; i++) {
        struct got g;
        int tries = 0;
        while (recv_msg(sub, &g) == 0 && tries++ < 50) continue;
        CHECK_INT(g.nframes, 3);
        CHECK_STR(g.topic, "kv@pod-1@m");
        CHECK_INT(g.seq, base + i);
        snprintf(buf, sizeof buf, "batch-%d", i);
        CHECK_STR(g.payload, buf);
    }

    void *dealer = zmq_socket(ctx, ZMQ_DEALER);
    int to = 2000, linger = 0;
    zmq_setsockopt(dealer, ZMQ_RCVTIMEO, &to, sizeof to);
    zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof linger);
    CHECK_INT(zmq_connect(dealer, kvg_simsrv_kvpub_replay_endpoint(p)), 0);
    /* malformed (4 frames on the server side): ignored, no answer */
    CHECK(zmq_send(dealer, "", 0, ZMQ_SNDMORE) == 0);
    CHECK(zmq_send(dealer, "x", 1, ZMQ_SNDMORE) == 1);
    CHECK(zmq_send(dealer, "y", 1, 0) == 1);
    static uint64_t seqs[2000];
    int n = replay(dealer, (uint64_t)base + 50, seqs, 2000);
    CHECK_INT(n, 50);
    for (int i = 0; i < n; i++) CHECK_INT(seqs[i], base + 50 + i);
    /* from 0: everything kept, probes included */
    n = replay(dealer, 0, seqs, 2000);
    CHECK_INT(n, base + 100);
    struct kvg_simsrv_kvpub_stats st;
    kvg_simsrv_kvpub_get_stats(p, &st);
    CHECK_INT(st.published, base + 100);
    CHECK_INT(st.sent, base + 100);
    CHECK_INT(st.replay_requests, 2);
    CHECK_INT(st.replayed, 50 + base + 100);
    CHECK_INT(st.dropped_random + st.dropped_queue, 0);
    kvg_simsrv_kvpub_stop(p);
    zmq_close(dealer);
    zmq_close(sub);
    zmq_ctx_term(ctx);
}

TEST(random_drops_leave_gaps_that_replay_fills)
{
    struct kvg_simsrv_kvpub_config c;
    kvg_simsrv_kvpub_config_init(&c);
    c.endpoint = "tcp://127.0.0.1:*";
    c.replay_endpoint = "tcp://127.0.0.1:*";
    c.topic = "kv@x";
    c.drop_prob = 0.3;
    c.seed = 99;
    struct kvg_simsrv_kvpub *p = NULL;
    CHECK_INT(kvg_simsrv_kvpub_start(&c, &p, NULL, 0), 0);
    void *ctx = zmq_ctx_new();
    void *sub = mk_sub(ctx, kvg_simsrv_kvpub_endpoint(p), 0, NULL);
    int64_t base = handshake(p, sub) + 1;
    for (int i = 0; i < 1500; i++) CHECK_INT(pub_str(p, "b"), base + i);
    static uint8_t seen[1500];
    int got = 0, idle = 0;
    while (idle < 10) { /* ends after ~1 s of silence */
        struct got g;
        if (recv_msg(sub, &g) != 3) {
            idle++;
            continue;
        }
        idle = 0;
        CHECK(g.seq >= (uint64_t)base && g.seq < (uint64_t)base + 1500);
        seen[g.seq - base] = 1;
        got++;
    }
    CHECK(got > 900 && got < 1200); /* ~1050 expected */
    void *dealer = zmq_socket(ctx, ZMQ_DEALER);
    int to = 2000, linger = 0;
    zmq_setsockopt(dealer, ZMQ_RCVTIMEO, &to, sizeof to);
    zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof linger);
    CHECK_INT(zmq_connect(dealer, kvg_simsrv_kvpub_replay_endpoint(p)), 0);
    /* more than ZeroMQ's default high-water mark of 1000 messages */
    static uint64_t seqs[1600];
    CHECK_INT(replay(dealer, (uint64_t)base, seqs, 1600), 1500);
    for (int i = 0; i < 1500; i++) seen[seqs[i] - base] = 1;
    for (int i = 0; i < 1500; i++) CHECK(seen[i]);
    struct kvg_simsrv_kvpub_stats st;
    kvg_simsrv_kvpub_get_stats(p, &st);
    CHECK_INT(st.sent + st.dropped_random, st.published);
    kvg_simsrv_kvpub_stop(p);
    zmq_close(dealer);
    zmq_close(sub);
    zmq_ctx_term(ctx);
}

TEST(connect_mode_reaches_a_bound_subscriber)
{
    void *ctx = zmq_ctx_new();
    char ep[256] = "";
    void *sub = mk_sub(ctx, "tcp://127.0.0.1:*", 1, ep);
    struct kvg_simsrv_kvpub_config c;
    kvg_simsrv_kvpub_config_init(&c);
    c.endpoint = ep;
    c.connect = 1;
    c.topic = "kv@c";
    c.buffer_steps = 0;
    struct kvg_simsrv_kvpub *p = NULL;
    CHECK_INT(kvg_simsrv_kvpub_start(&c, &p, NULL, 0), 0);
    CHECK_STR(kvg_simsrv_kvpub_endpoint(p), ep);
    CHECK(kvg_simsrv_kvpub_replay_endpoint(p) == NULL);
    CHECK(handshake(p, sub) >= 0);
    kvg_simsrv_kvpub_stop(p);
    zmq_close(sub);
    zmq_ctx_term(ctx);
}

TEST(bind_errors_and_bad_config_are_reported)
{
    struct kvg_simsrv_kvpub_config c;
    kvg_simsrv_kvpub_config_init(&c);
    char err[200] = "";
    struct kvg_simsrv_kvpub *p = NULL, *q = NULL;
    CHECK_INT(kvg_simsrv_kvpub_start(&c, &p, err, sizeof err), -EINVAL);
    c.endpoint = "tcp://127.0.0.1:*";
    c.drop_prob = 1.5;
    CHECK_INT(kvg_simsrv_kvpub_start(&c, &p, err, sizeof err), -EINVAL);
    c.drop_prob = 0;
    CHECK_INT(kvg_simsrv_kvpub_start(&c, &p, err, sizeof err), 0);
    char ep[256];
    snprintf(ep, sizeof ep, "%s", kvg_simsrv_kvpub_endpoint(p));
    c.endpoint = ep;
    err[0] = 0;
    CHECK_INT(kvg_simsrv_kvpub_start(&c, &q, err, sizeof err), -EADDRINUSE);
    CHECK(strstr(err, "bind") != NULL);
    c.endpoint = "nonsense://x";
    CHECK(kvg_simsrv_kvpub_start(&c, &q, err, sizeof err) < 0);
    kvg_simsrv_kvpub_stop(p);
    kvg_simsrv_kvpub_stop(NULL);
}
