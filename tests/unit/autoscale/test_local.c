/* The local actuator: template expansion and splitting, and a replica's
 * life (spawn, register, ready and learned, drain, stop by PID) over fake
 * gateway hooks and a real child process. */
#include "support/test.h"

#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "autoscale/actuator_local.h"
#include "autoscale/ctl.h"
#include "base/err.h"

TEST(template_expands_and_refuses)
{
    struct kvg_autoscale_local_vars v = {"127.0.0.1", "qwen", "agg", 8101, 3, 1.5, "prefill", 8111};
    char out[256], err[128] = "";
    CHECK_INT(kvg_autoscale_local_expand("sim --host {host} --port {port} --model {model} "
                                         "--cold-start-secs {cold_start} # {pool}-{n}",
                                         &v, out, sizeof out, err, sizeof err),
              0);
    CHECK_STR(out, "sim --host 127.0.0.1 --port 8101 --model qwen --cold-start-secs 1.500 # agg-3");
    CHECK_INT(kvg_autoscale_local_expand("--role {role} --side-channel-port {side_port}", &v, out,
                                         sizeof out, err, sizeof err),
              0);
    CHECK_STR(out, "--role prefill --side-channel-port 8111");
    CHECK_INT(kvg_autoscale_local_expand("x {gpu}", &v, out, sizeof out, err, sizeof err),
              KVG_ECONFIG);
    CHECK(strstr(err, "{gpu}") != NULL);
    CHECK_INT(kvg_autoscale_local_expand("x {port", &v, out, sizeof out, err, sizeof err),
              KVG_ECONFIG);
    CHECK_INT(kvg_autoscale_local_expand("{model}{model}", &v, out, 8, err, sizeof err),
              KVG_ETOOBIG);
}

TEST(command_splits_on_blanks_with_quotes)
{
    char line[] = "  /bin/sh -c 'exec sleep 30'  \"a b\"c x";
    char *argv[8];
    CHECK_INT(kvg_autoscale_local_split(line, argv, 8), 5);
    CHECK_STR(argv[0], "/bin/sh");
    CHECK_STR(argv[1], "-c");
    CHECK_STR(argv[2], "exec sleep 30");
    CHECK_STR(argv[3], "a bc");
    CHECK_STR(argv[4], "x");
    CHECK(argv[5] == NULL);
    char bad[] = "a 'b";
    CHECK_INT(kvg_autoscale_local_split(bad, argv, 8), KVG_ECONFIG);
    char blank[] = "   ";
    CHECK_INT(kvg_autoscale_local_split(blank, argv, 8), KVG_ECONFIG);
    char many[] = "a b c d e f g h";
    CHECK_INT(kvg_autoscale_local_split(many, argv, 8), KVG_ECONFIG);
}

/* A fake gateway: the URLs added, their health and in-flight counts. */
struct gw {
    char url[8][96];
    int healthy[8], draining[8], present[8];
    uint32_t infl[8];
    int n, readied, removed;
    char pool[64]; /* of the last one added */
};

static int at(struct gw *g, const char *url)
{
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->url[i], url)) return i;
    return -1;
}

static int g_add(void *ud, const char *pool, const char *url)
{
    struct gw *g = ud;
    snprintf(g->pool, sizeof g->pool, "%s", pool);
    snprintf(g->url[g->n], sizeof g->url[0], "%s", url);
    g->present[g->n++] = 1;
    return 0;
}

static int g_state(void *ud, const char *url, uint32_t *infl)
{
    struct gw *g = ud;
    int i = at(g, url);
    if (i < 0 || !g->present[i]) return -1;
    *infl = g->infl[i];
    return g->healthy[i];
}

static void g_drain(void *ud, const char *url, int on)
{
    struct gw *g = ud;
    int i = at(g, url);
    if (i >= 0) g->draining[i] = on;
}

