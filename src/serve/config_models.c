/* kvgate serve's models: section (issue 34): the row table of one entry
 * (read by base/opt.h into router/catalog.h's struct kvg_catalog_spec),
 * the check of the whole section through the catalog's build, and the
 * fold of every model's workers into serve's worker lists (as --prefill
 * folds its own), so that the pool, health checks, roles and SIGHUP see
 * them as they see any worker. docs/models.md is the operator's page. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "router/catalog.h"
#include "serve/config.h"

/* A row is a struct kvg_serve_model whose spec comes first: the spec's
 * offsets are the row's. */
_Static_assert(offsetof(struct kvg_serve_model, spec) == 0, "the spec must open the row");
#define M(f) offsetof(struct kvg_catalog_spec, f)
#define MS(f) sizeof(((struct kvg_catalog_spec *)0)->f)
#define W(f) offsetof(struct kvg_catalog_worker, f)
#define WS(f) sizeof(((struct kvg_catalog_worker *)0)->f)

static const char *const roles[] = {"regular", "prefill", "decode", "encode", NULL};

/* A model's worker: a top-level workers: row's keys, into one struct. */
static const struct kvg_opt worker_t[] = {
    {"url", NULL, KVG_OPT_STR, W(url), WS(url), .flags = KVG_OPT_F_PRIMARY | KVG_OPT_F_REQUIRED},
    {"kv_events_endpoint", NULL, KVG_OPT_STR, W(kv_events_endpoint), WS(kv_events_endpoint),
     .help = "its engine's KV event ZMQ endpoint"},
    {"replay_endpoint", NULL, KVG_OPT_STR, W(replay_endpoint), WS(replay_endpoint),
     .help = "its KV event replay endpoint"},
    {"upstream_api_key", NULL, KVG_OPT_STR, W(upstream_api_key), WS(upstream_api_key),
     .help = "its own key (else upstream_api_key)"},
    {"role", NULL, KVG_OPT_ENUM, W(role), WS(role), .choices = roles},
    {"labels", NULL, KVG_OPT_STR, W(labels), WS(labels), .help = "node=..,rack=..,zone=.."},
    {"bootstrap_port", NULL, KVG_OPT_U32, W(bootstrap_port), .min = 1, .max = 65535},
    {"line", NULL, KVG_OPT_INT, W(line), .flags = KVG_OPT_F_LINE},
    KVG_OPT_END,
};

#define SH(f) offsetof(struct kvg_catalog_share, f)

/* split: {model: weight}. */
static const struct kvg_opt share_t[] = {
    {"model", NULL, KVG_OPT_STR, SH(model), sizeof(((struct kvg_catalog_share *)0)->model),
     .flags = KVG_OPT_F_KEY},
    {"weight", NULL, KVG_OPT_DOUBLE, SH(weight), .min = 0, .max = 100,
     .flags = KVG_OPT_F_PRIMARY | KVG_OPT_F_REQUIRED},
    {"line", NULL, KVG_OPT_INT, SH(line), .flags = KVG_OPT_F_LINE},
    KVG_OPT_END,
};

const struct kvg_opt kvg__serve_model_row[] = {
    {"name", NULL, KVG_OPT_STR, M(name), MS(name), .flags = KVG_OPT_F_REQUIRED},
    {"aliases", NULL, KVG_OPT_LIST, M(aliases), .help = "more names for this entry"},
    {"alias_of", NULL, KVG_OPT_STR, M(alias_of), MS(alias_of),
     .help = "this name stands for that entry's"},
    {"tokenizer", NULL, KVG_OPT_STR, M(tokenizer), MS(tokenizer),
     .help = "tokenizer.json, or a model directory holding it"},
    {"tokenizer_config", NULL, KVG_OPT_STR, M(tokenizer_config), MS(tokenizer_config),
     .help = "tokenizer_config.json"},
    {"chat_template", NULL, KVG_OPT_STR, M(chat_template), MS(chat_template),
     .help = "a Jinja chat template file"},
    {"block_size", NULL, KVG_OPT_U32, M(block_size), .min = 1, .max = UINT32_MAX},
    {"max_model_len", NULL, KVG_OPT_U32, M(max_model_len), .min = 1, .max = UINT32_MAX},
    {"max_inflight", NULL, KVG_OPT_U32, M(max_inflight), .min = 1, .max = 1000000,
     .help = "its requests in flight at once (queued ones too); more: 429 model_overloaded"},
    {"max_queue", NULL, KVG_OPT_U32, M(max_queue), .min = 1, .max = 1000000,
     .help = "its requests waiting in the gateway queue at once; more: 503 queue_full"},
    {"slo_ttft_secs", NULL, KVG_OPT_DOUBLE, M(slo_ttft_s), .min = 0.001, .max = 3600,
     .help = "with slo_itl_secs: its own TTFT target (else --slo-ttft-secs)"},
    {"slo_itl_secs", NULL, KVG_OPT_DOUBLE, M(slo_itl_s), .min = 0.0001, .max = 60,
     .help = "its own mean inter-token latency target (else --slo-itl-secs)"},
    {"policy", NULL, KVG_OPT_STR, M(policy), MS(policy), .help = "its routing policy"},
    {NULL, NULL, KVG_OPT_INCLUDE, M(policy_opts), .sub = kvg_policy_opt_table},
    {"workers", NULL, KVG_OPT_ROWS, M(workers), sizeof(struct kvg_catalog_worker), .sub = worker_t,
     .count_off = M(nworkers), .max_rows = KVG_CFG_MAX_WORKERS, .flags = KVG_OPT_F_ALLOC},
    {"split", NULL, KVG_OPT_MAP, M(split), sizeof(struct kvg_catalog_share), .sub = share_t,
     .count_off = M(nsplit), .max_rows = KVG_CATALOG_MAX_SPLIT, .flags = KVG_OPT_F_ALLOC},
    {"fallbacks", NULL, KVG_OPT_LIST, M(fallbacks), .help = "models to serve it instead, in order"},
    {"serving", NULL, KVG_OPT_INCLUDE, offsetof(struct kvg_serve_model, serving),
     .sub = kvg_pd_serving_table, .help = "its serving mode: {mode: vllm-pd, ...}"},
    {"line", NULL, KVG_OPT_INT, M(line), .flags = KVG_OPT_F_LINE},
    KVG_OPT_END,
};

