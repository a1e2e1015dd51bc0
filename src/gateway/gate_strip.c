/* What a client's body may not carry to an engine (gate_int.h): the
 * members kvgate alone sets, cut out byte for byte before the body is
 * forwarded (moved out of gate.c, which holds the gate's decisions). */
#include <errno.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "base/json_edit.h"
#include "base/json_scan.h"
#include "base/util.h"
#include "gateway/gate_int.h"

/* Members that tell an engine where to move KV or encoder caches from or to
 * (vLLM's NIXL and EC connectors, SGLang's bootstrap), or which of its
 * data-parallel ranks runs the request. kvgate sets them on its PD legs and
 * rank workers; from a client the first would point an engine at a host of
 * the client's choosing, the second would run the request on a rank other
 * than the one kvgate picked and recorded its blocks on. And `priority`:
 * vLLM's (and SGLang's) priority scheduling orders its queue by it, so a
 * client's would jump the engine's queue around kvgate's priority classes
 * (x-kvgate-priority or the key's default, which admission already
 * ordered); it is not set from the class either, as an engine without
 * priority scheduling refuses any but 0. They never reach an engine as sent. */
static const struct kvg_str ENGINE_ONLY[] = {
    KVG_STR("kv_transfer_params"), KVG_STR("ec_transfer_params"),
    KVG_STR("bootstrap_host"),     KVG_STR("bootstrap_port"),
    KVG_STR("bootstrap_room"),     KVG_STR("data_parallel_rank"),
    KVG_STR("routed_dp_rank"),     KVG_STR("priority")};

static int engine_only(const char *k, size_t n)
{
    for (size_t i = 0; i < KVG_ARRAY_LEN(ENGINE_ONLY); i++)
        if (ENGINE_ONLY[i].len == n && !memcmp(k, ENGINE_ONLY[i].p, n)) return 1;
    return 0;
}

#define STRIP_OPAQUE 1 /* a key whose bytes are not its text: the cut stops */

/* An escape or a raw control byte (cJSON's key ends at a NUL) makes a key's
 * bytes differ from its text: such a body is refused rather than cut. */
static int plain_key(void *ud, const char *s, const struct kvg_json_member *m)
{
    (void)ud;
    if (m->key_escaped) return STRIP_OPAQUE;
    for (size_t i = m->key; i < m->key_end; i++)
        if ((unsigned char)s[i] < 0x20) return STRIP_OPAQUE;
    return 0;
}

/* The client's body without ENGINE_ONLY members, into gr->fwd_body: 0 (the
 * body had none: fwd_body stays empty), 1 (cut out by base/json_edit.h,
 * every other member as the client wrote it; only the whitespace between
 * members goes), KVG_EPARSE (one is there but the body is not strict JSON
 * or its keys are escaped, so the cut could not be exact: refused), or
 * -ENOMEM. */
int kvg__gate_strip_engine_only(struct kvg_gate_req *gr, const struct kvg_gate_request *rq)
{
    int found = 0;
    for (const cJSON *it = rq->json ? rq->json->child : NULL; it && !found; it = it->next)
        found = it->string && engine_only(it->string, strlen(it->string));
    if (!found) return 0;
    /* The cut follows the scan's reading of the bytes, which is cJSON's only
     * for strict JSON: a lenient body (a BOM, control bytes as whitespace)
     * is refused rather than cut where cJSON might not see the members. */
    struct kvg_json_arena mem = {0}; /* its strings may hold \u0000 (base/json.h) */
    cJSON *strict = kvg_json_parse_strict_in(&mem, rq->body, rq->body_len);
    int exact = cJSON_IsObject(strict);
    kvg_json_free(&mem, strict);
    if (!exact || kvg_json_members(rq->body, rq->body_len, plain_key, NULL, NULL, NULL))
        return KVG_EPARSE;
    struct kvg_json_edit e[KVG_ARRAY_LEN(ENGINE_ONLY)];
    for (size_t i = 0; i < KVG_ARRAY_LEN(ENGINE_ONLY); i++)
        e[i] = (struct kvg_json_edit){.op = KVG_JSON_EDIT_REMOVE, .name = ENGINE_ONLY[i].p};
    kvg_buf_init(&gr->fwd_body, 0);
    int rc = kvg_json_edit_joined(rq->body, rq->body_len, e, KVG_ARRAY_LEN(e), &gr->fwd_body);
    if (rc <= 0) { /* 0: cJSON saw one the scan did not: no exact cut */
        kvg_buf_free(&gr->fwd_body);
        return rc == -ENOMEM || rc == KVG_ETOOBIG ? -ENOMEM : KVG_EPARSE;
    }
    return 1;
}
