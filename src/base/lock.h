/* Locks for a thread that must not wait for another: an event loop, whose
 * locks are shared with work threads at a lower priority. A work thread
 * preempted while it holds one would keep the loop waiting for as long as
 * the scheduler keeps it off the CPU; a hold that runs ends within
 * microseconds. So these spin on the try-lock for at most ns nanoseconds and
 * then give up: the caller goes without (a miss, a deferred record). */
#ifndef KVG_BASE_LOCK_H
#define KVG_BASE_LOCK_H

#include <pthread.h>
#include <stdint.h>

/* How long an event loop tries a shared lock. */
#define KVG_LOCK_TRY_NS 20000

/* 0 with the lock held, or -EBUSY. */
int kvg_mutex_try_for(pthread_mutex_t *m, uint64_t ns);
/* The same for a read (excl 0) or write (excl 1) lock. */
int kvg_rwlock_try_for(pthread_rwlock_t *l, int excl, uint64_t ns);

#endif
