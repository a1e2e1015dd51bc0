/* The proxy's work threads: where long prompts are parsed, rendered,
 * tokenized and routed, at a lower priority than the event loops.
 *
 * Why not libuv's thread pool: a loop that hands work to it takes the pool's
 * mutex, and takes its completions through a uv_async_t that the loop spins
 * on (sched_yield) while a pool thread is inside uv_async_send. A pool
 * thread at a lower priority, preempted there or holding that mutex, then
 * holds the loop back for as long as the scheduler keeps it off the CPU
 * (measured: the p99 of short requests beside 100k-token prompts went from
 * 0.5 ms to 100-200 ms). Here the loop's side never waits for a work thread:
 * it pushes work onto a lock-free stack and posts a semaphore, and takes
 * completions by swapping a lock-free stack out, woken through an eventfd. A
 * work thread preempted anywhere delays only its own item.
 *
 * Threading: kvg_proxy_wq_new/free on one thread while no loop uses the
 * queue; each home belongs to one loop and its calls are made on that loop's
 * thread; item->work runs on a work thread, item->done on the home's loop. */
#ifndef KVG_PROXY_WORKQ_H
#define KVG_PROXY_WORKQ_H

#include <uv.h>

#include "base/lfstack.h"

struct kvg_proxy_wq;
struct kvg_proxy_wq_home;

/* Owned by the submitter, which must keep it alive until done runs. */
struct kvg_proxy_wq_item {
    struct kvg_lfs_node link;       /* the queue's; first */
    struct kvg_proxy_wq_home *home; /* set by submit */
    void *data;                     /* the submitter's */
    void (*work)(struct kvg_proxy_wq_item *it);
    void (*done)(struct kvg_proxy_wq_item *it);
};

/* Where an event loop gets its finished items back. Embedded by the loop's
 * owner; everything in it is the queue's. */
struct kvg_proxy_wq_home {
    struct kvg_proxy_wq *wq;
    uv_poll_t poll;
    int efd;          /* the queue's: closed by kvg_proxy_wq_free */
    kvg_lfs back;     /* finished */
    unsigned pending; /* submitted, done not yet run */
    int closing;
};

/* Starts `threads` work threads (at least 1), each `nice` (0..19) above
 * the priority of the thread that calls this. *out: kvg_proxy_wq_free. */
int kvg_proxy_wq_new(unsigned threads, int nice, struct kvg_proxy_wq **out);
/* Stops and joins the threads; every home must be closed. */
void kvg_proxy_wq_free(struct kvg_proxy_wq *wq);
unsigned kvg_proxy_wq_threads(const struct kvg_proxy_wq *wq);

int kvg_proxy_wq_home_init(struct kvg_proxy_wq_home *h, struct kvg_proxy_wq *wq, uv_loop_t *loop);
/* Closes the home's handle once every submitted item's done has run (until
 * then the loop stays alive, as it does for uv_queue_work). The home's
 * memory may go once the handle is closed. */
void kvg_proxy_wq_home_close(struct kvg_proxy_wq_home *h);

/* Whether h takes no more work (kvg_proxy_wq_home_close was called): what
 * would have gone to the work threads is done on the loop. */
int kvg_proxy_wq_home_closing(const struct kvg_proxy_wq_home *h);

/* Queues it->work; it->done follows on h's loop. Never blocks. */
void kvg_proxy_wq_submit(struct kvg_proxy_wq_home *h, struct kvg_proxy_wq_item *it);

#endif
