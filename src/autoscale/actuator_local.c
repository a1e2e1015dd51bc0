/* The `local` actuator (actuator_local.h). */
#include "autoscale/actuator_local.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "autoscale/ctl.h"
#include "base/err.h"
#include "base/log.h"
#include "base/proc.h"
#include "base/util.h"
#include "net/https.h"

/* PARKED: asleep through the engine's sleep API and out of the gateway;
 * WAKING: asked to wake, back in the gateway once /is_sleeping says no. */
enum rep_state {
    REP_FREE,
    REP_STARTING,
    REP_READY,
    REP_DRAINING,
    REP_STOPPING,
    REP_PARKED,
    REP_WAKING
};

struct replica {
    enum rep_state st;
    pid_t pid;
    uint32_t port;
    char url[96];
    char pool[64];
    double asked_at, ready_at, drain_at, stop_at, park_at;
    int readded; /* WAKING: registered with the gateway again */
};

struct local {
    struct kvg_autoscale_actuator base;
    struct kvg_autoscale_local_cfg cfg;
    struct kvg_autoscale_local_hooks h;
    struct kvg_autoscale_startup *su; /* borrowed */
    struct kvg_rng rng;
    struct replica r[KVG_AUTOSCALE_LOCAL_MAX];
    uint32_t next_port, spawned;
};

void kvg_autoscale_local_cfg_default(struct kvg_autoscale_local_cfg *c)
{
    memset(c, 0, sizeof *c);
    /* The embedded default: kvgate's own simulated engine (the binary
     * running, whatever its path). */
    snprintf(c->command, sizeof c->command,
             "/proc/self/exe sim --host {host} --port {port} --model {model} "
             "--cold-start-secs {cold_start} --enable-sleep-mode");
    snprintf(c->host, sizeof c->host, "127.0.0.1");
    c->port_lo = 8100;
    c->port_hi = 8199;
    c->cold_start_scale = 1;
    c->drain_timeout_s = 60;
    c->start_timeout_s = 1800;
    c->kill_grace_s = 5;
    c->prewarm_prompts = 8;
    c->slow_start_s = 30;
}

int kvg_autoscale_local_expand(const char *tmpl, const struct kvg_autoscale_local_vars *v,
                               char *out, size_t cap, char *err, size_t errlen)
{
    size_t k = 0;
    for (const char *p = tmpl; *p;) {
        char piece[128];
        const char *add = piece;
        if (*p != '{') {
            piece[0] = *p++;
            piece[1] = 0;
        } else {
            const char *e = strchr(p, '}');
            if (!e) return kvg_err_set(err, errlen, KVG_ECONFIG, "command: unclosed '{'");
            size_t n = (size_t)(e - p - 1);
            const char *name = p + 1;
#define IS(s) (n == sizeof(s) - 1 && !memcmp(name, s, n))
            if (IS("port"))
                snprintf(piece, sizeof piece, "%u", v->port);
            else if (IS("n"))
                snprintf(piece, sizeof piece, "%u", v->n);
            else if (IS("cold_start"))
                snprintf(piece, sizeof piece, "%.3f", v->cold_start);
            else if (IS("host"))
                add = v->host ? v->host : "";
            else if (IS("model"))
                add = v->model ? v->model : "";
            else if (IS("pool"))
                add = v->pool ? v->pool : "";
            else if (IS("role"))
                add = v->role ? v->role : "";
            else if (IS("side_port"))
                snprintf(piece, sizeof piece, "%u", v->side_port);
            else
                return kvg_err_set(err, errlen, KVG_ECONFIG,
                                   "command: unknown {%.*s} (port, host, cold_start, model, "
                                   "pool, n, role, side_port)",
                                   (int)n, name);
#undef IS
            p = e + 1;
        }
        size_t al = strlen(add);
        if (k + al + 1 > cap) return kvg_err_set(err, errlen, KVG_ETOOBIG, "command: too long");
        memcpy(out + k, add, al);
        k += al;
    }
    if (!cap) return KVG_ETOOBIG;
    out[k] = 0;
    return 0;
}

