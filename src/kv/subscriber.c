/* KV-event subscriber threads: ZeroMQ SUB sockets, framing, sequence
 * tracking, vLLM replay on gaps, and application to the index. See
 * subscriber.h for the protocol and the threading contract. */
#include "kv/subscriber.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"

#define BURST 64           /* messages taken from one socket before polling again */
#define END_SEQ UINT64_MAX /* replay end marker: -1 as 8 big-endian bytes */

struct wstats {
    _Atomic uint64_t batches, events, blocks_stored, blocks_removed, clears, gaps, decode_errors,
        replays, replay_failures, replayed_batches, restarts, drops, mismatches, orphans,
        inconsistent, bad_events;
    _Atomic int64_t last_seq, dp_rank;
    _Atomic int active;
};

/* A subscribed worker; owned by its thread. */
struct sub_worker {
    uint32_t slot;
    void *sock;
    char *endpoint, *replay; /* owned copies; replay may be NULL */
    int have_seq;
    uint64_t last_seq;
    int warned_mismatch;
};

enum { CMD_ADD, CMD_REMOVE, CMD_STOP };

struct cmd {
    int op;
    uint32_t slot;
    const char *endpoint, *replay;
    int rc;
};

struct sub_thread {
    struct kvg_kv_sub *s;
    pthread_t th;
    int started;
    void *ctrl_in;  /* PAIR, used by the thread */
    void *ctrl_out; /* PAIR, used by callers under mu */
    pthread_mutex_t mu;
    /* The command being run: handed over under cmd_mu (the PAIR message only
     * wakes the thread), so the handover is visible to thread checkers. */
    pthread_mutex_t cmd_mu;
    struct cmd *pending;
    struct sub_worker *w;
    size_t nw, capw;
    struct kvg_kv_batch batch;
    _Atomic int exited; /* the thread has returned (stopped or failed) */
};

struct kvg_kv_sub {
    struct kvg_kv_index *idx;
    struct kvg_kv_sub_opts o;
    void *ctx;
    struct sub_thread *th;
    uint32_t nth, nslots;
    struct wstats *st;
    _Atomic int running;
};

#define ST(s, slot) (&(s)->st[(slot)])
#define INC(field, n) atomic_fetch_add_explicit(&(field), (n), memory_order_relaxed)

/* Drops the worker's index entries: after lost or unrecoverable batches the
 * index may hold blocks the engine already evicted. */
static void drop(struct sub_thread *t, struct sub_worker *w, const char *why)
{
    int n = kvg_kv_index_clear_worker(t->s->idx, w->slot);
    INC(ST(t->s, w->slot)->drops, 1);
    KVG_WARN("kv events: worker %u (%s): %s; dropped its %d cached-block entries", w->slot,
             w->endpoint, why, n < 0 ? 0 : n);
}

static void warn_mismatch(struct sub_thread *t, struct sub_worker *w)
{
    uint32_t bs = kvg_kv_index_block_size(t->s->idx);
    for (uint32_t i = 0; i < t->batch.n_events; i++) {
        const struct kvg_kv_event *ev = &t->batch.events[i];
        if (ev->type == KVG_KV_EV_STORED && ev->block_size % bs) {
            KVG_ERROR("kv events: worker %u (%s) publishes block_size %u but the pool's block "
                      "size is %u (not a divisor): its stored blocks are ignored and precise "
                      "routing cannot see its cache; set the pool's block size to match",
                      w->slot, w->endpoint, ev->block_size, bs);
            w->warned_mismatch = 1;
            return;
        }
    }
}

