/* API keys: the keys file (good and bad), constant-time lookup, Bearer
 * authentication, models, quota scopes, the reload holder under concurrent
 * readers, and `kvgate keys hash` on a known SHA-256 vector. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "cmd/cmd.h"
#include "gateway/admission.h"
#include "gateway/keys.h"
#include "support/test.h"

/* SHA-256("abc"), FIPS 180-2 appendix B.1. */
#define ABC_HASH "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static struct kvg_keys_set *parse_ok(const char *y)
{
    struct kvg_keys_set *s = NULL;
    char err[512] = "";
    int rc = kvg_keys_parse(y, strlen(y), "t.yaml", &s, err, sizeof err);
    if (rc) printf("  unexpected error: %s\n", err);
    CHECK_INT(rc, 0);
    return s;
}

/* Parses y expecting failure; the message must contain want. */
static void parse_bad(const char *y, const char *want)
{
    struct kvg_keys_set *s = NULL;
    char err[512] = "";
    int rc = kvg_keys_parse(y, strlen(y), "t.yaml", &s, err, sizeof err);
    if (rc == 0 || !strstr(err, want)) printf("  yaml:\n%s\n  got: %s\n", y, err);
    CHECK_INT(rc, KVG_ECONFIG);
    CHECK(s == NULL);
    CHECK(strstr(err, want) != NULL);
}

static const char GOOD[] =
    "counting:\n"
    "  mode: weighted\n"
    "  weights: {input: 1.0, cached_input: 0.1, output: 4}\n"
    "keys:\n"
    "  - name: alice\n"
    "    hash: " ABC_HASH "\n"
    "    tenant: team-a\n"
    "    models: [\"*\"]\n"
    "    priority: critical\n"
    "    limits:\n"
    "      tokens_per_minute: 100_000\n"
    "      requests_per_minute: 600\n"
    "      max_concurrent: 16\n"
    "  - name: bob\n"
    "    hash: sha256:" /* SHA-256("bob-key") is irrelevant: any distinct digest */
    "00000000000000000000000000000000000000000000000000000000000000ff\n"
    "    tenant: team-a\n"
    "    models: [llama-3-*, qwen3-8b]\n"
    "    priority: -5\n"
    "  - name: carol\n"
    "    hash: sha256:"
    "00000000000000000000000000000000000000000000000000000000000000FE\n"
    "tenants:\n"
    "  team-a:\n"
    "    limits: {tokens_per_day: 5000000}\n"
    "    models:\n"
    "      llama-3-70b: {tokens_per_minute: 20000}\n"
    "      \"llama-3-*\": {requests_per_minute: 100}\n";

TEST(good_file_parses_every_field)
{
    struct kvg_keys_set *s = parse_ok(GOOD);
    CHECK_INT(s->nkeys, 3);
    CHECK_INT(s->counting.mode, KVG_QM_WEIGHTED);
    CHECK_NEAR(s->counting.w_cached_input, 0.1, 1e-12);
    CHECK_NEAR(s->counting.w_output, 4, 1e-12);
    const struct kvg_keys_entry *a = &s->keys[0], *b = &s->keys[1], *c = &s->keys[2];
    CHECK_STR(a->name, "alice");
    CHECK_STR(a->tenant, "team-a");
    CHECK_INT(a->priority, KVG_ADM_CRITICAL);
    CHECK_INT(a->limits.tokens[KVG_QW_MINUTE], 100000);
    CHECK_INT(a->limits.requests[KVG_QW_MINUTE], 600);
    CHECK_INT(a->limits.max_concurrent, 16);
    CHECK_INT(a->limits.tokens[KVG_QW_DAY], KVG_QUOTA_NONE);
    CHECK(a->models == NULL);
    CHECK_INT(b->priority, -5);
    CHECK_INT(b->nmodels, 2);
    CHECK_STR(c->tenant, "carol"); /* default tenant: its own name */
    CHECK_INT(c->priority, KVG_ADM_STANDARD);
    CHECK_INT(c->digest[31], 0xfe);
    CHECK(!kvg_quota_limits_any(&c->limits));
    CHECK_INT(s->ntenants, 1);
    CHECK_INT(s->tenants[0].nmodels, 2);
    CHECK_INT(s->tenants[0].limits.tokens[KVG_QW_DAY], 5000000);
    kvg_keys_unref(s);
}

