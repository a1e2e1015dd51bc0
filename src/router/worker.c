/* Workers: creation, reference counting, model matching, LoRA state. */
#include "router/worker.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"

/* The rank of a "URL@r" (r: 1 to 4 digits after the last '@', past the
 * host), with *base_len the length of URL; -1 for a plain URL. */
static int url_rank(const char *url, size_t *base_len)
{
    size_t n = strlen(url);
    *base_len = n;
    const char *at = strrchr(url, '@');
    if (!at || at == url || !at[1] || strlen(at + 1) > 4) return -1;
    int r = 0;
    for (const char *p = at + 1; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        r = r * 10 + (*p - '0');
    }
    *base_len = (size_t)(at - url);
    return r;
}

size_t kvg_worker_url_base(const char *url)
{
    size_t n;
    url_rank(url, &n);
    return n;
}

int kvg_worker_new(const char *url, struct kvg_worker **out)
{
    return kvg_worker_new_at(url, NULL, out);
}

int kvg_worker_new_at(const char *url, const struct kvg_http_target *t, struct kvg_worker **out)
{
    if (strlen(url) >= sizeof((struct kvg_worker *)0)->url) return -EINVAL;
    struct kvg_worker *w = calloc(1, sizeof *w);
    if (!w) return -ENOMEM;
    size_t base_len;
    w->dp_rank = url_rank(url, &base_len);
    char base[sizeof w->url];
    snprintf(base, sizeof base, "%.*s", (int)base_len, url);
    int rc = 0;
    if (t)
        w->target = *t;
    else
        rc = kvg_http_target_parse(base, &w->target);
    if (rc) {
        free(w);
        return rc;
    }
    /* The name keeps its rank; a trailing '/' of the URL part goes. */
    size_t n = base_len;
    while (n && base[n - 1] == '/') base[--n] = 0;
    memcpy(w->url, base, n + 1);
    if (w->dp_rank >= 0) snprintf(w->url + n, sizeof w->url - n, "@%d", w->dp_rank % 10000);
    w->url_hash = kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, w->url);
    pthread_mutex_init(&w->mu, NULL);
    w->load = (struct kvg_engine_load){-1, -1, -1, 0, 0, 0, 0, 0, 0};
    w->slot = -1;
    w->rmode.mode = -1;
    atomic_store(&w->member_rank, -1);
    atomic_store(&w->healthy, 1);
    atomic_store(&w->share_permille, 1000);
    atomic_store(&w->refs, 1);
    *out = w;
    return 0;
}

int kvg_worker_rank_endpoint(const char *endpoint, int rank, char *out, size_t cap)
{
    int n;
    if (rank < 1) {
        n = snprintf(out, cap, "%s", endpoint);
    } else if (!strncmp(endpoint, "inproc://", 9)) {
        n = snprintf(out, cap, "%s_dp%d", endpoint, rank);
    } else {
        const char *colon = strrchr(endpoint, ':');
        char *end;
        if (!colon || !colon[1]) return -EINVAL;
        unsigned long port = strtoul(colon + 1, &end, 10);
        if (*end || port == 0 || port + (unsigned long)rank > 65535) return -EINVAL;
        n = snprintf(out, cap, "%.*s:%lu", (int)(colon - endpoint), endpoint,
                     port + (unsigned long)rank);
    }
    return n < 0 || (size_t)n >= cap ? -EINVAL : 0;
}

void kvg_worker_ref(struct kvg_worker *w)
{
    atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
}

