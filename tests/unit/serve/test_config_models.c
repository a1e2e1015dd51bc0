/* kvgate serve's models: section (serve/config_models.c) as an operator
 * meets it: a YAML file read through serve's own loader (the command line's
 * and SIGHUP's), its catalog (router/catalog.h), and every hostile version
 * refused with the file:line of the offending entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "cmd/cmd.h"
#include "router/catalog.h"
#include "serve/config.h"
#include "support/test.h"

/* Writes text to a fresh file (path, 64 bytes); the caller unlinks it. */
static void write_tmp(char *path, size_t cap, const char *text)
{
    snprintf(path, cap, "/tmp/kvg-test-models-XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* `kvgate serve --config FILE [more...]` into a fresh *c: what the
 * command line does (the file, the flags, the checks). The caller frees
 * *c with free_cfg. */
static int serve_parse(const char *text, char *path, struct kvg_serve_config **c, char *err,
                       size_t errlen, int argc_more, char **more)
{
    write_tmp(path, 64, text);
    *c = calloc(1, sizeof **c);
    CHECK(*c != NULL);
    kvg_serve_config_default(*c);
    char *argv[16] = {"serve", "--config", path};
    int argc = 3;
    for (int i = 0; i < argc_more && argc < 16; i++) argv[argc++] = more[i];
    err[0] = 0;
    return kvg_cmd_serve_parse(*c, argc, argv, err, errlen);
}

static void free_cfg(struct kvg_serve_config *c, const char *path)
{
    kvg_serve_config_free(c);
    free(c);
    unlink(path);
}

/* The example, with a fallback chain and the top level's policy
 * options taken where a model gives none of its own. */
static const char *three_models = "router_temperature: 0.5\n"
                                  "block_size: 32\n"
                                  "models:\n"
                                  "  - name: qwen3-32b\n"
                                  "    aliases: [gpt-4o]\n"
                                  "    policy: kv_aware\n"
                                  "    router_temperature: 0.1\n"
                                  "    block_size: 64\n"
                                  "    fallbacks: [qwen3-v1]\n"
                                  "    workers:\n"
                                  "      - url: http://127.0.0.1:8001\n"
                                  "        kv_events_endpoint: tcp://127.0.0.1:5557\n"
                                  "  - name: qwen3-v1\n"
                                  "    workers: [{url: http://127.0.0.1:8002, labels: zone=a}]\n"
                                  "  - name: qwen3-v2\n"
                                  "    workers: [http://127.0.0.1:8003]\n"
                                  "  - name: qwen3\n"
                                  "    split: {qwen3-v1: 90, qwen3-v2: 10}\n"
                                  "  - name: llama-70b\n"
                                  "    fallbacks: [gpt-4o]\n"
                                  "    max_model_len: 8192\n"
                                  "    workers: [{url: http://127.0.0.1:8004/}]\n";

TEST(three_models_alias_split_fallbacks)
{
    char path[64], err[512];
    struct kvg_serve_config *c;
    CHECK_INT(serve_parse(three_models, path, &c, err, sizeof err, 0, NULL), 0);
    CHECK_STR(err, "");
    CHECK_INT(c->nmodels, 5);
    /* Every model's workers joined serve's lists, their endpoints parallel. */
    CHECK_INT(c->workers.n, 4);
    CHECK_STR(c->workers.v[2], "http://127.0.0.1:8003");
    CHECK_INT(c->kv_endpoints.n, 4);
    CHECK_STR(c->kv_endpoints.v[0], "tcp://127.0.0.1:5557");
    CHECK_STR(c->kv_endpoints.v[1], "none");
    CHECK_INT(c->worker_labels.n, 4);
    CHECK_STR(c->worker_labels.v[1], "zone=a");
    CHECK_INT(c->replay_endpoints.n, 0); /* no worker gives one */
    /* A second check folds nothing twice. */
    CHECK_INT(kvg_serve_config_check(c, err, sizeof err), 0);
    CHECK_INT(c->workers.n, 4);

    struct kvg_catalog *cat;
    CHECK_INT(kvg_serve_models_catalog(c, path, &cat, err, sizeof err), 0);
    CHECK_INT(cat->nmodels, 4);
    CHECK_INT(cat->nsplits, 1);
    CHECK_INT(cat->nnames, 6);
    CHECK_INT(cat->any, -1);
    const struct kvg_catalog_model *q = &cat->models[0], *v1 = &cat->models[1],
                                   *llama = &cat->models[3];
    CHECK_STR(q->name, "qwen3-32b");
    CHECK_STR(q->policy, "kv_aware");
    CHECK_NEAR(q->policy_opts.temperature, 0.1, 0);
    CHECK_INT(q->block_size, 64);
    CHECK_INT(q->policy_opts.block_size, 64);
    CHECK_STR(v1->policy, "prefix_affinity"); /* the top level's */
    CHECK_NEAR(v1->policy_opts.temperature, 0.5, 0);
    CHECK_INT(v1->block_size, 32);
    CHECK_INT(llama->max_model_len, 8192);
    char where[96];
    snprintf(where, sizeof where, "%s:19", path);
    CHECK_STR(llama->where, where);
    CHECK_STR(q->workers[0].kv_events_endpoint, "tcp://127.0.0.1:5557");

    struct kvg_catalog_pick p;
    kvg_catalog_resolve(cat, "gpt-4o", 6, NULL, 0, 0.5, &p);
    CHECK_INT(p.model, 0);
    CHECK_INT(cat->names[p.name].kind, KVG_CATALOG_ALIAS);
    kvg_catalog_resolve(cat, "qwen3", 5, "session-1", 9, 0, &p);
    CHECK(p.model == 1 || p.model == 2);
    CHECK_INT(p.split, 0);
    CHECK_INT(p.sticky, 1);
    kvg_catalog_resolve(cat, "qwen3-v3", 8, NULL, 0, 0, &p);
    CHECK_INT(p.model, -1);
    /* llama -> qwen3-32b (through its alias) -> qwen3-v1. */
    CHECK_INT(llama->nfallbacks, 2);
    CHECK_INT(llama->fallbacks[0], 0);
    CHECK_INT(llama->fallbacks[1], 1);
    CHECK_INT(q->nfallbacks, 1);
    CHECK_INT(v1->nfallbacks, 0);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://127.0.0.1:8004", NULL), 3);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://127.0.0.1:8003/", NULL), 2);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://127.0.0.1:9999", NULL), -1);
    kvg_catalog_unref(cat);

    /* SIGHUP's loader reads the same file to the same workers. */
    struct kvg_serve_config *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    CHECK_INT(kvg_serve_config_load_file(path, f, err, sizeof err), 0);
    CHECK_INT(f->workers.n, 4);
    CHECK_STR(f->workers.v[3], "http://127.0.0.1:8004/");
    kvg_serve_config_free(f);
    free(f);
    free_cfg(c, path);
}

/* A model's own SLO targets, else the top level's (--slo-ttft-secs and
 * --slo-itl-secs); none at all: 0, not judged. */
TEST(models_own_slo_targets)
{
    char path[64], err[512];
    struct kvg_serve_config *c;
    const char *yaml = "slo_ttft_secs: 1\n"
                       "slo_itl_secs: 0.05\n"
                       "models:\n"
                       "  - name: small\n"
                       "    slo_ttft_secs: 0.25\n"
                       "    slo_itl_secs: 0.02\n"
                       "    workers: [http://127.0.0.1:8001]\n"
                       "  - {name: big, workers: [http://127.0.0.1:8002]}\n";
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 0, NULL), 0);
    struct kvg_catalog *cat;
    CHECK_INT(kvg_serve_models_catalog(c, path, &cat, err, sizeof err), 0);
    CHECK_NEAR(cat->models[0].slo_ttft_s, 0.25, 0);
    CHECK_NEAR(cat->models[0].slo_itl_s, 0.02, 0);
    CHECK_NEAR(cat->models[1].slo_ttft_s, 1, 0); /* the gateway's */
    CHECK_NEAR(cat->models[1].slo_itl_s, 0.05, 0);
    kvg_catalog_unref(cat);
    c->slo_ttft_s = c->slo_itl_s = 0; /* no gateway targets: big is not judged */
    CHECK_INT(kvg_serve_models_catalog(c, path, &cat, err, sizeof err), 0);
    CHECK_NEAR(cat->models[0].slo_ttft_s, 0.25, 0);
    CHECK_NEAR(cat->models[1].slo_ttft_s, 0, 0);
    CHECK_NEAR(cat->models[1].slo_itl_s, 0, 0);
    kvg_catalog_unref(cat);
    free_cfg(c, path);
}

