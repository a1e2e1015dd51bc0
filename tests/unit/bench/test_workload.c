/* Workload generators: shared_prefix with inference-perf's semantics
 * (counts, shared prefixes, one shuffle then cyclic replay), Poisson and
 * closed-loop stages, chat sessions that grow, JSONL traces, and
 * determinism per seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "bench/workload.h"
#include "support/test.h"

static void small(struct kvg_bench_wl_opts *o)
{
    kvg_bench_wl_opts_default(o);
    o->groups = 5;
    o->prompts_per_group = 3;
    o->system_len = 40;
    o->question_len = 10;
    o->vocab = 1000;
    o->stage[0] = (struct kvg_bench_stage){.rate = 50, .secs = 20};
    o->nstages = 1;
}

static struct kvg_bench_wl *make(const struct kvg_bench_wl_opts *o)
{
    struct kvg_bench_wl *wl = NULL;
    char err[256] = "";
    int rc = kvg_bench_wl_new(o, &wl, err, sizeof err);
    if (rc) printf("  workload: %s (%d)\n", err, rc);
    return wl;
}

TEST(shared_prefix_counts_and_prefixes)
{
    struct kvg_bench_wl_opts o;
    small(&o);
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    uint32_t n, np;
    const uint32_t *order = kvg_bench_wl_order(wl, &np);
    CHECK_INT(np, 15);
    /* The order is a permutation of the 15 prompts. */
    int seen[15] = {0};
    for (uint32_t i = 0; i < np; i++) {
        CHECK(order[i] < 15);
        seen[order[i]]++;
    }
    for (int i = 0; i < 15; i++) CHECK_INT(seen[i], 1);
    /* Prompts of a group share exactly the system prompt. */
    for (uint32_t g = 0; g < 5; g++) {
        const uint32_t *a = kvg_bench_wl_prompt(wl, g * 3, &n);
        CHECK_INT(n, 50);
        for (uint32_t u = 1; u < 3; u++) {
            const uint32_t *b = kvg_bench_wl_prompt(wl, g * 3 + u, &n);
            CHECK(!memcmp(a, b, 40 * sizeof *a));
            CHECK(memcmp(a + 40, b + 40, 10 * sizeof *a)); /* random questions differ */
        }
        const uint32_t *other = kvg_bench_wl_prompt(wl, ((g + 1) % 5) * 3, &n);
        CHECK(memcmp(a, other, 40 * sizeof *a));
        for (uint32_t i = 0; i < 50; i++) CHECK(a[i] < 1000);
    }
    CHECK(!kvg_bench_wl_prompt(wl, 15, &n));
    kvg_bench_wl_free(wl);
}

TEST(shared_prefix_cyclic_replay_of_one_shuffle)
{
    struct kvg_bench_wl_opts o;
    small(&o);
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    uint32_t np;
    const uint32_t *order = kvg_bench_wl_order(wl, &np);
    uint64_t planned = kvg_bench_wl_planned(wl), got = 0;
    double last = -1;
    uint32_t first_round[15];
    struct kvg_bench_req *r;
    while (kvg_bench_wl_pop(wl, &r) == 0) {
        CHECK_INT(r->id, got);
        CHECK(r->arrival >= last && r->arrival < 20);
        last = r->arrival;
        /* Request n uses prompt order[n mod 15]: the shuffle happens once. */
        CHECK_INT(r->prompt, order[r->id % 15]);
        if (r->id < 15)
            first_round[r->id] = r->prompt;
        else
            CHECK_INT(r->prompt, first_round[r->id % 15]);
        CHECK_INT(r->ntokens, 50);
        CHECK(!r->session[0]); /* inference-perf sends no routing key */
        CHECK_INT(r->max_tokens, o.output_len);
        got++;
        CHECK_INT(kvg_bench_wl_done(wl, r, r->arrival + 1, NULL, 0, 1), 0);
    }
    CHECK_INT(got, planned);
    /* Poisson at 50/s for 20 s: 1000 expected, sd ~32. */
    CHECK(got > 850 && got < 1150);
    CHECK(kvg_bench_wl_next(wl) == INFINITY);
    kvg_bench_wl_free(wl);
}

