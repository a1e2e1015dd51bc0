/* Traffic classes: the class and deadline values, the batch rule against
 * the interactive ones, batch at the queue's bottom (granted only when no
 * interactive request waits), a batch waiter's deadline and its count, the
 * keys file's class fields, and kvg_gate_classify: what a key's class and a
 * client's headers make of a request (a batch key cannot make itself
 * interactive, a deadline can only be shortened). */
#include <errno.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "gateway/admission.h"
#include "gateway/gate.h"
#include "gateway/keys.h"
#include "support/test.h"

#define NOW 1000000ull
#define B KVG_ADM_BATCH

static struct kvg_engine_load ld(double waiting, double kv)
{
    return (struct kvg_engine_load){.waiting = waiting, .running = 1, .kv_usage = kv, .at_ms = NOW};
}

TEST(class_and_deadline_values)
{
    int b = -1;
    CHECK_INT(kvg_adm_traffic_parse("batch", 5, &b), 0);
    CHECK_INT(b, 1);
    CHECK_INT(kvg_adm_traffic_parse(" Interactive ", 13, &b), 0);
    CHECK_INT(b, 0);
    CHECK_INT(kvg_adm_traffic_parse("bulk", 4, &b), -EINVAL);
    CHECK_INT(kvg_adm_traffic_parse("", 0, &b), -EINVAL);
    uint32_t ms = 0;
    CHECK_INT(kvg_adm_deadline_parse("30m", 3, &ms), 0);
    CHECK_INT(ms, 1800000);
    CHECK_INT(kvg_adm_deadline_parse("90", 2, &ms), 0);
    CHECK_INT(ms, 90000);
    CHECK_INT(kvg_adm_deadline_parse("1.5h", 4, &ms), 0);
    CHECK_INT(ms, 5400000);
    CHECK_INT(kvg_adm_deadline_parse("0.25s", 5, &ms), 0);
    CHECK_INT(ms, 250);
    CHECK_INT(kvg_adm_deadline_parse("24h", 3, &ms), 0);
    const char *bad[] = {"0", "-5", "25h", "1e3", "inf", "nan", "m", "5 m", "5d", "", "1..2"};
    for (size_t i = 0; i < KVG_ARRAY_LEN(bad); i++)
        CHECK_INT(kvg_adm_deadline_parse(bad[i], strlen(bad[i]), &ms), -EINVAL);
    CHECK_INT(kvg_adm_class(B), KVG_ADM_BATCH);
    CHECK_STR(kvg_adm_class_name(B), "batch");
    CHECK_STR(kvg_adm_class_name(KVG_ADM_PRIO_MIN), "sheddable");
    /* No priority a request or key may name is the batch class. */
    int p;
    CHECK_INT(kvg_adm_priority_parse("-1001", 5, &p), -EINVAL);
}

TEST(batch_takes_the_troughs_and_is_never_shed)
{
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    /* One waiting on every engine: interactive goes, batch waits. */
    struct kvg_engine_load one[2] = {ld(1, 0.1), ld(2, 0.1)};
    CHECK_INT(kvg_adm_decide(&c, 0, one, NULL, 2, NOW, NULL), KVG_ADM_ADMIT);
    CHECK_INT(kvg_adm_decide(&c, -1, one, NULL, 2, NOW, NULL), KVG_ADM_ADMIT);
    CHECK_INT(kvg_adm_decide(&c, B, one, NULL, 2, NOW, NULL), KVG_ADM_QUEUE);
    /* An idle engine whose KV is past batch_max_kv: still no room for batch. */
    struct kvg_engine_load kv[1] = {ld(0, 0.85)};
    CHECK_INT(kvg_adm_decide(&c, B, kv, NULL, 1, NOW, NULL), KVG_ADM_QUEUE);
    kv[0].kv_usage = 0.5;
    size_t nok = 0;
    CHECK_INT(kvg_adm_decide(&c, B, kv, NULL, 1, NOW, &nok), KVG_ADM_ADMIT);
    CHECK_INT(nok, 1);
    /* A saturated pool sheds sheddable work; batch waits instead. */
    struct kvg_engine_load full[2] = {ld(20, 0.95), ld(20, 0.95)};
    CHECK_INT(kvg_adm_decide(&c, -1, full, NULL, 2, NOW, NULL), KVG_ADM_REJECT);
    CHECK_INT(kvg_adm_decide(&c, B, full, NULL, 2, NOW, NULL), KVG_ADM_QUEUE);
    /* Engines that say nothing hold nobody, batch included (admission.h). */
    struct kvg_engine_load none[1] = {{.waiting = -1, .running = -1, .kv_usage = -1}};
    CHECK_INT(kvg_adm_decide(&c, B, none, NULL, 1, NOW, NULL), KVG_ADM_ADMIT);
}

