/* What the PD part's files share (not its public face: pd.h). */
#ifndef KVG_PD_PD_INT_H
#define KVG_PD_PD_INT_H

#include "base/json_edit.h"
#include "metrics/metrics.h"
#include "pd/pd.h"

/* engines.c: each prefill worker's engine id, as its answers name it. */
int kvg__pd_engines_new(struct kvg_pd *pd);
void kvg__pd_engines_free(struct kvg_pd *pd);
/* r's prefill answer from r->prefill_url named r->engine_id (its
 * remote_engine_id): learnt; a different id than the one known means the
 * engine restarted and the blocks it held are gone (counted in r's
 * model's series, logged). Any thread. */
void kvg__pd_engine_seen(struct kvg_pd *pd, struct kvg_pd_req *r);

/* series.c: the families (kvg_pd_new), each model's series freed with
 * pd; a request's observation in its model's series. */
int kvg__pd_series_init(struct kvg_pd *pd, struct kvg_metrics_registry *reg);
void kvg__pd_series_free(struct kvg_pd *pd);
void kvg__pd_observe(const struct kvg_pd_req *r, int which, double v);

/* The body s[0, len) with the edits made (base/json_edit.h), NUL-terminated;
 * NULL when it is not a JSON object or memory ran out. Ownership: the
 * caller frees it. */
char *kvg__pd_body_edit(const char *body, size_t len, const struct kvg_json_edit *e, size_t ne);

#endif
