/* What the gate's files share (not its public face: gate.h). */
#ifndef KVG_GATEWAY_GATE_INT_H
#define KVG_GATEWAY_GATE_INT_H

#include "gateway/gate.h"

/* gate_strip.c: the client's body without the members only kvgate sets
 * (KV and encoder transfer, bootstrap, data-parallel rank, priority), into
 * gr->fwd_body: 0 (the body had none: fwd_body stays empty), 1 (cut out
 * by base/json_edit.h, every other member as the client wrote it; only the
 * whitespace between members goes), KVG_EPARSE (one is there but the body
 * is not strict JSON or its keys are escaped, so the cut could not be
 * exact: refused), or -ENOMEM. */
int kvg__gate_strip_engine_only(struct kvg_gate_req *gr, const struct kvg_gate_request *rq);

#endif