TEST(bad_files_name_line_and_key)
{
    parse_bad("keys:\n  - name: a\n    hash: sha256:abc\n", "t.yaml:3: keys[0].hash");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n    limit: {}\n",
              "t.yaml:4: keys[0]: unknown key 'limit'");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH
              "\n    limits:\n      token_per_minute: 5\n",
              "t.yaml:5: keys[0].limits: unknown limit 'token_per_minute'");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH
              "\n    limits:\n      tokens_per_minute: -5\n",
              "keys[0].limits.tokens_per_minute");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n    limits: {max_concurrent: lots}\n",
              "'lots' is not a non-negative integer");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n    priority: urgent\n",
              "t.yaml:4: keys[0].priority: 'urgent' is not a priority");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n    priority: 5000\n", "priority");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n  - name: a\n    hash: sha256:" ABC_HASH,
              "keys[1].hash");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n  - name: a\n    hash: sha256:"
              "1111111111111111111111111111111111111111111111111111111111111111\n",
              "t.yaml:4: keys[1]: name 'a' is already used by keys[0] (line 2)");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n  - name: b\n    hash: " ABC_HASH "\n",
              "keys[1]: same hash as keys[0] 'a'");
    parse_bad("keys:\n  - name: a\n", "keys[0]: needs hash");
    parse_bad("keys:\n  - hash: " ABC_HASH "\n", "keys[0]: needs name");
    parse_bad("keys:\n  - name: a b\n    hash: " ABC_HASH "\n", "keys[0].name");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n    models: []\n", "empty list");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n    models: [\"ll*ama\"]\n",
              "keys[0].models[0]: 'll*ama' is not a model name");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n    models: \"*\"\n",
              "keys[0].models: expects a list of model names, got a value");
    parse_bad("keys:\n  - name: a\n    hash: " ABC_HASH "\n    name: b\n", "duplicate key 'name'");
    parse_bad("key:\n  - name: a\n", "t.yaml:1: unknown top-level key 'key'");
    parse_bad("tenants: {}\n", "t.yaml:1: needs keys");
    parse_bad("", "the file is empty");
    parse_bad("keys: [\n", "YAML");
    parse_bad("keys: {}\n", "keys: expects a list of mappings, got a mapping");
    parse_bad("keys: []\ncounting: {mode: fancy}\n",
              "counting.mode: expects one of total, input, output, weighted, got 'fancy'");
    parse_bad("keys: []\ncounting: {weights: {input: 2}}\n", "weights apply only with mode");
    parse_bad("keys: []\ncounting: {mode: weighted, weights: {cache: 2}}\n",
              "unknown weight 'cache'");
    parse_bad("keys: []\ncounting: {mode: weighted, weights: {input: -1}}\n",
              "counting.weights.input");
    parse_bad("keys: []\ntenants:\n  t1:\n    limit: {}\n",
              "t.yaml:4: tenants.t1: unknown key 'limit'");
    parse_bad("keys: []\ntenants:\n  t1:\n    models:\n      m1: {tokens_per_week: 3}\n",
              "tenants.t1.models.m1: unknown limit 'tokens_per_week'");
}

TEST(load_reports_missing_file)
{
    struct kvg_keys_set *s = NULL;
    char err[256];
    CHECK(kvg_keys_load("/nonexistent/keys.yaml", &s, err, sizeof err) < 0);
    CHECK(strstr(err, "/nonexistent/keys.yaml") != NULL);
}

TEST(hash_known_vector)
{
    char out[72];
    kvg_keys_hash("abc", 3, out);
    CHECK_STR(out, ABC_HASH);
}

static char *run_cli(int argc, char **argv, int *rc)
{
    char path[] = "/tmp/kvg-keys-cli-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    *rc = kvg_cmd_keys_main(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    static char buf[1024];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    return buf;
}