TEST(single_model_flags_are_one_model_of_any_name)
{
    char path[64], err[512];
    struct kvg_serve_config *c;
    char *more[] = {"--worker-urls", "http://127.0.0.1:8001", "http://127.0.0.1:8002", "--policy",
                    "round_robin"};
    CHECK_INT(serve_parse("block_size: 8\n", path, &c, err, sizeof err, 5, more), 0);
    struct kvg_catalog *cat;
    CHECK_INT(kvg_serve_models_catalog(c, path, &cat, err, sizeof err), 0);
    CHECK_INT(cat->nmodels, 1);
    CHECK_INT(cat->any, 0);
    CHECK_INT(cat->nnames, 0);
    CHECK_STR(cat->models[0].name, "");
    CHECK_STR(cat->models[0].policy, "round_robin");
    CHECK_INT(cat->models[0].block_size, 8);
    CHECK_INT(cat->models[0].nworkers, 2);
    CHECK_STR(cat->models[0].workers[1].url, "http://127.0.0.1:8002");
    struct kvg_catalog_pick p;
    kvg_catalog_resolve(cat, "whatever/model", 14, NULL, 0, 0, &p);
    CHECK_INT(p.model, 0);
    CHECK_INT(p.name, -1);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://elsewhere:1", NULL), 0);
    kvg_catalog_unref(cat);
    free_cfg(c, path);
}