/* ---- the queue ---- */

struct rec {
    char order[16][8];
    int status[16];
    int n;
};

struct wctx {
    struct rec *rec;
    char name[8];
};

static void on_wait(void *ud, int status)
{
    struct wctx *w = ud;
    snprintf(w->rec->order[w->rec->n], sizeof w->rec->order[0], "%s", w->name);
    w->rec->status[w->rec->n++] = status;
}

static void tick(uv_timer_t *t)
{
    (void)t;
}

static void spin(uv_loop_t *loop, const int *until_n, int n, uint64_t ms)
{
    uv_timer_t t;
    uv_timer_init(loop, &t);
    uv_timer_start(&t, tick, 5, 5);
    uint64_t end = kvg_now_ms() + ms;
    while ((!until_n || *until_n < n) && kvg_now_ms() < end) uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

static void enq(struct kvg_adm_loop *lq, struct wctx *w, struct rec *r, const char *name, int prio,
                uint64_t deadline_ms)
{
    struct kvg_adm_waiter *h = NULL;
    w->rec = r;
    snprintf(w->name, sizeof w->name, "%s", name);
    CHECK_INT(kvg_adm_enqueue(lq, prio, "T", -1, deadline_ms, 0, on_wait, w, &h), 0);
}

/* What the gate's probe says when only interactive requests fit. */
static int interactive_fits(void *ud, int prio)
{
    (void)ud;
    return prio != KVG_ADM_BATCH;
}

TEST(batch_waits_below_every_interactive_band)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_adm_queue *q;
    int batch_fits = 0;
    CHECK_INT(kvg_adm_queue_new(NULL, interactive_fits, &batch_fits, &q), 0);
    struct kvg_adm_loop *lq;
    CHECK_INT(kvg_adm_loop_open(q, &loop, &lq), 0);
    struct rec r = {0};
    struct wctx w[6];
    enq(lq, &w[0], &r, "b1", B, 0); /* batch first in time ... */
    enq(lq, &w[1], &r, "s1", -1, 0);
    enq(lq, &w[2], &r, "b2", B, 0);
    enq(lq, &w[3], &r, "k1", 1, 0);
    struct kvg_adm_stats st;
    kvg_adm_stats(q, &st);
    CHECK_INT(st.waiting, 4);
    CHECK_INT(st.waiting_class[3], 2);
    CHECK_INT(kvg_adm_waiting(q), 4);
    /* ... but interactive is granted first, and batch not while it does
     * not fit: the probe stops at the batch band. */
    CHECK_INT(kvg_adm_capacity_available(q, 10), 2);
    spin(&loop, &r.n, 2, 2000);
    CHECK_INT(r.n, 2);
    CHECK_STR(r.order[0], "k1");
    CHECK_STR(r.order[1], "s1");
    kvg_adm_stats(q, &st);
    CHECK_INT(st.waiting, 2);
    CHECK_INT(st.waiting_class[3], 2);
    kvg_adm_loop_close(lq);
    spin(&loop, NULL, 0, 10);
    kvg_adm_queue_free(q);
    /* Without a probe (room for all), batch goes last, FIFO. */
    CHECK_INT(kvg_adm_queue_new(NULL, NULL, NULL, &q), 0);
    CHECK_INT(kvg_adm_loop_open(q, &loop, &lq), 0);
    struct rec r2 = {0};
    enq(lq, &w[0], &r2, "b1", B, 0);
    enq(lq, &w[1], &r2, "b2", B, 0);
    enq(lq, &w[2], &r2, "s1", -1, 0);
    CHECK_INT(kvg_adm_capacity_available(q, 10), 3);
    spin(&loop, &r2.n, 3, 2000);
    CHECK_STR(r2.order[0], "s1");
    CHECK_STR(r2.order[1], "b1");
    CHECK_STR(r2.order[2], "b2");
    kvg_adm_loop_close(lq);
    spin(&loop, NULL, 0, 10);
    kvg_adm_queue_free(q);
    uv_loop_close(&loop);
}

