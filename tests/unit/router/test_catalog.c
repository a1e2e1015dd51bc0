/* The model catalog (router/catalog.h) from entries built by hand: names
 * and aliases, a 90/10 split whose share over many session keys stays
 * within binomial bounds and whose sides keep their keys, fallback chains,
 * and resolution from several threads at once. The YAML side and every
 * hostile config are tests/unit/serve/test_config_models.c's. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "router/catalog.h"
#include "support/test.h"

#define MAXE 8

struct fixture {
    struct kvg_catalog_spec s[MAXE];
    struct kvg_catalog_worker w[MAXE];
    struct kvg_catalog_share sh[MAXE][4];
    size_t n;
    struct kvg_policy_opts opts;
    struct kvg_catalog_top top;
};

static struct fixture *fixture_new(void)
{
    struct fixture *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    kvg_policy_opts_default(&f->opts);
    f->top = (struct kvg_catalog_top){.file = "t.yaml",
                                      .tokenizer = "builtin:bytes",
                                      .policy = "round_robin",
                                      .block_size = 16,
                                      .policy_opts = &f->opts};
    return f;
}

static void fixture_free(struct fixture *f)
{
    for (size_t i = 0; i < f->n; i++) {
        kvg_strlist_free(&f->s[i].aliases);
        kvg_strlist_free(&f->s[i].fallbacks);
    }
    free(f);
}

static struct kvg_catalog_spec *entry(struct fixture *f, const char *name)
{
    CHECK(f->n < MAXE);
    struct kvg_catalog_spec *s = &f->s[f->n];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->line = (int)(10 * (f->n + 1));
    f->n++;
    return s;
}

/* A served model with one worker (http://w<index>:8000). */
static struct kvg_catalog_spec *model(struct fixture *f, const char *name)
{
    struct kvg_catalog_spec *s = entry(f, name);
    size_t i = f->n - 1;
    snprintf(f->w[i].url, sizeof f->w[i].url, "http://w%zu:8000", i);
    f->w[i].line = s->line + 1;
    s->workers = &f->w[i];
    s->nworkers = 1;
    return s;
}

/* A split over up to four models: name, weight pairs, NULL-ended. */
static struct kvg_catalog_spec *split(struct fixture *f, const char *name, const char *a, double wa,
                                      const char *b, double wb)
{
    struct kvg_catalog_spec *s = entry(f, name);
    struct kvg_catalog_share *sh = f->sh[f->n - 1];
    snprintf(sh[0].model, sizeof sh[0].model, "%s", a);
    sh[0].weight = wa;
    snprintf(sh[1].model, sizeof sh[1].model, "%s", b);
    sh[1].weight = wb;
    s->split = sh;
    s->nsplit = 2;
    return s;
}

static struct kvg_catalog *build(struct fixture *f)
{
    struct kvg_catalog *c = NULL;
    char err[512] = "";
    int rc = kvg_catalog_build(f->s, f->n, &f->top, &c, err, sizeof err);
    if (rc) printf("# %s\n", err);
    CHECK_INT(rc, 0);
    return c;
}

static int pick(const struct kvg_catalog *c, const char *name, const char *key, double r)
{
    struct kvg_catalog_pick p;
    kvg_catalog_resolve(c, name, strlen(name), key, key ? strlen(key) : 0, r, &p);
    return p.model;
}

