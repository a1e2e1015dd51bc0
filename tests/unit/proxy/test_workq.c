/* The proxy's work threads: every item's work runs once on a work thread at
 * the asked priority and its done once on the submitting loop; a loop keeps
 * running while its work is out, and a work thread that is stuck holds back
 * only its own item, never the loop that submits. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proxy/workq.h"
#include "support/test.h"

struct item {
    struct kvg_proxy_wq_item it;
    pthread_t loop_thread;
    int worked, done, on_worker, on_loop, nice_seen, resubmit;
    unsigned value, result;
    sem_t *gate; /* work waits on it when set */
    int *done_count;
};

static void work_fn(struct kvg_proxy_wq_item *w)
{
    struct item *x = w->data;
    if (x->gate)
        while (sem_wait(x->gate)) continue;
    x->worked++;
    x->on_worker = !pthread_equal(pthread_self(), x->loop_thread);
    x->nice_seen = getpriority(PRIO_PROCESS, (id_t)gettid());
    x->result = x->value * 2654435761u;
}

static void done_fn(struct kvg_proxy_wq_item *w)
{
    struct item *x = w->data;
    x->done++;
    x->on_loop = pthread_equal(pthread_self(), x->loop_thread);
    if (x->resubmit-- > 0) {
        kvg_proxy_wq_submit(w->home, w); /* as the proxy goes parse -> tokenize -> route */
        return;
    }
    (*x->done_count)++;
}

static void init_item(struct item *x, unsigned v, int *count)
{
    *x = (struct item){.loop_thread = pthread_self(), .value = v, .done_count = count};
    x->it = (struct kvg_proxy_wq_item){.data = x, .work = work_fn, .done = done_fn};
}

struct loop_run {
    struct kvg_proxy_wq *wq;
    unsigned n;
    int ok;
};

/* One loop thread: submits n items (half of them twice over), runs until
 * all are done, checks each, closes. */
static void *loop_main(void *arg)
{
    struct loop_run *r = arg;
    uv_loop_t loop;
    struct kvg_proxy_wq_home home;
    int count = 0;
    struct item *xs = calloc(r->n, sizeof *xs);
    if (!xs || uv_loop_init(&loop)) return NULL;
    if (kvg_proxy_wq_home_init(&home, r->wq, &loop)) return NULL;
    for (unsigned i = 0; i < r->n; i++) {
        init_item(&xs[i], i, &count);
        xs[i].resubmit = (int)(i & 1);
        kvg_proxy_wq_submit(&home, &xs[i].it);
    }
    uv_run(&loop, UV_RUN_DEFAULT); /* returns once no work is out */
    int ok = count == (int)r->n;
    for (unsigned i = 0; i < r->n && ok; i++) {
        int times = 1 + (int)(i & 1);
        ok = xs[i].worked == times && xs[i].done == times && xs[i].on_worker && xs[i].on_loop &&
             xs[i].result == i * 2654435761u;
    }
    kvg_proxy_wq_home_close(&home);
    uv_run(&loop, UV_RUN_DEFAULT);
    r->ok = ok && uv_loop_close(&loop) == 0;
    free(xs);
    return NULL;
}