int kvg_autoscale_local_split(char *line, char **argv, size_t cap)
{
    size_t n = 0;
    char *r = line, *w = line;
    while (*r) {
        while (*r == ' ' || *r == '\t' || *r == '\n') r++;
        if (!*r) break;
        if (n + 1 >= cap) return KVG_ECONFIG;
        argv[n++] = w;
        while (*r && *r != ' ' && *r != '\t' && *r != '\n') {
            if (*r == '\'' || *r == '"') {
                char q = *r++;
                while (*r && *r != q) *w++ = *r++;
                if (*r != q) return KVG_ECONFIG;
                r++;
            } else {
                *w++ = *r++;
            }
        }
        /* r may sit on the blank that ended the word: step over it before
         * the terminator lands (w <= r always). */
        if (*r) r++;
        *w++ = 0;
    }
    if (!n) return KVG_ECONFIG;
    argv[n] = NULL;
    return (int)n;
}

static int port_in_use(const struct local *l, uint32_t port)
{
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX; i++)
        if (l->r[i].st != REP_FREE && l->r[i].port == port) return 1;
    return 0;
}

static uint32_t next_port(struct local *l)
{
    uint32_t span = l->cfg.port_hi - l->cfg.port_lo + 1;
    for (uint32_t k = 0; k < span; k++) {
        uint32_t p = l->cfg.port_lo + (l->next_port + k) % span;
        if (!port_in_use(l, p)) {
            l->next_port = (l->next_port + k + 1) % span;
            return p;
        }
    }
    return 0;
}

/* {role}: kvgate sim's --role word for the pool's role. */
static const char *role_word(enum kvg_autoscale_role r)
{
    return r == KVG_AUTOSCALE_PREFILL ? "prefill" : r == KVG_AUTOSCALE_DECODE ? "decode" : "both";
}

static int spawn(struct local *l, const struct kvg_autoscale_pool_cfg *pc, double now, char *err,
                 size_t errlen)
{
    struct replica *r = NULL;
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX && !r; i++)
        if (l->r[i].st == REP_FREE) r = &l->r[i];
    uint32_t port = r ? next_port(l) : 0;
    if (!r || !port)
        return kvg_err_set(err, errlen, KVG_ETOOBIG, "no free %s",
                           r ? "port in the range" : "replica slot");
    double cold = kvg_autoscale_startup_draw(l->su, pc->opts.model, pc->node, &l->rng);
    struct kvg_autoscale_local_vars v = {l->cfg.host,
                                         pc->serves[0] ? pc->serves : pc->opts.model,
                                         pc->name,
                                         port,
                                         l->spawned + 1,
                                         cold,
                                         role_word(pc->opts.role),
                                         port + (l->cfg.port_hi - l->cfg.port_lo + 1)};
    char line[2048], *argv[128];
    int rc = kvg_autoscale_local_expand(l->cfg.command, &v, line, sizeof line, err, errlen);
    if (rc) return rc;
    if (kvg_autoscale_local_split(line, argv, 128) < 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "command: unclosed quote or too many words");
    /* The child gets SIGTERM when the gateway dies, even by SIGKILL; the
     * ticks that get here run on kvgate serve's main thread, which lives
     * as long as the process (base/proc.h says why that matters). */
    /* Parking uses vLLM's sleep routes, which an engine attaches only with
     * VLLM_SERVER_DEV_MODE=1: set in the children of a pool with standby
     * (theirs only: the gateway's own environment is not changed while its
     * other threads may read it). */
    static const char *const dev_mode[] = {"VLLM_SERVER_DEV_MODE=1", NULL};
    pid_t pid;
    if ((rc = kvg_proc_start_env(argv[0], argv, pc->standby ? dev_mode : NULL, NULL, KVG_PROC_PATH,
                                 &pid)))
        return kvg_err_set(err, errlen, rc, "fork: %s", kvg_strerror(rc));
    memset(r, 0, sizeof *r);
    r->pid = pid;
    r->port = port;
    snprintf(r->url, sizeof r->url, "http://%s:%u", l->cfg.host, port);
    snprintf(r->pool, sizeof r->pool, "%s", pc->name);
    r->asked_at = now;
    r->st = REP_STARTING;
    l->spawned++;
    if ((rc = l->h.add(l->h.ud, pc->name, r->url))) {
        KVG_WARN("autoscale local: cannot register %s: %s", r->url, kvg_strerror(rc));
        kill(pid, SIGTERM);
        r->st = REP_STOPPING;
        r->stop_at = now;
        return kvg_err_set(err, errlen, rc, "register %s: %s", r->url, kvg_strerror(rc));
    }
    KVG_INFO("autoscale local: pool %s: started %s (pid %d, cold start %.1f s)", pc->name, r->url,
             (int)pid, cold);
    return 0;
}

