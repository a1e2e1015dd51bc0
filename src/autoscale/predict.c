/* Load predictors (predict.h). */
#include "autoscale/predict.h"

#include <string.h>

void kvg_autoscale_pred_init(struct kvg_autoscale_pred *p, enum kvg_autoscale_pred_kind kind,
                             uint32_t period)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->window = 10;
    p->period = period > KVG_AUTOSCALE_PRED_SEASON ? KVG_AUTOSCALE_PRED_SEASON : period;
    p->alpha = 0.5;
    p->beta = 0.2;
    p->gamma = 0.3;
}

void kvg_autoscale_pred_observe(struct kvg_autoscale_pred *p, double x)
{
    p->hist[p->n % KVG_AUTOSCALE_PRED_WINDOW] = x;
    uint64_t i = p->n++;
    if (p->kind != KVG_AUTOSCALE_PRED_SEASONAL_TREND) return;
    uint32_t m = p->period;
    int seasonal = m >= 2 && i >= m; /* a whole season seen: indices exist */
    if (m >= 2 && i < m) {
        /* First season: remember the values; the indices are set at its end. */
        p->season[i] = x;
        p->first_season_sum += x;
        if (i + 1 == m) {
            double mean = p->first_season_sum / m;
            for (uint32_t k = 0; k < m; k++) p->season[k] -= mean;
        }
    }
    if (i == 0) {
        p->level = x;
        p->trend = 0;
        return;
    }
    double s = seasonal ? p->season[i % m] : 0;
    double prev = p->level;
    p->level = p->alpha * (x - s) + (1 - p->alpha) * (p->level + p->trend);
    p->trend = p->beta * (p->level - prev) + (1 - p->beta) * p->trend;
    if (seasonal) p->season[i % m] = p->gamma * (x - p->level) + (1 - p->gamma) * s;
}

double kvg_autoscale_pred_forecast(const struct kvg_autoscale_pred *p, double h)
{
    if (!p->n) return 0;
    double v = 0;
    switch (p->kind) {
    case KVG_AUTOSCALE_PRED_CONSTANT:
        v = p->hist[(p->n - 1) % KVG_AUTOSCALE_PRED_WINDOW];
        break;
    case KVG_AUTOSCALE_PRED_MOVING_AVERAGE: {
        uint64_t w = p->window ? p->window : 1;
        if (w > KVG_AUTOSCALE_PRED_WINDOW) w = KVG_AUTOSCALE_PRED_WINDOW;
        if (w > p->n) w = p->n;
        for (uint64_t k = 0; k < w; k++) v += p->hist[(p->n - 1 - k) % KVG_AUTOSCALE_PRED_WINDOW];
        v /= (double)w;
        break;
    }
    case KVG_AUTOSCALE_PRED_SEASONAL_TREND: {
        v = p->level + h * p->trend;
        uint32_t m = p->period;
        if (m >= 2 && p->n > m) v += p->season[(p->n - 1 + (uint64_t)(h + 0.5)) % m];
        break;
    }
    }
    return v > 0 ? v : 0;
}

static const char *const g_names[] = {"constant", "moving_average", "seasonal_trend"};

int kvg_autoscale_pred_parse(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, g_names[i])) return i;
    if (!strcmp(name, "holt_winters")) return KVG_AUTOSCALE_PRED_SEASONAL_TREND;
    return -1;
}

const char *kvg_autoscale_pred_name(enum kvg_autoscale_pred_kind k)
{
    return (unsigned)k < 3 ? g_names[k] : "?";
}
