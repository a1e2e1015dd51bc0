/* The autoscaler's controller: pools from a YAML file, a planner each, the
 * signals the caller hands it every tick, and what it decided, as JSON for
 * GET /autoscale and KEDA's metrics-api trigger, and as gauge values.
 *
 * It does no I/O but reading its configuration file, and reads no clock:
 * the caller (kvgate serve's autoscale_setup, the benchmark) fills each
 * pool's signals and calls kvg_autoscale_ctl_tick with the time.
 *
 * Actuators (actuator.h): the controller holds one and, unless dry_run or
 * standby (another autoscaler holds the lease), calls its apply() with each
 * pool's standing recommendation every tick (an actuator converges and
 * retries; a failure is kept in the pool's act_err and shown in GET
 * /autoscale). An actuator that knows its starts (starting() >= 0, `local`)
 * reports them and teaches the start-up model itself. `external` acts on
 * nothing: the desired count is exported (GET /autoscale/metrics for KEDA,
 * the gauges for HPA via an adapter) and something else scales;
 * `kubernetes` (kvgate autoscale applies it) sets the count but does not
 * see the pods start either. For those the controller then infers
 * the replicas starting: when the desired count rises above ready +
 * starting, that many starts are assumed asked for at that moment, expected
 * ready at the start-up model's p90; each replica that becomes ready ends
 * the oldest and teaches the start-up model its time (time from the
 * request to ready). dry_run plans and reports but marks every decision as
 * not acted on.
 *
 * Thread-safety: one mutex; tick on one thread, the JSON from any. */
#ifndef KVG_AUTOSCALE_CTL_H
#define KVG_AUTOSCALE_CTL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "autoscale/actuator.h"
#include "autoscale/actuator_local.h"
#include "autoscale/planner.h"
#include "autoscale/startup.h"

struct cJSON;

#define KVG_AUTOSCALE_MAX_POOLS 16
#define KVG_AUTOSCALE_HISTORY 16
#define KVG_AUTOSCALE_MAX_STARTS 64

#define KVG_AUTOSCALE_MAX_SOURCES 8

/* The workload a pool's replicas are (the kubernetes actuator's target). */
enum kvg_autoscale_kind {
    KVG_AUTOSCALE_KIND_NONE = 0,
    KVG_AUTOSCALE_KIND_DEPLOYMENT,
    KVG_AUTOSCALE_KIND_STATEFULSET,
    KVG_AUTOSCALE_KIND_LWS, /* LeaderWorkerSet */
};

struct kvg_autoscale_target {
    enum kvg_autoscale_kind kind;
    char ns[64];    /* a DNS label: 63 characters at most */
    char name[254]; /* a DNS subdomain: 253 at most */
};

/* v is a DNS name of at most max characters (a-z 0-9 - .): fit to go into
 * an API server's request path unescaped. */
int kvg_autoscale_dns_name(const char *v, size_t max);

struct kvg_autoscale_pool_cfg {
    char name[64];
    char planner[32];
    struct kvg_autoscale_opts opts; /* startup is set by the controller */
    double signal_window_s;         /* the observed signals' span (0: kvg_autoscale_obs_span) */
    enum kvg_autoscale_node node;   /* where new replicas land */
    /* Parked replicas kept instead of stopped at scale-down (the local
     * actuator: asleep through the engine's sleep API, woken first when
     * more are wanted), and what one costs in GPU-hours against a running
     * one (1: it holds its GPU; lower only where that GPU is lent out). */
    uint32_t standby;
    double standby_cost;
    struct kvg_autoscale_target target;
    /* kvgate autoscale reads these engines' /health and /metrics. */
    char engines[KVG_AUTOSCALE_MAX_SOURCES][128];
    size_t nengines;
    /* The model its replicas serve, set by the host after loading: kvgate
     * serve with models: puts the served model its `model:` names (an
     * alias resolved) here, and reads that model's workers alone for it.
     * "": the pool reads the whole gateway (opts.model is then only the
     * start-up model's key). {model} in the local command is this, else
     * opts.model. kvgate autoscale puts a given model: here as it is: the
     * model label of the gateways' series it reads (sources.h). */
    char serves[256];
    int model_given; /* the file gave model: (else opts.model is the default's) */
};

/* The API server (actuator: kubernetes). Empty fields take the in-cluster
 * defaults: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT and
 * the service account's token and ca.crt. */
struct kvg_autoscale_k8s_cfg {
    char api_url[256];
    char token_file[512];
    char ca_file[512];
    uint32_t timeout_ms; /* one request, connect to last byte (5000) */
};

/* Several autoscalers: one holds this Redis key and acts (redis "" = no
 * lease: this one acts alone). */
struct kvg_autoscale_lease_cfg {
    char redis[256]; /* redis://host:port[/db] */
    char key[128];   /* "kvgate:autoscale:leader" */
    uint32_t ttl_ms; /* 15000 */
};

struct kvg_autoscale_config {
    double interval_s;                    /* tick period (5) */
    char actuator[32];                    /* "external" | "local" */
    struct kvg_autoscale_local_cfg local; /* the `local:` mapping */
    int dry_run;
    struct kvg_autoscale_pool_cfg pools[KVG_AUTOSCALE_MAX_POOLS];
    size_t npools;
    struct kvg_autoscale_k8s_cfg kubernetes;
    struct kvg_autoscale_lease_cfg lease;
    /* kvgate autoscale reads these gateways' /metrics (every pool sees
     * their whole traffic, as kvgate serve --autoscale does). */
    char gateways[KVG_AUTOSCALE_MAX_SOURCES][128];
    size_t ngateways;
};