TEST(a_batch_deadline_expires_and_is_counted)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_adm_config c;
    kvg_adm_config_default(&c);
    c.queue_timeout_ms = 60000; /* the interactive waiter outlives the batch one */
    c.queue_max = 2;
    struct kvg_adm_queue *q;
    CHECK_INT(kvg_adm_queue_new(&c, NULL, NULL, &q), 0);
    struct kvg_adm_loop *lq;
    CHECK_INT(kvg_adm_loop_open(q, &loop, &lq), 0);
    struct rec r = {0};
    struct wctx w[4];
    enq(lq, &w[0], &r, "b1", B, kvg_now_ms() + 40);
    enq(lq, &w[1], &r, "k1", 1, 0);
    spin(&loop, &r.n, 1, 3000);
    CHECK_INT(r.n, 1);
    CHECK_STR(r.order[0], "b1");
    CHECK_INT(r.status[0], KVG_ETIMEOUT);
    struct kvg_adm_stats st;
    kvg_adm_stats(q, &st);
    CHECK_INT(st.timeouts, 1);
    CHECK_INT(st.batch_expired, 1);
    CHECK_INT(st.waiting, 1);
    CHECK_INT(st.waiting_class[3], 0);
    /* A full queue: an interactive newcomer displaces a batch waiter; a
     * batch newcomer displaces nobody. */
    enq(lq, &w[2], &r, "b2", B, 0);
    struct kvg_adm_waiter *h;
    CHECK_INT(kvg_adm_enqueue(lq, B, "T", -1, 0, 0, on_wait, &w[3], &h), -ENOSPC);
    enq(lq, &w[3], &r, "s1", -1, 0);
    spin(&loop, &r.n, 2, 3000);
    CHECK_STR(r.order[1], "b2");
    CHECK_INT(r.status[1], -ENOSPC);
    kvg_adm_loop_close(lq);
    spin(&loop, NULL, 0, 10);
    kvg_adm_stats(q, &st);
    CHECK_INT(st.batch_expired, 1);
    kvg_adm_queue_free(q);
    uv_loop_close(&loop);
}

/* ---- the keys file and the gate ---- */

#define H1                                                                                         \
    "sha256:"                                                                                      \
    "1111111111111111111111111111111111111111111111111111111111111111"
#define H2                                                                                         \
    "sha256:"                                                                                      \
    "2222222222222222222222222222222222222222222222222222222222222222"
#define H3                                                                                         \
    "sha256:"                                                                                      \
    "3333333333333333333333333333333333333333333333333333333333333333"

static const char KEYS[] =
    "keys:\n"
    "  - {name: nightly, hash: \"" H1 "\", class: batch, deadline: 10m}\n"
    "  - {name: flex, hash: \"" H2 "\", class: batch, max_class: interactive}\n"
    "  - {name: chat, hash: \"" H3 "\"}\n";

static void parse_bad(const char *y, const char *want)
{
    struct kvg_keys_set *s = NULL;
    char err[512] = "";
    CHECK_INT(kvg_keys_parse(y, strlen(y), "t.yaml", &s, err, sizeof err), KVG_ECONFIG);
    if (!strstr(err, want)) printf("  got: %s\n", err);
    CHECK(strstr(err, want) != NULL);
}

TEST(keys_file_class_fields)
{
    struct kvg_keys_set *s = NULL;
    char err[512] = "";
    CHECK_INT(kvg_keys_parse(KEYS, strlen(KEYS), "t.yaml", &s, err, sizeof err), 0);
    CHECK_INT(s->keys[0].batch, 1);
    CHECK_INT(s->keys[0].max_class, 1); /* default: its class */
    CHECK_INT(s->keys[0].deadline_ms, 600000);
    CHECK_INT(s->keys[1].batch, 1);
    CHECK_INT(s->keys[1].max_class, 0);
    CHECK_INT(s->keys[1].deadline_ms, 0);
    CHECK_INT(s->keys[2].batch, 0);
    CHECK_INT(s->keys[2].max_class, 0);
    kvg_keys_unref(s);
    parse_bad("keys:\n  - {name: a, hash: \"" H1 "\", max_class: batch}\n", "max_class: batch");
    parse_bad("keys:\n  - {name: a, hash: \"" H1 "\", class: bulk}\n", "bulk");
    parse_bad("keys:\n  - {name: a, hash: \"" H1 "\", class: batch, deadline: 2d}\n",
              "not a deadline");
    parse_bad("keys:\n  - {name: a, hash: \"" H1 "\", deadline: 0}\n", "not a deadline");
}

static struct kvg_str hv(const char *s)
{
    return s ? (struct kvg_str){s, strlen(s)} : (struct kvg_str){NULL, 0};
}

