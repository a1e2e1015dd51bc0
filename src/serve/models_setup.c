/* The served models (router/catalog.h) as the proxy routes them: for each,
 * its tokenizer and chat template, and its own routing policy (its own
 * prefix history: one model's prompts never weigh on another's workers).
 * The single-model flags are one model that every name resolves to, and it
 * routes exactly as before (the tokenizer, template and policy of
 * router_setup.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "jinja/chat.h"
#include "serve/serve.h"
#include "tokenizer/tokenizer.h"

/* One model's state and what it owns (the shared tokenizer is not). */
struct model_state {
    struct kvg_proxy_model pm;
    struct kvg_tok *tok;          /* owned when the model has its own */
    struct kvg_jinja_chat *chat;  /* owned when the model has its own */
    struct kvg_tok_pcache *cache; /* owned when the model has its own tokenizer */
    int own_policy;
};

/* A model with a tokenizer of its own: loaded with its template. */
static int own_tokenizer(struct kvg_serve *sv, const struct kvg_catalog_model *m,
                         struct model_state *st, char *err, size_t errlen)
{
    int rc = kvg_tok_load(m->tokenizer, m->tokenizer_config[0] ? m->tokenizer_config : NULL,
                          &st->tok, err, errlen);
    if (rc)
        return kvg_err_set(err, errlen, rc, "model %s (%s): tokenizer: %s", m->name, m->where, err);
    struct kvg_buf tpl;
    kvg_buf_init(&tpl, 16u << 20);
    if (m->chat_template[0] &&
        ((rc = kvg_buf_read_file(&tpl, m->chat_template)) || (rc = kvg_buf_append(&tpl, "", 1)))) {
        kvg_buf_free(&tpl);
        return kvg_err_set(err, errlen, KVG_ECONFIG, "model %s (%s): chat_template %s: %s", m->name,
                           m->where, m->chat_template, kvg_strerror(rc));
    }
    rc = kvg_jinja_chat_new(tpl.len ? tpl.data : kvg_tok_chat_template(st->tok),
                            kvg_tok_bos_token(st->tok), kvg_tok_eos_token(st->tok), &st->chat, err,
                            errlen);
    kvg_buf_free(&tpl);
    if (rc) return rc;
    if (sv->cfg.tokenizer_cache_bytes &&
        (rc = kvg_tok_pcache_new(st->tok, (size_t)sv->cfg.tokenizer_cache_bytes, &st->cache)))
        return rc;
    return 0;
}

static int model_init(struct kvg_serve *sv, struct kvg_catalog_model *m, struct model_state *st,
                      char *err, size_t errlen)
{
    const struct kvg_serve_config *c = &sv->cfg;
    int rc;
    if (strcmp(m->tokenizer, c->tokenizer) || strcmp(m->tokenizer_config, c->tokenizer_config) ||
        strcmp(m->chat_template, c->chat_template)) {
        if ((rc = own_tokenizer(sv, m, st, err, errlen))) return rc;
        st->pm.rt = (struct kvg_rinput_tokenizer){st->tok, st->chat, m->block_size, st->cache};
        st->pm.tokenizer_exact = strcmp(m->tokenizer, "builtin:bytes") != 0;
    } else {
        st->pm.rt = sv->proxy.rt;
        st->pm.rt.block_size = m->block_size;
        st->pm.tokenizer_exact = sv->proxy.tokenizer_exact;
    }
    struct kvg_policy_opts o = m->policy_opts;
    o.kv = sv->kv;
    if ((rc = kvg_policy_new(m->policy, &o, &st->pm.policy)))
        return kvg_err_set(err, errlen, rc, "model %s (%s): policy %s: %s", m->name, m->where,
                           m->policy, kvg_strerror(rc));
    st->own_policy = 1;
    st->pm.wants_tokens = st->pm.policy->ops->wants_tokens;
    st->pm.wants_text = st->pm.policy->ops->wants_text;
    KVG_INFO("model %s (%s): policy %s, tokenizer %s, block %u", m->name, m->where, m->policy,
             m->tokenizer, m->block_size);
    return 0;
}

int kvg_serve_models_init(struct kvg_serve *sv, char *err, size_t errlen)
{
    int rc = kvg_serve_models_catalog(&sv->cfg, sv->cfg.config_path, &sv->catalog, err, errlen);
    if (rc) return rc;
    struct kvg_catalog *cat = sv->catalog;
    for (size_t i = 0; i < cat->nmodels; i++) {
        struct model_state *st = calloc(1, sizeof *st);
        if (!st) return -ENOMEM;
        cat->models[i].host = st;
        if ((int)i == cat->any) { /* the flags' one model: as router_setup.c made it */
            st->pm.rt = sv->proxy.rt;
            st->pm.wants_tokens = sv->proxy.wants_tokens;
            st->pm.wants_text = sv->proxy.wants_text;
            st->pm.tokenizer_exact = sv->proxy.tokenizer_exact;
            continue;
        }
        if ((rc = model_init(sv, &cat->models[i], st, err, errlen))) return rc;
    }
    sv->proxy.catalog = cat;
    return 0;
}

void kvg_serve_models_free(struct kvg_serve *sv)
{
    struct kvg_catalog *cat = sv->catalog;
    if (!cat) return;
    for (size_t i = 0; i < cat->nmodels; i++) {
        struct model_state *st = cat->models[i].host;
        if (!st) continue;
        if (st->own_policy) st->pm.policy->ops->destroy(st->pm.policy);
        if (st->chat) kvg_jinja_chat_free(st->chat);
        kvg_tok_pcache_free(st->cache);
        if (st->tok) kvg_tok_free(st->tok);
        free(st);
        cat->models[i].host = NULL;
    }
    sv->proxy.catalog = NULL;
    kvg_catalog_unref(cat);
    sv->catalog = NULL;
}
