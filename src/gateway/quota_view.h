/* What every quota sees now, for an operator: GET /quota/usage and the
 * status page's "Quota usage" table. Each scope of the current key set (a
 * key's own limits, a tenant's, a tenant's per-model pattern) is read with
 * kvg_quota_peek, so looking changes nothing in either store.
 *
 * Ownership: a view is owned by the module from kvg_gate_quota_view until
 * its callback has run; the caller may cancel it (the HTTP client went
 * away), after which the callback never runs and the view frees itself
 * once the store's answers are in. Loop thread of gl only. */
#ifndef KVG_GATEWAY_QUOTA_VIEW_H
#define KVG_GATEWAY_QUOTA_VIEW_H

#include "gateway/gate.h"

struct cJSON;
struct kvg_gate_quota_view;

#define KVG_GATE_VIEW_MAX_SCOPES 512 /* scopes read per view; more are counted, not read */

/* j: {"store", "at_ms", "scopes": [{"scope", "kind": key|tenant|model,
 * "keys": [names charged to it], "limits": [{"kind": tokens|requests|
 * concurrent, "window", "limit", "used", "remaining", "reset_ms"}],
 * "error"?}], "truncated"}; the callback owns j (cJSON_Delete). j is NULL
 * only without memory. */
typedef void (*kvg_gate_view_cb)(void *ud, struct cJSON *j);

/* Starts a view. KVG_ENOTFOUND when keys are off (no quotas to show);
 * -ENOMEM. The callback may run before this returns (the in-process store). */
int kvg_gate_quota_view(struct kvg_gate_loop *gl, kvg_gate_view_cb cb, void *ud,
                        struct kvg_gate_quota_view **out);
void kvg_gate_quota_view_cancel(struct kvg_gate_quota_view *v);

#endif
