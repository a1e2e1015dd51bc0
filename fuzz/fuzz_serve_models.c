/* libFuzzer: serve's models: section (an operator's YAML, outside bytes
 * all the same) through serve's table, its checks and fold
 * (serve/config_models.c) and the catalog's build (router/catalog.h), then
 * a few resolutions (a worker by its URL, or by a pod label naming its
 * model: model_label is a key the input may give). Any input: an error that says why, or a catalog
 * whose every name resolves to a model or a split of models; never a crash, a loop or a leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "router/catalog.h"
#include "serve/config.h"

static void resolve_all(const struct kvg_catalog *c)
{
    static const char *const keys[] = {"", "session-1", "x"};
    for (size_t k = 0; k < c->nnames; k++)
        for (size_t j = 0; j < 3; j++) {
            struct kvg_catalog_pick p;
            const struct kvg_catalog_name *e = &c->names[k];
            kvg_catalog_resolve(c, e->name, e->len, keys[j], strlen(keys[j]), 0.5, &p);
            if (p.name != (int)k || p.model < 0 || (size_t)p.model >= c->nmodels) abort();
        }
    for (size_t m = 0; m < c->nmodels; m++) {
        for (size_t f = 0; f < c->models[m].nfallbacks; f++)
            if (c->models[m].fallbacks[f] == (int)m) abort(); /* never itself */
        for (size_t w = 0; w < c->models[m].nworkers; w++)
            if (kvg_catalog_worker_model(c, c->models[m].workers[w].url, NULL) != (int)m) abort();
        /* A discovered pod labelled with the model's name serves it. */
        if (c->any < 0 && kvg_catalog_worker_model(c, "", c->models[m].name) != (int)m) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kvg_serve_config *c = malloc(sizeof *c);
    if (!c) return 0;
    kvg_serve_config_default(c);
    char err[1024];
    err[0] = 0;
    int rc = kvg_opt_load_yaml_text(kvg_serve_config_table(), c, (const char *)data, size,
                                    "fuzz.yaml", err, sizeof err);
    if (!rc) rc = kvg_serve_config_models(c, "fuzz.yaml", err, sizeof err);
    if (!rc) {
        struct kvg_catalog *cat = NULL;
        rc = kvg_serve_models_catalog(c, "fuzz.yaml", &cat, err, sizeof err);
        if (!rc) {
            resolve_all(cat);
            kvg_catalog_unref(cat);
        }
    }
    if (rc && !err[0]) abort(); /* a failure always says why */
    kvg_serve_config_free(c);
    free(c);
    return 0;
}
