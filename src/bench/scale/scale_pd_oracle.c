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
    return kvg_autoscale_startup_lead_mix(su, o->startup_model, o->cold_share, o->fetch_share) +
           o->tick_s;
}

uint32_t kvg__scale_pd_oracle_desired(const struct scale_wl *w, const struct kvg_autoscale_opts *a,
                                      double lead, double hit, double t)
{
    const struct kvg_bench_scale_opts *o = w->o;
    double isl = kvg__scale_isl_mean(o);
    if (!(hit > 0 && hit < 1)) hit = 0;
    /* The day curve moves slowly: sampled every second, and each burst
     * starting in the window at its start. */
    double peak = 0;
    for (double u = t; u <= t + lead; u += 1) peak = fmax(peak, kvg__scale_wl_rate(w, u));
    for (uint32_t b = 0; b < o->bursts && b < 64; b++)
        if (w->burst_at[b] >= t && w->burst_at[b] <= t + lead)
            peak = fmax(peak, kvg__scale_wl_rate(w, w->burst_at[b]));
    double need = kvg_autoscale_load(a, peak * isl * (1 - hit), peak * o->osl, a->itl_target_s);
    return kvg_autoscale_clamp(a, ceil(need * (1 + a->headroom) - 1e-9));
}