/* Parses YAML text (config.c documents the keys). 0 or KVG_ECONFIG /
 * KVG_EPARSE with the reason in err. */
int kvg_autoscale_config_parse(const char *text, size_t len, struct kvg_autoscale_config *out,
                               char *err, size_t errlen);
/* Reads path and parses it. */
int kvg_autoscale_config_load(const char *path, struct kvg_autoscale_config *out, char *err,
                              size_t errlen);

struct kvg_autoscale_pool {
    struct kvg_autoscale_pool_cfg cfg;
    struct kvg_autoscale_planner *pl;
    struct kvg_autoscale_signals sig; /* the last tick's (starting_eta points into eta) */
    double eta[KVG_AUTOSCALE_MAX_STARTS];
    double start_at[KVG_AUTOSCALE_MAX_STARTS]; /* inferred starts, oldest first */
    uint32_t nstart;
    uint32_t last_ready;
    /* When replicas were seen to become ready (oldest first, those within
     * young_s): what makes signals.young live (ctl.c, note_young). */
    double ready_at[KVG_AUTOSCALE_MAX_STARTS];
    uint32_t nready_at;
    int ticked;
    struct kvg_autoscale_decision cur;
    struct kvg_autoscale_decision hist[KVG_AUTOSCALE_HISTORY]; /* acted decisions, ring */
    size_t nhist;
    char act_err[200]; /* the actuator's last failure, "" none */
};

struct kvg_autoscale_ctl {
    struct kvg_autoscale_config cfg;
    struct kvg_autoscale_startup su;
    struct kvg_autoscale_pool pools[KVG_AUTOSCALE_MAX_POOLS];
    size_t npools;
    struct kvg_autoscale_actuator *act; /* owned; `external` unless the caller sets one */
    pthread_mutex_t mu;
    _Atomic int standby; /* another autoscaler holds the lease: plan, act on nothing */
};

/* *out is the caller's: kvg_autoscale_ctl_free. KVG_ECONFIG (err says) for a
 * planner or actuator it does not know. An `external` controller holds its
 * actuator already; for the others the caller builds one (with the hooks
 * only it has, and &c->su for `local`) and hands it over with
 * kvg_autoscale_ctl_set_actuator before the first tick. */
int kvg_autoscale_ctl_new(const struct kvg_autoscale_config *cfg, struct kvg_autoscale_ctl **out,
                          char *err, size_t errlen);
void kvg_autoscale_ctl_free(struct kvg_autoscale_ctl *c);
/* c takes a (destroying any it held). */
void kvg_autoscale_ctl_set_actuator(struct kvg_autoscale_ctl *c, struct kvg_autoscale_actuator *a);
/* The `external` actuator: apply() does nothing (the count is exported),
 * starting() is unknown. *out is the caller's. */
int kvg_autoscale_external_new(struct kvg_autoscale_actuator **out);
/* The seconds from now to the next tick on the grid of the period per,
 * t0 + k x per (now counts from t0): *ticks is the k of the last tick run,
 * moved on past the ticks a stall longer than a period missed, so they are
 * not run back to back. Ticks re-armed from when the last one ran (a
 * repeat timer, a wait after the tick's work) drift with every late one,
 * and the plans with them, off the benchmark's exact ticks
 * (bench/results/autoscale-agreement.md). */
double kvg_autoscale_ctl_tick_wait(double per, double now, uint64_t *ticks);
/* The pool's index by name, or -1. */
int kvg_autoscale_ctl_find(const struct kvg_autoscale_ctl *c, const char *name);
/* One tick of pool i at s->now: the caller's signals (ready, engine load,
 * observations; starting is the controller's own for the external
 * actuator), the planner, the record. *d may be NULL. 0 or a code. */
int kvg_autoscale_ctl_tick(struct kvg_autoscale_ctl *c, size_t i, struct kvg_autoscale_signals *s,
                           struct kvg_autoscale_decision *d);
/* GET /autoscale: per pool the signals, forecast, desired vs current, the
 * starts in flight with their expected ready times, the last decisions with
 * reasons. The caller owns the result (cJSON_Delete); NULL without memory. */
struct cJSON *kvg_autoscale_ctl_json(struct kvg_autoscale_ctl *c);
/* GET /autoscale/metrics (KEDA metrics-api): {"desiredReplicas": sum,
 * "pools": {name: {"desiredReplicas", "readyReplicas", ...}}}, so a trigger's
 * valueLocation is "pools.NAME.desiredReplicas". Caller owns it. */
struct cJSON *kvg_autoscale_ctl_keda_json(struct kvg_autoscale_ctl *c);
/* While standby (kvgate autoscale without the lease) the controller plans
 * and reports as in a dry run: it infers no starts, since nothing it
 * decides is acted on. Any thread. */
void kvg_autoscale_ctl_set_standby(struct kvg_autoscale_ctl *c, int standby);
/* Pool i's served model as its sources resolved its model: (kvgate
 * autoscale: an alias followed in the gateways' series), shown in GET
 * /autoscale as served_model. Any thread. */
void kvg_autoscale_ctl_set_served(struct kvg_autoscale_ctl *c, size_t i, const char *model);
/* Desired and ready of pool i (for the gauges); -1 before the first tick. */
void kvg_autoscale_ctl_counts(struct kvg_autoscale_ctl *c, size_t i, double *desired,
                              double *ready);

#endif