static void stop(struct local *l, struct replica *r, double now)
{
    l->h.remove(l->h.ud, r->url);
    if (r->pid > 0) kill(r->pid, SIGTERM);
    r->st = REP_STOPPING;
    r->stop_at = now;
}

static int mine(const struct replica *r, const struct kvg_autoscale_pool_cfg *pc, enum rep_state st)
{
    return r->st == st && !strcmp(r->pool, pc->name);
}

/* One short call to a replica's engine (vLLM's sleep routes): its status,
 * *body (caller frees; may be NULL) or a negative code. Blocking, bounded
 * by timeout_ms: these run on the autoscaler's thread, as a tick's work. */
static int engine_call(const struct replica *r, const char *method, const char *path,
                       uint32_t timeout_ms, char **body)
{
    struct kvg_https c;
    char err[128];
    if (body) *body = NULL;
    int rc = kvg_https_init(&c, r->url, NULL, NULL, err, sizeof err);
    if (rc) return rc;
    c.connect_timeout_ms = timeout_ms;
    struct kvg_https_resp resp;
    rc = kvg_https_request(&c, method, path, NULL, NULL, 0, timeout_ms, &resp);
    size_t len;
    if (!rc && body) rc = kvg_https_resp_body(&resp, 4096, body, &len);
    if (!rc) rc = resp.status;
    kvg_https_resp_close(&c, &resp);
    kvg_https_free(&c);
    return rc;
}

static uint32_t count(const struct local *l, const struct kvg_autoscale_pool_cfg *pc,
                      enum rep_state st)
{
    uint32_t n = 0;
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX; i++) n += mine(&l->r[i], pc, st);
    return n;
}

/* A drained replica parks instead of stopping while the pool keeps fewer
 * than standby parked: level 1 (weights to host memory), mode wait (it is
 * drained: nothing runs). Out of the gateway, so nothing routes to it. 1
 * when parked. */
static int park(struct local *l, const struct kvg_autoscale_pool_cfg *pc, struct replica *r,
                double now)
{
    if (count(l, pc, REP_PARKED) + count(l, pc, REP_WAKING) >= pc->standby) return 0;
    l->h.remove(l->h.ud, r->url);
    int st = engine_call(r, "POST", "/sleep?level=1&mode=wait", 10000, NULL);
    if (st != 200) {
        KVG_WARN("autoscale local: pool %s: %s did not park (%s): stopped", pc->name, r->url,
                 st < 0 ? kvg_strerror(st) : "HTTP status not 200");
        return 0;
    }
    r->st = REP_PARKED;
    r->park_at = now;
    KVG_INFO("autoscale local: pool %s: %s parked (asleep, level 1)", pc->name, r->url);
    return 1;
}

/* Wakes a parked replica: the wake call answers when the engine is awake
 * (seconds), so it is sent with a short deadline and not waited for (the
 * engine wakes all the same); starting() polls /is_sleeping. */
