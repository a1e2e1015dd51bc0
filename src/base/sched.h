/* Scheduling requests for the calling thread. */
#ifndef KVG_BASE_SCHED_H
#define KVG_BASE_SCHED_H

#include <stdint.h>

/* Asks the kernel's fair scheduler (EEVDF, Linux 6.12 and later) for time
 * slices of `ns` for the calling thread: a thread with a shorter slice than
 * the one running preempts it when it wakes, where with equal slices it waits
 * for the runner's slice to end. The kernel clamps ns to 0.1-100 ms; kernels
 * before 6.12 take the call and keep their own slices. Returns 0 or a
 * negative errno (the thread is then as it was). */
int kvg_sched_set_slice(uint64_t ns);
/* The calling thread's slice as the kernel reports it (0 before 6.12, where
 * fair threads have none of their own). */
int kvg_sched_get_slice(uint64_t *ns);

#endif
