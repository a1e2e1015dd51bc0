/* Placement of a request the proxy did not route (proxy.h, kvg_proxy_place):
 * the same route input a proxied request gets, so the policy sees the very
 * hashes a later request with that prompt will carry. */
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "proxy/proxy.h"

int kvg_proxy_place(struct kvg_proxy *px, const char *url, const char *body, size_t len, int chat)
{
    struct kvg_rinput ri;
    char msg[128];
    int rc = kvg_rinput_parse(&ri, body, len, chat ? KVG_API_CHAT : KVG_API_COMPLETIONS, msg,
                              sizeof msg);
    if (rc) return rc;
    /* Its model's routing state, as a request for that name would get
     * (models.c; no session key: a split's side at random). */
    struct kvg_catalog *cat = px->catalog ? kvg_catalog_acquire(px->catalog) : NULL;
    const struct kvg_proxy_model *pm = NULL;
    if (cat) {
        struct kvg_catalog_pick pk;
        kvg_catalog_resolve(cat, ri.model, ri.model_len, NULL, 0, kvg_rng_double(kvg_rand_thread()),
                            &pk);
        pm = pk.model >= 0 ? cat->models[pk.model].host : NULL;
        if (!pm) rc = KVG_ENOTFOUND;
    }
    if (!rc && (pm ? pm->wants_text : px->wants_text)) rc = kvg_rinput_text(&ri);
    if (!rc) {
        ri.adapter = kvg_pool_model_is_adapter(px->pool, ri.model, ri.model_len);
        if (pm ? pm->wants_tokens : px->wants_tokens)
            kvg_rinput_tokenize(&ri, pm ? &pm->rt : &px->rt, 0);
        struct kvg_route_ctx ctx = {.body = {body, len},
                                    .rng = kvg_rand_thread(),
                                    .now_ms = kvg_now_ms(),
                                    .load_max_age_ms = px->cfg ? px->cfg->metrics_staleness_ms : 0,
                                    .policy = pm ? pm->policy : NULL};
        kvg_rinput_ctx(&ri, &ctx);
        rc = kvg_pool_place(px->pool, url, &ctx);
    }
    if (cat) kvg_catalog_unref(cat);
    kvg_rinput_free(&ri);
    return rc;
}