/* Decodes and applies one batch payload for w. */
static void apply_payload(struct sub_thread *t, struct sub_worker *w, const void *p, size_t len)
{
    struct wstats *st = ST(t->s, w->slot);
    int rc = kvg_kv_decode_batch(&t->batch, p, len);
    if (rc < 0) {
        uint64_t n = INC(st->decode_errors, 1);
        if (n < 3 || n % 1000 == 0)
            KVG_WARN("kv events: worker %u (%s): undecodable batch (%s); %" PRIu64 " so far",
                     w->slot, w->endpoint, t->batch.err ? t->batch.err : kvg_strerror(rc), n + 1);
        return;
    }
    atomic_store(&st->dp_rank, t->batch.dp_rank);
    if (t->s->o.on_batch)
        t->s->o.on_batch(t->s->o.on_batch_arg, w->slot, t->batch.dp_rank, &t->batch);
    if (t->batch.n_bad) {
        uint64_t n = INC(st->bad_events, t->batch.n_bad);
        if (n < 3 || n % 1000 == 0)
            KVG_WARN("kv events: worker %u (%s): skipped %u unreadable event(s) (%s)", w->slot,
                     w->endpoint, t->batch.n_bad, t->batch.err ? t->batch.err : "?");
        if (t->batch.n_bad_removed) drop(t, w, "a BlockRemoved was unreadable");
    }
    struct kvg_kv_apply_result res;
    rc = kvg_kv_index_apply(t->s->idx, w->slot, &t->batch, &res);
    if (rc == -ENOMEM) KVG_ERROR("kv events: worker %u: out of memory applying a batch", w->slot);
    INC(st->batches, 1);
    INC(st->events, t->batch.n_events);
    INC(st->blocks_stored, res.stored_blocks);
    INC(st->blocks_removed, res.removed_blocks);
    INC(st->clears, res.cleared);
    INC(st->mismatches, res.block_size_mismatch);
    INC(st->orphans, res.orphans);
    INC(st->inconsistent, res.inconsistent);
    if (res.block_size_mismatch && !w->warned_mismatch) warn_mismatch(t, w);
}

/* Receives one multipart message, keeping its last two frames (the replay
 * reply may or may not carry an empty delimiter first). Returns the frame
 * count, or -1 (timeout/error). */
static int recv_tail2(void *sock, zmq_msg_t *a, zmq_msg_t *b)
{
    int n = 0;
    for (;;) {
        zmq_msg_t f;
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, sock, 0) < 0) {
            zmq_msg_close(&f);
            return -1;
        }
        n++;
        zmq_msg_move(a, b); /* releases a's old content; b becomes empty */
        zmq_msg_move(b, &f);
        zmq_msg_close(&f);
        if (!zmq_msg_more(b)) return n;
    }
}

/* Asks w's replay endpoint for batches [from, until) and applies them in
 * order. A join (first message) tolerates whatever is missing; otherwise a
 * hole, a timeout or a missing end marker drops the worker's entries.
 * Returns 1 when the whole range was applied. */
