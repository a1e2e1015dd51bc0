/* The `local` actuator: engine processes started and stopped on this host
 * from a command template, registered with a gateway through hooks its host
 * supplies (kvgate serve: its router pool, in process).
 *
 * The template is split into words (single and double quotes group, no
 * shell) after expanding {port} (the next free port of the configured
 * range), {host}, {cold_start} (seconds drawn from the start-up model's
 * default distribution for the pool's model and node state, which
 * cold_start_scale multiplies at creation, for the planners' lead time too:
 * the embedded default runs `kvgate sim --cold-start-secs {cold_start}`),
 * {model} (the model the pool's replicas serve: its serves, else its
 * model), {pool}, {n} (a running replica number), {role} (the pool's:
 * prefill, decode, or both for an aggregated pool, kvgate sim's --role
 * words) and {side_port} ({port} plus the range's size: a second port of
 * the replica's own, a prefill's KV side channel, from the range just
 * above ports').
 *
 * A replica's life: spawned and registered (the gateway's health check
 * marks it healthy when its /health answers 200) -> ready (time from the
 * request to healthy is taught to the start-up model; hooks.ready runs: the
 * host prewarms and slow-starts it) -> draining (chosen by hooks.victim:
 * no new requests, its streams finish, bounded by drain_timeout_s) ->
 * removed from the gateway and stopped (SIGTERM, SIGKILL after
 * kill_grace_s). A replica still starting when fewer are wanted is
 * stopped at once; a draining one is taken back when more are wanted
 * again. Children get PR_SET_PDEATHSIG (SIGTERM) so a dead autoscaler
 * never orphans them, and destroy() stops them all, bounded.
 *
 * apply() and starting() run on the autoscaler's one thread (the
 * controller's tick); starting() is also where progress is polled. */
#ifndef KVG_AUTOSCALE_ACTUATOR_LOCAL_H
#define KVG_AUTOSCALE_ACTUATOR_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "autoscale/actuator.h"
#include "autoscale/startup.h"

#define KVG_AUTOSCALE_LOCAL_MAX 64

struct kvg_autoscale_local_cfg {
    char command[1024];        /* the template ("" : not configured) */
    char host[64];             /* 127.0.0.1 */
    uint32_t port_lo, port_hi; /* ports: 8100-8199 */
    double cold_start_scale;   /* 1 */
    double drain_timeout_s;    /* 60: streams still running then are cut */
    double start_timeout_s;    /* 1800: never healthy by then: stopped */
    double kill_grace_s;       /* 5: SIGTERM, then SIGKILL */
    /* For the host (kvg serve): prewarm and slow start of a new replica. */
    uint32_t prewarm_prompts; /* 8 hottest prefixes replayed (0: no prewarm) */
    double slow_start_s;      /* 30: its share ramps from 10% to all over this */
};

void kvg_autoscale_local_cfg_default(struct kvg_autoscale_local_cfg *c);

/* What the actuator needs from the gateway. Every hook is called on the
 * actuator's thread; urls are "http://host:port". */
struct kvg_autoscale_local_hooks {
    void *ud;
    /* Registers url, a replica of pool (its name): 0 or a code. */
    int (*add)(void *ud, const char *pool, const char *url);
    /* 1 healthy, 0 not (yet), -1 not in the gateway. *in_flight: its requests. */
    int (*state)(void *ud, const char *url, uint32_t *in_flight);
    void (*drain)(void *ud, const char *url, int on); /* on 0: takes it back */
    void (*remove)(void *ud, const char *url);
    /* The index in urls[n] to scale down (NULL hook: the newest). */
    int (*victim)(void *ud, const char *const *urls, size_t n);
    void (*ready)(void *ud, const char *url); /* may be NULL */
};

/* su is borrowed (the controller's start-up model, taught here, its
 * defaults scaled once by cold_start_scale) and must outlive the actuator. *out is the caller's
 * (the controller destroys it). */
int kvg_autoscale_local_new(const struct kvg_autoscale_local_cfg *cfg,
                            const struct kvg_autoscale_local_hooks *hooks,
                            struct kvg_autoscale_startup *su, uint64_t seed,
                            struct kvg_autoscale_actuator **out, char *err, size_t errlen);

/* Template variables. */
struct kvg_autoscale_local_vars {
    const char *host, *model, *pool;
    uint32_t port, n;
    double cold_start;
    const char *role;   /* {role}, "" none */
    uint32_t side_port; /* {side_port} */
};
/* Expands tmpl into out[cap]. 0, KVG_ETOOBIG, or KVG_ECONFIG for an
 * unknown {name} or an unclosed brace (err says). Pure. */
int kvg_autoscale_local_expand(const char *tmpl, const struct kvg_autoscale_local_vars *v,
                               char *out, size_t cap, char *err, size_t errlen);
/* Splits line in place into at most cap-1 words (argv NULL-terminated):
 * blanks separate, '...' and "..." group (quotes removed). The count, or
 * KVG_ECONFIG for an unclosed quote / too many words / none. Pure. */
int kvg_autoscale_local_split(char *line, char **argv, size_t cap);

#endif