TEST(names_and_aliases_resolve_exactly)
{
    struct fixture *f = fixture_new();
    struct kvg_catalog_spec *q = model(f, "qwen3-32b");
    CHECK_INT(kvg_strlist_add(&q->aliases, "gpt-4o"), 0);
    model(f, "llama-70b");
    snprintf(entry(f, "gpt-4")->alias_of, KVG_CATALOG_NAME_MAX, "gpt-4o"); /* an alias's alias */
    struct kvg_catalog *c = build(f);
    CHECK_INT(c->nmodels, 2);
    CHECK_INT(c->nnames, 4);
    CHECK_INT(pick(c, "qwen3-32b", NULL, 0), 0);
    CHECK_INT(pick(c, "gpt-4o", NULL, 0), 0);
    CHECK_INT(pick(c, "gpt-4", NULL, 0), 0);
    CHECK_INT(pick(c, "llama-70b", NULL, 0), 1);
    /* Exact bytes only: no prefix, no case folding, no NUL tricks. */
    CHECK_INT(pick(c, "qwen3", NULL, 0), -1);
    CHECK_INT(pick(c, "QWEN3-32B", NULL, 0), -1);
    CHECK_INT(pick(c, "", NULL, 0), -1);
    struct kvg_catalog_pick p;
    kvg_catalog_resolve(c, "gpt-4o\0x", 8, NULL, 0, 0, &p);
    CHECK_INT(p.model, -1);
    CHECK_INT(p.name, -1);
    kvg_catalog_resolve(c, NULL, 0, NULL, 0, 0, &p);
    CHECK_INT(p.model, -1);
    kvg_catalog_resolve(c, "gpt-4", 5, NULL, 0, 0, &p);
    CHECK_STR(c->names[p.name].name, "gpt-4");
    CHECK_INT(c->names[p.name].kind, KVG_CATALOG_ALIAS);
    CHECK_STR(c->names[p.name].where, "t.yaml:30");
    CHECK_INT(p.split, -1);
    /* The models take the top level's settings. */
    CHECK_STR(c->models[1].policy, "round_robin");
    CHECK_INT(c->models[1].policy_opts.block_size, 16);
    CHECK_STR(c->models[0].where, "t.yaml:10");
    kvg_catalog_ref(c);
    kvg_catalog_unref(c);
    CHECK_INT(pick(c, "gpt-4o", NULL, 0), 0); /* still held once */
    kvg_catalog_unref(c);
    fixture_free(f);
}

/* How many of n keys "session-<i>" the split sends to model m. */
static int share_of(const struct kvg_catalog *c, const char *name, int m, int n)
{
    int hits = 0;
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "session-%d", i);
        hits += pick(c, name, key, 0) == m;
    }
    return hits;
}

TEST(split_share_within_binomial_bounds_and_sticky)
{
    struct fixture *f = fixture_new();
    model(f, "qwen3-v1");
    model(f, "qwen3-v2");
    split(f, "qwen3", "qwen3-v1", 90, "qwen3-v2", 10);
    struct kvg_catalog *c = build(f);
    const int n = 10000;
    /* 10,000 distinct keys at p = 0.1: mean 1000, sigma 30; 4 sigma. */
    int v2 = share_of(c, "qwen3", 1, n);
    CHECK(abs(v2 - 1000) <= 120);
    CHECK_INT(share_of(c, "qwen3", 0, n) + v2, n);
    /* Sticky: the same key, asked again or of a catalog built anew (a
     * reload, another replica), lands on the same side. */
    struct kvg_catalog *again = build(f);
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "session-%d", i);
        int m = pick(c, "qwen3", key, 0);
        CHECK_INT(pick(c, "qwen3", key, 0.99), m); /* r is for requests without a key */
        CHECK_INT(pick(again, "qwen3", key, 0), m);
    }
    /* The canary grows to 20%: every key it had stays with it. */
    f->sh[2][0].weight = 80;
    f->sh[2][1].weight = 20;
    struct kvg_catalog *grown = build(f);
    int kept = 0, now = 0;
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "session-%d", i);
        int before = pick(c, "qwen3", key, 0), after = pick(grown, "qwen3", key, 0);
        kept += before == 1 && after == 1;
        now += after == 1;
    }
    CHECK_INT(kept, v2);
    CHECK(abs(now - 2000) <= 160); /* p = 0.2: sigma 40 */
    /* Without a key, the draw r decides: uniform draws follow the weights. */
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 7);
    int drawn = 0;
    for (int i = 0; i < n; i++) drawn += pick(c, "qwen3", NULL, kvg_rng_double(&rng)) == 1;
    CHECK(abs(drawn - 1000) <= 120);
    struct kvg_catalog_pick p;
    kvg_catalog_resolve(c, "qwen3", 5, NULL, 0, 0.95, &p);
    CHECK_INT(p.model, 1);
    CHECK_INT(p.sticky, 0);
    CHECK_INT(p.split, 0);
    CHECK_INT(pick(c, "qwen3", NULL, 0.5), 0);
    CHECK_INT(pick(c, "qwen3", NULL, 1.5), 0); /* out of [0, 1): the first side */
    CHECK_INT(pick(c, "qwen3", NULL, NAN), 0);
    kvg_catalog_unref(c);
    kvg_catalog_unref(again);
    kvg_catalog_unref(grown);
    fixture_free(f);
}

