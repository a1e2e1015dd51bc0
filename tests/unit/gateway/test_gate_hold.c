/* Scale from zero through the gate (gateway/gate.h, hold_when_empty): a
 * request waits in the queue while its pool has no ready replica, and a PD
 * pool's until it has a ready one of every role it has: sent on with its
 * prefill ready and its decode replica still starting, it was answered 503
 * (tests/integration/autoscale_local.sh, PD pools). An aggregated pool with
 * one replica ready of two admits at once. */
#include <string.h>

#include "base/err.h"
#include "gateway/gate.h"
#include "support/test.h"

static int called, denied;

static void on_admit(void *ud, const struct kvg_gate_deny *d)
{
    (void)ud;
    called++;
    denied += d != NULL;
}

static void admit(struct kvg_gate_loop *gl, struct kvg_gate_req *gr)
{
    static const char body[] = "{\"model\":\"m\",\"prompt\":\"x\"}";
    memset(gr, 0, sizeof *gr);
    gr->gl = gl;
    gr->model = "m";
    gr->model_len = 1;
    struct kvg_gate_request rq = {.body = body, .body_len = sizeof body - 1, .prompt_tokens = -1};
    kvg_gate_admit(gr, &rq, on_admit, NULL);
}

/* Two workers of roles r0 and r1, the second not healthy (starting). */
static void run(int r0, int r1, int held)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_pool pool;
    struct kvg_policy *pol;
    struct kvg_policy_opts po;
    kvg_policy_opts_default(&po);
    CHECK_INT(kvg_policy_new("random", &po, &pol), 0);
    CHECK_INT(kvg_pool_init(&pool, pol, NULL), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9001"), 0);
    CHECK_INT(kvg_pool_add(&pool, "http://127.0.0.1:9002"), 0);
    CHECK_INT(kvg_pool_set_role(&pool, "http://127.0.0.1:9001", r0, -1), 0);
    CHECK_INT(kvg_pool_set_role(&pool, "http://127.0.0.1:9002", r1, -1), 0);
    struct kvg_worker *ws[2];
    CHECK_INT(kvg_pool_snapshot(&pool, ws, 2), 2);
    struct kvg_worker *starting = !strcmp(ws[0]->url, "http://127.0.0.1:9002") ? ws[0] : ws[1];
    atomic_store(&starting->healthy, 0);
    struct kvg_gate_opts go = {.hold_when_empty = 1};
    kvg_adm_config_default(&go.adm);
    struct kvg_gate g;
    char err[256];
    CHECK_INT(kvg_gate_init(&g, &go, &pool, err, sizeof err), 0);
    struct kvg_gate_loop gl;
    CHECK_INT(kvg_gate_loop_open(&g, &loop, &gl), 0);
    struct kvg_gate_req gr;
    called = denied = 0;
    admit(&gl, &gr);
    CHECK_INT(called, held ? 0 : 1);
    if (held) {
        /* Its replica ready and the host's wake (autoscale_local.c): sent on. */
        atomic_store(&starting->healthy, 1);
        kvg_adm_capacity_available(g.adm, 16);
        for (int i = 0; i < 100 && !called; i++) uv_run(&loop, UV_RUN_NOWAIT);
        CHECK_INT(called, 1);
    }
    CHECK_INT(denied, 0);
    kvg_gate_account(&gr, 0, 0);
    for (int i = 0; i < 2; i++) kvg_worker_unref(ws[i]);
    kvg_gate_loop_close(&gl);
    uv_run(&loop, UV_RUN_DEFAULT);
    kvg_gate_free(&g);
    kvg_pool_destroy(&pool);
    uv_loop_close(&loop);
}

TEST(pd_request_waits_for_every_role)
{
    run(KVG_ROLE_PREFILL, KVG_ROLE_DECODE, 1);
}

TEST(aggregated_request_goes_to_the_ready_replica)
{
    run(KVG_ROLE_REGULAR, KVG_ROLE_REGULAR, 0);
}
