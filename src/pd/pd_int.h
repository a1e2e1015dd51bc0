/* What the PD part's files share (not its public face: pd.h). */
#ifndef KVG_PD_PD_INT_H
#define KVG_PD_PD_INT_H

#include "base/json_edit.h"
#include "metrics/metrics.h"
#include "pd/pd.h"

/* engines.c: each prefill worker's engine id, as its answers name it. */
int kvg__pd_engines_new(struct kvg_pd *pd, struct kvg_metrics_registry *reg);
void kvg__pd_engines_free(struct kvg_pd *pd);
/* A prefill answer from url named engine_id (its remote_engine_id): learnt;
 * a different id than the one known means the engine restarted and the
 * blocks it held are gone (counted, logged). Any thread. */
void kvg__pd_engine_seen(struct kvg_pd *pd, const char *url, const char *engine_id);

/* The body s[0, len) with the edits made (base/json_edit.h), NUL-terminated;
 * NULL when it is not a JSON object or memory ran out. Ownership: the
 * caller frees it. */
char *kvg__pd_body_edit(const char *body, size_t len, const struct kvg_json_edit *e, size_t ne);

#endif