void kvg_worker_unref(struct kvg_worker *w)
{
    if (atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_destroy(&w->mu);
    kvg_model_list_free(&w->models);
    free(w);
}

int kvg_worker_serves(struct kvg_worker *w, const char *model, size_t len)
{
    if (!model || !len) return 1;
    pthread_mutex_lock(&w->mu);
    int ok = w->models.n == 0 || kvg_model_list_find(&w->models, model, len);
    pthread_mutex_unlock(&w->mu);
    return ok;
}

int kvg_worker_lists(struct kvg_worker *w, const char *model, size_t len)
{
    if (!model || !len) return 0;
    pthread_mutex_lock(&w->mu);
    int ok = kvg_model_list_find(&w->models, model, len) != NULL;
    pthread_mutex_unlock(&w->mu);
    return ok;
}

uint32_t kvg_worker_max_model_len(struct kvg_worker *w, const char *model, size_t len)
{
    pthread_mutex_lock(&w->mu);
    const struct kvg_model_entry *e = kvg_model_list_find(&w->models, model, len);
    uint32_t v = e ? e->max_model_len : 0;
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

const char *kvg_worker_role_name(int role)
{
    static const char *names[] = {"regular", "prefill", "decode", "encode"};
    return role >= 0 && role < (int)(sizeof names / sizeof *names) ? names[role] : "?";
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

int kvg_worker_model_is_adapter(struct kvg_worker *w, const char *model, size_t len)
{
    pthread_mutex_lock(&w->mu);
    const struct kvg_model_entry *e = kvg_model_list_find(&w->models, model, len);
    int v = e ? e->adapter : 0;
    pthread_mutex_unlock(&w->mu);
    return v;
}

/* FNV-1a: names of adapters recently routed, compared by hash only. */
static uint64_t name_hash(const char *p, size_t n)
{
    uint64_t h = kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, p, n);
    return h ? h : 1;
}

/* Whether the comma-separated list names name (spaces around items ignored). */
static int list_has(const char *list, const char *name, size_t len, int *count)
{
    int found = 0, n = 0;
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        if (t > p) {
            n++;
            found |= (size_t)(t - p) == len && !memcmp(p, name, len);
        }
        p = e;
    }
    if (count) *count = n;
    return found;
}

int kvg_worker_lora_loaded(struct kvg_worker *w, const char *name, size_t len, uint64_t now_ms,
                           uint64_t max_age_ms, int *nactive, int *max_lora)
{
    uint64_t h = name_hash(name, len);
    int loaded = 0, n = 0, mx = 0;
    pthread_mutex_lock(&w->mu);
    if (w->lora_at_ms && now_ms - w->lora_at_ms <= max_age_ms) {
        loaded = list_has(w->lora_active, name, len, &n);
        mx = w->lora_max;
    }
    for (int i = 0; i < KVG_WORKER_LORA_SENT && !loaded; i++)
        loaded = w->lora_sent[i] == h && now_ms - w->lora_sent_ms[i] <= max_age_ms;
    pthread_mutex_unlock(&w->mu);
    if (nactive) *nactive = n;
    if (max_lora) *max_lora = mx;
    return loaded;
}

void kvg_worker_lora_sent(struct kvg_worker *w, const char *name, size_t len, uint64_t now_ms)
{
    uint64_t h = name_hash(name, len);
    pthread_mutex_lock(&w->mu);
    int slot = 0;
    for (int i = 0; i < KVG_WORKER_LORA_SENT; i++) {
        if (w->lora_sent[i] == h) {
            slot = i;
            break;
        }
        if (w->lora_sent_ms[i] < w->lora_sent_ms[slot]) slot = i; /* the oldest goes */
    }
    w->lora_sent[slot] = h;
    w->lora_sent_ms[slot] = now_ms;
    pthread_mutex_unlock(&w->mu);
}

void kvg_worker_set_models(struct kvg_worker *w, const cJSON *data)
{
    if (!cJSON_IsArray(data)) return;
    struct kvg_model_list l;
    struct kvg_model_list_drops d;
    int rc = kvg_model_list_parse(&l, data, &d);
    if (rc) {
        KVG_WARN("worker %s: its model list not read: %s", w->url, kvg_strerror(rc));
        return;
    }
    pthread_mutex_lock(&w->mu);
    struct kvg_model_list old = w->models;
    w->models = l;
    int fresh = d.hash != w->models_drop_hash; /* the same list again: already told */
    w->models_drop_hash = d.hash;
    pthread_mutex_unlock(&w->mu);
    kvg_model_list_free(&old);
    if (!fresh || !d.n) return;
    atomic_fetch_add(&w->models_dropped, d.n);
    KVG_WARN("worker %s: %zu of its models left out (over %d models or an id over %d bytes; "
             "first: '%s', %zu bytes): requests for them are not routed there",
             w->url, d.n, KVG_MODEL_LIST_MAX, KVG_MODEL_ID_MAX, d.first, d.first_bytes);
}
