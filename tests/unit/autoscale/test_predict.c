/* Load predictors on synthetic series. */
#include "support/test.h"

#include <math.h>

#include "autoscale/predict.h"

TEST(constant_and_moving_average)
{
    struct kvg_autoscale_pred p;
    kvg_autoscale_pred_init(&p, KVG_AUTOSCALE_PRED_CONSTANT, 0);
    CHECK_NEAR(kvg_autoscale_pred_forecast(&p, 1), 0, 0);
    kvg_autoscale_pred_observe(&p, 3);
    kvg_autoscale_pred_observe(&p, 5);
    CHECK_NEAR(kvg_autoscale_pred_forecast(&p, 4), 5, 0);
    kvg_autoscale_pred_init(&p, KVG_AUTOSCALE_PRED_MOVING_AVERAGE, 0);
    p.window = 3;
    for (int i = 1; i <= 5; i++) kvg_autoscale_pred_observe(&p, i);
    CHECK_NEAR(kvg_autoscale_pred_forecast(&p, 1), 4, 1e-12);
}

TEST(trend_extrapolates_a_ramp)
{
    struct kvg_autoscale_pred p;
    kvg_autoscale_pred_init(&p, KVG_AUTOSCALE_PRED_SEASONAL_TREND, 0);
    for (int i = 0; i < 60; i++) kvg_autoscale_pred_observe(&p, 10 + 2.0 * i);
    /* last value 128; 10 steps ahead on the same line is 148 */
    CHECK_NEAR(kvg_autoscale_pred_forecast(&p, 10), 148, 1.0);
    /* never negative on a falling series */
    kvg_autoscale_pred_init(&p, KVG_AUTOSCALE_PRED_SEASONAL_TREND, 0);
    for (int i = 0; i < 20; i++) kvg_autoscale_pred_observe(&p, 20 - i);
    CHECK_NEAR(kvg_autoscale_pred_forecast(&p, 100), 0, 0);
}

TEST(seasonal_learns_the_cycle)
{
    struct kvg_autoscale_pred p;
    kvg_autoscale_pred_init(&p, KVG_AUTOSCALE_PRED_SEASONAL_TREND, 24);
    for (int i = 0; i < 24 * 6; i++)
        kvg_autoscale_pred_observe(&p, 100 + 30 * sin(2 * M_PI * i / 24));
    /* next point (i = 144, phase 0) is 100; six ahead (phase 6) is 130 */
    CHECK_NEAR(kvg_autoscale_pred_forecast(&p, 1), 100, 6);
    CHECK_NEAR(kvg_autoscale_pred_forecast(&p, 7), 130, 6);
    CHECK_INT(kvg_autoscale_pred_parse("holt_winters"), KVG_AUTOSCALE_PRED_SEASONAL_TREND);
    CHECK_INT(kvg_autoscale_pred_parse("arima"), -1);
}