static void wake(struct local *l, const struct kvg_autoscale_pool_cfg *pc, struct replica *r,
                 double now)
{
    (void)l;
    engine_call(r, "POST", "/wake_up", 50, NULL);
    r->st = REP_WAKING;
    r->asked_at = now;
    r->readded = 0;
    KVG_INFO("autoscale local: pool %s: waking %s", pc->name, r->url);
}

static int apply(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                 uint32_t desired, double now, char *err, size_t errlen)
{
    struct local *l = (struct local *)a;
    uint32_t live = 0;
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX; i++)
        live += mine(&l->r[i], pc, REP_STARTING) || mine(&l->r[i], pc, REP_READY) ||
                mine(&l->r[i], pc, REP_WAKING);
    /* More wanted: a draining replica comes back first (its cache is warm). */
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX && live < desired; i++) {
        if (!mine(&l->r[i], pc, REP_DRAINING)) continue;
        l->h.drain(l->h.ud, l->r[i].url, 0);
        l->r[i].st = REP_READY;
        live++;
        KVG_INFO("autoscale local: pool %s: %s taken back from draining", pc->name, l->r[i].url);
    }
    /* Then a parked one: it wakes in seconds where a new one starts in minutes. */
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX && live < desired; i++) {
        if (!mine(&l->r[i], pc, REP_PARKED)) continue;
        wake(l, pc, &l->r[i], now);
        live++;
    }
    /* Parked beyond standby (it was lowered): stopped. */
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX && count(l, pc, REP_PARKED) > pc->standby; i++)
        if (mine(&l->r[i], pc, REP_PARKED)) stop(l, &l->r[i], now);
    while (live < desired) {
        int rc = spawn(l, pc, now, err, errlen);
        if (rc) return rc;
        live++;
    }
    /* Fewer: starting replicas go first (newest first, nothing cached). */
    for (size_t i = KVG_AUTOSCALE_LOCAL_MAX; i-- > 0 && live > desired;) {
        if (!mine(&l->r[i], pc, REP_STARTING)) continue;
        KVG_INFO("autoscale local: pool %s: start of %s given up", pc->name, l->r[i].url);
        stop(l, &l->r[i], now);
        live--;
    }
    while (live > desired) {
        const char *urls[KVG_AUTOSCALE_LOCAL_MAX];
        struct replica *rs[KVG_AUTOSCALE_LOCAL_MAX];
        size_t n = 0;
        for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX; i++)
            if (mine(&l->r[i], pc, REP_READY)) {
                rs[n] = &l->r[i];
                urls[n++] = l->r[i].url;
            }
        if (!n) break;
        int v = l->h.victim ? l->h.victim(l->h.ud, urls, n) : (int)n - 1;
        if (v < 0 || (size_t)v >= n) v = (int)n - 1;
        struct replica *r = rs[v];
        l->h.drain(l->h.ud, r->url, 1);
        r->st = REP_DRAINING;
        r->drain_at = now;
        live--;
        uint32_t infl = 0;
        l->h.state(l->h.ud, r->url, &infl);
        KVG_INFO("autoscale local: pool %s: draining %s (%u in flight)", pc->name, r->url, infl);
    }
    return 0;
}

/* A child that exited: reaped, its slot freed (and dropped from the
 * gateway when it died on its own). */
static int reaped(struct local *l, struct replica *r)
{
    int status = 0;
    if (r->pid <= 0 || kvg_proc_reap(r->pid, &status) != 1) return 0;
    if (r->st != REP_STOPPING) {
        KVG_WARN("autoscale local: %s (pid %d) exited on its own (status %d)", r->url, (int)r->pid,
                 status);
        l->h.remove(l->h.ud, r->url);
    }
    r->st = REP_FREE;
    r->pid = 0;
    return 1;
}