TEST(splits_pick_apart_and_zero_weights_get_nothing)
{
    struct fixture *f = fixture_new();
    model(f, "a");
    model(f, "b");
    split(f, "s1", "a", 50, "b", 50);
    split(f, "s2", "a", 50, "b", 50);
    split(f, "all-a", "a", 100, "b", 0);
    struct kvg_catalog *c = build(f);
    int same = 0, n = 10000;
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        same += pick(c, "s1", key, 0) == pick(c, "s2", key, 0);
        CHECK_INT(pick(c, "all-a", key, 0), 0);
    }
    /* Two 50/50 splits hash each key with their own seed: they agree on
     * about half the keys (sigma 50), not on all of them. */
    CHECK(abs(same - 5000) <= 200);
    CHECK_INT(pick(c, "all-a", NULL, 0.999999), 0);
    kvg_catalog_unref(c);
    fixture_free(f);
}

TEST(fallback_chains_breadth_first)
{
    struct fixture *f = fixture_new();
    struct kvg_catalog_spec *a = model(f, "a"), *b = model(f, "b");
    model(f, "c");
    model(f, "d");
    CHECK_INT(kvg_strlist_add(&a->fallbacks, "b"), 0);
    CHECK_INT(kvg_strlist_add(&a->fallbacks, "c"), 0);
    CHECK_INT(kvg_strlist_add(&b->fallbacks, "d"), 0);
    CHECK_INT(kvg_strlist_add(&b->fallbacks, "c"), 0);
    struct kvg_catalog *c = build(f);
    /* a: its own in order (b, c), then b's (d; c is there already). */
    CHECK_INT(c->models[0].nfallbacks, 3);
    CHECK_INT(c->models[0].fallbacks[0], 1);
    CHECK_INT(c->models[0].fallbacks[1], 2);
    CHECK_INT(c->models[0].fallbacks[2], 3);
    CHECK_INT(c->models[1].nfallbacks, 2);
    CHECK_INT(c->models[1].fallbacks[0], 3);
    CHECK_INT(c->models[3].nfallbacks, 0);
    CHECK(c->models[3].fallbacks == NULL);
    kvg_catalog_unref(c);
    /* d -> a closes a loop through b: refused at the loop's first entry. */
    CHECK_INT(kvg_strlist_add(&f->s[3].fallbacks, "a"), 0);
    char err[512];
    CHECK_INT(kvg_catalog_build(f->s, f->n, &f->top, &c, err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:10: models[0] 'a': fallbacks loop: a -> b -> d -> a");
    CHECK(c == NULL);
    fixture_free(f);
}

TEST(entry_settings_over_the_top_levels)
{
    struct fixture *f = fixture_new();
    f->opts.temperature = 0.5;
    f->opts.affinity_min_match = 0.7;
    f->top.chat_template = "/top.jinja";
    struct kvg_catalog_spec *a = model(f, "a");
    snprintf(a->policy, sizeof a->policy, "kv_aware");
    a->block_size = 64;
    kvg_policy_opts_default(&a->policy_opts);
    a->policy_opts.temperature = 0.1;
    a->policy_opts.affinity_min_match = 0.9; /* not marked as given: the top level's wins */
    for (size_t k = 0; kvg_policy_opt_table[k].name; k++)
        if (kvg_policy_opt_table[k].off == offsetof(struct kvg_policy_opts, temperature))
            a->policy_set |= 1ull << k;
    snprintf(a->tokenizer_config, sizeof a->tokenizer_config, "/a/tokenizer_config.json");
    struct kvg_catalog *c = build(f);
    const struct kvg_catalog_model *m = &c->models[0];
    CHECK_STR(m->policy, "kv_aware");
    CHECK_NEAR(m->policy_opts.temperature, 0.1, 0);
    CHECK_NEAR(m->policy_opts.affinity_min_match, 0.7, 0);
    CHECK_INT(m->block_size, 64);
    CHECK_INT(m->policy_opts.block_size, 64);
    CHECK_STR(m->tokenizer, "builtin:bytes"); /* no tokenizer of its own: the top level's... */
    CHECK_STR(m->tokenizer_config, "/a/tokenizer_config.json"); /* ...but its own config */
    CHECK_STR(m->chat_template, "/top.jinja");
    kvg_catalog_unref(c);
    fixture_free(f);
}

/* An entry whose workers the host starts (its local autoscaler) lists
 * none: named by its name or an alias in top.scaled, it is a model whose
 * workers join by label; any other such entry is still refused. */
TEST(scaled_models_list_no_workers)
{
    struct fixture *f = fixture_new();
    model(f, "a");
    struct kvg_catalog_spec *b = entry(f, "b");
    CHECK_INT(kvg_strlist_add(&b->aliases, "b-alias"), 0);
    snprintf(b->policy, sizeof b->policy, "least_load"); /* a model's setting: allowed */
    entry(f, "c");
    char *scaled[] = {"b-alias"};
    f->top.scaled = scaled;
    f->top.nscaled = 1;
    struct kvg_catalog *c = NULL;
    char err[512] = "";
    CHECK_INT(kvg_catalog_build(f->s, f->n, &f->top, &c, err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "t.yaml:30: models[2] 'c': no workers") != NULL);
    f->n = 2; /* without c */
    c = build(f);
    CHECK_INT(c->nmodels, 2);
    CHECK_INT(pick(c, "b-alias", NULL, 0), 1);
    CHECK_STR(c->models[1].policy, "least_load");
    CHECK_INT(c->models[1].nworkers, 0);
    CHECK_INT(kvg_catalog_worker_model(c, "http://127.0.0.1:9000", "b"), 1); /* by its label */
    CHECK_INT(kvg_catalog_worker_model(c, "http://127.0.0.1:9000", ""), -1);
    CHECK_INT(kvg_catalog_worker_model(c, "http://w0:8000", ""), 0);
    kvg_catalog_unref(c);
    f->n = 3;
    fixture_free(f);
}

struct reader {
    const struct kvg_catalog *c;
    int want[2000];
    int bad;
};

static void *read_many(void *arg)
{
    struct reader *r = arg;
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < 2000; i++) {
            char key[32];
            snprintf(key, sizeof key, "user-%d", i);
            if (pick(r->c, "s", key, 0) != r->want[i]) r->bad++;
        }
    return NULL;
}

TEST(resolution_from_many_threads)
{
    struct fixture *f = fixture_new();
    model(f, "a");
    model(f, "b");
    split(f, "s", "a", 30, "b", 70);
    struct kvg_catalog *c = build(f);
    struct reader r[4];
    pthread_t t[4];
    for (int k = 0; k < 4; k++) {
        r[k].c = c;
        r[k].bad = 0;
        for (int i = 0; i < 2000; i++) {
            char key[32];
            snprintf(key, sizeof key, "user-%d", i);
            r[k].want[i] = pick(c, "s", key, 0);
        }
    }
    for (int k = 0; k < 4; k++) CHECK_INT(pthread_create(&t[k], NULL, read_many, &r[k]), 0);
    for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < 4; k++) CHECK_INT(r[k].bad, 0);
    kvg_catalog_unref(c);
    fixture_free(f);
}

