/* Discovery's candidate rules on recorded EndpointSlice and Pod JSON
 * (tests/fixtures/k8s/) and on hand-made labels: the rules listed in
 * src/discovery/rules.h. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/err.h"
#include "discovery/rules.h"
#include "router/worker.h"

static cJSON *load(const char *name)
{
    const char *root = getenv("KVG_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/k8s/%s", root ? root : ".", name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return cJSON_Parse(buf);
}

static void rules(struct kvg_discovery_rules *r, int dp_aware)
{
    const char *reg[] = {"app=llm"}, *pf[] = {"app=llm-prefill"}, *dec[] = {"app=llm-decode"};
    memset(r, 0, sizeof *r);
    CHECK_INT(kvg_discovery_selector_parse(reg, 1, &r->regular, NULL, 0), 0);
    CHECK_INT(kvg_discovery_selector_parse(pf, 1, &r->prefill, NULL, 0), 0);
    CHECK_INT(kvg_discovery_selector_parse(dec, 1, &r->decode, NULL, 0), 0);
    r->dp_aware = dp_aware;
    r->port = 8000;
}

/* A pod's labels from tests/fixtures/k8s/pods.json. */
static const cJSON *labels_of(const cJSON *pods, const char *name)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(pods, name);
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "metadata"),
                                            "labels");
}

TEST(selector_parse_and_match)
{
    struct kvg_discovery_selector s;
    const char *ok[] = {"app=llm", "tier=gpu"};
    CHECK_INT(kvg_discovery_selector_parse(ok, 2, &s, NULL, 0), 0);
    CHECK_INT(s.n, 2);
    cJSON *l = cJSON_Parse("{\"app\":\"llm\",\"tier\":\"gpu\",\"x\":\"y\"}");
    CHECK(kvg_discovery_selector_matches(&s, l));
    cJSON_ReplaceItemInObject(l, "tier", cJSON_CreateString("cpu"));
    CHECK(!kvg_discovery_selector_matches(&s, l));
    CHECK(!kvg_discovery_selector_matches(&s, NULL));
    cJSON_Delete(l);
    const char *bad1[] = {"app"}, *bad2[] = {"=x"}, *bad3[] = {"a!=b"}, *bad4[] = {"a=b=c"};
    char err[128];
    CHECK_INT(kvg_discovery_selector_parse(bad1, 1, &s, err, sizeof err), KVG_ECONFIG);
    CHECK_INT(kvg_discovery_selector_parse(bad2, 1, &s, err, sizeof err), KVG_ECONFIG);
    CHECK_INT(kvg_discovery_selector_parse(bad3, 1, &s, err, sizeof err), KVG_ECONFIG);
    CHECK_INT(kvg_discovery_selector_parse(bad4, 1, &s, err, sizeof err), KVG_ECONFIG);
    /* A selector not given matches nothing (not everything). */
    CHECK_INT(kvg_discovery_selector_parse(NULL, 0, &s, NULL, 0), 0);
    cJSON *any = cJSON_Parse("{\"app\":\"llm\"}");
    CHECK(!kvg_discovery_selector_matches(&s, any));
    cJSON_Delete(any);
}

TEST(slice_endpoints_from_a_recorded_list)
{
    cJSON *list = load("list1.json");
    CHECK(list);
    const cJSON *srv = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(list, "items"), 0);
    char key[320];
    CHECK_INT(kvg_discovery_slice_key(srv, key, sizeof key), 0);
    CHECK_STR(key, "llm/llm-srv-7x2kq");
    struct kvg_discovery_endpoint *ep;
    size_t n;
    CHECK_INT(kvg_discovery_slice_endpoints(srv, &ep, &n), 0);
    CHECK_INT(n, 4);
    CHECK_STR(ep[0].pod_name, "srv-0");
    CHECK_STR(ep[0].pod_ns, "llm");
    CHECK_STR(ep[0].address, "192.0.2.10");
    CHECK(ep[0].pod_uid[0]);
    CHECK_INT(ep[0].ready, 1);
    CHECK_STR(ep[2].pod_name, "srv-1");
    CHECK_INT(ep[2].ready, 0);   /* recorded not ready */
    CHECK_INT(ep[0].port, 8000); /* the slice's ports[0] */
    free(ep);
    cJSON_Delete(list);
}