int kvg__serve_model_init(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent, (void)index;
    struct kvg_serve_model *row = item;
    struct kvg_catalog_spec *s = &row->spec;
    kvg_pd_config_default(&row->serving);
    row->serving_given = 0;
    size_t n = 0;
    while (kvg_policy_opt_table[n].name) n++;
    if (n > 64) /* policy_set has a bit per policy option */
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%zu policy options, the mask holds 64", n);
    kvg_policy_opts_default(&s->policy_opts);
    s->policy_set = 0;
    return 0;
}

void kvg__serve_model_seen(void *item, const struct kvg_opt *o)
{
    struct kvg_catalog_spec *s = item;
    if (o->sub == kvg_pd_serving_table) ((struct kvg_serve_model *)item)->serving_given = 1;
    for (size_t k = 0; k < 64 && kvg_policy_opt_table[k].name; k++)
        if (o == &kvg_policy_opt_table[k]) s->policy_set |= 1ull << k;
}

/* The top-level workers as catalog workers (the one model's): *out is
 * the caller's to free. */
static int top_workers(const struct kvg_serve_config *c, struct kvg_catalog_worker **out)
{
    *out = NULL;
    if (!c->workers.n) return 0;
    struct kvg_catalog_worker *w = calloc(c->workers.n, sizeof *w);
    if (!w) return -ENOMEM;
    for (size_t i = 0; i < c->workers.n; i++) {
#define TAKE(list, field)                                                                          \
    if (i < c->list.n && strcmp(c->list.v[i], "none"))                                             \
    snprintf(w[i].field, sizeof w[i].field, "%s", c->list.v[i])
        TAKE(workers, url);
        TAKE(kv_endpoints, kv_events_endpoint);
        TAKE(replay_endpoints, replay_endpoint);
        TAKE(upstream_keys, upstream_api_key);
        TAKE(worker_roles, role);
        TAKE(worker_labels, labels);
#undef TAKE
        uint64_t port = 0;
        if (i < c->worker_bootstrap.n && !kvg_opt_parse_u64(c->worker_bootstrap.v[i], &port) &&
            port < 65536)
            w[i].bootstrap_port = (uint32_t)port;
    }
    *out = w;
    return 0;
}

int kvg_serve_models_catalog(const struct kvg_serve_config *c, const char *file,
                             struct kvg_catalog **out, char *err, size_t errlen)
{
    struct kvg_catalog_worker *w = NULL;
    int rc = c->nmodels ? 0 : top_workers(c, &w);
    if (rc) return kvg_err_set(err, errlen, rc, "models: out of memory");
    struct kvg_strlist scaled = {0};
    if ((rc = kvg_serve_autoscale_scaled(c, &scaled, err, errlen))) {
        free(w);
        return rc;
    }
    const struct kvg_catalog_top top = {
        .file = file,
        .tokenizer = c->tokenizer,
        .tokenizer_config = c->tokenizer_config,
        .chat_template = c->chat_template,
        .policy = c->policy,
        .block_size = c->block_size,
        .policy_opts = &c->policy_opts,
        .workers = w,
        .nworkers = c->nmodels ? 0 : c->workers.n,
        .slo_ttft_s = c->slo_ttft_s,
        .slo_itl_s = c->slo_itl_s,
        .discovered = c->nmodels && c->model_label[0],
        .scaled = scaled.v,
        .nscaled = scaled.n,
    };
    /* The catalog reads the specs as one array: the rows' own, side by side. */
    struct kvg_catalog_spec *specs = c->nmodels ? calloc(c->nmodels, sizeof *specs) : NULL;
    if (c->nmodels && !specs) {
        free(w);
        kvg_strlist_free(&scaled);
        return kvg_err_set(err, errlen, -ENOMEM, "models: out of memory");
    }
    for (size_t i = 0; i < c->nmodels; i++) specs[i] = c->models[i].spec;
    rc = kvg_catalog_build(specs, c->nmodels, &top, out, err, errlen);
    free(specs);
    free(w);
    kvg_strlist_free(&scaled);
    return rc;
}

