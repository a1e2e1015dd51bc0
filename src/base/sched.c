/* See sched.h. glibc 2.36 has no sched_setattr wrapper, and the kernel's
 * uapi header for struct sched_attr clashes with glibc's sched.h, so the
 * struct is spelled here as the kernel's ABI defines it: versioned by its
 * size. */
#include "base/sched.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct kvg_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime; /* SCHED_OTHER/BATCH: the slice asked for (6.12+) */
    uint64_t sched_deadline;
    uint64_t sched_period;
};

static int get_attr(struct kvg_sched_attr *a)
{
    memset(a, 0, sizeof *a);
    return syscall(SYS_sched_getattr, 0, a, sizeof *a, 0) ? -errno : 0;
}

int kvg_sched_get_slice(uint64_t *ns)
{
    struct kvg_sched_attr a;
    int rc = get_attr(&a);
    if (!rc) *ns = a.sched_runtime;
    return rc;
}

int kvg_sched_set_slice(uint64_t ns)
{
    struct kvg_sched_attr a;
    /* Read first: policy, nice and priority stay what they are. */
    int rc = get_attr(&a);
    if (rc) return rc;
    if (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH) return -EPERM;
    a.size = sizeof a;
    a.sched_runtime = ns;
    if (syscall(SYS_sched_setattr, 0, &a, 0)) return -errno;
    return 0;
}