TEST(tokenizer_directory_and_its_group)
{
    char dir[] = "/tmp/kvg-test-modeldir-XXXXXX", file[128], path[64], err[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    fclose(f);
    snprintf(file, sizeof file, "%s/tokenizer_config.json", dir);
    CHECK((f = fopen(file, "w")) != NULL);
    fclose(f);
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "tokenizer: /top/tokenizer.json\n"
             "chat_template: /top/t.jinja\n"
             "models:\n"
             "  - name: a\n"
             "    tokenizer: %s\n"
             "    workers: [http://127.0.0.1:8001]\n"
             "  - name: b\n"
             "    workers: [http://127.0.0.1:8002]\n"
             "  - name: c\n"
             "    tokenizer: %s\n"
             "    workers: [http://127.0.0.1:8003]\n",
             dir, "/nowhere");
    struct kvg_serve_config *c;
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 0, NULL), 0);
    struct kvg_catalog *cat;
    CHECK_INT(kvg_serve_models_catalog(c, path, &cat, err, sizeof err), 0);
    char want[400];
    snprintf(want, sizeof want, "%s/tokenizer.json", dir);
    CHECK_STR(cat->models[0].tokenizer, want);
    snprintf(want, sizeof want, "%s/tokenizer_config.json", dir);
    CHECK_STR(cat->models[0].tokenizer_config, want);
    CHECK_STR(cat->models[0].chat_template, ""); /* its own tokenizer: none of the top level's */
    CHECK_STR(cat->models[1].tokenizer, "/top/tokenizer.json");
    CHECK_STR(cat->models[1].chat_template, "/top/t.jinja");
    CHECK_STR(cat->models[2].tokenizer, "/nowhere"); /* not a directory: a file, loaded later */
    kvg_catalog_unref(cat);
    free_cfg(c, path);
    /* A directory without tokenizer.json is said at once. */
    unlink(want);
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    unlink(file);
    snprintf(yaml, sizeof yaml,
             "models:\n"
             "  - name: a\n"
             "    tokenizer: %s\n"
             "    workers: [http://127.0.0.1:8001]\n",
             dir);
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 0, NULL), KVG_ECONFIG);
    snprintf(want, sizeof want,
             "%s:2: models[0] 'a': tokenizer: %s is a directory without tokenizer.json", path, dir);
    CHECK_STR(err, want);
    free_cfg(c, path);
    rmdir(dir);
}

