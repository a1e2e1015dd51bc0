/* A worker's models from its /v1/models: ids, context lengths, and LoRA
 * adapters (vLLM lists them with the base model as `parent`). */
#include <cjson/cJSON.h>
#include <errno.h>

#include "router/pool.h"
#include "support/test.h"

/* An empty pool with a random policy; the caller destroys it. */
static void new_pool(struct kvg_pool *p)
{
    struct kvg_policy *pol;
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    CHECK_INT(kvg_policy_new("random", &o, &pol), 0);
    CHECK_INT(kvg_pool_init(p, pol, NULL), 0);
}

TEST(adapters_are_models_with_a_parent)
{
    struct kvg_worker *w;
    CHECK_INT(kvg_worker_new("http://127.0.0.1:9", &w), 0);
    cJSON *j = cJSON_Parse(
        "{\"object\":\"list\",\"data\":["
        "{\"id\":\"base\",\"object\":\"model\",\"parent\":null,\"max_model_len\":4096},"
        "{\"id\":\"sql-lora\",\"object\":\"model\",\"parent\":\"base\",\"root\":\"/a\"},"
        "{\"id\":\"self\",\"parent\":\"self\"}]}");
    kvg_worker_set_models(w, cJSON_GetObjectItemCaseSensitive(j, "data"));
    cJSON_Delete(j);
    CHECK_INT(w->models.n, 3);
    CHECK_INT(kvg_worker_model_is_adapter(w, "base", 4), 0);
    CHECK_INT(kvg_worker_model_is_adapter(w, "sql-lora", 8), 1);
    CHECK_INT(kvg_worker_model_is_adapter(w, "self", 4), 0);
    CHECK_INT(kvg_worker_model_is_adapter(w, "nope", 4), 0);
    CHECK_INT(kvg_worker_max_model_len(w, "base", 4), 4096);
    CHECK(kvg_worker_serves(w, "sql-lora", 8));
    struct kvg_pool p;
    new_pool(&p);
    CHECK_INT(kvg_pool_add(&p, "http://127.0.0.1:9"), 0);
    struct kvg_worker *pw;
    CHECK_INT(kvg_pool_snapshot(&p, &pw, 1), 1);
    j = cJSON_Parse("[{\"id\":\"sql-lora\",\"parent\":\"base\"}]");
    kvg_worker_set_models(pw, j);
    cJSON_Delete(j);
    kvg_worker_unref(pw);
    CHECK_INT(kvg_pool_model_is_adapter(&p, "sql-lora", 8), 1);
    CHECK_INT(kvg_pool_model_is_adapter(&p, "base", 4), 0);
    kvg_pool_destroy(&p);
    kvg_worker_unref(w);
}

/* URL@rank: data-parallel rank r behind URL (sglang's router, vLLM's
 * external DP). The HTTP target is URL; the KV events come from the rank's
 * own publisher, on the endpoint's port + r (vLLM's rule). */
TEST(rank_workers_and_their_event_endpoints)
{
    struct kvg_worker *w;
    CHECK_INT(kvg_worker_new("http://127.0.0.1:8000@3", &w), 0);
    CHECK_INT(w->dp_rank, 3);
    CHECK_STR(w->url, "http://127.0.0.1:8000@3");
    CHECK_STR(w->target.hostport, "127.0.0.1:8000");
    kvg_worker_unref(w);
    CHECK_INT(kvg_worker_new("http://127.0.0.1:8000/", &w), 0);
    CHECK_INT(w->dp_rank, -1);
    CHECK_STR(w->url, "http://127.0.0.1:8000");
    kvg_worker_unref(w);
    char ep[64];
    CHECK_INT(kvg_worker_rank_endpoint("tcp://127.0.0.1:5557", 2, ep, sizeof ep), 0);
    CHECK_STR(ep, "tcp://127.0.0.1:5559");
    CHECK_INT(kvg_worker_rank_endpoint("tcp://127.0.0.1:5557", 0, ep, sizeof ep), 0);
    CHECK_STR(ep, "tcp://127.0.0.1:5557");
    CHECK_INT(kvg_worker_rank_endpoint("inproc://kv", 1, ep, sizeof ep), 0);
    CHECK_STR(ep, "inproc://kv_dp1");
    CHECK(kvg_worker_rank_endpoint("tcp://127.0.0.1:65535", 1, ep, sizeof ep) < 0);

    struct kvg_pool p;
    new_pool(&p);
    CHECK_INT(kvg_pool_add_ex(&p, "http://127.0.0.1:8000@0", "tcp://127.0.0.1:5557",
                              "tcp://127.0.0.1:5600"),
              0);
    CHECK_INT(kvg_pool_add_ex(&p, "http://127.0.0.1:8000@1", "tcp://127.0.0.1:5557",
                              "tcp://127.0.0.1:5600"),
              0);
    CHECK_INT(kvg_pool_add(&p, "http://127.0.0.1:8000@1"), -EEXIST);
    CHECK_INT(kvg_pool_add(&p, "http://127.0.0.1:8000"), 0); /* the engine's own balancing */
    CHECK_INT(kvg_pool_add(&p, "http://127.0.0.1:8000/"), -EEXIST);
    struct kvg_worker *ws[4];
    CHECK_INT(kvg_pool_snapshot(&p, ws, 4), 3);
    CHECK_STR(ws[1]->kv_endpoint, "tcp://127.0.0.1:5558");
    CHECK_STR(ws[1]->replay_endpoint, "tcp://127.0.0.1:5601");
    CHECK_STR(ws[0]->kv_endpoint, "tcp://127.0.0.1:5557");
    CHECK(ws[0]->slot != ws[1]->slot);
    for (int i = 0; i < 3; i++) kvg_worker_unref(ws[i]);
    kvg_pool_destroy(&p);
}
