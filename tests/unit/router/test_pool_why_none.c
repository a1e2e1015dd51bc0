/* Why no worker can take a request (the /debug/route form's message): an
 * empty pool, a model nobody serves (with those served), and the count of
 * each reason among the workers that do serve it. */
#include <cjson/cJSON.h>
#include <string.h>

#include "router/pool.h"
#include "support/test.h"

static void set_models(struct kvg_worker *w, const char *json)
{
    cJSON *j = cJSON_Parse(json);
    CHECK(j != NULL);
    kvg_worker_set_models(w, j);
    cJSON_Delete(j);
}

static struct kvg_route_ctx ctx_for(const char *model)
{
    struct kvg_route_ctx c;
    memset(&c, 0, sizeof c);
    c.model = (struct kvg_str){model, strlen(model)};
    c.now_ms = 1000;
    return c;
}

TEST(why_none_names_the_reason)
{
    struct kvg_policy *pol;
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    CHECK_INT(kvg_policy_new("random", &o, &pol), 0);
    struct kvg_pool p;
    CHECK_INT(kvg_pool_init(&p, pol, NULL), 0);
    char why[300];
    struct kvg_route_ctx c = ctx_for("a");
    kvg_pool_why_none(&p, &c, why, sizeof why);
    CHECK_STR(why, "the pool has no workers");

    CHECK_INT(kvg_pool_add(&p, "http://127.0.0.1:1"), 0);
    CHECK_INT(kvg_pool_add(&p, "http://127.0.0.1:2"), 0);
    CHECK_INT(kvg_pool_add(&p, "http://127.0.0.1:3"), 0);
    struct kvg_worker *ws[3];
    CHECK_INT(kvg_pool_snapshot(&p, ws, 3), 3);
    set_models(ws[0], "[{\"id\":\"a\"}]");
    set_models(ws[1], "[{\"id\":\"a\"}]");
    set_models(ws[2], "[{\"id\":\"b\"},{\"id\":\"a-lora\",\"parent\":\"b\"}]");

    c = ctx_for("nope");
    kvg_pool_why_none(&p, &c, why, sizeof why);
    CHECK_STR(why, "no worker serves the model `nope` (served: a, b, a-lora)");

    atomic_store(&ws[0]->healthy, 0);
    atomic_store(&ws[1]->draining, 1);
    c = ctx_for("a");
    kvg_pool_why_none(&p, &c, why, sizeof why);
    CHECK_STR(why, "no worker of the 2 serving `a` can take it: 1 unhealthy, 1 draining");

    /* A PD leg that wants decode workers: the prefill-only pool's reason. */
    atomic_store(&ws[1]->draining, 0);
    c.roles = 1u << KVG_ROLE_DECODE;
    kvg_pool_why_none(&p, &c, why, sizeof why);
    CHECK_STR(why, "no worker of the 2 serving `a` can take it: 1 unhealthy, 1 not of the role "
                   "this leg needs");

    /* Every one eligible: the policy's choice, said so. */
    atomic_store(&ws[0]->healthy, 1);
    c.roles = 0;
    kvg_pool_why_none(&p, &c, why, sizeof why);
    CHECK_STR(why, "no worker of the 2 serving `a` can take it: the policy chose none of them");

    /* A small buffer is cut, still a string. */
    char small[16];
    c = ctx_for("nope");
    kvg_pool_why_none(&p, &c, small, sizeof small);
    CHECK_INT((int)strlen(small), 15);
    for (int i = 0; i < 3; i++) kvg_worker_unref(ws[i]);
    kvg_pool_destroy(&p);
}
