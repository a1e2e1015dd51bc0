/* Cache-aware replica choices from the routing history (warm.h). */
#include "autoscale/warm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double kvg_autoscale_heat_at(double heat, double at, double now, double half_life_s)
{
    if (!(half_life_s > 0) || now <= at) return heat;
    return heat * exp2(-(now - at) / half_life_s);
}

size_t kvg_autoscale_pick_hottest(const double *heat, size_t n, size_t k, size_t *out)
{
    size_t m = 0;
    /* Insertion into a sorted top-k: k is small (a prewarm's handful). */
    for (size_t i = 0; i < n && k; i++) {
        if (!(heat[i] > 0)) continue;
        if (m == k && heat[out[k - 1]] >= heat[i]) continue;
        size_t j = m < k ? m++ : k - 1; /* full: the last one drops out */
        while (j > 0 && heat[out[j - 1]] < heat[i]) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = i;
    }
    return m;
}

int kvg_autoscale_pick_victim(const double *heat, const uint64_t *holders, size_t n,
                              const int *slots, const uint32_t *in_flight, size_t ncand)
{
    int best = -1;
    double best_v = 0;
    for (size_t c = 0; c < ncand; c++) {
        double v = 0;
        int s = slots[c];
        for (size_t i = 0; s >= 0 && s < 64 && i < n; i++) {
            if (!(holders[i] >> s & 1)) continue;
            v += heat[i] / (double)__builtin_popcountll(holders[i]);
        }
        if (best < 0 || v < best_v - 1e-12 ||
            (fabs(v - best_v) <= 1e-12 &&
             (!in_flight || in_flight[c] <= in_flight[(size_t)best]))) {
            best = (int)c;
            best_v = v;
        }
    }
    return best;
}

void kvg_autoscale_hot_init(struct kvg_autoscale_hot *h, double half_life_s)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    h->half_life_s = half_life_s > 0 ? half_life_s : 120;
}

void kvg_autoscale_hot_destroy(struct kvg_autoscale_hot *h)
{
    pthread_mutex_destroy(&h->mu);
}

/* Copies a prompt's used bytes only (the buffers are large, the prompts
 * mostly short). */
static void prompt_copy(struct kvg_autoscale_hot_prompt *dst,
                        const struct kvg_autoscale_hot_prompt *src)
{
    memcpy(dst->model, src->model, sizeof dst->model);
    dst->is_ids = src->is_ids;
    dst->len = src->len;
    if (src->is_ids)
        memcpy(dst->u.ids, src->u.ids, src->len * sizeof *src->u.ids);
    else
        memcpy(dst->u.text, src->u.text, src->len);
}

void kvg_autoscale_hot_record(struct kvg_autoscale_hot *h, uint64_t key, int slot, double now,
                              const struct kvg_autoscale_hot_prompt *p)
{
    if (!key) key = 1; /* 0 marks a free entry */
    pthread_mutex_lock(&h->mu);
    struct kvg_autoscale_hot_entry *e = NULL, *cold = NULL;
    double cold_heat = 0;
    for (size_t i = 0; i < KVG_AUTOSCALE_HOT_MAX && !e; i++) {
        struct kvg_autoscale_hot_entry *x = &h->e[i];
        if (x->key == key) {
            e = x;
            break;
        }
        double hx = x->key ? kvg_autoscale_heat_at(x->heat, x->at, now, h->half_life_s) : -1;
        if (!cold || hx < cold_heat) {
            cold = x;
            cold_heat = hx;
        }
    }
    if (!e) {
        e = cold;
        memset(e, 0, sizeof *e);
        e->key = key;
        e->at = now;
    }
    e->heat = kvg_autoscale_heat_at(e->heat, e->at, now, h->half_life_s) + 1;
    e->at = now;
    if (slot >= 0 && slot < 64) e->holders |= 1ull << slot;
    if (p && p->len && p->len <= (p->is_ids ? KVG_AUTOSCALE_HOT_IDS : KVG_AUTOSCALE_HOT_TEXT))
        prompt_copy(&e->p, p);
    pthread_mutex_unlock(&h->mu);
}

void kvg_autoscale_hot_forget(struct kvg_autoscale_hot *h, int slot)
{
    if (slot < 0 || slot >= 64) return;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < KVG_AUTOSCALE_HOT_MAX; i++) h->e[i].holders &= ~(1ull << slot);
    pthread_mutex_unlock(&h->mu);
}

/* The table's heats at now (0 for free or promptless entries when want_prompt). */
static void heats(struct kvg_autoscale_hot *h, double now, int want_prompt, double *out,
                  uint64_t *holders)
{
    for (size_t i = 0; i < KVG_AUTOSCALE_HOT_MAX; i++) {
        const struct kvg_autoscale_hot_entry *e = &h->e[i];
        int ok = e->key && (!want_prompt || e->p.len);
        out[i] = ok ? kvg_autoscale_heat_at(e->heat, e->at, now, h->half_life_s) : 0;
        if (holders) holders[i] = ok ? e->holders : 0;
    }
}

size_t kvg_autoscale_hot_top(struct kvg_autoscale_hot *h, double now, const char *model, size_t k,
                             struct kvg_autoscale_hot_prompt *out)
{
    double heat[KVG_AUTOSCALE_HOT_MAX];
    size_t idx[KVG_AUTOSCALE_HOT_MAX];
    if (k > KVG_AUTOSCALE_HOT_MAX) k = KVG_AUTOSCALE_HOT_MAX;
    pthread_mutex_lock(&h->mu);
    heats(h, now, 1, heat, NULL);
    for (size_t i = 0; model && i < KVG_AUTOSCALE_HOT_MAX; i++)
        if (strcmp(h->e[i].p.model, model)) heat[i] = 0; /* another model's prompt */
    size_t m = kvg_autoscale_pick_hottest(heat, KVG_AUTOSCALE_HOT_MAX, k, idx);
    for (size_t i = 0; i < m; i++) prompt_copy(&out[i], &h->e[idx[i]].p);
    pthread_mutex_unlock(&h->mu);
    return m;
}

int kvg_autoscale_hot_victim(struct kvg_autoscale_hot *h, double now, const int *slots,
                             const uint32_t *in_flight, size_t ncand)
{
    double heat[KVG_AUTOSCALE_HOT_MAX];
    uint64_t holders[KVG_AUTOSCALE_HOT_MAX];
    pthread_mutex_lock(&h->mu);
    heats(h, now, 0, heat, holders);
    pthread_mutex_unlock(&h->mu);
    return kvg_autoscale_pick_victim(heat, holders, KVG_AUTOSCALE_HOT_MAX, slots, in_flight, ncand);
}
