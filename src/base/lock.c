/* Bounded try-locks (see lock.h). */
#include "base/lock.h"

#include <errno.h>

#include "base/util.h"

static int try_once(void *l, int kind)
{
    switch (kind) {
    case 0:
        return pthread_mutex_trylock(l);
    case 1:
        return pthread_rwlock_tryrdlock(l);
    default:
        return pthread_rwlock_trywrlock(l);
    }
}

static int try_for(void *l, int kind, uint64_t ns)
{
    uint64_t t0 = 0;
    for (;;) {
        if (try_once(l, kind) == 0) return 0;
        uint64_t t = kvg_now_ns();
        if (!t0)
            t0 = t;
        else if (t - t0 > ns)
            return -EBUSY;
        __builtin_ia32_pause();
    }
}

int kvg_mutex_try_for(pthread_mutex_t *m, uint64_t ns)
{
    return try_for(m, 0, ns);
}

int kvg_rwlock_try_for(pthread_rwlock_t *l, int excl, uint64_t ns)
{
    return try_for(l, excl ? 2 : 1, ns);
}
