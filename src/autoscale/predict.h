/* Load predictors for the planners: a series observed once per interval,
 * forecast h intervals ahead. Dynamo's SLA planner's choices, minus the
 * heavy ones: `constant` (the last value), `moving_average` (mean of the
 * last `window`), and `seasonal_trend`: Holt-Winters additive (level, trend
 * and, once a whole season has been seen, a seasonal index per position in
 * the period); before a full season, or with period 0, it is Holt's linear
 * trend. Pure; a value type (no allocation). */
#ifndef KVG_AUTOSCALE_PREDICT_H
#define KVG_AUTOSCALE_PREDICT_H

#include <stddef.h>
#include <stdint.h>

#define KVG_AUTOSCALE_PRED_WINDOW 64
#define KVG_AUTOSCALE_PRED_SEASON 512

enum kvg_autoscale_pred_kind {
    KVG_AUTOSCALE_PRED_CONSTANT,
    KVG_AUTOSCALE_PRED_MOVING_AVERAGE,
    KVG_AUTOSCALE_PRED_SEASONAL_TREND,
};

struct kvg_autoscale_pred {
    enum kvg_autoscale_pred_kind kind;
    uint32_t window;           /* moving_average: points (<= KVG_AUTOSCALE_PRED_WINDOW) */
    uint32_t period;           /* seasonal_trend: intervals per season, 0 none */
    double alpha, beta, gamma; /* smoothing of level, trend, season */
    double hist[KVG_AUTOSCALE_PRED_WINDOW];
    uint64_t n; /* points observed */
    double level, trend;
    double season[KVG_AUTOSCALE_PRED_SEASON];
    double first_season_sum; /* for the seasonal start */
};

/* kind with its defaults: window 10; alpha 0.5, beta 0.2, gamma 0.3. */
void kvg_autoscale_pred_init(struct kvg_autoscale_pred *p, enum kvg_autoscale_pred_kind kind,
                             uint32_t period);
void kvg_autoscale_pred_observe(struct kvg_autoscale_pred *p, double x);
/* Forecast h >= 0 intervals past the last observation (never negative);
 * 0 before any observation. */
double kvg_autoscale_pred_forecast(const struct kvg_autoscale_pred *p, double h);
/* "constant", "moving_average", "seasonal_trend" (also "holt_winters");
 * -1 for an unknown name. */
int kvg_autoscale_pred_parse(const char *name);
const char *kvg_autoscale_pred_name(enum kvg_autoscale_pred_kind k);

#endif
