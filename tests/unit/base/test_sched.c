/* The loop threads' slice request: set and read back on a kernel that has
 * per-thread slices (6.12+; on older ones, which report 0, the case is
 * SKIPped after the calls' return codes are checked), clamped by the kernel to its range, and
 * refused without a change for a thread outside the fair classes it applies to. Each case runs on a
 * thread of its own, so the runner's scheduling is left alone. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "base/sched.h"
#include "support/test.h"

struct outcome {
    int rc_set, rc_get, rc_idle;
    int idle_errno; /* why SCHED_IDLE could not be set, when rc_idle is 1 */
    uint64_t before, after, clamped;
};

static void *set_and_read(void *arg)
{
    struct outcome *o = arg;
    kvg_sched_get_slice(&o->before);
    o->rc_set = kvg_sched_set_slice(250 * 1000);
    o->rc_get = kvg_sched_get_slice(&o->after);
    kvg_sched_set_slice(1000); /* under the kernel's 0.1 ms floor */
    kvg_sched_get_slice(&o->clamped);
    return NULL;
}

static void *as_idle(void *arg)
{
    struct outcome *o = arg;
    struct sched_param sp = {0};
    if (sched_setscheduler(0, SCHED_IDLE, &sp)) {
        o->rc_idle = 1; /* cannot test here */
        o->idle_errno = errno;
        return NULL;
    }
    o->rc_idle = kvg_sched_set_slice(250 * 1000);
    o->rc_get = sched_getscheduler(0);
    return NULL;
}

static struct outcome run(void *(*fn)(void *))
{
    struct outcome o = {0};
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, fn, &o), 0);
    CHECK_INT(pthread_join(t, NULL), 0);
    return o;
}

TEST(slice_is_set_and_read_back)
{
    struct outcome o = run(set_and_read);
    CHECK_INT(o.rc_set, 0);
    CHECK_INT(o.rc_get, 0);
    if (!o.before) SKIP("the kernel has no per-thread slices (6.12+)");
    CHECK_INT(o.after, 250 * 1000);
    CHECK_INT(o.clamped, 100 * 1000);
}

TEST(a_thread_outside_the_fair_classes_is_left_alone)
{
    struct outcome o = run(as_idle);
    if (o.rc_idle == 1) SKIP("SCHED_IDLE cannot be set here: %s", strerror(o.idle_errno));
    CHECK_INT(o.rc_idle, -EPERM);
    CHECK_INT(o.rc_get, SCHED_IDLE);
}
