/* The controller acts through an actuator: apply() every tick with the
 * standing recommendation unless a dry run, starting() when it knows its
 * starts, failures shown; and the YAML's `local:` mapping. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "autoscale/ctl.h"
#include "base/err.h"

struct fake {
    struct kvg_autoscale_actuator base;
    int applies, destroyed_flag;
    uint32_t last_desired;
    int nstarting; /* what starting() answers */
    int fail;
    int *destroyed;
};

static int f_apply(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                   uint32_t desired, double now, char *err, size_t errlen)
{
    struct fake *f = (struct fake *)a;
    (void)pc, (void)now;
    f->applies++;
    f->last_desired = desired;
    return f->fail ? kvg_err_set(err, errlen, KVG_ETOOBIG, "no free port") : 0;
}

static int f_starting(struct kvg_autoscale_actuator *a, const struct kvg_autoscale_pool_cfg *pc,
                      double now, double *eta, uint32_t cap)
{
    struct fake *f = (struct fake *)a;
    (void)pc;
    for (int i = 0; i < f->nstarting && (uint32_t)i < cap; i++) eta[i] = now + 5;
    return f->nstarting;
}

static void f_destroy(struct kvg_autoscale_actuator *a)
{
    *((struct fake *)a)->destroyed = 1;
}

static const struct kvg_autoscale_actuator_ops g_fake = {"fake", f_apply, f_starting, f_destroy,
                                                         NULL};

static const char *yaml = "interval_secs: 1\n"
                          "actuator: local\n"
                          "local:\n"
                          "  command: \"sim --port {port}\"\n"
                          "  ports: 9000-9009\n"
                          "  cold_start_scale: 0.01\n"
                          "  prewarm_prompts: 3\n"
                          "  slow_start_secs: 2\n"
                          "  drain_timeout_secs: 7\n"
                          "pools:\n"
                          "  - name: agg\n"
                          "    model: qwen2.5-7b\n"
                          "    planner: static\n"
                          "    static_replicas: 3\n"
                          "    max_replicas: 4\n"
                          "    node: warm\n";

static struct kvg_autoscale_signals sig(double now, uint32_t ready)
{
    struct kvg_autoscale_signals s;
    memset(&s, 0, sizeof s);
    s.now = now;
    s.ready = ready;
    s.ttft_mean = s.ttft_p90 = s.itl_mean = s.itl_p90 = s.slo_miss = s.slo_miss_ttft =
        s.slo_miss_itl = s.slo_miss_prefill = s.slo_miss_decode = s.cache_hit = -1;
    return s;
}

TEST(local_keys_parse_and_refuse)
{
    struct kvg_autoscale_config c;
    char err[256] = "";
    CHECK_INT(kvg_autoscale_config_parse(yaml, strlen(yaml), &c, err, sizeof err), 0);
    CHECK_STR(c.actuator, "local");
    CHECK_STR(c.local.command, "sim --port {port}");
    CHECK_INT(c.local.port_lo, 9000);
    CHECK_INT(c.local.port_hi, 9009);
    CHECK_NEAR(c.local.cold_start_scale, 0.01, 1e-12);
    CHECK_INT(c.local.prewarm_prompts, 3);
    CHECK_NEAR(c.local.slow_start_s, 2, 0);
    CHECK_NEAR(c.local.drain_timeout_s, 7, 0);
    const char *bad[] = {"local:\n  ports: 9000\n", "local:\n  ports: 9010-9000\n",
                         "local:\n  comand: x\n", "local: 3\n",
                         "local:\n  drain_timeout_secs: -1\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(kvg_autoscale_config_parse(bad[i], strlen(bad[i]), &c, err, sizeof err) < 0);
    /* The default template is kvgate's own sim. */
    CHECK_INT(kvg_autoscale_config_parse("{}", 2, &c, err, sizeof err), 0);
    CHECK(strstr(c.local.command, "sim") && strstr(c.local.command, "{cold_start}"));
}

TEST(ctl_applies_through_the_actuator)
{
    struct kvg_autoscale_config c;
    char err[256] = "";
    CHECK_INT(kvg_autoscale_config_parse(yaml, strlen(yaml), &c, err, sizeof err), 0);
    struct kvg_autoscale_ctl *ctl;
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), 0);
    int destroyed = 0;
    struct fake f = {.base = {&g_fake}, .nstarting = 2, .destroyed = &destroyed};
    kvg_autoscale_ctl_set_actuator(ctl, &f.base);
    struct kvg_autoscale_signals s = sig(1, 1);
    struct kvg_autoscale_decision d;
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    CHECK_INT(f.applies, 1);
    CHECK_INT(f.last_desired, 3);
    CHECK_INT(s.starting, 2); /* the actuator's own count, not inferred */
    /* Every tick, so the actuator converges and retries. */
    s = sig(1.5, 1);
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    CHECK_INT(f.applies, 2);
    f.fail = 1;
    s = sig(2, 1);
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0); /* not fatal */
    CHECK(strstr(ctl->pools[0].act_err, "no free port") != NULL);
    cJSON *j = kvg_autoscale_ctl_json(ctl);
    cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "pools"), 0);
    CHECK_STR(cJSON_GetObjectItem(p0, "actuator_error")->valuestring, "no free port");
    CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(p0, "starting")), 2);
    cJSON_Delete(j);
    kvg_autoscale_ctl_free(ctl);
    CHECK_INT(destroyed, 1);
}

TEST(dry_run_never_applies)
{
    struct kvg_autoscale_config c;
    char err[256] = "";
    CHECK_INT(kvg_autoscale_config_parse(yaml, strlen(yaml), &c, err, sizeof err), 0);
    c.dry_run = 1;
    struct kvg_autoscale_ctl *ctl;
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), 0);
    int destroyed = 0;
    struct fake f = {.base = {&g_fake}, .destroyed = &destroyed};
    kvg_autoscale_ctl_set_actuator(ctl, &f.base);
    struct kvg_autoscale_signals s = sig(1, 1);
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, NULL), 0);
    CHECK_INT(f.applies, 0);
    kvg_autoscale_ctl_free(ctl);
}
