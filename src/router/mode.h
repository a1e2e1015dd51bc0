/* Routing mode: which view of a worker's cache its routing uses, and why.
 *
 *   exact        the policy matches on the engine's own KV events, applied
 *                in sequence (no loss being repaired);
 *   degraded     it should, but the view is known to be wrong or behind: a
 *                gap being replayed or entries dropped after lost events, a
 *                block size other than the router's, token counts that differ
 *                from the engine's (tokenizer or chat template mismatch), or
 *                events configured and none applied after N good answers;
 *   approximate  no events: matched against what this router sent where;
 *   load_only    the policy reads neither text nor tokens.
 *
 * kvg_route_mode_update is called by whoever shows the mode (a timer, the
 * admin endpoints); it logs one line whenever a worker's mode changes. It
 * reads the worker's counters and its subscriber's, and nothing else: no
 * I/O, so tests drive it with made-up inputs. */
#ifndef KVG_ROUTER_MODE_H
#define KVG_ROUTER_MODE_H

#include <stddef.h>
#include <stdint.h>

#include "kv/subscriber.h"
#include "router/worker.h"

enum kvg_route_mode {
    KVG_MODE_EXACT = 0,
    KVG_MODE_DEGRADED,
    KVG_MODE_APPROXIMATE,
    KVG_MODE_LOAD_ONLY,
    KVG_MODE_COUNT
};

/* "exact", "degraded", "approximate", "load_only" ("unknown" otherwise). */
const char *kvg_route_mode_name(int mode);

struct kvg_route_mode_in {
    const char *policy;     /* its name, for reasons */
    int reads_prefix;       /* the policy reads the request's text or tokens */
    int precise;            /* it matches on the pool's KV-event index */
    const char *approx_why; /* when not precise: the reason shown (NULL: no KV events) */
    const struct kvg_kv_sub_stats *events; /* the worker's subscriber counters; NULL: none */
    int has_replay;      /* the worker has a replay endpoint (gaps are repaired) */
    uint32_t block_size; /* the router's */
    uint64_t now_ms;
};

/* Thresholds; zeroes take the defaults. */
struct kvg_route_mode_limits {
    uint32_t no_events_after; /* good answers with no event applied => degraded (20) */
    uint32_t check_min;       /* usage checks before judging token counts (20) */
    double mismatch_share;    /* share of checks that may differ (0.05) */
    uint64_t loss_hold_ms;    /* degraded this long after events were lost (30000) */
    uint32_t check_window;    /* checks per window mark (200): old mismatches age out */
};

/* Evaluates w's mode (under w->mu) and logs a change. Returns the mode. */
int kvg_route_mode_update(struct kvg_worker *w, const struct kvg_route_mode_in *in,
                          const struct kvg_route_mode_limits *lim);
/* Copies w's current mode and reason (reason may be NULL). -1 before any
 * evaluation. */
int kvg_route_mode_get(struct kvg_worker *w, char *reason, size_t cap);
/* One answer's self-check: the engine said engine_prompt prompt tokens (of
 * which engine_cached, -1 unknown, came from its cache), kvgate counted ours
 * for the same request. Counts a check, and a mismatch; and an answer that
 * left fewer than block_size tokens uncached, which stored no new full block
 * and so owed no KV event (a warm engine behind a fresh gateway). */
void kvg_route_mode_usage(struct kvg_worker *w, int64_t engine_prompt, int64_t engine_cached,
                          int64_t ours, uint32_t block_size);

#endif