/* Appends v ("" as "none") to l, first filling it with "none" up to n
 * values when it is to hold one per worker. */
static int add_column(struct kvg_strlist *l, size_t n, const char *v)
{
    int rc = 0;
    while (!rc && l->n < n) rc = kvg_strlist_add(l, "none");
    return rc ? rc : kvg_strlist_add(l, v[0] ? v : "none");
}

/* Which per-worker values some model's worker gives: those lists get one
 * value per worker, "none" where a worker gives none (as workers: rows). */
struct given {
    int kv, replay, key, role, labels, port;
};

static int fold_worker(struct kvg_serve_config *c, const struct kvg_catalog_worker *w,
                       const struct given *g)
{
    size_t n = c->workers.n;
    char port[16] = "";
    if (w->bootstrap_port) snprintf(port, sizeof port, "%u", w->bootstrap_port);
    int rc = kvg_strlist_add(&c->workers, w->url);
    if (!rc && g->kv) rc = add_column(&c->kv_endpoints, n, w->kv_events_endpoint);
    if (!rc && g->replay) rc = add_column(&c->replay_endpoints, n, w->replay_endpoint);
    if (!rc && g->key) rc = add_column(&c->upstream_keys, n, w->upstream_api_key);
    if (!rc && g->role) rc = add_column(&c->worker_roles, n, w->role);
    if (!rc && g->labels) rc = add_column(&c->worker_labels, n, w->labels);
    if (!rc && g->port) rc = add_column(&c->worker_bootstrap, n, port);
    return rc;
}

/* Lists of the top level that say workers: none may be given with models:. */
static const char *top_level_workers(const struct kvg_serve_config *c)
{
    return c->workers.n            ? "worker_urls (or workers:)"
           : c->prefill_urls.n     ? "prefill"
           : c->decode_urls.n      ? "decode"
           : c->encode_urls.n      ? "encode"
           : c->epd_config[0]      ? "epd_config"
           : c->kv_endpoints.n     ? "kv_events_endpoints"
           : c->replay_endpoints.n ? "replay_endpoints"
           : c->upstream_keys.n    ? "upstream_api_keys"
           : c->worker_roles.n     ? "worker_roles"
           : c->worker_labels.n    ? "worker_labels"
           : c->worker_bootstrap.n ? "worker_bootstrap_ports"
           : c->service_discovery && !c->model_label[0]
               ? "service_discovery without model_label (which model a pod serves)"
               : NULL;
}

int kvg_serve_config_models(struct kvg_serve_config *c, const char *file, char *err, size_t errlen)
{
    if (c->model_label[0] && !c->nmodels)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "%s: model_label names a models: entry per pod: it needs a models: "
                           "section",
                           file && file[0] ? file : "config");
    if (!c->nmodels || c->models_folded) return 0;
    const char *top = top_level_workers(c);
    if (top)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "%s: models: and %s exclude each other: each model lists its own "
                           "workers, or with service_discovery and model_label its pods' label "
                           "names it",
                           file && file[0] ? file : "config", top);
    struct kvg_catalog *cat;
    int rc = kvg_serve_models_catalog(c, file, &cat, err, errlen);
    if (rc) return rc;
    kvg_catalog_unref(cat);
    struct given g = {0};
    for (size_t i = 0; i < c->nmodels; i++)
        for (size_t k = 0; k < c->models[i].spec.nworkers; k++) {
            const struct kvg_catalog_worker *w = &c->models[i].spec.workers[k];
            g.kv |= w->kv_events_endpoint[0] != 0;
            g.replay |= w->replay_endpoint[0] != 0;
            g.key |= w->upstream_api_key[0] != 0;
            g.role |= w->role[0] != 0;
            g.labels |= w->labels[0] != 0;
            g.port |= w->bootstrap_port != 0;
        }
    for (size_t i = 0; !rc && i < c->nmodels; i++)
        for (size_t k = 0; !rc && k < c->models[i].spec.nworkers; k++)
            rc = fold_worker(c, &c->models[i].spec.workers[k], &g);
    if (rc == -ENOSPC)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: models: at most %d workers in all",
                           file && file[0] ? file : "config", KVG_OPT_LIST_MAX);
    if (rc) return kvg_err_set(err, errlen, rc, "models: %s", kvg_strerror(rc));
    c->models_folded = 1;
    return 0;
}