static int replay(struct sub_thread *t, struct sub_worker *w, uint64_t from, uint64_t until,
                  int join)
{
    struct kvg_kv_sub *s = t->s;
    struct wstats *st = ST(s, w->slot);
    uint64_t expected = from, deadline = kvg_now_ms() + s->o.replay_timeout_ms;
    int linger = 0, ended = 0, dropped = 0;
    int64_t maxmsg = (int64_t)s->o.max_msg_bytes;
    unsigned char start[8];
    void *d = zmq_socket(s->ctx, ZMQ_DEALER);
    if (!d) goto done;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(d, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    kvg_be64_put(start, from);
    if (zmq_connect(d, w->replay) || zmq_send(d, "", 0, ZMQ_SNDMORE) < 0 ||
        zmq_send(d, start, 8, 0) < 0)
        goto done;
    while (!ended) {
        uint64_t now = kvg_now_ms();
        if (now >= deadline) break;
        zmq_pollitem_t it = {d, 0, ZMQ_POLLIN, 0};
        int pr = zmq_poll(&it, 1, (long)(deadline - now));
        if (pr < 0 && errno != EINTR) break;
        if (pr <= 0) continue;
        zmq_msg_t a, b;
        zmq_msg_init(&a);
        zmq_msg_init(&b);
        int nf = recv_tail2(d, &a, &b);
        if (nf < 2 || zmq_msg_size(&a) != 8) {
            if (nf >= 0) INC(st->decode_errors, 1);
        } else {
            uint64_t seq = kvg_be64_get(zmq_msg_data(&a));
            if (seq == END_SEQ) {
                ended = 1;
            } else if (seq >= expected && seq < until) {
                if (seq > expected && !join && !dropped) {
                    drop(t, w, "replay is missing batches (engine buffer too short)");
                    dropped = 1;
                }
                apply_payload(t, w, zmq_msg_data(&b), zmq_msg_size(&b));
                INC(st->replayed_batches, 1);
                expected = seq + 1;
            }
        }
        zmq_msg_close(&a);
        zmq_msg_close(&b);
    }
done:
    if (d) zmq_close(d);
    int complete = ended && expected == until && !dropped;
    if (join) {
        if (ended) INC(st->replays, 1);
        return complete;
    }
    if (complete) {
        INC(st->replays, 1);
        KVG_INFO("kv events: worker %u: replayed batches %" PRIu64 "..%" PRIu64 " from %s", w->slot,
                 from, until - 1, w->replay);
    } else {
        INC(st->replay_failures, 1);
        if (!dropped) drop(t, w, ended ? "replay came back incomplete" : "replay timed out");
    }
    return complete;
}

/* Sequence bookkeeping for one received batch, then its application. */
static void handle(struct sub_thread *t, struct sub_worker *w, uint64_t seq, const void *p,
                   size_t len)
{
    struct wstats *st = ST(t->s, w->slot);
    char why[160];
    if (!w->have_seq) {
        if (seq > 0 && w->replay) replay(t, w, 0, seq, 1);
    } else if (seq == w->last_seq + 1) {
        /* in order */
    } else if (seq > w->last_seq + 1) {
        INC(st->gaps, 1);
        if (w->replay) {
            replay(t, w, w->last_seq + 1, seq, 0);
        } else {
            snprintf(why, sizeof why,
                     "lost batches %" PRIu64 "..%" PRIu64 " and no replay endpoint",
                     w->last_seq + 1, seq - 1);
            drop(t, w, why);
        }
    } else {
        INC(st->restarts, 1);
        snprintf(why, sizeof why,
                 "sequence went back from %" PRIu64 " to %" PRIu64 " (engine restart)", w->last_seq,
                 seq);
        drop(t, w, why);
    }
    apply_payload(t, w, p, len);
    w->have_seq = 1;
    w->last_seq = seq;
    atomic_store_explicit(&st->last_seq, (int64_t)seq, memory_order_relaxed);
}

/* Takes one message from w's SUB socket without blocking. 0 when none. */
static int recv_one(struct sub_thread *t, struct sub_worker *w)
{
    zmq_msg_t f[3];
    int nf = 0, too_many = 0, more;
    zmq_msg_init(&f[0]);
    if (zmq_msg_recv(&f[0], w->sock, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&f[0]);
        return 0;
    }
    nf = 1;
    /* The rest of a multipart message is already here: read it whole. */
    for (more = zmq_msg_more(&f[0]); more;) {
        zmq_msg_t x;
        zmq_msg_init(&x);
        if (zmq_msg_recv(&x, w->sock, 0) < 0) {
            zmq_msg_close(&x);
            break;
        }
        more = zmq_msg_more(&x);
        if (nf < 3) {
            zmq_msg_init(&f[nf]);
            zmq_msg_move(&f[nf++], &x);
        } else {
            too_many = 1;
        }
        zmq_msg_close(&x);
    }
    if (nf != 3 || too_many || zmq_msg_size(&f[1]) != 8) {
        uint64_t n = INC(ST(t->s, w->slot)->decode_errors, 1);
        if (n < 3)
            KVG_WARN("kv events: worker %u (%s): message is not [topic, seq(8), payload]", w->slot,
                     w->endpoint);
    } else {
        handle(t, w, kvg_be64_get(zmq_msg_data(&f[1])), zmq_msg_data(&f[2]), zmq_msg_size(&f[2]));
    }
    for (int i = 0; i < nf; i++) zmq_msg_close(&f[i]);
    return 1;
}

static struct sub_worker *find_worker(struct sub_thread *t, uint32_t slot, size_t *pos)
{
    for (size_t i = 0; i < t->nw; i++) {
        if (t->w[i].slot == slot) {
            if (pos) *pos = i;
            return &t->w[i];
        }
    }
    return NULL;
}

static void close_worker(struct sub_worker *w)
{
    zmq_close(w->sock);
    free(w->endpoint);
    free(w->replay);
}

static int do_add(struct sub_thread *t, struct cmd *c)
{
    struct kvg_kv_sub *s = t->s;
    if (find_worker(t, c->slot, NULL)) return -EEXIST;
    if (t->nw == t->capw) {
        size_t cap = t->capw ? t->capw * 2 : 4;
        struct sub_worker *v = realloc(t->w, cap * sizeof *v);
        if (!v) return -ENOMEM;
        t->w = v;
        t->capw = cap;
    }
    struct sub_worker *w = &t->w[t->nw];
    memset(w, 0, sizeof *w);
    w->slot = c->slot;
    w->endpoint = strdup(c->endpoint);
    w->replay = c->replay && *c->replay ? strdup(c->replay) : NULL;
    w->sock = zmq_socket(s->ctx, ZMQ_SUB);
    if (!w->endpoint || (c->replay && *c->replay && !w->replay) || !w->sock) {
        if (w->sock) zmq_close(w->sock);
        free(w->endpoint);
        free(w->replay);
        return -ENOMEM;
    }
    int linger = 0, hwm = s->o.rcvhwm;
    int64_t maxmsg = (int64_t)s->o.max_msg_bytes;
    zmq_setsockopt(w->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(w->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(w->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(w->sock, ZMQ_SUBSCRIBE, "", 0);
    if (zmq_connect(w->sock, w->endpoint)) {
        int e = errno;
        close_worker(w);
        return e == ENOMEM ? -ENOMEM : -EINVAL;
    }
    struct wstats *st = ST(s, c->slot);
    memset(st, 0, sizeof *st);
    atomic_store(&st->last_seq, -1);
    atomic_store(&st->dp_rank, -1);
    atomic_store(&st->active, 1);
    t->nw++;
    return 0;
}

static int do_remove(struct sub_thread *t, struct cmd *c)
{
    size_t pos;
    struct sub_worker *w = find_worker(t, c->slot, &pos);
    if (!w) return -ENOENT;
    close_worker(w);
    t->w[pos] = t->w[--t->nw];
    atomic_store(&ST(t->s, c->slot)->active, 0);
    return 0;
}

static void *thread_main(void *arg)
{
    struct sub_thread *t = arg;
    zmq_pollitem_t *items = NULL;
    size_t cap = 0;
    for (;;) {
        if (cap < t->nw + 1) {
            zmq_pollitem_t *ni = realloc(items, (t->nw + 1) * sizeof *ni);
            if (!ni) {
                KVG_ERROR("kv events: out of memory in the subscriber thread");
                break;
            }
            items = ni;
            cap = t->nw + 1;
        }
        items[0] = (zmq_pollitem_t){t->ctrl_in, 0, ZMQ_POLLIN, 0};
        for (size_t i = 0; i < t->nw; i++)
            items[i + 1] = (zmq_pollitem_t){t->w[i].sock, 0, ZMQ_POLLIN, 0};
        int n = zmq_poll(items, (int)(t->nw + 1), -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            KVG_ERROR("kv events: zmq_poll: %s", zmq_strerror(errno));
            break;
        }
        if (items[0].revents & ZMQ_POLLIN) {
            char wake;
            if (zmq_recv(t->ctrl_in, &wake, 1, 0) < 0) continue;
            pthread_mutex_lock(&t->cmd_mu);
            struct cmd *c = t->pending;
            int stop = c && c->op == CMD_STOP;
            if (c)
                c->rc = c->op == CMD_ADD ? do_add(t, c) : c->op == CMD_REMOVE ? do_remove(t, c) : 0;
            t->pending = NULL;
            pthread_mutex_unlock(&t->cmd_mu);
            zmq_send(t->ctrl_in, "", 0, 0);
            if (stop) break;
            continue; /* the worker list may have changed */
        }
        for (size_t i = 0; i < t->nw; i++) {
            if (!(items[i + 1].revents & ZMQ_POLLIN)) continue;
            for (int k = 0; k < BURST && recv_one(t, &t->w[i]); k++) {
            }
        }
    }
    free(items);
    atomic_store(&t->exited, 1);
    for (size_t i = 0; i < t->nw; i++) {
        atomic_store(&ST(t->s, t->w[i].slot)->active, 0);
        close_worker(&t->w[i]);
    }
    t->nw = 0;
    return NULL;
}

int kvg_kv_sub_new(struct kvg_kv_index *idx, const struct kvg_kv_sub_opts *o,
                   struct kvg_kv_sub **out)
{
    struct kvg_kv_sub *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    if (o) s->o = *o;
    if (!s->o.threads) s->o.threads = 1;
    if (!s->o.replay_timeout_ms) s->o.replay_timeout_ms = 2000;
    if (!s->o.max_msg_bytes) s->o.max_msg_bytes = 64u << 20;
    if (!s->o.rcvhwm) s->o.rcvhwm = 100000;
    s->idx = idx;
    s->nslots = kvg_kv_index_max_workers(idx);
    s->nth = s->o.threads;
    s->st = calloc(s->nslots, sizeof *s->st);
    s->th = calloc(s->nth, sizeof *s->th);
    s->ctx = zmq_ctx_new();
    if (!s->st || !s->th || !s->ctx) {
        kvg_kv_sub_free(s);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < s->nslots; i++) {
        atomic_store(&s->st[i].last_seq, -1);
        atomic_store(&s->st[i].dp_rank, -1);
    }
    for (uint32_t i = 0; i < s->nth; i++) {
        s->th[i].s = s;
        pthread_mutex_init(&s->th[i].mu, NULL);
        pthread_mutex_init(&s->th[i].cmd_mu, NULL);
        kvg_kv_batch_init(&s->th[i].batch, &s->o.limits);
    }
    *out = s;
    return 0;
}

int kvg_kv_sub_start(struct kvg_kv_sub *s)
{
    if (atomic_load(&s->running)) return -EALREADY;
    for (uint32_t i = 0; i < s->nth; i++) {
        struct sub_thread *t = &s->th[i];
        char addr[96];
        snprintf(addr, sizeof addr, "inproc://kvg-kv-sub-%p-%u", (void *)s, i);
        t->ctrl_in = zmq_socket(s->ctx, ZMQ_PAIR);
        t->ctrl_out = zmq_socket(s->ctx, ZMQ_PAIR);
        if (!t->ctrl_in || !t->ctrl_out || zmq_bind(t->ctrl_in, addr) ||
            zmq_connect(t->ctrl_out, addr)) {
            int e = errno;
            KVG_ERROR("kv events: control socket: %s", zmq_strerror(e));
            atomic_store(&s->running, 1); /* so that stop cleans up what started */
            kvg_kv_sub_stop(s);
            return -(e ? e : EIO);
        }
        int tmo = 1000; /* commands re-check that the thread is alive this often */
        zmq_setsockopt(t->ctrl_out, ZMQ_RCVTIMEO, &tmo, sizeof tmo);
        zmq_setsockopt(t->ctrl_out, ZMQ_SNDTIMEO, &tmo, sizeof tmo);
        atomic_store(&t->exited, 0);
        int rc = pthread_create(&t->th, NULL, thread_main, t);
        if (rc) {
            atomic_store(&s->running, 1);
            kvg_kv_sub_stop(s);
            return -rc;
        }
        t->started = 1;
    }
    atomic_store(&s->running, 1);
    return 0;
}

/* Runs a command on the thread serving slot and waits for it. */
static int command(struct kvg_kv_sub *s, struct sub_thread *t, struct cmd *c)
{
    pthread_mutex_lock(&t->mu);
    int rc = KVG_ECLOSED;
    if (t->started && t->ctrl_out && !atomic_load(&t->exited)) {
        pthread_mutex_lock(&t->cmd_mu);
        t->pending = c;
        pthread_mutex_unlock(&t->cmd_mu);
        /* Wait for the answer for as long as the thread lives (a replay may
         * hold it for a while), but not for a thread that has died on an
         * error and will never answer. */
        char ack;
        if (zmq_send(t->ctrl_out, "", 1, 0) == 1) {
            for (;;) {
                if (zmq_recv(t->ctrl_out, &ack, 1, 0) >= 0) break;
                if ((errno != EAGAIN && errno != EINTR) || atomic_load(&t->exited)) break;
            }
        }
        pthread_mutex_lock(&t->cmd_mu);
        if (t->pending == c) { /* never taken */
            t->pending = NULL;
        } else {
            rc = c->rc;
        }
        pthread_mutex_unlock(&t->cmd_mu);
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

int kvg_kv_sub_add_worker(struct kvg_kv_sub *s, uint32_t slot, const char *endpoint,
                          const char *replay_endpoint)
{
    if (slot >= s->nslots || !endpoint || !*endpoint) return -EINVAL;
    if (!atomic_load(&s->running)) return KVG_ECLOSED;
    struct cmd c = {CMD_ADD, slot, endpoint, replay_endpoint, 0};
    return command(s, &s->th[slot % s->nth], &c);
}

int kvg_kv_sub_remove_worker(struct kvg_kv_sub *s, uint32_t slot)
{
    if (slot >= s->nslots) return -EINVAL;
    if (!atomic_load(&s->running)) return -ENOENT;
    struct cmd c = {CMD_REMOVE, slot, NULL, NULL, 0};
    return command(s, &s->th[slot % s->nth], &c);
}

int kvg_kv_sub_stats(struct kvg_kv_sub *s, uint32_t slot, struct kvg_kv_sub_stats *o)
{
    if (slot >= s->nslots) return -EINVAL;
    struct wstats *st = ST(s, slot);
    o->batches = atomic_load(&st->batches);
    o->events = atomic_load(&st->events);
    o->blocks_stored = atomic_load(&st->blocks_stored);
    o->blocks_removed = atomic_load(&st->blocks_removed);
    o->clears = atomic_load(&st->clears);
    o->gaps = atomic_load(&st->gaps);
    o->decode_errors = atomic_load(&st->decode_errors);
    o->replays = atomic_load(&st->replays);
    o->replay_failures = atomic_load(&st->replay_failures);
    o->replayed_batches = atomic_load(&st->replayed_batches);
    o->restarts = atomic_load(&st->restarts);
    o->drops = atomic_load(&st->drops);
    o->mismatches = atomic_load(&st->mismatches);
    o->orphans = atomic_load(&st->orphans);
    o->inconsistent = atomic_load(&st->inconsistent);
    o->last_seq = atomic_load(&st->last_seq);
    o->bad_events = atomic_load(&st->bad_events);
    o->dp_rank = atomic_load(&st->dp_rank);
    o->active = atomic_load(&st->active);
    return 0;
}

void kvg_kv_sub_stop(struct kvg_kv_sub *s)
{
    if (!atomic_exchange(&s->running, 0)) return;
    for (uint32_t i = 0; i < s->nth; i++) {
        struct sub_thread *t = &s->th[i];
        if (t->started) {
            struct cmd c = {CMD_STOP, 0, NULL, NULL, 0};
            command(s, t, &c);
            pthread_join(t->th, NULL);
        }
        pthread_mutex_lock(&t->mu);
        t->started = 0;
        if (t->ctrl_out) zmq_close(t->ctrl_out);
        if (t->ctrl_in) zmq_close(t->ctrl_in);
        t->ctrl_out = t->ctrl_in = NULL;
        pthread_mutex_unlock(&t->mu);
    }
}

void kvg_kv_sub_free(struct kvg_kv_sub *s)
{
    if (!s) return;
    kvg_kv_sub_stop(s);
    for (uint32_t i = 0; s->th && i < s->nth; i++) {
        free(s->th[i].w);
        kvg_kv_batch_free(&s->th[i].batch);
        pthread_mutex_destroy(&s->th[i].mu);
        pthread_mutex_destroy(&s->th[i].cmd_mu);
    }
    if (s->ctx) zmq_ctx_term(s->ctx);
    free(s->th);
    free(s->st);
    free(s);
}
