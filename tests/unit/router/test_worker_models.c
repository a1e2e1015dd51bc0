/* A worker's models from its /v1/models: ids, context lengths, and LoRA
 * adapters (vLLM lists them with the base model as `parent`). */
#include <cjson/cJSON.h>

#include "router/pool.h"
#include "support/test.h"

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
    CHECK_INT(w->nmodels, 3);
    CHECK_INT(kvg_worker_model_is_adapter(w, "base", 4), 0);
    CHECK_INT(kvg_worker_model_is_adapter(w, "sql-lora", 8), 1);
    CHECK_INT(kvg_worker_model_is_adapter(w, "self", 4), 0);
    CHECK_INT(kvg_worker_model_is_adapter(w, "nope", 4), 0);
    CHECK_INT(kvg_worker_max_model_len(w, "base", 4), 4096);
    CHECK(kvg_worker_serves(w, "sql-lora", 8));
    struct kvg_policy *pol;
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    CHECK_INT(kvg_policy_new("random", &o, &pol), 0);
    struct kvg_pool p;
    CHECK_INT(kvg_pool_init(&p, pol, NULL), 0);
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