static uint64_t fingerprint(const struct kvg_bench_wl_opts *o)
{
    struct kvg_bench_wl *wl = make(o);
    if (!wl) return 0;
    uint64_t h = 1469598103934665603ull;
    struct kvg_bench_req *r;
    while (kvg_bench_wl_pop(wl, &r) == 0) {
        uint64_t t = (uint64_t)(r->arrival * 1e9);
        h = (h ^ t) * 1099511628211ull;
        for (uint32_t i = 0; i < r->ntokens; i++) h = (h ^ r->tokens[i]) * 1099511628211ull;
        kvg_bench_wl_done(wl, r, r->arrival, NULL, 0, 1);
    }
    kvg_bench_wl_free(wl);
    return h;
}

TEST(deterministic_per_seed)
{
    struct kvg_bench_wl_opts o;
    small(&o);
    uint64_t a = fingerprint(&o), b = fingerprint(&o);
    CHECK(a && a == b);
    o.seed = 2;
    CHECK(fingerprint(&o) != a);
}

TEST(stages_and_warmup)
{
    struct kvg_bench_wl_opts o;
    small(&o);
    o.stage[0] = (struct kvg_bench_stage){.rate = 10, .secs = 5};
    o.stage[1] = (struct kvg_bench_stage){.rate = 100, .secs = 2};
    o.stage[2] = (struct kvg_bench_stage){.rate = 1, .secs = 3};
    o.nstages = 3;
    o.warmup = 1;
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    CHECK_NEAR(kvg_bench_wl_warm_end(wl), 5, 0);
    CHECK_NEAR(kvg_bench_wl_end(wl), 10, 0);
    double st;
    CHECK(kvg_bench_wl_stage(wl, 2, &st) && st == 7);
    uint64_t per[3] = {0};
    struct kvg_bench_req *r;
    while (kvg_bench_wl_pop(wl, &r) == 0) {
        int s = kvg_bench_wl_stage_at(wl, r->arrival);
        CHECK_INT(r->stage, s);
        CHECK_INT(r->warmup, s == 0);
        per[s]++;
        kvg_bench_wl_done(wl, r, r->arrival, NULL, 0, 1);
    }
    CHECK(per[0] > 25 && per[0] < 80);
    CHECK(per[1] > 150 && per[1] < 260);
    CHECK(per[2] < 15);
    kvg_bench_wl_free(wl);
}

TEST(closed_loop_keeps_concurrency)
{
    struct kvg_bench_wl_opts o;
    small(&o);
    o.stage[0] = (struct kvg_bench_stage){.conc = 3, .secs = 10};
    o.nstages = 1;
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    struct kvg_bench_req *r[3], *x;
    for (int i = 0; i < 3; i++) {
        CHECK_INT(kvg_bench_wl_pop(wl, &r[i]), 0);
        CHECK_NEAR(r[i]->arrival, 0, 0);
        CHECK_INT(r[i]->slot_stage, 0);
    }
    /* Nothing more until one ends: the loop is closed. */
    CHECK(kvg_bench_wl_next(wl) == INFINITY);
    CHECK_INT(kvg_bench_wl_pop(wl, &x), KVG_ENOTFOUND);
    CHECK_INT(kvg_bench_wl_done(wl, r[0], 2.5, NULL, 0, 1), 0);
    CHECK_NEAR(kvg_bench_wl_next(wl), 2.5, 0);
    CHECK_INT(kvg_bench_wl_pop(wl, &x), 0);
    CHECK_INT(x->id, 3);
    CHECK_INT(x->prompt, kvg_bench_wl_order(wl, &(uint32_t){0})[3]);
    /* After the stage ends, a finished request is not replaced. */
    kvg_bench_wl_done(wl, r[1], 11, NULL, 0, 1);
    CHECK(kvg_bench_wl_next(wl) == INFINITY);
    kvg_bench_wl_done(wl, r[2], 12, NULL, 0, 0);
    kvg_bench_wl_done(wl, x, 12, NULL, 0, 1);
    CHECK(kvg_bench_wl_next(wl) == INFINITY);
    kvg_bench_wl_free(wl);
}

