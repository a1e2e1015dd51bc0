/* The PD day's oracle (scale.h): each pool sized for the true rate ahead.
 * Bench-only: it reads the workload's rate function, which no deployment
 * has; it is the reference the planners' SLO and GPU-hours are read
 * against, not a planner. */
#include <math.h>

#include "bench/scale/scale_int.h"

double kvg__scale_pd_oracle_lead(const struct kvg_bench_scale_opts *o,
                                 const struct kvg_autoscale_startup *su)
{
    if (o->oracle_lead_s > 0) return o->oracle_lead_s;
    if (o->startup_fixed_s > 0) return o->startup_fixed_s + o->tick_s;
    return kvg_autoscale_startup_lead_mix(su, o->startup_model, o->cold_share, o->fetch_share,
                                          KVG_AUTOSCALE_WARM) +
           o->tick_s;
}

uint32_t kvg__scale_pd_oracle_desired(const struct scale_wl *w, const struct kvg_autoscale_opts *a,
                                      double lead, double hit, double t)
{
    const struct kvg_bench_scale_opts *o = w->o;
    double isl = kvg__scale_isl_mean(o);
    if (!(hit > 0 && hit < 1)) hit = 0;
    double peak = kvg__scale_wl_peak(w, t, t + lead);
    double need = kvg_autoscale_load(a, peak * isl * (1 - hit), peak * o->osl, a->itl_target_s);
    return kvg_autoscale_clamp(a, ceil(need * (1 + a->headroom) - 1e-9));
}
