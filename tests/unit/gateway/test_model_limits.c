/* A served model's own limits through the gate (gateway/gate.h,
 * struct kvg_gate_mlimit): max_inflight counts the model's requests from
 * admission to their end, queued ones too (429 model_overloaded past it),
 * max_queue those waiting in the gateway queue (503 queue_full past it);
 * both shed (a fallback may take them), carry Retry-After and are counted;
 * every count is given back when the request ends. The pool is empty and
 * held (hold_when_empty), so every admitted request waits in the queue. */
#include <string.h>

#include "base/err.h"
#include "gateway/gate.h"
#include "metrics/metrics.h"
#include "support/test.h"

struct out {
    int called, status, shed;
    char code[64], message[512], retry[8];
};

static void on_admit(void *ud, const struct kvg_gate_deny *d)
{
    struct out *o = ud;
    o->called++;
    if (!d) return;
    o->status = d->r.status;
    o->shed = d->shed;
    snprintf(o->code, sizeof o->code, "%s", d->r.code);
    snprintf(o->message, sizeof o->message, "%s", d->r.message);
    for (size_t i = 0; i < d->r.nheaders; i++)
        if (kvg_str_eq_nocase(d->r.headers[i].name, "retry-after"))
            snprintf(o->retry, sizeof o->retry, "%.*s", (int)d->r.headers[i].value.len,
                     d->r.headers[i].value.p);
}

static void admit(struct kvg_gate_loop *gl, struct kvg_gate_req *gr, struct out *o,
                  const struct kvg_gate_mlimit *l)
{
    static const char body[] = "{\"model\":\"m\",\"messages\":[]}";
    memset(gr, 0, sizeof *gr);
    memset(o, 0, sizeof *o);
    gr->gl = gl;
    gr->model = "m";
    gr->model_len = 1;
    struct kvg_gate_request rq = {
        .body = body, .body_len = sizeof body - 1, .prompt_tokens = -1, .limit = *l};
    kvg_gate_admit(gr, &rq, on_admit, o);
}

TEST(a_models_inflight_and_queue_limits)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_pool pool;
    struct kvg_policy *pol;
    struct kvg_policy_opts po;
    kvg_policy_opts_default(&po);
    CHECK_INT(kvg_policy_new("random", &po, &pol), 0);
    CHECK_INT(kvg_pool_init(&pool, pol, NULL), 0);
    struct kvg_gate_opts go = {.hold_when_empty = 1};
    kvg_adm_config_default(&go.adm);
    struct kvg_gate g;
    char err[256];
    CHECK_INT(kvg_gate_init(&g, &go, &pool, err, sizeof err), 0);
    struct kvg_gate_loop gl;
    CHECK_INT(kvg_gate_loop_open(&g, &loop, &gl), 0);
    struct kvg_metrics_registry *reg;
    CHECK_INT(kvg_metrics_registry_new(0, &reg), 0);
    struct kvg_metrics_family *f;
    const char *ln[] = {"model", "limit"};
    CHECK_INT(kvg_metrics_counter(reg, "t_model_shed_total", "t", ln, 2, &f), 0);
    struct kvg_gate_mcount c;
    memset(&c, 0, sizeof c);
    CHECK_INT(kvg_metrics_series(f, (const char *[]){"m", "max_inflight"}, 2, &c.shed[0]), 0);
    CHECK_INT(kvg_metrics_series(f, (const char *[]){"m", "max_queue"}, 2, &c.shed[1]), 0);
    const struct kvg_gate_mlimit lim = {&c, 2, 1, "m"};

    struct kvg_gate_req gr[4];
    struct out o[4];
    admit(&gl, &gr[0], &o[0], &lim); /* waits: the pool is held */
    CHECK_INT(o[0].called, 0);
    CHECK_INT(atomic_load(&c.inflight), 1);
    CHECK_INT(atomic_load(&c.queued), 1);
    admit(&gl, &gr[1], &o[1], &lim); /* in flight, but the model's one queue place is taken */
    CHECK_INT(o[1].called, 1);
    CHECK_INT(o[1].status, 503);
    CHECK_STR(o[1].code, "queue_full");
    CHECK_INT(o[1].shed, 1);
    CHECK_STR(o[1].retry, "1");
    CHECK(strstr(o[1].message, "model m") != NULL);
    CHECK_INT(atomic_load(&c.inflight), 2); /* until it ends */
    CHECK_INT(atomic_load(&c.queued), 1);
    admit(&gl, &gr[2], &o[2], &lim); /* a third at once: past max_inflight */
    CHECK_INT(o[2].status, 429);
    CHECK_STR(o[2].code, "model_overloaded");
    CHECK_INT(o[2].shed, 1);
    CHECK_STR(o[2].retry, "1");
    CHECK_INT(atomic_load(&c.inflight), 2);
    CHECK_NEAR(kvg_metrics_value(c.shed[0]), 1, 0);
    CHECK_NEAR(kvg_metrics_value(c.shed[1]), 1, 0);
    kvg_gate_account(&gr[2], 0, 0);
    kvg_gate_account(&gr[1], 0, 0);
    CHECK_INT(atomic_load(&c.inflight), 1);
    /* Another model's requests (no limit) are not counted against m. */
    admit(&gl, &gr[3], &o[3], &(struct kvg_gate_mlimit){0});
    CHECK_INT(atomic_load(&c.inflight), 1);
    kvg_gate_account(&gr[3], 0, 0);
    /* The waiter ends (its client left): both its counts are given back. */
    kvg_gate_account(&gr[0], 0, 0);
    CHECK_INT(atomic_load(&c.inflight), 0);
    CHECK_INT(atomic_load(&c.queued), 0);
    /* Without max_queue, requests are counted but never refused by it. */
    const struct kvg_gate_mlimit counted = {&c, 0, 0, "m"};
    admit(&gl, &gr[0], &o[0], &counted);
    admit(&gl, &gr[1], &o[1], &counted);
    admit(&gl, &gr[2], &o[2], &counted);
    CHECK_INT(o[0].called + o[1].called + o[2].called, 0);
    CHECK_INT(atomic_load(&c.inflight), 3);
    CHECK_INT(atomic_load(&c.queued), 3);
    for (int i = 0; i < 3; i++) kvg_gate_account(&gr[i], 0, 0);
    CHECK_INT(atomic_load(&c.inflight), 0);
    CHECK_INT(atomic_load(&c.queued), 0);

    kvg_gate_loop_close(&gl);
    uv_run(&loop, UV_RUN_DEFAULT);
    kvg_gate_free(&g);
    kvg_pool_destroy(&pool);
    for (int i = 0; i < 2; i++) kvg_metrics_series_release(c.shed[i]);
    kvg_metrics_registry_free(reg);
    uv_loop_close(&loop);
}