TEST(slice_conditions_and_odd_endpoints)
{
    cJSON *s = cJSON_Parse(
        "{\"metadata\":{\"name\":\"s\",\"namespace\":\"ns\"},\"endpoints\":["
        "{\"addresses\":[\"10.0.0.1\"],\"conditions\":{},\"targetRef\":{\"kind\":\"Pod\","
        "\"name\":\"a\"}},"
        "{\"addresses\":[\"10.0.0.2\"],\"conditions\":{\"ready\":true,\"terminating\":true},"
        "\"targetRef\":{\"kind\":\"Pod\",\"name\":\"b\",\"uid\":\"u-b\"}},"
        "{\"addresses\":[\"10.0.0.3\"],\"targetRef\":{\"kind\":\"Node\",\"name\":\"n\"}},"
        "{\"addresses\":[],\"targetRef\":{\"kind\":\"Pod\",\"name\":\"c\"}}]}");
    struct kvg_discovery_endpoint *ep;
    size_t n;
    CHECK_INT(kvg_discovery_slice_endpoints(s, &ep, &n), 0);
    CHECK_INT(n, 2);               /* not the Node, not the address-less one */
    CHECK_INT(ep[0].ready, 1);     /* an absent condition reads as true */
    CHECK_STR(ep[0].pod_ns, "ns"); /* the slice's namespace */
    CHECK_STR(ep[0].pod_uid, "a");
    CHECK_INT(ep[1].ready, 0); /* terminating: leaving */
    CHECK_INT(ep[0].port, 0);  /* the slice names no port */
    free(ep);
    cJSON_Delete(s);
    /* A port out of range is none. */
    s = cJSON_Parse("{\"metadata\":{\"name\":\"s\"},\"ports\":[{\"port\":70000}],"
                    "\"endpoints\":[{\"addresses\":[\"10.0.0.1\"],\"targetRef\":{\"kind\":"
                    "\"Pod\",\"name\":\"a\"}}]}");
    CHECK_INT(kvg_discovery_slice_endpoints(s, &ep, &n), 0);
    CHECK_INT(n, 1);
    CHECK_INT(ep[0].port, 0);
    free(ep);
    cJSON_Delete(s);
    cJSON *labels = cJSON_Parse("{\"kvgate.io/model\":\"m1\",\"n\":3}");
    CHECK_STR(kvg_discovery_label(labels, "kvgate.io/model"), "m1");
    CHECK(kvg_discovery_label(labels, "n") == NULL); /* not a string */
    CHECK(kvg_discovery_label(labels, "other") == NULL);
    CHECK(kvg_discovery_label(NULL, "kvgate.io/model") == NULL);
    cJSON_Delete(labels);
    cJSON *empty = cJSON_Parse("{\"metadata\":{\"name\":\"e\"},\"endpoints\":null}");
    CHECK_INT(kvg_discovery_slice_endpoints(empty, &ep, &n), 0);
    CHECK_INT(n, 0);
    cJSON_Delete(empty);
    cJSON *bad = cJSON_Parse("{\"metadata\":{\"name\":\"e\"},\"endpoints\":7}");
    CHECK_INT(kvg_discovery_slice_endpoints(bad, &ep, &n), KVG_EPARSE);
    cJSON_Delete(bad);
}

