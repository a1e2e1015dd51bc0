/* The proxy's work threads (see workq.h for why not libuv's pool).
 *
 * Work in: loops push onto `in`, a lock-free stack (a push only retries when
 * another push won, so it never waits for a thread that was preempted), and
 * post `ready` once per item. A work thread woken by `ready` takes one item
 * from `fifo`, refilling it by swapping `in` out (oldest first) when empty:
 * `fifo` and its mutex are the work threads' alone, so a loop never meets
 * that lock. Each post stands for an item pushed before it, so a thread past
 * sem_wait always finds one.
 *
 * Work out: the thread pushes the item onto its home's `back` stack and, if
 * that stack was empty, writes the home's eventfd. The loop reads the
 * eventfd, then swaps `back` out: an item pushed after the swap finds the
 * stack empty and writes again, so none is left unannounced. A thread may
 * write after the loop has taken its item (it was preempted in between), so
 * an eventfd stays open until the threads are joined (kvg_proxy_wq_free):
 * closing it with the home would let that write land in a file or socket
 * that reused the number. */
#include "proxy/workq.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"

struct kvg_proxy_wq {
    kvg_lfs in; /* pushed by loops */
    sem_t ready;
    pthread_mutex_t mu; /* the work threads': fifo */
    struct kvg_proxy_wq_item *fifo;
    _Atomic int stop;
    pthread_mutex_t fd_mu; /* fds: every home's eventfd, closed at free */
    int *fds;
    size_t nfds;
    int nice, base_nice;
    unsigned n;
    pthread_t *th;
};

static struct kvg_proxy_wq_item *take(struct kvg_proxy_wq *wq)
{
    pthread_mutex_lock(&wq->mu);
    if (!wq->fifo) wq->fifo = (struct kvg_proxy_wq_item *)kvg_lfs_take(&wq->in);
    struct kvg_proxy_wq_item *it = wq->fifo;
    if (it) wq->fifo = (struct kvg_proxy_wq_item *)it->link.next;
    pthread_mutex_unlock(&wq->mu);
    return it;
}

static void announce(int efd)
{
    uint64_t one = 1;
    /* Only a counter at 2^64-2 refuses: never in a process's life. */
    while (write(efd, &one, sizeof one) < 0 && errno == EINTR) continue;
}

static void *worker(void *arg)
{
    struct kvg_proxy_wq *wq = arg;
    pthread_setname_np(pthread_self(), "kvg-work"); /* for top -H, ps -L, /proc */
    if (wq->nice) {
        /* A thread id names one thread for setpriority on Linux. Raising
         * one's nice needs no privilege; a refusal leaves it as it was. */
        int want = wq->base_nice + wq->nice > 19 ? 19 : wq->base_nice + wq->nice;
        if (setpriority(PRIO_PROCESS, (id_t)gettid(), want))
            KVG_DEBUG("work thread stays at nice %d: %s", wq->base_nice, kvg_strerror(-errno));
    }
    for (;;) {
        while (sem_wait(&wq->ready) && errno == EINTR) continue;
        if (atomic_load_explicit(&wq->stop, memory_order_acquire)) break;
        struct kvg_proxy_wq_item *it = take(wq);
        if (!it) continue; /* cannot happen: a post follows every push */
        struct kvg_proxy_wq_home *h = it->home;
        it->work(it);
        /* Once pushed, the item and its home may go (the loop takes it, and
         * a closed home is freed): the eventfd's number is read first. */
        int efd = h->efd;
        if (kvg_lfs_push(&h->back, &it->link)) announce(efd);
    }
    return NULL;
}

unsigned kvg_proxy_wq_threads(const struct kvg_proxy_wq *wq)
{
    return wq->n;
}

