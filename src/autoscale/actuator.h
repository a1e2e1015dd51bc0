/* Actuators: what makes a pool's desired replica count real.
 *
 * The controller (ctl.h) plans; an actuator acts. `external` acts on nothing
 * (the count is exported for KEDA / HPA); `local` starts and stops engine
 * processes from a command template and registers them with a gateway's
 * worker API; `kubernetes` PATCHes the scale subresource of a Deployment,
 * StatefulSet or LeaderWorkerSet. Each lives in its own file
 * (actuator_<name>.c) behind this one face.
 *
 * apply() is called from the autoscaler's one thread, once per tick per
 * pool, only when the decision is to be acted on (not a dry run, and this
 * autoscaler holds the lease when several run). It must not block for long:
 * it starts the work (a process spawn, one HTTP request with a bounded
 * deadline) and returns; progress is reported back through starting().
 *
 * Ownership: the controller owns the actuator it is given and calls
 * destroy() once. */
#ifndef KVG_AUTOSCALE_ACTUATOR_H
#define KVG_AUTOSCALE_ACTUATOR_H

#include <stddef.h>
#include <stdint.h>

struct kvg_autoscale_pool_cfg;
struct kvg_autoscale_actuator;

/* One replica as an actuator that knows its replicas sees it. */
struct kvg_autoscale_replica {
    char url[96];
    const char *state; /* "starting", "ready", "draining", "parked" (static strings) */
    double since;      /* when it entered that state (the caller's clock) */
    double eta;        /* starting: expected ready at; parked: seconds a wake takes */
};

struct kvg_autoscale_actuator_ops {
    const char *name;
    /* Head pool `pc` toward `desired` replicas at time `now` (the caller's
     * clock, seconds). 0, or a KVG_E* code with the reason in err; an error
     * is logged and retried on the next tick, never fatal. */
    int (*apply)(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                 uint32_t desired, double now, char *err, size_t errlen);
    /* The replicas of pool `pc` this actuator asked for that are not ready
     * yet: their expected ready times into eta (at most cap), the count
     * returned. -1 when the actuator cannot know (external, kubernetes): the
     * controller then infers the starts itself. May be NULL (= -1). */
    int (*starting)(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                    double now, double *eta, uint32_t cap);
    void (*destroy)(struct kvg_autoscale_actuator *a);
    /* The pool's replicas into out (at most cap), the count; NULL when the
     * actuator does not know them (external, kubernetes). */
    int (*replicas)(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                    struct kvg_autoscale_replica *out, uint32_t cap);
};

struct kvg_autoscale_actuator {
    const struct kvg_autoscale_actuator_ops *ops;
};

#endif