TEST(chat_sessions_grow)
{
    struct kvg_bench_wl_opts o;
    small(&o);
    o.kind = KVG_BENCH_WL_CHAT;
    o.turns = 3;
    o.user_len = 7;
    o.chat_groups = 2;
    o.chat_system_len = 20;
    o.think_s = 0.5;
    o.output_len = 5;
    o.stage[0] = (struct kvg_bench_stage){.conc = 1, .secs = 100};
    o.nstages = 1;
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    CHECK(kvg_bench_wl_wants_output(wl));
    struct kvg_bench_req *r;
    CHECK_INT(kvg_bench_wl_pop(wl, &r), 0);
    CHECK_INT(r->ntokens, 27);
    CHECK_INT(r->prompt, 0);
    CHECK(r->session[0]);
    char sess[24];
    snprintf(sess, sizeof sess, "%s", r->session);
    uint32_t prev[64];
    memcpy(prev, r->tokens, r->ntokens * sizeof *prev);
    uint32_t prevn = r->ntokens;
    const uint32_t out[5] = {100, 101, 102, 103, 104};
    CHECK_INT(kvg_bench_wl_done(wl, r, 3, out, 5, 1), 0);
    double t = kvg_bench_wl_next(wl);
    CHECK(t > 3 && t < 100); /* after a think time */
    CHECK_INT(kvg_bench_wl_pop(wl, &r), 0);
    /* Turn 2 = turn 1 + its answer + a new message, same session. */
    CHECK_INT(r->ntokens, prevn + 5 + 7);
    CHECK(!memcmp(r->tokens, prev, prevn * sizeof *prev));
    CHECK(!memcmp(r->tokens + prevn, out, sizeof out));
    CHECK_STR(r->session, sess);
    CHECK_INT(r->prompt, 1);
    kvg_bench_wl_done(wl, r, t + 1, out, 5, 1);
    CHECK_INT(kvg_bench_wl_pop(wl, &r), 0);
    CHECK_INT(r->prompt, 2);
    /* The last turn ends the session; its slot starts a new one at once. */
    kvg_bench_wl_done(wl, r, 50, out, 5, 1);
    CHECK_NEAR(kvg_bench_wl_next(wl), 50, 0);
    CHECK_INT(kvg_bench_wl_pop(wl, &r), 0);
    CHECK_INT(r->prompt, 0);
    CHECK(strcmp(r->session, sess));
    kvg_bench_wl_done(wl, r, 60, NULL, 0, 0); /* an error ends the session too */
    CHECK_INT(kvg_bench_wl_pop(wl, &r), 0);
    CHECK_INT(r->prompt, 0);
    kvg_bench_wl_done(wl, r, 200, NULL, 0, 1); /* past the end: nothing follows */
    CHECK(kvg_bench_wl_next(wl) == INFINITY);
    kvg_bench_wl_free(wl);
}

