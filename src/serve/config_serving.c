/* Each model's serving mode (docs/models.md): its entry's serving:
 * section (the PD options' one table, pd/pd.h's kvg_pd_serving_table), or
 * the top level's PD flags for an entry without one; and the check of
 * each model's workers' roles against it, naming the entry's file:line, as
 * config_pd.c checks the single-model flags' workers. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "serve/config.h"

void kvg_serve_model_serving(const struct kvg_serve_config *c, size_t i, struct kvg_pd_config *out)
{
    if (c->models[i].serving_given) {
        *out = c->models[i].serving;
        return;
    }
    *out = c->pd;
    out->mode = c->vllm_pd ? KVG_PD_VLLM : c->sglang_pd ? KVG_PD_SGLANG : KVG_PD_OFF;
}

/* What a model's workers' roles need of its mode; "" when it fits. */
static const char *roles_misfit(const struct kvg_catalog_spec *s, const struct kvg_pd_config *pd)
{
    size_t np = 0, nd = 0, ne = 0;
    for (size_t k = 0; k < s->nworkers; k++) {
        const char *r = s->workers[k].role;
        np += !strcmp(r, "prefill");
        nd += !strcmp(r, "decode");
        ne += !strcmp(r, "encode");
    }
    if (pd->mode == KVG_PD_OFF)
        return np || nd ? "prefill and decode workers need a PD serving mode (serving: {mode: "
                          "vllm-pd} or sglang-pd)"
               : ne     ? "encode workers need a PD serving mode with epd_disaggregation"
                        : "";
    if (!np) return "no prefill worker: a PD mode needs prefill and decode workers (role:)";
    if (!nd) return "no decode worker: a PD mode needs prefill and decode workers (role:)";
    if (ne && !pd->epd) return "encode workers need epd_disaggregation: true";
    if (pd->epd && pd->mode == KVG_PD_VLLM && !ne)
        return "epd_disaggregation with vllm-pd needs an encode worker (role: encode)";
    return "";
}

int kvg_serve_config_serving(const struct kvg_serve_config *c, const char *file, char *err,
                             size_t errlen)
{
    for (size_t i = 0; i < c->nmodels; i++) {
        const struct kvg_catalog_spec *s = &c->models[i].spec;
        if (!s->nworkers && c->models[i].serving_given)
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "%s:%d: models[%zu] '%s': serving: only a model with workers has "
                               "one (this entry is a %s)",
                               file && file[0] ? file : "config", s->line, i, s->name,
                               s->nsplit ? "split" : "alias");
        if (!s->nworkers) continue; /* a split or an alias serves nothing itself */
        struct kvg_pd_config pd;
        kvg_serve_model_serving(c, i, &pd);
        char who[512];
        snprintf(who, sizeof who, "%s:%d: models[%zu] '%s': serving%s%s",
                 file && file[0] ? file : "config", s->line, i, s->name,
                 c->models[i].serving_given ? " " : " (the top level's) ",
                 kvg_pd_mode_name(pd.mode));
        const char *why = roles_misfit(s, &pd);
        if (why[0]) return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: %s", who, why);
        int rc = c->models[i].serving_given ? kvg__serve_pd_values(&pd, who, err, errlen) : 0;
        if (rc) return rc;
    }
    return 0;
}