static int starting(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                    double now, double *eta, uint32_t cap)
{
    struct local *l = (struct local *)a;
    double lead = kvg_autoscale_startup_lead(l->su, pc->opts.model, pc->node);
    uint32_t n = 0;
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX; i++) {
        struct replica *r = &l->r[i];
        if (r->st == REP_FREE || strcmp(r->pool, pc->name) || reaped(l, r)) continue;
        uint32_t infl = 0;
        int st = r->st == REP_STOPPING ? -1 : l->h.state(l->h.ud, r->url, &infl);
        if (r->st == REP_STARTING && st == 1) {
            r->st = REP_READY;
            r->ready_at = now;
            kvg_autoscale_startup_observe(l->su, pc->opts.model, pc->node, now - r->asked_at, -1);
            KVG_INFO("autoscale local: pool %s: %s healthy after %.2f s", pc->name, r->url,
                     now - r->asked_at);
            if (l->h.ready) l->h.ready(l->h.ud, r->url);
        } else if (r->st == REP_STARTING && now - r->asked_at > l->cfg.start_timeout_s) {
            KVG_WARN("autoscale local: %s not healthy after %.0f s: stopped", r->url,
                     now - r->asked_at);
            stop(l, r, now);
        } else if (r->st == REP_DRAINING &&
                   (infl == 0 || st < 0 || now - r->drain_at > l->cfg.drain_timeout_s)) {
            KVG_INFO("autoscale local: pool %s: %s drained (%u in flight left after %.2f s)",
                     pc->name, r->url, infl, now - r->drain_at);
            if (!(st >= 0 && infl == 0 && park(l, pc, r, now))) stop(l, r, now);
        } else if (r->st == REP_WAKING && !r->readded) {
            char *b = NULL;
            int code = engine_call(r, "GET", "/is_sleeping", 1000, &b);
            cJSON *j = code == 200 && b ? cJSON_Parse(b) : NULL;
            if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "is_sleeping"))) {
                int rc = l->h.add(l->h.ud, pc->name, r->url);
                if (rc)
                    KVG_WARN("autoscale local: cannot register %s again: %s", r->url,
                             kvg_strerror(rc));
                else
                    r->readded = 1;
            }
            cJSON_Delete(j);
            free(b);
        } else if (r->st == REP_WAKING && st == 1) {
            r->st = REP_READY;
            r->ready_at = now;
            /* A woken replica teaches the asleep1 class, not the pool's node state. */
            kvg_autoscale_startup_observe(l->su, pc->opts.model, KVG_AUTOSCALE_ASLEEP1,
                                          now - r->asked_at, -1);
            KVG_INFO("autoscale local: pool %s: %s awake and healthy after %.2f s", pc->name,
                     r->url, now - r->asked_at);
            if (l->h.ready) l->h.ready(l->h.ud, r->url);
        } else if (r->st == REP_WAKING && now - r->asked_at > l->cfg.start_timeout_s) {
            KVG_WARN("autoscale local: %s not awake after %.0f s: stopped", r->url,
                     now - r->asked_at);
            stop(l, r, now);
        } else if (r->st == REP_STOPPING && now - r->stop_at > l->cfg.kill_grace_s) {
            kill(r->pid, SIGKILL);
        }
        if (r->st == REP_STARTING && n < cap) eta[n++] = r->asked_at + lead;
        if (r->st == REP_WAKING && n < cap)
            eta[n++] = r->asked_at +
                       kvg_autoscale_startup_lead(l->su, pc->opts.model, KVG_AUTOSCALE_ASLEEP1);
    }
    return (int)n;
}

static void destroy(struct kvg_autoscale_actuator *a)
{
    struct local *l = (struct local *)a;
    /* Bounded: kill_grace_s for all of them together, then SIGKILL. */
    _Static_assert(KVG_AUTOSCALE_LOCAL_MAX <= KVG_PROC_MAX, "a set holds every replica");
    struct kvg_proc_set ps = {0};
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX; i++)
        if (l->r[i].st != REP_FREE && l->r[i].pid > 0) ps.pid[ps.n++] = l->r[i].pid;
    double grace = l->cfg.kill_grace_s < 3600 ? l->cfg.kill_grace_s : 3600;
    kvg_proc_stop_all(&ps, (int)(grace * 1000));
    free(l);
}