TEST(printable_text_is_the_ids)
{
    struct kvg_bench_wl_opts o;
    small(&o);
    o.printable = 1;
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    struct kvg_bench_req *r;
    CHECK_INT(kvg_bench_wl_pop(wl, &r), 0);
    /* prefix + ' ' + question, as inference-perf joins the texts */
    CHECK_INT(r->ntokens, 51);
    CHECK_INT(r->text_len, 51);
    CHECK_INT(r->tokens[40], ' ');
    for (uint32_t i = 0; i < r->ntokens; i++) {
        CHECK(r->tokens[i] >= 32 && r->tokens[i] <= 126);
        CHECK_INT((unsigned char)r->text[i], r->tokens[i]);
    }
    kvg_bench_wl_done(wl, r, 1, NULL, 0, 1);
    kvg_bench_wl_free(wl);
    /* Rendered text: four characters per id, distinct ids differ. */
    char a[4], b[4];
    kvg_bench_render_id(151935, a);
    kvg_bench_render_id(151934, b);
    CHECK(memcmp(a, b, 4));
    CHECK_INT(a[3], ' ');
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

TEST(trace_replay)
{
    char path[] = "/tmp/kvg-bench-trace-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    write_file(
        path,
        "{\"timestamp\": 12.5, \"input_length\": 100, \"output_length\": 7, \"hash_ids\": [4, 9]}\n"
        "\n"
        "{\"timestamp\": 10.0, \"input_length\": 80, \"output_length\": 3, \"hash_ids\": [4], "
        "\"session_id\": \"alice\"}\n"
        "{\"timestamp\": 11, \"text\": \"hello world\", \"session_id\": 42}\n"
        "{\"timestamp\": 11, \"input_length\": 30, \"prefix_id\": \"sys\", \"prefix_length\": 20, "
        "\"extra\": true}\n"
        "{\"timestamp\": 13, \"input_length\": 25, \"prefix_id\": \"sys\", \"prefix_length\": "
        "20}\n");
    struct kvg_bench_wl_opts o;
    small(&o);
    o.kind = KVG_BENCH_WL_TRACE;
    snprintf(o.trace_path, sizeof o.trace_path, "%s", path);
    o.trace_block = 32;
    o.output_len = 11;
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    CHECK_INT(kvg_bench_wl_nstages(wl), 1);
    struct kvg_bench_req *r[5];
    for (int i = 0; i < 5; i++) CHECK_INT(kvg_bench_wl_pop(wl, &r[i]), 0);
    /* Sorted by time (stable), shifted to start at 0. */
    CHECK_NEAR(r[0]->arrival, 0, 1e-12);
    CHECK_STR(r[0]->session, "alice");
    CHECK_INT(r[0]->ntokens, 80);
    CHECK_INT(r[0]->max_tokens, 3);
    CHECK_NEAR(r[1]->arrival, 1, 1e-12);
    CHECK_INT(r[1]->ntokens, 11); /* the text's bytes */
    CHECK_INT(r[1]->tokens[0], 'h');
    CHECK_STR(r[1]->session, "42");
    CHECK_INT(r[1]->max_tokens, 11); /* no output_length: the default */
    CHECK_INT(r[2]->ntokens, 30);
    CHECK_NEAR(r[3]->arrival, 2.5, 1e-12);
    CHECK_INT(r[3]->ntokens, 100);
    /* hash_ids: block 4 (32 tokens) is shared; what follows is not. */
    CHECK(!memcmp(r[0]->tokens, r[3]->tokens, 32 * sizeof(uint32_t)));
    CHECK(memcmp(r[0]->tokens + 32, r[3]->tokens + 32, 32 * sizeof(uint32_t)));
    /* prefix_id: the first 20 tokens are shared. */
    CHECK_INT(r[4]->ntokens, 25);
    CHECK(!memcmp(r[2]->tokens, r[4]->tokens, 20 * sizeof(uint32_t)));
    CHECK(memcmp(r[2]->tokens + 20, r[4]->tokens + 20, 5 * sizeof(uint32_t)));
    for (int i = 0; i < 5; i++) kvg_bench_wl_done(wl, r[i], 20, NULL, 0, 1);
    CHECK(kvg_bench_wl_next(wl) == INFINITY);
    kvg_bench_wl_free(wl);

    /* A malformed line names itself. */
    write_file(path, "{\"timestamp\": 1, \"input_length\": 5}\n{\"timestamp\": 2}\n");
    char err[256] = "";
    struct kvg_bench_wl *bad = NULL;
    CHECK_INT(kvg_bench_wl_new(&o, &bad, err, sizeof err), KVG_EPARSE);
    CHECK(strstr(err, ":2:"));
    write_file(path, "not json\n");
    CHECK_INT(kvg_bench_wl_new(&o, &bad, err, sizeof err), KVG_EPARSE);
    unlink(path);
    CHECK(kvg_bench_wl_new(&o, &bad, err, sizeof err) < 0); /* missing file */
}

