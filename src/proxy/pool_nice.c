/* The priority of libuv's thread pool, where long prompts are parsed,
 * rendered, tokenized and routed: below the loop threads', so that a burst
 * of 100k-token prompts queues behind short requests for the CPU instead of
 * taking it from them. libuv makes its threads itself, so each one lowers
 * its own priority the first time it runs a proxy work item. */
#include <errno.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "proxy/proxy_int.h"

static _Atomic int pool_nice;

void kvg_proxy_pool_nice(int n)
{
    atomic_store(&pool_nice, n < 0 ? 0 : n > 19 ? 19 : n);
}

void kvg_proxy__pool_thread(void)
{
    static _Thread_local int done;
    int n = atomic_load_explicit(&pool_nice, memory_order_relaxed);
    if (done || !n) return;
    done = 1;
    /* On Linux a thread id names one thread for setpriority: the loops keep
     * theirs. A refusal leaves the thread as it was (only slower to yield). */
    id_t tid = (id_t)gettid();
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, tid);
    if (cur == -1 && errno) return;
    int want = cur + n > 19 ? 19 : cur + n;
    if (setpriority(PRIO_PROCESS, tid, want))
        KVG_DEBUG("tokenizer thread stays at nice %d: %s", cur, kvg_strerror(-errno));
}