/* One hostile config and the message its line gets (a message ending in
 * "(known: " is the start of one). */
struct hostile {
    const char *what, *yaml;
    int line;
    const char *msg;
};

static const struct hostile hostile[] = {
    {"an alias of an alias that cycles",
     "models:\n"
     "  - name: m\n"
     "    workers: [http://127.0.0.1:8001]\n"
     "  - name: x\n"
     "    alias_of: y\n"
     "  - name: y\n"
     "    alias_of: z\n"
     "  - name: z\n"
     "    alias_of: x\n",
     4, "models[1] 'x': alias_of loops: x -> y -> z -> x"},
    {"an alias of an unknown name",
     "models:\n"
     "  - name: x\n"
     "    alias_of: nobody\n",
     2, "models[0] 'x': alias_of: unknown name 'nobody'"},
    {"split weights not summing to 100",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - {name: b, workers: [http://127.0.0.1:8002]}\n"
     "  - name: s\n"
     "    split: {a: 90, b: 5}\n",
     4, "models[2] 's': split weights sum to 95, not 100"},
    {"a split naming an unknown model",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - name: s\n"
     "    split:\n"
     "      a: 50\n"
     "      b: 50\n",
     6, "models[1] 's': split: 'b' is unknown (no entry has that name or alias)"},
    {"a split of a split",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - {name: b, workers: [http://127.0.0.1:8002]}\n"
     "  - {name: s, split: {a: 50, b: 50}}\n"
     "  - name: t\n"
     "    split: {s: 50, a: 50}\n",
     6, "models[3] 't': split: 's' is a split (a split of a split is refused: name its models)"},
    {"a fallback chain that loops",
     "models:\n"
     "  - name: a\n"
     "    fallbacks: [b]\n"
     "    workers: [http://127.0.0.1:8001]\n"
     "  - name: b\n"
     "    fallbacks: [c]\n"
     "    workers: [http://127.0.0.1:8002]\n"
     "  - name: c\n"
     "    fallbacks: [a-alias]\n"
     "    workers: [http://127.0.0.1:8003]\n"
     "  - {name: a-alias, alias_of: a}\n",
     2, "models[0] 'a': fallbacks loop: a -> b -> c -> a"},
    {"a model its own fallback",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - name: b\n"
     "    fallbacks: [b]\n"
     "    workers: [http://127.0.0.1:8002]\n",
     3, "models[1] 'b': fallbacks loop: b -> b"},
    {"two models claiming one alias",
     "models:\n"
     "  - name: a\n"
     "    aliases: [gpt-4o]\n"
     "    workers: [http://127.0.0.1:8001]\n"
     "  - name: b\n"
     "    aliases: [gpt-4o]\n"
     "    workers: [http://127.0.0.1:8002]\n",
     5, "models[1] 'b': alias 'gpt-4o' is already claimed by models[0] 'a' (line 2)"},
    {"two models of one name",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - {name: a, workers: [http://127.0.0.1:8002]}\n",
     3, "models[1] 'a': name 'a' is already claimed by models[0] 'a' (line 2)"},
    {"a worker listed under two models",
     "models:\n"
     "  - name: a\n"
     "    workers:\n"
     "      - http://127.0.0.1:8001\n"
     "  - name: b\n"
     "    workers:\n"
     "      - http://127.0.0.1:8002\n"
     "      - http://127.0.0.1:8001/\n",
     8, "models[1] 'b': worker http://127.0.0.1:8001/ is already under models[0] 'a' (line 4)"},
    {"a model with nothing to serve it",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - name: b\n"
     "    aliases: [c]\n",
     3,
     "models[1] 'b': no workers, split or alias_of: nothing would serve it (aliases name more "
     "names for an entry that has one of them)"},
    {"workers and a split at once",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - name: b\n"
     "    split: {a: 100}\n"
     "    workers: [http://127.0.0.1:8002]\n",
     3, "models[1] 'b': workers, split and alias_of exclude each other"},
    {"a split with a tokenizer",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - name: b\n"
     "    split: {a: 100}\n"
     "    tokenizer: /m/tokenizer.json\n",
     3, "models[1] 'b': tokenizer: only a model with workers has one (this entry is a split)"},
    {"an alias with a policy option",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - name: b\n"
     "    alias_of: a\n"
     "    router_temperature: 0.3\n",
     3,
     "models[1] 'b': a policy option: only a model with workers has one (this entry is an alias)"},
    {"a split with a model's limit",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - name: b\n"
     "    split: {a: 100}\n"
     "    max_inflight: 8\n",
     3, "models[1] 'b': max_inflight: only a model with workers has one (this entry is a split)"},
    {"an alias with a queue limit",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - {name: b, alias_of: a, max_queue: 4}\n",
     3, "models[1] 'b': max_queue: only a model with workers has one (this entry is an alias)"},
    {"an alias with SLO targets",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - {name: b, alias_of: a, slo_ttft_secs: 1, slo_itl_secs: 0.05}\n",
     3, "models[1] 'b': slo_ttft_secs: only a model with workers has one (this entry is an alias)"},
    {"a split with an ITL target",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - name: b\n"
     "    split: {a: 100}\n"
     "    slo_itl_secs: 0.05\n",
     3, "models[1] 'b': slo_itl_secs: only a model with workers has one (this entry is a split)"},
    {"a TTFT target without its ITL one",
     "models:\n"
     "  - name: a\n"
     "    slo_ttft_secs: 1\n"
     "    workers: [http://127.0.0.1:8001]\n",
     2, "models[0] 'a': slo_ttft_secs and slo_itl_secs go together"},
    {"a fallback naming a split",
     "models:\n"
     "  - {name: a, workers: [http://127.0.0.1:8001]}\n"
     "  - {name: b, workers: [http://127.0.0.1:8002], fallbacks: [s]}\n"
     "  - {name: s, split: {a: 100}}\n",
     3, "models[1] 'b': fallbacks: 's' is a split (fallbacks name models)"},
    {"an unknown policy",
     "models:\n"
     "  - name: a\n"
     "    policy: fastest\n"
     "    workers: [http://127.0.0.1:8001]\n",
     2, "models[0] 'a': unknown policy 'fastest' (known: "},
    {"prefill workers without decode",
     "models:\n"
     "  - name: a\n"
     "    workers: [{url: http://127.0.0.1:8001, role: prefill}]\n",
     2, "models[0] 'a': prefill workers without decode workers: a prefill/decode pair needs both"},
    {"a worker twice in one model",
     "models:\n"
     "  - name: a\n"
     "    workers: [http://127.0.0.1:8001, http://127.0.0.1:8001]\n",
     3, "models[0] 'a': worker http://127.0.0.1:8001 is listed twice (line 3)"},
};

TEST(hostile_configs_name_their_file_line)
{
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        const struct hostile *h = &hostile[i];
        char path[64], err[1024], want[1200];
        struct kvg_serve_config *c;
        int rc = serve_parse(h->yaml, path, &c, err, sizeof err, 0, NULL);
        if (rc != KVG_ECONFIG) printf("# %s: rc %d, %s\n", h->what, rc, err);
        CHECK_INT(rc, KVG_ECONFIG);
        snprintf(want, sizeof want, "%s:%d: %s", path, h->line, h->msg);
        size_t n = strlen(h->msg);
        int prefix = n > 8 && !strcmp(h->msg + n - 8, "(known: ");
        if (prefix) err[strlen(want) < strlen(err) ? strlen(want) : strlen(err)] = 0;
        if (strcmp(err, want)) printf("# %s\n", h->what);
        CHECK_STR(err, want);
        /* SIGHUP's reload refuses it with the same words. */
        struct kvg_serve_config *f = calloc(1, sizeof *f);
        char err2[1024];
        CHECK(f != NULL);
        CHECK_INT(kvg_serve_config_load_file(path, f, err2, sizeof err2), KVG_ECONFIG);
        if (prefix && strlen(err2) > strlen(err)) err2[strlen(err)] = 0;
        CHECK_STR(err2, err);
        free(f);
        free_cfg(c, path);
    }
}

TEST(the_loader_refuses_what_it_cannot_read)
{
    const struct {
        const char *yaml, *msg;
    } cases[] = {
        {"models:\n  - name: a\n    tokeniser: /m\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].tokeniser: unknown key (did you mean tokenizer?)"},
        {"models:\n  - name: a\n    workers:\n      - url: http://127.0.0.1:8001\n"
         "        kv_event_endpoint: tcp://127.0.0.1:5557\n",
         "5: models[0].workers[0].kv_event_endpoint: unknown key (did you mean "
         "kv_events_endpoint?)"},
        {"models:\n  - workers: [http://127.0.0.1:8001]\n", "2: models[0]: needs name"},
        {"models:\n  - name: a\n    workers: [{url: http://127.0.0.1:8001, role: leader}]\n",
         "3: models[0].workers[0].role: expects one of regular, prefill, decode, encode, got "
         "'leader'"},
        {"models:\n  - name: s\n    split: {a: 101}\n",
         "3: models[0].split.a: expects a number 0..100, got '101'"},
        {"models:\n  - name: s\n    split: [a, b]\n",
         "3: models[0].split: expects a mapping of names, got a list"},
        {"models:\n  - name: a\n    block_size: 0\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].block_size: expects an integer 1..4294967295, got '0'"},
        {"models:\n  - name: a\n    max_inflight: -1\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].max_inflight: expects an integer 1..1000000, got '-1'"},
        {"models:\n  - name: a\n    max_queue: 0\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].max_queue: expects an integer 1..1000000, got '0'"},
        {"models:\n  - name: a\n    slo_ttft_secs: -1\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].slo_ttft_secs: expects a number 0.001..3600, got '-1'"},
        {"models:\n  - name: a\n    slo_ttft_secs: 0\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].slo_ttft_secs: expects a number 0.001..3600, got '0'"},
        {"models:\n  - name: a\n    slo_ttft_secs: nan\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].slo_ttft_secs: expects a number 0.001..3600, got 'nan'"},
        {"models:\n  - name: a\n    slo_itl_secs: inf\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].slo_itl_secs: expects a number 0.0001..60, got 'inf'"},
        {"models:\n  - name: a\n    slo_itl_secs: 1e999\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].slo_itl_secs: expects a number 0.0001..60, got '1e999'"},
        {"models:\n  - name: a\n    slo_itl_secs: 61\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].slo_itl_secs: expects a number 0.0001..60, got '61'"},
        {"models:\n  - name: a\n    slo_itl_secs: 50ms\n    workers: [http://127.0.0.1:8001]\n",
         "3: models[0].slo_itl_secs: expects a number 0.0001..60, got '50ms'"},
        {"worker_urls: [http://127.0.0.1:8009]\n"
         "models:\n  - name: a\n    workers: [http://127.0.0.1:8001]\n",
         NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[64], err[1024], want[1200];
        struct kvg_serve_config *c;
        CHECK_INT(serve_parse(cases[i].yaml, path, &c, err, sizeof err, 0, NULL), KVG_ECONFIG);
        if (cases[i].msg)
            snprintf(want, sizeof want, "%s:%s", path, cases[i].msg);
        else
            snprintf(want, sizeof want,
                     "%s: models: and worker_urls (or workers:) exclude each other: each model "
                     "lists its own workers, or with service_discovery and model_label its pods' "
                     "label names it",
                     path);
        CHECK_STR(err, want);
        free_cfg(c, path);
    }
}

/* Discovery by a model label: the models list no workers, a pod's label
 * names its model (by name or alias; a split's name serves nothing). */
TEST(models_by_a_discovered_pod_label)
{
    char path[64], err[1024], want[1200];
    struct kvg_serve_config *c;
    const char *yaml = "models:\n"
                       "  - name: Org/m1\n"
                       "    aliases: [m1]\n"
                       "    policy: round_robin\n"
                       "  - name: m2\n"
                       "  - name: canary\n"
                       "    split: {m1: 50, m2: 50}\n";
    char *disc[] = {"--service-discovery", "--selector", "app=llm", "--model-label",
                    "kvgate.io/model"};
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 5, disc), 0);
    CHECK_INT(c->workers.n, 0);
    struct kvg_catalog *cat;
    CHECK_INT(kvg_serve_models_catalog(c, path, &cat, err, sizeof err), 0);
    CHECK_INT(cat->nmodels, 2);
    CHECK_STR(cat->models[0].policy, "round_robin");
    CHECK_INT(kvg_catalog_worker_model(cat, "http://10.0.0.1:8000", "m1"), 0);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://10.0.0.1:8000", "Org/m1"), 0);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://10.0.0.2:8000", "m2"), 1);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://10.0.0.2:8000", "canary"), -1);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://10.0.0.2:8000", "m3"), -1);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://10.0.0.2:8000", ""), -1);
    kvg_catalog_unref(cat);
    /* SIGHUP's loader, with the running process's discovery settings. */
    struct kvg_serve_config *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    CHECK_INT(kvg_serve_config_reload_file(path, c, f, err, sizeof err), 0);
    CHECK_INT(f->nmodels, 3);
    kvg_serve_config_free(f);
    /* Without them the entries serve nothing. */
    CHECK_INT(kvg_serve_config_load_file(path, f, err, sizeof err), KVG_ECONFIG);
    free(f);
    free_cfg(c, path);

    /* Static workers: beside the discovered pods: folded into the worker
     * list, their model by URL first (a pod at the same URL is the entry's
     * worker, whatever its label says), the others by label. */
    CHECK_INT(
        serve_parse("models:\n  - name: a\n    workers: [http://127.0.0.1:8001]\n"
                    "  - name: b\n    workers: [{url: http://127.0.0.1:8002, kv_events_endpoint:"
                    " 'tcp://127.0.0.1:5557'}, http://127.0.0.1:8003]\n",
                    path, &c, err, sizeof err, 5, disc),
        0);
    CHECK_INT(c->workers.n, 3);
    CHECK_STR(c->workers.v[1], "http://127.0.0.1:8002");
    CHECK_STR(c->kv_endpoints.v[1], "tcp://127.0.0.1:5557");
    CHECK_INT(kvg_serve_models_catalog(c, path, &cat, err, sizeof err), 0);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://127.0.0.1:8001/", ""), 0);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://127.0.0.1:8001", "b"), 0);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://10.0.0.9:8000", "b"), 1);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://10.0.0.9:8000", ""), -1);
    kvg_catalog_unref(cat);
    free_cfg(c, path);
    /* ... and a worker under two models is still refused, at its line. */
    CHECK_INT(serve_parse("models:\n  - name: a\n    workers: [http://127.0.0.1:8001]\n"
                          "  - name: b\n    workers: [http://127.0.0.1:8001/]\n",
                          path, &c, err, sizeof err, 5, disc),
              KVG_ECONFIG);
    snprintf(want, sizeof want,
             "%s:5: models[1] 'b': worker http://127.0.0.1:8001/ is already under models[0] 'a' "
             "(line 3)",
             path);
    CHECK_STR(err, want);
    free_cfg(c, path);
    /* Discovery with models: but no label; a label without models:. */
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 3, disc), KVG_ECONFIG);
    CHECK(strstr(err, "models: and service_discovery without model_label") != NULL);
    free_cfg(c, path);
    CHECK_INT(serve_parse("block_size: 16\n", path, &c, err, sizeof err, 5, disc), KVG_ECONFIG);
    CHECK(strstr(err, "model_label names a models: entry per pod: it needs a models: section") !=
          NULL);
    free_cfg(c, path);
    char *nodisc[] = {"--model-label", "kvgate.io/model"};
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 2, nodisc), KVG_ECONFIG);
    free_cfg(c, path);
}

