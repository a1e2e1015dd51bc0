/* The YAML of kvgate autoscale's parts (targets, kubernetes, lease, signal
 * sources), the scale subresource's path per kind, and the standby switch. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "autoscale/actuator_k8s.h"
#include "autoscale/actuator_k8s_int.h"
#include "autoscale/ctl.h"
#include "base/err.h"

static const char *y_ok = "actuator: kubernetes\n"
                          "gateways: [http://gw-a:8080/, http://gw-b:8080]\n"
                          "kubernetes: {api_url: 'https://10.96.0.1:443', timeout_ms: 1500}\n"
                          "lease: {redis: 'redis://127.0.0.1:6379', key: k1, ttl_ms: 4000}\n"
                          "pools:\n"
                          "  - name: p\n"
                          "    role: prefill\n"
                          "    engines: http://e1:8000\n"
                          "    target: {kind: LeaderWorkerSet, namespace: llm, name: lws-p}\n"
                          "  - name: d\n"
                          "    engines: [http://e2:8000, http://e3:8000]\n"
                          "    target: {kind: StatefulSet, namespace: llm, name: sts-d}\n";

TEST(config_targets_lease_sources)
{
    static struct kvg_autoscale_config c;
    char err[256] = "";
    CHECK_INT(kvg_autoscale_config_parse(y_ok, strlen(y_ok), &c, err, sizeof err), 0);
    CHECK_STR(c.actuator, "kubernetes");
    CHECK_INT(c.ngateways, 2);
    CHECK_STR(c.gateways[0], "http://gw-a:8080"); /* trailing slash dropped */
    CHECK_STR(c.kubernetes.api_url, "https://10.96.0.1:443");
    CHECK_INT(c.kubernetes.timeout_ms, 1500);
    CHECK_STR(c.kubernetes.token_file, ""); /* in-cluster default at use */
    CHECK_STR(c.lease.redis, "redis://127.0.0.1:6379");
    CHECK_STR(c.lease.key, "k1");
    CHECK_INT(c.lease.ttl_ms, 4000);
    CHECK_INT(c.npools, 2);
    CHECK_INT(c.pools[0].nengines, 1);
    CHECK_STR(c.pools[0].engines[0], "http://e1:8000");
    CHECK_INT(c.pools[1].nengines, 2);
    CHECK_INT(c.pools[0].target.kind, KVG_AUTOSCALE_KIND_LWS);
    CHECK_STR(c.pools[1].target.ns, "llm");
    CHECK_STR(c.pools[1].target.name, "sts-d");
    char path[512];
    CHECK_INT(kvg_autoscale_k8s_path(&c.pools[0].target, path, sizeof path), 0);
    CHECK_STR(path,
              "/apis/leaderworkerset.x-k8s.io/v1/namespaces/llm/leaderworkersets/lws-p/scale");
    CHECK_INT(kvg_autoscale_k8s_path(&c.pools[1].target, path, sizeof path), 0);
    CHECK_STR(path, "/apis/apps/v1/namespaces/llm/statefulsets/sts-d/scale");
    struct kvg_autoscale_target t = {KVG_AUTOSCALE_KIND_DEPLOYMENT, "ns", "dep"};
    CHECK_INT(kvg_autoscale_k8s_path(&t, path, sizeof path), 0);
    CHECK_STR(path, "/apis/apps/v1/namespaces/ns/deployments/dep/scale");
    CHECK_INT(kvg_autoscale_k8s_path(&t, path, 20), KVG_ETOOBIG);
    /* Defaults when nothing is said. */
    CHECK_INT(kvg_autoscale_config_parse("pools: []\n", 10, &c, err, sizeof err), 0);
    CHECK_STR(c.lease.redis, "");
    CHECK_STR(c.lease.key, "kvgate:autoscale:leader");
    CHECK_INT(c.lease.ttl_ms, 15000);
    CHECK_INT(c.kubernetes.timeout_ms, 5000);
}

TEST(config_refuses_bad_parts)
{
    static struct kvg_autoscale_config c;
    const char *bad[] = {
        "actuator: kubernetes\npools:\n  - name: a\n",                         /* no target */
        "pools:\n  - {name: a, target: {kind: Job, namespace: n, name: x}}\n", /* kind */
        "pools:\n  - {name: a, target: {kind: Deployment, name: x}}\n",        /* no namespace */
        "pools:\n  - {name: a, target: {kind: Deployment, namespace: N, name: x}}\n", /* upper */
        "pools:\n  - {name: a, target: {kind: Deployment, namespace: n, name: 'a/b'}}\n",
        "pools:\n  - {name: a, target: {kind: Deployment, namespace: n, name: x, replicas: 2}}\n",
        "pools:\n  - {name: a, engines: [https://e:1]}\n", /* http only */
        "gateways: {a: b}\n",
        "lease: {key: k}\n", /* no redis */
        "lease: {redis: 'http://r:1'}\n",
        "lease: {redis: 'redis://r:1', ttl_ms: 10}\n",
        "kubernetes: {timeout_ms: 5}\n",
        "kubernetes: {server: x}\n",
        "gateways: [http://a, http://b, http://c, http://d, http://e, http://f, http://g, "
        "http://h, http://i]\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        CHECK(kvg_autoscale_config_parse(bad[i], strlen(bad[i]), &c, err, sizeof err) < 0);
        CHECK(err[0] != 0);
    }
}