int kvg_proxy_wq_new(unsigned threads, int nice, struct kvg_proxy_wq **out)
{
    *out = NULL;
    struct kvg_proxy_wq *wq = calloc(1, sizeof *wq);
    if (!wq) return -ENOMEM;
    wq->n = threads ? threads : 1;
    wq->nice = nice < 0 ? 0 : nice > 19 ? 19 : nice;
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, (id_t)gettid());
    wq->base_nice = cur == -1 && errno ? 0 : cur;
    if (!(wq->th = calloc(wq->n, sizeof *wq->th))) {
        free(wq);
        return -ENOMEM;
    }
    if (sem_init(&wq->ready, 0, 0)) {
        free(wq->th);
        free(wq);
        return -errno;
    }
    int rc = pthread_mutex_init(&wq->mu, NULL);
    if (!rc && (rc = pthread_mutex_init(&wq->fd_mu, NULL))) pthread_mutex_destroy(&wq->mu);
    if (rc) {
        sem_destroy(&wq->ready);
        free(wq->th);
        free(wq);
        return -rc;
    }
    for (unsigned i = 0; i < wq->n; i++) {
        if ((rc = pthread_create(&wq->th[i], NULL, worker, wq))) {
            wq->n = i; /* the ones started are stopped and joined */
            kvg_proxy_wq_free(wq);
            return -rc;
        }
    }
    *out = wq;
    return 0;
}

void kvg_proxy_wq_free(struct kvg_proxy_wq *wq)
{
    if (!wq) return;
    atomic_store_explicit(&wq->stop, 1, memory_order_release);
    for (unsigned i = 0; i < wq->n; i++) sem_post(&wq->ready);
    for (unsigned i = 0; i < wq->n; i++) pthread_join(wq->th[i], NULL);
    for (size_t i = 0; i < wq->nfds; i++) close(wq->fds[i]);
    free(wq->fds);
    pthread_mutex_destroy(&wq->fd_mu);
    pthread_mutex_destroy(&wq->mu);
    sem_destroy(&wq->ready);
    free(wq->th);
    free(wq);
}

static void home_close_now(struct kvg_proxy_wq_home *h)
{
    uv_poll_stop(&h->poll);
    uv_close((uv_handle_t *)&h->poll, NULL); /* the eventfd is the queue's (top) */
}

/* On the loop: every finished item's done, oldest first. */
static void home_ready(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct kvg_proxy_wq_home *h = p->data;
    uint64_t v;
    while (read(h->efd, &v, sizeof v) < 0 && errno == EINTR) continue;
    struct kvg_proxy_wq_item *l = (struct kvg_proxy_wq_item *)kvg_lfs_take(&h->back);
    while (l) {
        struct kvg_proxy_wq_item *next = (struct kvg_proxy_wq_item *)l->link.next;
        h->pending--;
        l->done(l); /* may free l, may submit again */
        l = next;
    }
    if (h->pending == 0) {
        if (h->closing)
            home_close_now(h);
        else
            uv_unref((uv_handle_t *)&h->poll); /* no work out: the loop may end */
    }
}

int kvg_proxy_wq_home_init(struct kvg_proxy_wq_home *h, struct kvg_proxy_wq *wq, uv_loop_t *loop)
{
    *h = (struct kvg_proxy_wq_home){.wq = wq, .efd = -1};
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return -errno;
    pthread_mutex_lock(&wq->fd_mu);
    int *fds = realloc(wq->fds, (wq->nfds + 1) * sizeof *fds);
    if (fds) {
        wq->fds = fds;
        wq->fds[wq->nfds++] = fd;
    }
    pthread_mutex_unlock(&wq->fd_mu);
    if (!fds) {
        close(fd);
        return -ENOMEM;
    }
    h->efd = fd;
    int rc = uv_poll_init(loop, &h->poll, h->efd);
    if (rc) {
        h->efd = -1; /* never opened: close does nothing */
        return rc;
    }
    h->poll.data = h;
    if ((rc = uv_poll_start(&h->poll, UV_READABLE, home_ready))) {
        h->efd = -1;
        uv_close((uv_handle_t *)&h->poll, NULL);
        return rc;
    }
    uv_unref((uv_handle_t *)&h->poll);
    return 0;
}

void kvg_proxy_wq_home_close(struct kvg_proxy_wq_home *h)
{
    if (h->closing || h->efd < 0) return; /* closed, or never opened */
    h->closing = 1;
    if (h->pending == 0) home_close_now(h);
}

int kvg_proxy_wq_home_closing(const struct kvg_proxy_wq_home *h)
{
    return h->closing || h->efd < 0;
}

void kvg_proxy_wq_submit(struct kvg_proxy_wq_home *h, struct kvg_proxy_wq_item *it)
{
    struct kvg_proxy_wq *wq = h->wq;
    it->home = h;
    if (h->pending++ == 0) uv_ref((uv_handle_t *)&h->poll); /* as uv_queue_work keeps it */
    kvg_lfs_push(&wq->in, &it->link);
    sem_post(&wq->ready);
}