TEST(every_item_once_on_a_worker_then_its_loop)
{
    struct kvg_proxy_wq *wq;
    CHECK_INT(kvg_proxy_wq_new(3, 0, &wq), 0);
    CHECK_INT(kvg_proxy_wq_threads(wq), 3);
    struct loop_run runs[2] = {{wq, 3000, 0}, {wq, 2000, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK_INT(pthread_create(&th[i], NULL, loop_main, &runs[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK(runs[0].ok);
    CHECK(runs[1].ok);
    kvg_proxy_wq_free(wq);
}

TEST(work_threads_run_at_the_asked_nice)
{
    errno = 0;
    int base = getpriority(PRIO_PROCESS, (id_t)gettid());
    CHECK(!(base == -1 && errno));
    struct kvg_proxy_wq *wq;
    CHECK_INT(kvg_proxy_wq_new(1, 5, &wq), 0);
    uv_loop_t loop;
    CHECK_INT(uv_loop_init(&loop), 0);
    struct kvg_proxy_wq_home home;
    CHECK_INT(kvg_proxy_wq_home_init(&home, wq, &loop), 0);
    int count = 0;
    struct item x;
    init_item(&x, 7, &count);
    kvg_proxy_wq_submit(&home, &x.it);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(count, 1);
    CHECK_INT(x.nice_seen, base + 5 > 19 ? 19 : base + 5);
    CHECK_INT(getpriority(PRIO_PROCESS, (id_t)gettid()), base); /* the loop's stays */
    kvg_proxy_wq_home_close(&home);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&loop), 0);
    kvg_proxy_wq_free(wq);
}

struct stuck {
    sem_t gate;
    uv_timer_t timer;
    struct kvg_proxy_wq_home *home;
    struct item more[4];
    int ticks, count;
};

/* The loop goes on while the only work thread is stuck: its timer fires,
 * it submits more; then the gate opens and everything comes back. */
static void on_tick(uv_timer_t *t)
{
    struct stuck *s = t->data;
    if (s->ticks < 4) {
        init_item(&s->more[s->ticks], 100u + (unsigned)s->ticks, &s->count);
        kvg_proxy_wq_submit(s->home, &s->more[s->ticks].it);
    }
    if (++s->ticks == 5) {
        sem_post(&s->gate);
        uv_timer_stop(t);
        uv_close((uv_handle_t *)t, NULL);
    }
}

TEST(a_stuck_work_thread_does_not_hold_the_loop)
{
    struct kvg_proxy_wq *wq;
    CHECK_INT(kvg_proxy_wq_new(1, 0, &wq), 0);
    uv_loop_t loop;
    CHECK_INT(uv_loop_init(&loop), 0);
    struct kvg_proxy_wq_home home;
    CHECK_INT(kvg_proxy_wq_home_init(&home, wq, &loop), 0);
    struct stuck s = {.home = &home};
    CHECK_INT(sem_init(&s.gate, 0, 0), 0);
    struct item first;
    init_item(&first, 1, &s.count);
    first.gate = &s.gate;
    kvg_proxy_wq_submit(&home, &first.it);
    uv_timer_init(&loop, &s.timer);
    s.timer.data = &s;
    uv_timer_start(&s.timer, on_tick, 1, 1);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(s.ticks, 5); /* every tick ran while the work thread waited */
    CHECK_INT(s.count, 5);
    CHECK_INT(first.done, 1);
    for (int i = 0; i < 4; i++) CHECK_INT(s.more[i].done, 1);
    kvg_proxy_wq_home_close(&home);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&loop), 0);
    sem_destroy(&s.gate);
    kvg_proxy_wq_free(wq);
}

static void slow_work(struct kvg_proxy_wq_item *w)
{
    usleep(20000);
    work_fn(w);
}

/* Closing a home with work out waits for it: done still runs, on the
 * loop, and only then is the handle closed. */
TEST(close_with_work_out_waits_for_it)
{
    struct kvg_proxy_wq *wq;
    CHECK_INT(kvg_proxy_wq_new(2, 0, &wq), 0);
    uv_loop_t loop;
    CHECK_INT(uv_loop_init(&loop), 0);
    struct kvg_proxy_wq_home home;
    CHECK_INT(kvg_proxy_wq_home_init(&home, wq, &loop), 0);
    int count = 0;
    struct item xs[3];
    for (int i = 0; i < 3; i++) {
        init_item(&xs[i], (unsigned)i, &count);
        xs[i].it.work = slow_work;
        kvg_proxy_wq_submit(&home, &xs[i].it);
    }
    CHECK(!kvg_proxy_wq_home_closing(&home));
    kvg_proxy_wq_home_close(&home);
    CHECK(kvg_proxy_wq_home_closing(&home)); /* the caller does the rest itself */
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(count, 3);
    for (int i = 0; i < 3; i++) CHECK(xs[i].on_loop && xs[i].on_worker);
    CHECK_INT(uv_loop_close(&loop), 0);
    kvg_proxy_wq_free(wq);
}