/* A standby controller plans and reports but infers no starts: nothing it
 * decides is acted on. */
TEST(ctl_standby_infers_no_starts)
{
    static struct kvg_autoscale_config c;
    char err[256];
    const char *y = "pools:\n  - {name: a, planner: static, static_replicas: 3}\n";
    CHECK_INT(kvg_autoscale_config_parse(y, strlen(y), &c, err, sizeof err), 0);
    struct kvg_autoscale_ctl *ctl;
    CHECK_INT(kvg_autoscale_ctl_new(&c, &ctl, err, sizeof err), 0);
    kvg_autoscale_ctl_set_standby(ctl, 1);
    struct kvg_autoscale_signals s;
    memset(&s, 0, sizeof s);
    s.ready = 1;
    s.ttft_mean = s.ttft_p90 = s.itl_mean = s.itl_p90 = s.slo_miss = s.slo_miss_ttft =
        s.slo_miss_itl = s.slo_miss_prefill = s.slo_miss_decode = s.cache_hit = -1;
    struct kvg_autoscale_decision d;
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    CHECK_INT(d.desired, 3);
    CHECK_INT(ctl->pools[0].nstart, 0);
    cJSON *j = kvg_autoscale_ctl_json(ctl);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "standby")));
    cJSON_Delete(j);
    /* Leader again: the next tick infers the two starts. */
    kvg_autoscale_ctl_set_standby(ctl, 0);
    s.now = 1;
    CHECK_INT(kvg_autoscale_ctl_tick(ctl, 0, &s, &d), 0);
    CHECK_INT(ctl->pools[0].nstart, 2);
    kvg_autoscale_ctl_free(ctl);
}

/* Parked pods (actuator_k8s_park.c): the Scale's selector, and a PodList
 * read as the actuator trusts it: terminating pods and names that could not
 * go into a path are left out, parked and ready read, ordinal order. */
TEST(k8s_pods_and_selector)
{
    char sel[32];
    CHECK_INT(
        kvg__k8s_scale_selector("{\"status\":{\"selector\":\"app=a,tier=x\"}}", sel, sizeof sel),
        0);
    CHECK_STR(sel, "app=a,tier=x");
    CHECK_INT(kvg__k8s_scale_selector("{\"status\":{\"replicas\":1}}", sel, sizeof sel),
              KVG_EPARSE);
    CHECK_INT(
        kvg__k8s_scale_selector("{\"status\":{\"selector\":\"app=a-very-long-name-x\"}}", sel, 8),
        KVG_ETOOBIG);
    CHECK_INT(kvg__k8s_scale_selector("not json", sel, sizeof sel), KVG_EPARSE);
    static struct kvg__k8s_pods ps;
    const char *list =
        "{\"kind\":\"PodList\",\"items\":["
        "{\"metadata\":{\"name\":\"d-10\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\"}]}},"
        "{\"metadata\":{\"name\":\"d-2\",\"annotations\":{\"kvgate.io/park\":\"level1\"}}},"
        "{\"metadata\":{\"name\":\"d-1\",\"deletionTimestamp\":\"2026-12-06T00:00:00Z\"}},"
        "{\"metadata\":{\"name\":\"../evil\"}},{\"metadata\":{\"name\":7}},"
        "{\"metadata\":{\"name\":\"d-3\",\"annotations\":{\"kvgate.io/park\":\"\"}},"
        "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}]}";
    CHECK_INT(kvg__k8s_pods_parse(list, &ps), 0);
    CHECK_INT(ps.n, 3);
    CHECK_STR(ps.pod[0].name, "d-2");
    CHECK_INT(ps.pod[0].parked, 1);
    CHECK_INT(ps.pod[0].ready, 0);
    CHECK_STR(ps.pod[1].name, "d-3"); /* an empty annotation parks nothing */
    CHECK_INT(ps.pod[1].parked, 0);
    CHECK_STR(ps.pod[2].name, "d-10");
    CHECK_INT(ps.pod[2].ready, 1);
    CHECK_INT(kvg__k8s_pods_parse("{\"items\":{}}", &ps), KVG_EPARSE);
    CHECK_INT(kvg__k8s_pods_parse("{\"items\":[]}", &ps), 0);
    CHECK_INT(ps.n, 0);
}