TEST(cli_hash_prints_the_file_value)
{
    int rc;
    char *argv[] = {"keys", "hash", "abc", NULL};
    CHECK_STR(run_cli(3, argv, &rc), ABC_HASH "\n");
    CHECK_INT(rc, 0);
    char *bad[] = {"keys", "frob", NULL};
    run_cli(2, bad, &rc);
    CHECK_INT(rc, 2);
    /* `keys new` makes a key whose printed hash is its own hash. */
    char *nw[] = {"keys", "new", "dave", NULL};
    char *out = run_cli(3, nw, &rc);
    CHECK_INT(rc, 0);
    char key[128], hash[128], want[72];
    CHECK(sscanf(out, "key: %127s", key) == 1);
    CHECK(strstr(out, "- name: dave") != NULL);
    CHECK(sscanf(strstr(out, "hash: "), "hash: %127s", hash) == 1);
    kvg_keys_hash(key, strlen(key), want);
    CHECK_STR(hash, want);
}

/* `keys --help` names every subcommand on stdout and succeeds. */
TEST(cli_help_lists_the_subcommands)
{
    int rc;
    char *argv[] = {"keys", "--help", NULL};
    char *out = run_cli(2, argv, &rc);
    CHECK_INT(rc, 0);
    CHECK(strstr(out, "kvgate keys hash KEY|-") != NULL);
    CHECK(strstr(out, "kvgate keys new [NAME]") != NULL);
    CHECK(strstr(out, "kvgate keys check FILE") != NULL);
}

/* 200 keys whose digests differ only in their last bytes: every one finds
 * its own entry, near misses find none. */
TEST(lookup_finds_exactly_the_matching_entry)
{
    struct kvg_keys_set s = {0};
    struct kvg_keys_entry e[200];
    memset(e, 0, sizeof e);
    for (int i = 0; i < 200; i++) {
        memset(e[i].digest, 0xab, 32);
        e[i].digest[30] = (unsigned char)(i >> 8);
        e[i].digest[31] = (unsigned char)i;
    }
    s.keys = e;
    s.nkeys = 200;
    unsigned char d[32];
    for (int i = 0; i < 200; i++) {
        memcpy(d, e[i].digest, 32);
        CHECK(kvg_keys_lookup(&s, d) == &e[i]);
        d[0] ^= 1; /* first byte wrong */
        CHECK(kvg_keys_lookup(&s, d) == NULL);
    }
    memset(d, 0xab, 32);
    d[31] = 250; /* beyond the last index */
    CHECK(kvg_keys_lookup(&s, d) == NULL);
    s.nkeys = 0;
    CHECK(kvg_keys_lookup(&s, d) == NULL);
}

TEST(bearer_authentication)
{
    struct kvg_keys_set *s = parse_ok(GOOD);
    const struct kvg_keys_entry *e;
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Bearer abc"), &e), KVG_KEYS_AUTH_OK);
    CHECK_STR(e->name, "alice");
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("  bearer   abc  "), &e), KVG_KEYS_AUTH_OK);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Bearer abd"), &e), KVG_KEYS_AUTH_UNKNOWN);
    CHECK(e == NULL);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Bearer abcabc"), &e), KVG_KEYS_AUTH_UNKNOWN);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Basic abc"), &e), KVG_KEYS_AUTH_MALFORMED);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Bearer"), &e), KVG_KEYS_AUTH_MALFORMED);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Bearer   "), &e), KVG_KEYS_AUTH_MALFORMED);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Bearerabc"), &e), KVG_KEYS_AUTH_MALFORMED);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR_NULL, &e), KVG_KEYS_AUTH_MISSING);
    kvg_keys_unref(s);
}

/* The memo: the first call hashes and remembers the digest, the next one
 * takes it as given (a wrong memo is believed: no second hash). */