TEST(server_and_pd_groups_member_0_only)
{
    cJSON *pods = load("pods.json");
    CHECK(pods);
    struct kvg_discovery_rules r;
    rules(&r, 0);
    int role = -1, rank = -2;
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "srv-0"), &role, &rank),
              KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(role, KVG_ROLE_REGULAR);
    CHECK_INT(rank, -1);
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "srv-0-1"), &role, &rank),
              KVG_DISCOVERY_SUBORDINATE);
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "pf-0"), &role, &rank),
              KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(role, KVG_ROLE_PREFILL);
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "enc-0"), &role, &rank),
              KVG_DISCOVERY_ENCODE);
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "other-0"), &role, &rank),
              KVG_DISCOVERY_NO_MATCH);
    /* A decode group of size 2: its leader answers, its member 1 does not. */
    cJSON *d0 =
        cJSON_Parse("{\"app\":\"llm-decode\",\"" KVG_DISCOVERY_WORKER_INDEX_LABEL "\":\"0\"}");
    cJSON *d1 =
        cJSON_Parse("{\"app\":\"llm-decode\",\"" KVG_DISCOVERY_WORKER_INDEX_LABEL "\":\"1\"}");
    CHECK_INT(kvg_discovery_classify(&r, d0, &role, &rank), KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(role, KVG_ROLE_DECODE);
    CHECK_INT(kvg_discovery_classify(&r, d1, &role, &rank), KVG_DISCOVERY_SUBORDINATE);
    /* A plain Deployment pod (no group label) is a server of its own. */
    cJSON *plain = cJSON_Parse("{\"app\":\"llm\"}");
    CHECK_INT(kvg_discovery_classify(&r, plain, &role, &rank), KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(kvg_discovery_classify(&r, NULL, &role, &rank), KVG_DISCOVERY_NO_MATCH);
    cJSON_Delete(d0);
    cJSON_Delete(d1);
    cJSON_Delete(plain);
    cJSON_Delete(pods);
}

TEST(external_dp_every_qualified_member_is_a_rank)
{
    cJSON *pods = load("pods.json");
    struct kvg_discovery_rules r;
    rules(&r, 1);
    int role = -1, rank = -2;
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "srv-0"), &role, &rank),
              KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(rank, 0);
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "srv-0-1"), &role, &rank),
              KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(rank, 1);
    CHECK_INT(role, KVG_ROLE_REGULAR);
    /* Qualification is the selector's: a member without the label is out. */
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "other-0"), &role, &rank),
              KVG_DISCOVERY_NO_MATCH);
    /* Encode stays out even as a rank. */
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "enc-0"), &role, &rank),
              KVG_DISCOVERY_ENCODE);
    cJSON *junk = cJSON_Parse("{\"app\":\"llm\",\"" KVG_DISCOVERY_WORKER_INDEX_LABEL "\":\"x\"}");
    CHECK_INT(kvg_discovery_classify(&r, junk, &role, &rank), KVG_DISCOVERY_SUBORDINATE);
    cJSON_Delete(junk);
    cJSON_Delete(pods);
}

TEST(removal_reasons_and_urls)
{
    CHECK_INT(kvg_discovery_removal_reason(0, 0), KVG_DISCOVERY_POD_DELETED);
    CHECK_INT(kvg_discovery_removal_reason(0, 1), KVG_DISCOVERY_POD_DELETED);
    CHECK_INT(kvg_discovery_removal_reason(1, 0), KVG_DISCOVERY_NOT_READY);
    CHECK_INT(kvg_discovery_removal_reason(1, 1), KVG_DISCOVERY_SELECTOR_CHANGED);
    CHECK_STR(kvg_discovery_reason_name(KVG_DISCOVERY_SELECTOR_CHANGED), "selector_changed");
    char url[64];
    CHECK_INT(kvg_discovery_worker_url("10.1.2.3", 8000, url, sizeof url), 0);
    CHECK_STR(url, "http://10.1.2.3:8000");
    CHECK_INT(kvg_discovery_worker_url("fd00::7", 80, url, sizeof url), 0);
    CHECK_STR(url, "http://[fd00::7]:80");
    CHECK_INT(kvg_discovery_worker_url("10.1.2.3", 8000, url, 10), -ENOSPC);
}

TEST(encode_selector_makes_stage_workers)
{
    cJSON *pods = load("pods.json");
    CHECK(pods);
    struct kvg_discovery_rules r;
    rules(&r, 0);
    const char *enc[] = {KVG_DISCOVERY_ROLE_KIND_LABEL "=encode"};
    CHECK_INT(kvg_discovery_selector_parse(enc, 1, &r.encode, NULL, 0), 0);
    int role = -1, rank = -2;
    /* Matched by --encode-selector first: an encode worker (its leader). */
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "enc-0"), &role, &rank),
              KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(role, KVG_ROLE_ENCODE);
    CHECK_INT(rank, -1);
    /* The others are unchanged. */
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "srv-0"), &role, &rank),
              KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(role, KVG_ROLE_REGULAR);
    CHECK_INT(kvg_discovery_classify(&r, labels_of(pods, "pf-0"), &role, &rank),
              KVG_DISCOVERY_CANDIDATE);
    CHECK_INT(role, KVG_ROLE_PREFILL);
    /* An encode group's member 1 exposes no endpoint either. */
    cJSON *e1 = cJSON_Parse("{\"" KVG_DISCOVERY_ROLE_KIND_LABEL
                            "\":\"encode\",\"" KVG_DISCOVERY_WORKER_INDEX_LABEL "\":\"1\"}");
    CHECK_INT(kvg_discovery_classify(&r, e1, &role, &rank), KVG_DISCOVERY_SUBORDINATE);
    cJSON_Delete(e1);
    cJSON_Delete(pods);
}