/* With an --autoscale file whose actuator is local, a model its pools name
 * (by an alias here) lists no workers: the autoscaler's replicas are its
 * workers (they join it by their model label). SIGHUP's loader keeps the
 * running process's autoscale file. Another actuator starts nothing: the
 * entry serves nothing and is refused. */
TEST(models_whose_workers_the_local_autoscaler_starts)
{
    char path[64], apath[64], err[1024];
    struct kvg_serve_config *c;
    const char *yaml = "models:\n"
                       "  - name: Org/a\n"
                       "    aliases: [a]\n"
                       "  - name: b\n"
                       "    workers: [http://127.0.0.1:8001]\n";
    write_tmp(apath, sizeof apath,
              "actuator: local\npools:\n  - {name: pa, model: a, max_replicas: 2}\n");
    char *as[] = {"--autoscale", apath};
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 2, as), 0);
    CHECK_INT(c->workers.n, 1);
    struct kvg_catalog *cat;
    CHECK_INT(kvg_serve_models_catalog(c, path, &cat, err, sizeof err), 0);
    CHECK_INT(cat->nmodels, 2);
    CHECK_INT(cat->models[0].nworkers, 0);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://127.0.0.1:8100", "Org/a"), 0);
    CHECK_INT(kvg_catalog_worker_model(cat, "http://127.0.0.1:8001", ""), 1);
    kvg_catalog_unref(cat);
    struct kvg_serve_config *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    CHECK_INT(kvg_serve_config_reload_file(path, c, f, err, sizeof err), 0);
    kvg_serve_config_free(f);
    free(f);
    free_cfg(c, path);
    /* The external actuator starts no replica: Org/a would serve nothing. */
    unlink(apath);
    write_tmp(apath, sizeof apath,
              "actuator: external\npools:\n  - {name: pa, model: a, max_replicas: 2}\n");
    as[1] = apath;
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 2, as), KVG_ECONFIG);
    CHECK(strstr(err, "models[0] 'Org/a': no workers, split or alias_of") != NULL);
    free_cfg(c, path);
    /* A pool naming no model, or a split, is refused naming both files. */
    unlink(apath);
    write_tmp(apath, sizeof apath, "actuator: local\npools:\n  - {name: pa, model: nope}\n");
    as[1] = apath;
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 2, as), KVG_ECONFIG);
    char want[512];
    snprintf(want, sizeof want, "%s: pool pa: model 'nope' is no model of the models: in %s", apath,
             path);
    CHECK(strstr(err, want) == err);
    free_cfg(c, path);
    /* A broken autoscale file is its own error, named. */
    unlink(apath);
    write_tmp(apath, sizeof apath, "actuator: local\npools:\n  - {name: pa, modle: a}\n");
    as[1] = apath;
    CHECK_INT(serve_parse(yaml, path, &c, err, sizeof err, 2, as), KVG_ECONFIG);
    CHECK(strstr(err, "modle") != NULL);
    free_cfg(c, path);
    unlink(apath);
}