TEST(memo_hashes_once)
{
    struct kvg_keys_set *s = parse_ok(GOOD);
    const struct kvg_keys_entry *e;
    unsigned char md[32], want[32];
    int set = 0;
    CHECK_INT(kvg_keys_authenticate_memo(s, KVG_STR("Bearer abc"), md, &set, &e), KVG_KEYS_AUTH_OK);
    CHECK_INT(set, 1);
    CHECK_STR(e->name, "alice");
    char hex[72];
    kvg_keys_hash("abc", 3, hex);
    for (int i = 0; i < 32; i++) sscanf(hex + 7 + 2 * i, "%2hhx", &want[i]);
    CHECK_INT(memcmp(md, want, 32), 0);
    CHECK_INT(kvg_keys_authenticate_memo(s, KVG_STR("Bearer abc"), md, &set, &e), KVG_KEYS_AUTH_OK);
    md[0] ^= 1;
    CHECK_INT(kvg_keys_authenticate_memo(s, KVG_STR("Bearer abc"), md, &set, &e),
              KVG_KEYS_AUTH_UNKNOWN);
    set = 0;
    CHECK_INT(kvg_keys_authenticate_memo(s, KVG_STR("Bearer   "), md, &set, &e),
              KVG_KEYS_AUTH_MALFORMED);
    CHECK_INT(set, 0);
    kvg_keys_unref(s);
}

/* A browser's login prompt sends Basic user:key; the key is the password. */
TEST(basic_authentication)
{
    struct kvg_keys_set *s = parse_ok(GOOD);
    const struct kvg_keys_entry *e;
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Basic YWRtaW46YWJj"), &e), KVG_KEYS_AUTH_OK);
    CHECK_STR(e->name, "alice");
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("basic OmFiYw=="), &e), KVG_KEYS_AUTH_OK);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Basic eDphYmQ="), &e), KVG_KEYS_AUTH_UNKNOWN);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Basic bm9jb2xvbg=="), &e), KVG_KEYS_AUTH_MALFORMED);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Basic !!!!"), &e), KVG_KEYS_AUTH_MALFORMED);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Basic "), &e), KVG_KEYS_AUTH_MALFORMED);
    CHECK_INT(kvg_keys_authenticate(s, KVG_STR("Basic ===="), &e),
              KVG_KEYS_AUTH_MALFORMED); /* found by fuzz_auth_header */
    kvg_keys_unref(s);
}

TEST(models_and_globs)
{
    struct kvg_keys_set *s = parse_ok(GOOD);
    const struct kvg_keys_entry *a = &s->keys[0], *b = &s->keys[1];
    CHECK(kvg_keys_model_allowed(a, "anything", 8));
    CHECK(kvg_keys_model_allowed(a, "", 0));
    CHECK(kvg_keys_model_allowed(b, "llama-3-70b", 11));
    CHECK(kvg_keys_model_allowed(b, "llama-3-", 8));
    CHECK(!kvg_keys_model_allowed(b, "llama-3", 7));
    CHECK(kvg_keys_model_allowed(b, "qwen3-8b", 8));
    CHECK(!kvg_keys_model_allowed(b, "qwen3-8b-instruct", 17));
    CHECK(!kvg_keys_model_allowed(b, "qwen3-8", 7));
    CHECK(!kvg_keys_model_allowed(b, "", 0));
    kvg_keys_unref(s);
}

TEST(scopes_key_tenant_and_tenant_model)
{
    struct kvg_keys_set *s = parse_ok(GOOD);
    struct kvg_quota_req r;
    memset(&r, 0, sizeof r);
    CHECK_INT(kvg_keys_scopes(s, &s->keys[0], "llama-3-70b", 11, &r), 3);
    CHECK_STR(r.scope[0].id, "key:alice");
    CHECK_INT(r.scope[0].lim.tokens[KVG_QW_MINUTE], 100000);
    CHECK_STR(r.scope[1].id, "tenant:team-a");
    CHECK_INT(r.scope[1].lim.tokens[KVG_QW_DAY], 5000000);
    CHECK_STR(r.scope[2].id, "model:team-a:llama-3-70b"); /* first match wins */
    CHECK_INT(r.scope[2].lim.tokens[KVG_QW_MINUTE], 20000);
    CHECK_INT(kvg_keys_scopes(s, &s->keys[1], "llama-3-8b", 10, &r), 2);
    CHECK_STR(r.scope[0].id, "tenant:team-a"); /* bob has no limits of his own */
    CHECK_STR(r.scope[1].id, "model:team-a:llama-3-*");
    CHECK_INT(kvg_keys_scopes(s, &s->keys[1], "qwen3-8b", 8, &r), 1);
    CHECK_INT(kvg_keys_scopes(s, &s->keys[2], "qwen3-8b", 8, &r), 0);
    kvg_keys_unref(s);
}