static int hosts_freed;
static void count_free(void *host)
{
    (void)host;
    hosts_freed++;
}

/* A reload's swap: a reader's catalog (and its models' host state) lives
 * until the reader drops it, whatever was swapped in meanwhile. */
TEST(holder_keeps_a_readers_catalog_past_a_swap)
{
    struct fixture *f = fixture_new();
    model(f, "a");
    model(f, "b");
    struct kvg_catalog *c1 = build(f), *c2 = build(f);
    static int slot[2];
    hosts_freed = 0;
    c1->host_free = count_free;
    c1->models[0].host = &slot[0];
    c1->models[1].host = &slot[1];
    struct kvg_catalog_holder h;
    kvg_catalog_holder_init(&h, c1);
    struct kvg_catalog *mine = kvg_catalog_acquire(&h);
    CHECK(mine == c1);
    kvg_catalog_swap(&h, c2);
    CHECK_INT(hosts_freed, 0); /* still read */
    CHECK_INT(pick(mine, "b", NULL, 0), 1);
    struct kvg_catalog *now = kvg_catalog_acquire(&h);
    CHECK(now == c2);
    kvg_catalog_unref(mine);
    CHECK_INT(hosts_freed, 2); /* the last reader gone: each model's state */
    kvg_catalog_unref(now);
    kvg_catalog_holder_destroy(&h);
    fixture_free(f);
}
