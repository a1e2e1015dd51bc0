/* kvgate serve's gateway policy and proxy, from the configuration: the API
 * keys and quota store (gateway/gate.h), the priority admission thresholds
 * (an earlier design of the Gateway API Inference Extension: critical and
 * standard requests go to workers with fewer than 50 waiting, sheddable ones
 * to workers with fewer than 5 waiting and KV below 80%), the admin API's
 * guard against web pages (gateway/guard.h), and what the proxy of every
 * loop shares. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "serve/serve.h"

int kvg_serve_gate_init(struct kvg_serve *sv, char *err, size_t errlen)
{
    const struct kvg_serve_config *c = &sv->cfg;
    struct kvg_gate_opts o = {.keys_path = c->keys_path,
                              .quota_store = c->quota_store,
                              .quota_timeout_ms = c->quota_timeout_ms,
                              .quota_fail_closed = c->quota_fail_closed,
                              .default_max_tokens = c->quota_default_max_tokens,
                              .metrics_require_key = c->metrics_require_key,
                              .require_max_tokens = c->quota_require_max_tokens,
                              .output_cap = c->quota_output_cap};
    kvg_adm_config_default(&o.adm);
    struct kvg_adm_config *a = &o.adm;
    a->critical_max_waiting = c->critical_max_waiting;
    a->standard_max_waiting = c->critical_max_waiting; /* standard waits like critical */
    a->standard_max_kv = 2.0;                          /* (no KV bound of its own) */
    a->sheddable_max_waiting = c->sheddable_max_waiting;
    a->sheddable_max_kv = c->sheddable_max_kv;
    a->stale_ms = c->proxy.metrics_staleness_ms;
    a->queue_timeout_ms = c->queue_timeout_ms;
    a->queue_max = c->queue_size;
    a->batch_max_waiting = c->batch_max_waiting;
    a->batch_max_kv = c->batch_max_kv;
    a->batch_deadline_ms = c->batch_deadline_ms;
    int rc = kvg_gate_init(&sv->gate, &o, &sv->pool, err, errlen);
    if (rc) return rc;
    sv->gate.shed = sv->metrics.shed;
    if ((rc = kvg_guard_init(&sv->admin_guard, &c->admin_hosts, c->host, err, errlen))) return rc;
    if (!sv->gate.auth_on)
        KVG_INFO(
            "no --keys: the admin API (/workers, /debug/route) answers clients on the loopback "
            "interface only");
    struct kvg_proxy *px = &sv->proxy;
    px->cfg = &c->proxy;
    px->pool = &sv->pool;
    px->gate = &sv->gate;
    px->rt = (struct kvg_rinput_tokenizer){sv->tok, sv->chat, c->block_size, sv->tok_cache};
    /* The model's own tokenizer: kvgate answers count_tokens and /tokenize
     * itself. The bytes stand-in (the default, or a fallback) is no
     * model's: those go to an engine. */
    px->tokenizer_exact = !sv->tok_fallback && strcmp(c->tokenizer, "builtin:bytes") != 0;
    px->m = &sv->metrics.proxy;
    px->translate_apis = 0;
    for (size_t i = 0; i < c->translate_apis.n; i++) {
        const char *api = c->translate_apis.v[i];
        if (!strcmp(api, "responses"))
            px->translate_apis |= 1u << KVG_API_RESPONSES;
        else if (!strcmp(api, "messages"))
            px->translate_apis |= 1u << KVG_API_MESSAGES;
        else
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "--translate-apis: '%s' is none of responses, messages", api);
    }
    return 0;
}