static void g_remove(void *ud, const char *url)
{
    struct gw *g = ud;
    int i = at(g, url);
    if (i >= 0) g->present[i] = 0;
    g->removed++;
}

static int g_victim(void *ud, const char *const *urls, size_t n)
{
    (void)ud, (void)urls, (void)n;
    return 0; /* the oldest */
}

static void g_ready(void *ud, const char *url)
{
    (void)url;
    ((struct gw *)ud)->readied++;
}

TEST(replica_life_spawn_ready_drain_stop)
{
    struct gw g;
    memset(&g, 0, sizeof g);
    struct kvg_autoscale_local_hooks h = {&g, g_add, g_state, g_drain, g_remove, g_victim, g_ready};
    struct kvg_autoscale_local_cfg cfg;
    kvg_autoscale_local_cfg_default(&cfg);
    snprintf(cfg.command, sizeof cfg.command, "/bin/sh -c 'exec sleep 30' {port}");
    cfg.port_lo = 9500;
    cfg.port_hi = 9502;
    cfg.kill_grace_s = 1;
    struct kvg_autoscale_startup su;
    kvg_autoscale_startup_init(&su);
    struct kvg_autoscale_actuator *a;
    char err[200] = "";
    CHECK_INT(kvg_autoscale_local_new(&cfg, &h, &su, 1, &a, err, sizeof err), 0);
    struct kvg_autoscale_pool_cfg pc;
    memset(&pc, 0, sizeof pc);
    snprintf(pc.name, sizeof pc.name, "agg");
    snprintf(pc.opts.model, sizeof pc.opts.model, "qwen2.5-7b");
    pc.node = KVG_AUTOSCALE_WARM;

    CHECK_INT(a->ops->apply(a, &pc, 2, 10, err, sizeof err), 0);
    CHECK_INT(g.n, 2);
    CHECK_STR(g.pool, "agg");
    CHECK_STR(g.url[0], "http://127.0.0.1:9500");
    CHECK_STR(g.url[1], "http://127.0.0.1:9501");
    double eta[8];
    CHECK_INT(a->ops->starting(a, &pc, 11, eta, 8), 2);
    CHECK(eta[0] > 10);
    /* One answers /health: ready, learned (12 - 10 = 2 s), told to the host. */
    g.healthy[0] = 1;
    CHECK_INT(a->ops->starting(a, &pc, 12, eta, 8), 1);
    CHECK_INT(g.readied, 1);
    CHECK_INT(kvg_autoscale_startup_samples(&su, "qwen2.5-7b", KVG_AUTOSCALE_WARM), 1);
    /* Fewer wanted: the one still starting is given up first. */
    CHECK_INT(a->ops->apply(a, &pc, 1, 13, err, sizeof err), 0);
    CHECK_INT(g.present[1], 0);
    CHECK_INT(g.draining[0], 0);
    /* Zero: the ready one drains while it has a stream, then stops. */
    g.infl[0] = 1;
    CHECK_INT(a->ops->apply(a, &pc, 0, 14, err, sizeof err), 0);
    CHECK_INT(g.draining[0], 1);
    CHECK_INT(a->ops->starting(a, &pc, 15, eta, 8), 0);
    CHECK_INT(g.present[0], 1); /* still draining */
    /* More wanted again before it ends: taken back, no new process. */
    CHECK_INT(a->ops->apply(a, &pc, 1, 16, err, sizeof err), 0);
    CHECK_INT(g.draining[0], 0);
    CHECK_INT(g.n, 2);
    CHECK_INT(a->ops->apply(a, &pc, 0, 17, err, sizeof err), 0);
    g.infl[0] = 0;
    a->ops->starting(a, &pc, 18, eta, 8);
    CHECK_INT(g.present[0], 0); /* drained: removed */
    /* Stopped children are reaped (SIGTERM; bounded wait) and free their
     * ports: the whole range is usable again; past it is an error. */
    uint32_t before = (uint32_t)g.n;
    for (int i = 0; i < 100; i++) {
        a->ops->starting(a, &pc, 18.5, eta, 8);
        if (!a->ops->apply(a, &pc, 3, 19, err, sizeof err)) break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK_INT(g.n - before >= 3, 1);
    CHECK_INT(a->ops->apply(a, &pc, 5, 19, err, sizeof err), KVG_ETOOBIG);
    CHECK(strstr(err, "port") != NULL);
    a->ops->destroy(a); /* every child stopped and reaped, bounded */
    CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);
}

