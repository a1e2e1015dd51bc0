/* The KV event publisher thread; see kvpub.h for the wire protocol.
 *
 * publish() assigns the sequence number and appends to a bounded queue under
 * a mutex, then pokes an eventfd. The thread owns both ZeroMQ sockets (they
 * are created and bound in start() so errors reach the caller, and handed
 * over by pthread_create, which ZeroMQ allows for a socket used by one thread
 * at a time). It waits in zmq_poll on the eventfd and the ROUTER socket,
 * sends queued batches in order, keeps them in the replay ring, and answers
 * replay requests from that ring. The ring is touched only by the thread. */
#include "simsrv/kvpub.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include "base/util.h"

struct item {
    uint64_t seq;
    void *data;
    size_t len;
};

struct kvg_simsrv_kvpub {
    void *ctx, *pub, *router;
    char *topic;
    size_t topic_len;
    char endpoint[256], replay_endpoint[256];
    int efd;
    pthread_t thread;
    int thread_started;

    pthread_mutex_t mu; /* guards the queue, next_seq, stopping and st */
    struct item *q;
    size_t qcap, qhead, qlen;
    uint64_t next_seq;
    int stopping;
    struct kvg_simsrv_kvpub_stats st;

    /* publisher thread only */
    struct item *ring;
    size_t rcap, rhead, rlen;
    double drop;
    struct kvg_rng rng;
};

void kvg_simsrv_kvpub_config_init(struct kvg_simsrv_kvpub_config *c)
{
    memset(c, 0, sizeof *c);
    c->buffer_steps = 10000;
    c->max_queue = 100000;
    c->hwm = 100000;
}

/* Keeps a sent batch for replay (or frees it when there is no ring). */
static void ring_push(struct kvg_simsrv_kvpub *p, struct item it)
{
    if (!p->rcap) {
        free(it.data);
        return;
    }
    if (p->rlen == p->rcap) {
        free(p->ring[p->rhead].data);
        p->rhead = (p->rhead + 1) % p->rcap;
        p->rlen--;
    }
    p->ring[(p->rhead + p->rlen) % p->rcap] = it;
    p->rlen++;
}