static int replicas(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                    struct kvg_autoscale_replica *out, uint32_t cap)
{
    struct local *l = (struct local *)a;
    double lead = kvg_autoscale_startup_lead(l->su, pc->opts.model, pc->node);
    double wake_s = kvg_autoscale_startup_lead(l->su, pc->opts.model, KVG_AUTOSCALE_ASLEEP1);
    uint32_t n = 0;
    for (size_t i = 0; i < KVG_AUTOSCALE_LOCAL_MAX && n < cap; i++) {
        const struct replica *r = &l->r[i];
        if (r->st == REP_FREE || r->st == REP_STOPPING || strcmp(r->pool, pc->name)) continue;
        struct kvg_autoscale_replica *o = &out[n++];
        snprintf(o->url, sizeof o->url, "%s", r->url);
        /* A waking replica is starting again, from its parked state. */
        o->state = r->st == REP_READY      ? "ready"
                   : r->st == REP_DRAINING ? "draining"
                   : r->st == REP_PARKED   ? "parked"
                                           : "starting";
        o->since = r->st == REP_READY      ? r->ready_at
                   : r->st == REP_DRAINING ? r->drain_at
                   : r->st == REP_PARKED   ? r->park_at
                                           : r->asked_at;
        o->eta = r->st == REP_PARKED     ? wake_s
                 : r->st == REP_WAKING   ? r->asked_at + wake_s
                 : r->st == REP_STARTING ? r->asked_at + lead
                                         : -1;
    }
    return (int)n;
}

static const struct kvg_autoscale_actuator_ops g_ops = {"local", apply, starting, destroy,
                                                        replicas};

int kvg_autoscale_local_new(const struct kvg_autoscale_local_cfg *cfg,
                            const struct kvg_autoscale_local_hooks *hooks,
                            struct kvg_autoscale_startup *su, uint64_t seed,
                            struct kvg_autoscale_actuator **out, char *err, size_t errlen)
{
    if (!cfg->command[0])
        return kvg_err_set(err, errlen, KVG_ECONFIG, "actuator local needs local.command");
    if (!cfg->port_lo || cfg->port_hi < cfg->port_lo || cfg->port_hi > 65535)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "local.ports: LO-HI within 1..65535");
    if (!hooks->add || !hooks->state || !hooks->drain || !hooks->remove)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "actuator local: the host gave no hooks");
    /* A template that cannot expand fails here, not at the first scale-up. */
    if (strstr(cfg->command, "{side_port}") &&
        2u * cfg->port_hi - cfg->port_lo + 1 > 65535) /* the range above ports' */
        return kvg_err_set(err, errlen, KVG_ECONFIG, "local.ports: {side_port} is past 65535");
    struct kvg_autoscale_local_vars v = {"h", "m", "p", 1, 1, 1, "both", 2};
    char line[2048], *argv[128];
    int rc = kvg_autoscale_local_expand(cfg->command, &v, line, sizeof line, err, errlen);
    if (rc) return rc;
    if (kvg_autoscale_local_split(line, argv, 128) < 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "local.command: unclosed quote or no words");
    struct local *l = calloc(1, sizeof *l);
    if (!l) return -ENOMEM;
    l->base.ops = &g_ops;
    l->cfg = *cfg;
    l->h = *hooks;
    l->su = su;
    /* The scale is applied to the model, not to each draw, so that the
     * planners' lead time reads the clock the children start on. */
    if (cfg->cold_start_scale > 0 && cfg->cold_start_scale != 1)
        kvg_autoscale_startup_scale(su, cfg->cold_start_scale);
    kvg_rng_seed(&l->rng, seed);
    *out = &l->base;
    return 0;
}