/* classify for key k (NULL: no keys) with the class and deadline headers. */
static int classify(struct kvg_gate_loop *gl, const struct kvg_keys_entry *k, const char *cls,
                    const char *deadline, struct kvg_gate_req *gr, struct kvg_gate_deny *d)
{
    memset(gr, 0, sizeof *gr);
    gr->gl = gl;
    gr->key = k;
    gr->prio = k ? k->priority : KVG_ADM_STANDARD;
    return kvg_gate_classify(gr, hv(cls), hv(deadline), d);
}

TEST(classify_a_batch_key_cannot_raise_itself)
{
    struct kvg_keys_set *s = NULL;
    char err[512] = "";
    CHECK_INT(kvg_keys_parse(KEYS, strlen(KEYS), "t.yaml", &s, err, sizeof err), 0);
    const struct kvg_keys_entry *nightly = &s->keys[0], *flex = &s->keys[1], *chat = &s->keys[2];
    struct kvg_gate g;
    memset(&g, 0, sizeof g);
    kvg_adm_config_default(&g.o.adm);
    g.o.adm.batch_deadline_ms = 120000;
    struct kvg_gate_loop gl = {.g = &g};
    struct kvg_gate_req gr;
    struct kvg_gate_deny d;
    uint64_t t0 = kvg_now_ms();
    /* The key's class and deadline. */
    CHECK_INT(classify(&gl, nightly, NULL, NULL, &gr, &d), 0);
    CHECK_INT(gr.prio, B);
    CHECK_INT(gr.deadline_ms, 600000);
    CHECK(gr.queue_deadline_ms >= t0 + 600000 && gr.queue_deadline_ms <= kvg_now_ms() + 600000);
    /* The attacker's move: 403, not a silent upgrade. */
    CHECK_INT(classify(&gl, nightly, "interactive", NULL, &gr, &d), 1);
    CHECK_INT(d.r.status, 403);
    CHECK_STR(d.r.code, "class_not_allowed");
    CHECK(strstr(d.r.message, "nightly") != NULL);
    /* Shorter deadline: yes; longer than the key's: 403; none: 400. */
    CHECK_INT(classify(&gl, nightly, "batch", "60", &gr, &d), 0);
    CHECK_INT(gr.deadline_ms, 60000);
    CHECK_INT(classify(&gl, nightly, NULL, "1h", &gr, &d), 1);
    CHECK_INT(d.r.status, 403);
    CHECK_STR(d.r.code, "deadline_not_allowed");
    CHECK_INT(classify(&gl, nightly, NULL, "soon", &gr, &d), 1);
    CHECK_INT(d.r.status, 400);
    CHECK_STR(d.r.code, "invalid_deadline");
    CHECK_INT(classify(&gl, nightly, "bulk", NULL, &gr, &d), 1);
    CHECK_INT(d.r.status, 400);
    CHECK_STR(d.r.code, "invalid_class");
    /* max_class: interactive lets its clients raise it; its deadline is the
     * gateway's. */
    CHECK_INT(classify(&gl, flex, "interactive", NULL, &gr, &d), 0);
    CHECK_INT(gr.prio, KVG_ADM_STANDARD);
    CHECK_INT(gr.deadline_ms, 0);
    CHECK_INT(classify(&gl, flex, NULL, NULL, &gr, &d), 0);
    CHECK_INT(gr.prio, B);
    CHECK_INT(gr.deadline_ms, 120000);
    /* An interactive key may lower a request to batch; a deadline header
     * on an interactive request is not read. */
    CHECK_INT(classify(&gl, chat, NULL, "5", &gr, &d), 0);
    CHECK_INT(gr.prio, KVG_ADM_STANDARD);
    CHECK_INT(gr.queue_deadline_ms, 0);
    CHECK_INT(classify(&gl, chat, "batch", "5", &gr, &d), 0);
    CHECK_INT(gr.prio, B);
    CHECK_INT(gr.deadline_ms, 5000);
    /* Without keys the headers decide, bounded by the gateway's deadline. */
    CHECK_INT(classify(&gl, NULL, "batch", NULL, &gr, &d), 0);
    CHECK_INT(gr.prio, B);
    CHECK_INT(gr.deadline_ms, 120000);
    CHECK_INT(classify(&gl, NULL, "batch", "3m", &gr, &d), 1);
    CHECK_INT(d.r.status, 403);
    kvg_keys_unref(s);
}