static void send_batch(struct kvg_simsrv_kvpub *p, struct item it)
{
    int drop = p->drop > 0 && kvg_rng_double(&p->rng) < p->drop;
    int ok = 0;
    if (!drop) {
        uint8_t seq[8];
        kvg_be64_put(seq, it.seq);
        ok = zmq_send(p->pub, p->topic, p->topic_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
             zmq_send(p->pub, seq, 8, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
             zmq_send(p->pub, it.data, it.len, ZMQ_DONTWAIT) >= 0;
    }
    pthread_mutex_lock(&p->mu);
    if (drop)
        p->st.dropped_random++;
    else if (ok)
        p->st.sent++;
    pthread_mutex_unlock(&p->mu);
    ring_push(p, it);
}

static int send_frames(void *s, const void *id, size_t idlen, const uint8_t seq[8],
                       const void *data, size_t len)
{
    const int f = ZMQ_SNDMORE | ZMQ_DONTWAIT;
    if (zmq_send(s, id, idlen, f) < 0 || zmq_send(s, "", 0, f) < 0 || zmq_send(s, seq, 8, f) < 0)
        return -1;
    return zmq_send(s, data, len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

/* Answers one replay request: [identity, "", start_seq]. Anything else is
 * read to its end and ignored, as vLLM does. Returns 0 when no message was
 * waiting. */
static int replay_one(struct kvg_simsrv_kvpub *p)
{
    zmq_msg_t f[3];
    int nf = 0, more = 1, got = 0;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, p->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            break;
        }
        got = 1;
        more = zmq_msg_more(&m);
        if (nf < 3)
            f[nf] = m;
        else
            zmq_msg_close(&m);
        nf++;
    }
    if (!got) return 0;
    if (nf == 3 && zmq_msg_size(&f[2]) == 8) {
        uint64_t start = kvg_be64_get(zmq_msg_data(&f[2]));
        const void *id = zmq_msg_data(&f[0]);
        size_t idlen = zmq_msg_size(&f[0]);
        uint64_t n = 0;
        for (size_t i = 0; i < p->rlen; i++) {
            const struct item *it = &p->ring[(p->rhead + i) % p->rcap];
            if (it->seq < start) continue;
            uint8_t seq[8];
            kvg_be64_put(seq, it->seq);
            if (send_frames(p->router, id, idlen, seq, it->data, it->len)) break;
            n++;
        }
        static const uint8_t end[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        send_frames(p->router, id, idlen, end, "", 0);
        pthread_mutex_lock(&p->mu);
        p->st.replay_requests++;
        p->st.replayed += n;
        pthread_mutex_unlock(&p->mu);
    }
    for (int i = 0; i < nf && i < 3; i++) zmq_msg_close(&f[i]);
    return 1;
}

/* Wakes the thread. A failed write means the counter is already non-zero
 * (the thread is awake) or the thread polls again within 200 ms anyway. */
static void poke(int efd)
{
    uint64_t one = 1;
    ssize_t n = write(efd, &one, sizeof one);
    (void)n;
}

static void *run(void *arg)
{
    struct kvg_simsrv_kvpub *p = arg;
    zmq_pollitem_t items[2] = {{NULL, p->efd, ZMQ_POLLIN, 0}, {p->router, 0, ZMQ_POLLIN, 0}};
    int nitems = p->router ? 2 : 1;
    for (;;) {
        for (;;) {
            pthread_mutex_lock(&p->mu);
            if (!p->qlen) break; /* leaves the mutex held */
            struct item it = p->q[p->qhead];
            p->qhead = (p->qhead + 1) % p->qcap;
            p->qlen--;
            pthread_mutex_unlock(&p->mu);
            send_batch(p, it);
        }
        int done = p->stopping;
        pthread_mutex_unlock(&p->mu);
        if (done) break;
        if (zmq_poll(items, nitems, 200) < 0 && zmq_errno() != EINTR) break;
        if (items[0].revents & ZMQ_POLLIN) {
            uint64_t v;
            ssize_t n = read(p->efd, &v, sizeof v); /* EAGAIN: already drained */
            (void)n;
        }
        if (nitems > 1 && (items[1].revents & ZMQ_POLLIN))
            for (int k = 0; k < 64 && replay_one(p); k++) continue;
    }
    return NULL;
}

int64_t kvg_simsrv_kvpub_publish(struct kvg_simsrv_kvpub *p, void *payload, size_t len)
{
    pthread_mutex_lock(&p->mu);
    uint64_t seq = p->next_seq++;
    p->st.published++;
    if (p->qlen == p->qcap || p->stopping) {
        p->st.dropped_queue++;
        pthread_mutex_unlock(&p->mu);
        free(payload);
        return -EAGAIN;
    }
    p->q[(p->qhead + p->qlen) % p->qcap] = (struct item){seq, payload, len};
    p->qlen++;
    pthread_mutex_unlock(&p->mu);
    poke(p->efd);
    return (int64_t)seq;
}

static int zfail(const char *what, const char *ep, char *err, size_t errlen)
{
    int e = zmq_errno();
    if (err && errlen) snprintf(err, errlen, "%s %s: %s", what, ep, zmq_strerror(e));
    return e > 0 ? -e : -EINVAL;
}

static void destroy(struct kvg_simsrv_kvpub *p)
{
    if (p->pub) zmq_close(p->pub);
    if (p->router) zmq_close(p->router);
    if (p->ctx) zmq_ctx_term(p->ctx);
    for (size_t i = 0; i < p->qlen; i++) free(p->q[(p->qhead + i) % p->qcap].data);
    for (size_t i = 0; i < p->rlen; i++) free(p->ring[(p->rhead + i) % p->rcap].data);
    if (p->efd >= 0) close(p->efd);
    pthread_mutex_destroy(&p->mu);
    free(p->q);
    free(p->ring);
    free(p->topic);
    free(p);
}

int kvg_simsrv_kvpub_start(const struct kvg_simsrv_kvpub_config *c, struct kvg_simsrv_kvpub **out,
                           char *err, size_t errlen)
{
    if (!c->endpoint || !*c->endpoint || !c->max_queue || c->hwm < 0 || !(c->drop_prob >= 0) ||
        c->drop_prob > 1) {
        if (err && errlen) snprintf(err, errlen, "invalid KV publisher configuration");
        return -EINVAL;
    }
    struct kvg_simsrv_kvpub *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->efd = -1;
    pthread_mutex_init(&p->mu, NULL);
    const char *topic = c->topic ? c->topic : "";
    p->topic_len = strlen(topic);
    p->topic = strdup(topic);
    p->qcap = c->max_queue;
    p->q = calloc(p->qcap, sizeof *p->q);
    p->rcap = c->buffer_steps;
    p->ring = p->rcap ? calloc(p->rcap, sizeof *p->ring) : NULL;
    p->drop = c->drop_prob;
    kvg_rng_seed(&p->rng, c->seed);
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    p->ctx = zmq_ctx_new();
    int rc = -ENOMEM;
    if (!p->topic || !p->q || (p->rcap && !p->ring) || !p->ctx) goto fail;
    if (p->efd < 0) {
        rc = -errno;
        goto fail;
    }
    p->pub = zmq_socket(p->ctx, ZMQ_PUB);
    if (!p->pub) {
        rc = zfail("socket for", c->endpoint, err, errlen);
        goto fail;
    }
    int linger = 1000;
    zmq_setsockopt(p->pub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(p->pub, ZMQ_SNDHWM, &c->hwm, sizeof c->hwm);
    if (c->connect ? zmq_connect(p->pub, c->endpoint) : zmq_bind(p->pub, c->endpoint)) {
        rc = zfail(c->connect ? "connect" : "bind", c->endpoint, err, errlen);
        goto fail;
    }
    size_t sz = sizeof p->endpoint;
    if (c->connect || zmq_getsockopt(p->pub, ZMQ_LAST_ENDPOINT, p->endpoint, &sz))
        snprintf(p->endpoint, sizeof p->endpoint, "%s", c->endpoint);
    if (c->replay_endpoint) {
        p->router = zmq_socket(p->ctx, ZMQ_ROUTER);
        if (!p->router) {
            rc = zfail("socket for", c->replay_endpoint, err, errlen);
            goto fail;
        }
        zmq_setsockopt(p->router, ZMQ_LINGER, &linger, sizeof linger);
        /* A ROUTER silently drops what exceeds its high-water mark, which
         * would cut a long replay (and its end marker) short; an answer is
         * at most the ring's contents, so no limit is needed. */
        int unlimited = 0;
        zmq_setsockopt(p->router, ZMQ_SNDHWM, &unlimited, sizeof unlimited);
        if (zmq_bind(p->router, c->replay_endpoint)) {
            rc = zfail("bind", c->replay_endpoint, err, errlen);
            goto fail;
        }
        sz = sizeof p->replay_endpoint;
        if (zmq_getsockopt(p->router, ZMQ_LAST_ENDPOINT, p->replay_endpoint, &sz))
            snprintf(p->replay_endpoint, sizeof p->replay_endpoint, "%s", c->replay_endpoint);
    }
    rc = -pthread_create(&p->thread, NULL, run, p);
    if (rc) goto fail;
    p->thread_started = 1;
    *out = p;
    return 0;
fail:
    if (rc == -ENOMEM && err && errlen) snprintf(err, errlen, "out of memory");
    destroy(p);
    return rc;
}

const char *kvg_simsrv_kvpub_endpoint(const struct kvg_simsrv_kvpub *p)
{
    return p->endpoint;
}

const char *kvg_simsrv_kvpub_replay_endpoint(const struct kvg_simsrv_kvpub *p)
{
    return p->router ? p->replay_endpoint : NULL;
}

void kvg_simsrv_kvpub_get_stats(struct kvg_simsrv_kvpub *p, struct kvg_simsrv_kvpub_stats *s)
{
    pthread_mutex_lock(&p->mu);
    *s = p->st;
    pthread_mutex_unlock(&p->mu);
}

void kvg_simsrv_kvpub_stop(struct kvg_simsrv_kvpub *p)
{
    if (!p) return;
    if (p->thread_started) {
        pthread_mutex_lock(&p->mu);
        p->stopping = 1;
        pthread_mutex_unlock(&p->mu);
        poke(p->efd);
        pthread_join(p->thread, NULL);
    }
    destroy(p);
}
