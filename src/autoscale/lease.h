/* The autoscalers' lease in Redis: with several `kvgate autoscale`
 * replicas, the one holding the key acts; the others plan and watch.
 *
 *   acquire: SET key id NX PX ttl (when the key is ours already, after a
 *            lost reply, the renew below takes it back);
 *   renew:   a Lua script, atomically: PEXPIRE key ttl only if GET key is
 *            still our id;
 *   release: a Lua script: DEL key only if it is still ours (at exit).
 * A step runs every `every_ms` (the caller makes it at most one planning
 * interval and at most ttl/3). Holding is judged from this side's clock:
 * the lease counts as held until the time the last successful acquire or
 * renew was SENT plus 90% of the ttl, so this replica stops acting before
 * Redis can hand the key to another, even when Redis goes silent. A renew
 * that fails (the key is someone else's) or errs (Redis unreachable,
 * timed out) drops the lease at once: actuation stops at the next tick.
 *
 * Runs on one libuv loop (the Redis connection's); held() may be called
 * from any thread. */
#ifndef KVG_AUTOSCALE_LEASE_H
#define KVG_AUTOSCALE_LEASE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "autoscale/ctl.h"

struct kvg_autoscale_lease;

/* Parses lc->redis (resolving its host: call at start-up), connects and
 * starts stepping. id names this replica (unique: host and pid). *out is
 * the caller's: kvg_autoscale_lease_close. 0 or KVG_ECONFIG with err. */
int kvg_autoscale_lease_start(uv_loop_t *loop, const struct kvg_autoscale_lease_cfg *lc,
                              const char *id, uint32_t every_ms, struct kvg_autoscale_lease **out,
                              char *err, size_t errlen);
/* 1 while this replica holds the lease at monotonic time now_ms. Any thread. */
int kvg_autoscale_lease_held(const struct kvg_autoscale_lease *l, uint64_t now_ms);
/* Times this replica acquired the lease. Any thread. */
uint64_t kvg_autoscale_lease_acquired(const struct kvg_autoscale_lease *l);
/* The holder last seen in Redis ("" none, or unknown while Redis is
 * unreachable), and why Redis could not be used ("" when it could). Loop
 * thread. */
const char *kvg_autoscale_lease_holder(const struct kvg_autoscale_lease *l);
const char *kvg_autoscale_lease_error(const struct kvg_autoscale_lease *l);
/* Stops stepping, releases the key if held (bounded by the Redis timeout),
 * then closes and frees; done(ud) runs on the loop once that is over. */
void kvg_autoscale_lease_close(struct kvg_autoscale_lease *l, void (*done)(void *), void *ud);

#endif