TEST(new_refuses_bad_config)
{
    struct gw g;
    memset(&g, 0, sizeof g);
    struct kvg_autoscale_local_hooks h = {&g, g_add, g_state, g_drain, g_remove, NULL, NULL};
    struct kvg_autoscale_local_cfg cfg;
    kvg_autoscale_local_cfg_default(&cfg);
    struct kvg_autoscale_startup su;
    kvg_autoscale_startup_init(&su);
    struct kvg_autoscale_actuator *a;
    char err[200];
    snprintf(cfg.command, sizeof cfg.command, "sim --port {prot}");
    CHECK_INT(kvg_autoscale_local_new(&cfg, &h, &su, 1, &a, err, sizeof err), KVG_ECONFIG);
    snprintf(cfg.command, sizeof cfg.command, "sim 'x");
    CHECK_INT(kvg_autoscale_local_new(&cfg, &h, &su, 1, &a, err, sizeof err), KVG_ECONFIG);
    snprintf(cfg.command, sizeof cfg.command, "sim");
    cfg.port_hi = cfg.port_lo - 1;
    CHECK_INT(kvg_autoscale_local_new(&cfg, &h, &su, 1, &a, err, sizeof err), KVG_ECONFIG);
}

/* cold_start_scale scales the start-up model the actuator borrows: its
 * children's {cold_start} and the planners' lead time read one clock. */
TEST(cold_start_scale_scales_the_model_once)
{
    struct gw g;
    memset(&g, 0, sizeof g);
    struct kvg_autoscale_local_hooks h = {&g, g_add, g_state, g_drain, g_remove, NULL, NULL};
    struct kvg_autoscale_local_cfg cfg;
    kvg_autoscale_local_cfg_default(&cfg);
    snprintf(cfg.command, sizeof cfg.command, "/bin/sh -c 'exec sleep 30' {port}");
    cfg.port_lo = 9510;
    cfg.port_hi = 9511;
    cfg.kill_grace_s = 1;
    cfg.cold_start_scale = 0.5;
    struct kvg_autoscale_startup su;
    kvg_autoscale_startup_init(&su);
    struct kvg_autoscale_actuator *a;
    char err[200] = "";
    CHECK_INT(kvg_autoscale_local_new(&cfg, &h, &su, 1, &a, err, sizeof err), 0);
    /* the 7B warm p90, 75 s, at half */
    CHECK_NEAR(kvg_autoscale_startup_lead(&su, "qwen2.5-7b", KVG_AUTOSCALE_WARM), 37.5, 0.05);
    struct kvg_autoscale_pool_cfg pc;
    memset(&pc, 0, sizeof pc);
    snprintf(pc.name, sizeof pc.name, "agg");
    snprintf(pc.opts.model, sizeof pc.opts.model, "qwen2.5-7b");
    pc.node = KVG_AUTOSCALE_WARM;
    double eta[4];
    CHECK_INT(a->ops->apply(a, &pc, 1, 10, err, sizeof err), 0);
    /* the expected ready time is the scaled lead, not the unscaled one */
    CHECK_INT(a->ops->starting(a, &pc, 10, eta, 4), 1);
    CHECK(eta[0] > 10 + 37 && eta[0] < 10 + 38);
    CHECK_INT(a->ops->apply(a, &pc, 0, 11, err, sizeof err), 0);
    a->ops->destroy(a);
}
