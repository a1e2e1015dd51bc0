/* Workers: creation, reference counting, model matching. */
#include "router/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kvg_worker_new(const char *url, struct kvg_worker **out)
{
    if (strlen(url) >= sizeof((struct kvg_worker *)0)->url) return -EINVAL;
    struct kvg_worker *w = calloc(1, sizeof *w);
    if (!w) return -ENOMEM;
    int rc = kvg_http_target_parse(url, &w->target);
    if (rc) {
        free(w);
        return rc;
    }
    snprintf(w->url, sizeof w->url, "%s", url);
    size_t n = strlen(w->url);
    while (n && w->url[n - 1] == '/') w->url[--n] = 0;
    pthread_mutex_init(&w->mu, NULL);
    w->load = (struct kvg_engine_load){-1, -1, -1, 0, 0, 0, 0};
    w->slot = -1;
    atomic_store(&w->healthy, 1);
    atomic_store(&w->refs, 1);
    *out = w;
    return 0;
}

void kvg_worker_ref(struct kvg_worker *w)
{
    atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
}

void kvg_worker_unref(struct kvg_worker *w)
{
    if (atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int kvg_worker_serves(struct kvg_worker *w, const char *model, size_t len)
{
    if (!model || !len) return 1;
    int ok = 0;
    pthread_mutex_lock(&w->mu);
    if (w->nmodels == 0) ok = 1;
    for (int i = 0; !ok && i < w->nmodels; i++)
        ok = strlen(w->models[i]) == len && !memcmp(w->models[i], model, len);
    pthread_mutex_unlock(&w->mu);
    return ok;
}

uint32_t kvg_worker_max_model_len(struct kvg_worker *w, const char *model, size_t len)
{
    uint32_t v = 0;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->nmodels; i++)
        if (strlen(w->models[i]) == len && !memcmp(w->models[i], model, len))
            v = w->max_model_len[i];
    pthread_mutex_unlock(&w->mu);
    return v;
}

struct kvg_engine_load kvg_worker_load(struct kvg_worker *w, uint64_t now_ms, uint64_t max_age_ms)
{
    pthread_mutex_lock(&w->mu);
    struct kvg_engine_load l = w->load;
    pthread_mutex_unlock(&w->mu);
    if (!l.at_ms || now_ms - l.at_ms > max_age_ms) l.waiting = l.running = l.kv_usage = -1;
    return l;
}

const char *kvg_worker_scrape_state_name(int state)
{
    static const char *names[] = {"never",       "ok",         "no_signals",
                                  "unreachable", "http_error", "bad_body"};
    return state >= 0 && state < (int)(sizeof names / sizeof *names) ? names[state] : "?";
}

void kvg_worker_set_api_key(struct kvg_worker *w, const char *key)
{
    pthread_mutex_lock(&w->mu);
    snprintf(w->api_key, sizeof w->api_key, "%s", key ? key : "");
    pthread_mutex_unlock(&w->mu);
}

int kvg_worker_auth_header(struct kvg_worker *w, char *buf, size_t cap, struct kvg_http_header *h)
{
    pthread_mutex_lock(&w->mu);
    int n = w->api_key[0] ? snprintf(buf, cap, "Bearer %s", w->api_key) : 0;
    pthread_mutex_unlock(&w->mu);
    if (n <= 0 || (size_t)n >= cap) return 0;
    *h = (struct kvg_http_header){KVG_STR("authorization"), {buf, (size_t)n}};
    return 1;
}