TEST(bad_options_rejected)
{
    struct kvg_bench_wl_opts o;
    struct kvg_bench_wl *wl = NULL;
    char err[256];
    small(&o);
    o.groups = 0;
    CHECK_INT(kvg_bench_wl_new(&o, &wl, err, sizeof err), KVG_ECONFIG);
    small(&o);
    o.stage[0] = (struct kvg_bench_stage){.rate = 1, .conc = 2, .secs = 5};
    CHECK_INT(kvg_bench_wl_new(&o, &wl, err, sizeof err), KVG_ECONFIG);
    small(&o);
    o.warmup = 1; /* every stage a warm-up: nothing measured */
    CHECK_INT(kvg_bench_wl_new(&o, &wl, err, sizeof err), KVG_ECONFIG);
    small(&o);
    o.output_len = 0;
    CHECK_INT(kvg_bench_wl_new(&o, &wl, err, sizeof err), KVG_ECONFIG);
    CHECK(!wl);
}

/* Multi-LoRA and salted chat: every request names its session's adapter or
 * salt, the same one turn after turn, and hot adapters carry their share. */
TEST(lora_and_salt_sessions)
{
    struct kvg_bench_wl_opts o;
    kvg_bench_wl_opts_default(&o);
    o.kind = KVG_BENCH_WL_CHAT;
    o.turns = 2;
    o.user_len = 4;
    o.chat_groups = 10;
    o.chat_system_len = 16;
    o.think_s = 0;
    o.output_len = 2;
    o.lora_adapters = 10;
    o.lora_hot = 2;
    o.lora_hot_frac = 0.8;
    o.stage[0] = (struct kvg_bench_stage){.rate = 200, .secs = 5};
    o.nstages = 1;
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    struct kvg_bench_req *r;
    int n = 0, hot = 0, bad = 0, changed = 0;
    static char by_session[4096][24]; /* each session's adapter, by its key */
    memset(by_session, 0, sizeof by_session);
    while (kvg_bench_wl_pop(wl, &r) == 0) {
        int id = -1;
        unsigned key = 0;
        if (sscanf(r->lora, "lora-%d", &id) != 1 || id < 0 || id >= 10 || r->lora_id != id + 1 ||
            r->salt[0] || sscanf(r->session, "s%u", &key) != 1 || key >= 4096)
            bad++;
        else if (r->prompt == 0)
            snprintf(by_session[key], sizeof by_session[0], "%s", r->lora);
        else
            changed += strcmp(by_session[key], r->lora) != 0;
        if (r->prompt == 0) {
            n++;
            hot += id < 2;
        }
        const uint32_t out[2] = {1, 2};
        CHECK_INT(kvg_bench_wl_done(wl, r, r->arrival, out, 2, 1), 0);
    }
    CHECK_INT(changed, 0);
    CHECK_INT(bad, 0);
    CHECK(n > 500);
    CHECK(hot > n * 7 / 10 && hot < n * 9 / 10);
    kvg_bench_wl_free(wl);

    o.lora_adapters = o.lora_hot = 0;
    o.salt_tenants = 5;
    wl = make(&o);
    CHECK(wl);
    bad = 0;
    while (kvg_bench_wl_pop(wl, &r) == 0) {
        int t = -1;
        if (sscanf(r->salt, "tenant-%d", &t) != 1 || t < 0 || t >= 5 || r->lora[0]) bad++;
        const uint32_t out[2] = {1, 2};
        CHECK_INT(kvg_bench_wl_done(wl, r, r->arrival, out, 2, 1), 0);
    }
    CHECK_INT(bad, 0);
    kvg_bench_wl_free(wl);
    /* Only chat has sessions to put adapters on. */
    o.kind = KVG_BENCH_WL_SHARED_PREFIX;
    char err[256];
    CHECK(kvg_bench_wl_new(&o, &wl, err, sizeof err) == KVG_ECONFIG);
}