struct reader_arg {
    struct kvg_keys_holder *h;
    _Atomic int *stop;
    long reads;
};

static void *reader(void *p)
{
    struct reader_arg *a = p;
    while (!atomic_load(a->stop)) {
        struct kvg_keys_set *s = kvg_keys_acquire(a->h);
        /* Touch the set: a freed set would be caught by ASan. */
        if (s && s->nkeys && s->keys[0].name[0] != 'a') abort();
        kvg_keys_unref(s);
        a->reads++;
    }
    return NULL;
}

TEST(holder_swaps_while_readers_hold_references)
{
    struct kvg_keys_holder h;
    kvg_keys_holder_init(&h, parse_ok(GOOD));
    struct kvg_keys_set *held = kvg_keys_acquire(&h);
    kvg_keys_swap(&h, parse_ok(GOOD));
    CHECK_STR(held->keys[0].name, "alice"); /* the old set lives on for its reader */
    kvg_keys_unref(held);
    _Atomic int stop = 0;
    pthread_t t[3];
    struct reader_arg ra[3];
    for (int i = 0; i < 3; i++) {
        ra[i] = (struct reader_arg){&h, &stop, 0};
        pthread_create(&t[i], NULL, reader, &ra[i]);
    }
    for (int i = 0; i < 300; i++) kvg_keys_swap(&h, parse_ok(GOOD));
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    kvg_keys_swap(&h, NULL); /* authentication off */
    CHECK(kvg_keys_acquire(&h) == NULL);
    kvg_keys_holder_destroy(&h);
}

TEST(monthly_limits_parse)
{
    struct kvg_keys_set *s = parse_ok("keys:\n  - name: m\n    hash: " ABC_HASH "\n"
                                      "    limits: {tokens_per_month: 1_000_000, "
                                      "requests_per_month: 5000, requests_per_day: 9}\n");
    const struct kvg_keys_entry *e = &s->keys[0];
    CHECK_INT(e->limits.tokens[KVG_QW_MONTH], 1000000);
    CHECK_INT(e->limits.requests[KVG_QW_MONTH], 5000);
    CHECK_INT(e->limits.requests[KVG_QW_DAY], 9);
    CHECK_INT(e->limits.max_concurrent, KVG_QUOTA_NONE);
    kvg_keys_unref(s);
    parse_bad("keys:\n  - name: m\n    hash: " ABC_HASH "\n    limits: {tokens_per_year: 1}\n",
              "tokens_per_{minute,hour,day,month}");
}

static void collect(void *ud, const struct kvg_quota_scope *sc, enum kvg_keys_scope_kind kind,
                    const char *owner, const char *pattern)
{
    char *out = ud;
    size_t n = strlen(out);
    snprintf(out + n, 512 - n, "%d %s %s %s|", (int)kind, sc->id, owner, pattern ? pattern : "-");
}

/* Each scope with limits once, with the ids requests are charged to. */
TEST(each_scope_lists_the_scopes_requests_are_charged_to)
{
    const char *y =
        "keys:\n"
        "  - {name: a, hash: \"" ABC_HASH "\", tenant: t, limits: {tokens_per_minute: 5}}\n"
        "  - {name: b, hash: \"sha256:"
        "0000000000000000000000000000000000000000000000000000000000000001\", tenant: t}\n"
        "tenants:\n"
        "  t:\n"
        "    limits: {requests_per_day: 9}\n"
        "    models: {\"m*\": {max_concurrent: 1}, other: {}}\n";
    struct kvg_keys_set *s;
    char err[256];
    CHECK_INT(kvg_keys_parse(y, strlen(y), "t.yaml", &s, err, sizeof err), 0);
    char out[512] = "";
    CHECK_INT(kvg_keys_each_scope(s, collect, out), 3);
    CHECK_STR(out, "0 key:a a -|1 tenant:t t -|2 model:t:m* t m*|");
    struct kvg_quota_req r;
    CHECK_INT(kvg_keys_scopes(s, &s->keys[0], "m1", 2, &r), 3);
    CHECK_STR(r.scope[2].id, "model:t:m*");
    kvg_keys_unref(s);
}
