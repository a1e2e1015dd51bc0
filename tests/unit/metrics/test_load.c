/* Load-view tests: each engine flavor normalised from the realistic bodies
 * in tests/fixtures/metrics/, plus the rules that keep a missing or bad
 * signal from reading as idle: NaN and unknown bits, renamed metrics, label
 * groups summed / maxed / averaged, replica ranks collapsed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "metrics/load.h"
#include "support/test.h"

static char *fixture_text;

/* Reads tests/fixtures/metrics/<name> (from $KVG_ROOT, else the current
 * directory, which is the repo root under tests/run.sh). */
static const char *fixture(const char *name, size_t *len)
{
    const char *root = getenv("KVG_ROOT");
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/metrics/%s", root ? root : ".", name);
    FILE *f = fopen(path, "rb");
    if (!f) kvg_test_fail(__FILE__, __LINE__, "cannot open %s", path);
    free(fixture_text);
    fixture_text = malloc(1 << 20);
    *len = fread(fixture_text, 1, 1 << 20, f);
    fclose(f);
    return fixture_text;
}

static int parse_fixture(const char *name, struct kvg_metrics_load *l)
{
    size_t len;
    const char *t = fixture(name, &len);
    return kvg_metrics_load_parse(t, len, l);
}

static int parse_str(const char *text, struct kvg_metrics_load *l)
{
    return kvg_metrics_load_parse(text, strlen(text), l);
}

#define ALL_FIELDS 0x1ffu

static void check_all_unknown(const struct kvg_metrics_load *l)
{
    CHECK_INT(l->known, 0);
    CHECK(isnan(l->waiting) && isnan(l->running) && isnan(l->kv_usage));
    CHECK(isnan(l->prefix_queries) && isnan(l->prefix_hits) && isnan(l->cache_hit_rate));
    CHECK_INT(l->block_size, 0);
    CHECK_INT(l->num_gpu_blocks, 0);
    /* The point of NaN: no "is it idle?" test can pass. */
    CHECK(!(l->waiting < 1) && !(l->kv_usage < 0.5) && !(l->running == 0));
}

TEST(vllm_data_parallel)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_fixture("vllm_dp2.txt", &l), 0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_VLLM);
    CHECK_STR(kvg_metrics_flavor_name(l.flavor), "vllm");
    CHECK_INT(l.known, ALL_FIELDS & ~KVG_METRICS_HAS_CACHE_HIT_RATE);
    CHECK_NEAR(l.waiting, 3, 0);       /* 3 + 0 over the two engines */
    CHECK_NEAR(l.running, 43, 0);      /* 24 + 19 */
    CHECK_NEAR(l.kv_usage, 0.8125, 0); /* the fuller engine; not the deprecated gauge's 0.1 */
    CHECK_NEAR(l.prefix_queries, 2284736, 0);
    CHECK_NEAR(l.prefix_hits, 1513408, 0);
    CHECK_INT(l.block_size, 16);
    CHECK_INT(l.num_gpu_blocks, 2 * 27434);
    CHECK_INT(l.kv_capacity_tokens, 16 * 2 * 27434);
    CHECK(isnan(l.cache_hit_rate));
    CHECK_INT(l.engines, 2);
}

TEST(vllm_legacy_names)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_fixture("vllm_legacy.txt", &l), 0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_VLLM);
    CHECK_NEAR(l.waiting, 12, 0);
    CHECK_NEAR(l.running, 5, 0);
    CHECK_NEAR(l.kv_usage, 0.35, 0);        /* vllm:gpu_cache_usage_perc */
    CHECK_NEAR(l.prefix_queries, 52000, 0); /* vllm:gpu_prefix_cache_*_total; _created ignored */
    CHECK_NEAR(l.prefix_hits, 31000, 0);
    CHECK_INT(l.block_size, 32);
    CHECK_INT(l.num_gpu_blocks, 9000);
    CHECK_INT(l.kv_capacity_tokens, 288000);
    CHECK_INT(l.engines, 1);
}

TEST(sglang_tensor_parallel_ranks_collapse)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_fixture("sglang_tp2.txt", &l), 0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_SGLANG);
    CHECK_NEAR(l.waiting, 14, 0); /* both TP ranks report the same queue: not 28 */
    CHECK_NEAR(l.running, 37, 0);
    CHECK_NEAR(l.kv_usage, 0.67, 0);
    CHECK_NEAR(l.cache_hit_rate, 0.4275, 0);
    CHECK_INT(l.kv_capacity_tokens, 184862);
    CHECK_INT(l.engines, 1);
    CHECK(!(l.known & (KVG_METRICS_HAS_BLOCK_SIZE | KVG_METRICS_HAS_NUM_GPU_BLOCKS)));
    CHECK(!(l.known & (KVG_METRICS_HAS_PREFIX_QUERIES | KVG_METRICS_HAS_PREFIX_HITS)));
    CHECK(isnan(l.prefix_queries));
}

TEST(sglang_data_parallel_ranks_sum)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_fixture("sglang_dp2.txt", &l), 0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_SGLANG);
    CHECK_NEAR(l.waiting, 7, 0);
    CHECK_NEAR(l.running, 22, 0);
    CHECK_NEAR(l.kv_usage, 0.75, 0);        /* max */
    CHECK_NEAR(l.cache_hit_rate, 0.375, 0); /* mean */
    CHECK_INT(l.block_size, 64);            /* page_size */
    CHECK_INT(l.num_gpu_blocks, 8192);      /* num_pages, summed */
    CHECK_INT(l.kv_capacity_tokens, 64 * 8192);
    CHECK_INT(l.engines, 2);
}

TEST(llamacpp)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_fixture("llamacpp.txt", &l), 0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_LLAMACPP);
    CHECK_STR(kvg_metrics_flavor_name(l.flavor), "llamacpp");
    CHECK_INT(l.known,
              KVG_METRICS_HAS_WAITING | KVG_METRICS_HAS_RUNNING | KVG_METRICS_HAS_KV_USAGE);
    CHECK_NEAR(l.waiting, 3, 0);
    CHECK_NEAR(l.running, 2, 0);
    CHECK_NEAR(l.kv_usage, 0.42, 0);
    CHECK_INT(l.engines, 1);
}

TEST(llamacpp_without_kv_gauge_is_unknown_not_empty)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_fixture("llamacpp_nokv.txt", &l), 0); /* with nan and -nan values */
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_LLAMACPP);
    CHECK_INT(l.known, KVG_METRICS_HAS_WAITING | KVG_METRICS_HAS_RUNNING);
    CHECK_NEAR(l.waiting, 0, 0); /* a real, reported zero */
    CHECK_NEAR(l.running, 0, 0);
    CHECK(isnan(l.kv_usage));
}

TEST(llamacpp_current_set_gives_waiting_and_running)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_fixture("llamacpp_busy_nokv.txt", &l), 0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_LLAMACPP);
    CHECK_INT(l.known, KVG_METRICS_HAS_WAITING | KVG_METRICS_HAS_RUNNING);
    CHECK_NEAR(l.waiting, 7, 0); /* requests_deferred */
    CHECK_NEAR(l.running, 2, 0); /* requests_processing */
    CHECK(isnan(l.kv_usage));
    CHECK_INT(l.engines, 1);
}

TEST(empty_or_foreign_body)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_str("", &l), 0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_UNKNOWN);
    check_all_unknown(&l);
    CHECK_INT(parse_str("# HELP process_cpu_seconds_total x\nprocess_cpu_seconds_total 12.5\n"
                        "vllm:unrelated 3\nvllm: 1\n",
                        &l),
              0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_UNKNOWN);
    check_all_unknown(&l);
}

TEST(malformed_body_yields_error_and_unknown)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_str("vllm:num_requests_waiting 0\nvllm:num_requests_running{x=\"1} 4\n", &l),
              KVG_EPARSE);
    check_all_unknown(&l);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_UNKNOWN);
    /* A body cut mid-line: "12" cut to "1" must not be believed. */
    CHECK_INT(parse_str("vllm:num_requests_running 4\nvllm:num_requests_waiting 1", &l),
              KVG_EPARSE);
    check_all_unknown(&l);
}

TEST(bad_values_poison_their_field_only)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_str("vllm:num_requests_waiting{engine=\"0\"} 2\n"
                        "vllm:num_requests_waiting{engine=\"1\"} NaN\n"
                        "vllm:num_requests_running{engine=\"0\"} -1\n"
                        "vllm:kv_cache_usage_perc{engine=\"0\"} 81.5\n" /* a percentage */
                        "vllm:prefix_cache_queries_total +Inf\n"
                        "vllm:prefix_cache_hits_total 10\n",
                        &l),
              0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_VLLM);
    CHECK_INT(l.known, KVG_METRICS_HAS_PREFIX_HITS);
    CHECK(isnan(l.waiting)); /* one engine unknown makes the sum unknown, not 2 */
    CHECK(isnan(l.running) && isnan(l.kv_usage) && isnan(l.prefix_queries));
    CHECK_NEAR(l.prefix_hits, 10, 0);

    /* Float noise just above 1 is clamped, not rejected. */
    CHECK_INT(parse_str("llamacpp:kv_cache_usage_ratio 1.0000001\n", &l), 0);
    CHECK_NEAR(l.kv_usage, 1, 0);
    CHECK_INT(parse_str("llamacpp:kv_cache_usage_ratio 1.01\n", &l), 0);
    CHECK(isnan(l.kv_usage));
}

TEST(renamed_metrics_newest_wins_even_if_listed_last)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_str("vllm:gpu_prefix_cache_queries_total 100\n"
                        "vllm:gpu_cache_usage_perc 0.9\n"
                        "vllm:prefix_cache_queries 7\n"
                        "vllm:kv_cache_usage_perc 0.25\n",
                        &l),
              0);
    CHECK_NEAR(l.kv_usage, 0.25, 0);
    CHECK_NEAR(l.prefix_queries, 7, 0); /* bare name beats the older gpu_ name */
    CHECK(isnan(l.prefix_hits));
}

TEST(cache_config_labels)
{
    struct kvg_metrics_load l;
    /* Engines disagree on block size: unknown; blocks still sum. */
    CHECK_INT(parse_str("vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks="
                        "\"100\"} 1.0\n"
                        "vllm:cache_config_info{block_size=\"32\",engine=\"1\",num_gpu_blocks="
                        "\"50\"} 1.0\n",
                        &l),
              0);
    CHECK(!(l.known & KVG_METRICS_HAS_BLOCK_SIZE));
    CHECK_INT(l.num_gpu_blocks, 150);
    CHECK(!(l.known & KVG_METRICS_HAS_KV_CAPACITY));
    /* "None" is not reported; garbage poisons. */
    CHECK_INT(
        parse_str("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1\n", &l), 0);
    CHECK_INT(l.block_size, 16);
    CHECK(!(l.known & KVG_METRICS_HAS_NUM_GPU_BLOCKS));
    CHECK_INT(parse_str("vllm:cache_config_info{block_size=\"0x10\",num_gpu_blocks=\"7\"} 1\n", &l),
              0);
    CHECK(!(l.known & KVG_METRICS_HAS_BLOCK_SIZE));
    CHECK_INT(l.num_gpu_blocks, 7);
    CHECK_INT(parse_str("vllm:cache_config_info{block_size=\"0\"} 1\n", &l), 0);
    CHECK(!(l.known & KVG_METRICS_HAS_BLOCK_SIZE));
}

TEST(groups_are_label_sets_in_any_order)
{
    struct kvg_metrics_load l;
    /* The same group written with its labels in another order, on another
     * TP rank: one group, collapsed by max. A different model: summed. */
    CHECK_INT(parse_str("sglang:num_queue_reqs{model_name=\"a\",dp_rank=\"0\",tp_rank=\"0\"} 4\n"
                        "sglang:num_queue_reqs{tp_rank=\"1\",dp_rank=\"0\",model_name=\"a\"} 5\n"
                        "sglang:num_queue_reqs{model_name=\"b\",dp_rank=\"0\",tp_rank=\"0\"} 1\n",
                        &l),
              0);
    CHECK_NEAR(l.waiting, 6, 0);
    CHECK_INT(l.engines, 2);
}

TEST(flavor_is_the_best_covered_prefix)
{
    struct kvg_metrics_load l;
    CHECK_INT(parse_str("llamacpp:requests_deferred 9\n"
                        "vllm:num_requests_waiting 1\n"
                        "vllm:num_requests_running 2\n",
                        &l),
              0);
    CHECK_INT(l.flavor, KVG_METRICS_FLAVOR_VLLM);
    CHECK_NEAR(l.waiting, 1, 0); /* never mixed with llama.cpp's 9 */
}

TEST(too_many_groups_is_unknown)
{
    char *text = malloc(64 * 1024);
    size_t len = 0;
    for (int i = 0; i < 65; i++)
        len += (size_t)snprintf(text + len, 64 * 1024 - len,
                                "vllm:num_requests_waiting{engine=\"%d\"} 1\n", i);
    len += (size_t)snprintf(text + len, 64 * 1024 - len, "vllm:num_requests_running 3\n");
    struct kvg_metrics_load l;
    CHECK_INT(kvg_metrics_load_parse(text, len, &l), 0);
    free(text);
    CHECK(isnan(l.waiting));
    CHECK_NEAR(l.running, 3, 0);
}

/* vLLM's vllm:lora_requests_info: a gauge whose value is the time of its
 * last update; the newest sample holds the adapters active now. */
TEST(vllm_lora_requests_info_newest_sample)
{
    struct kvg_metrics_load l;
    const char *body = "# TYPE vllm:lora_requests_info gauge\n"
                       "vllm:lora_requests_info{max_lora=\"4\",running_lora_adapters=\"old\","
                       "waiting_lora_adapters=\"\"} 1.7e9\n"
                       "vllm:lora_requests_info{max_lora=\"4\",running_lora_adapters=\"sql,chat\","
                       "waiting_lora_adapters=\"math\"} 1.70000001e9\n"
                       "vllm:lora_requests_info{max_lora=\"4\",running_lora_adapters=\"older\","
                       "waiting_lora_adapters=\"\"} 1.6e9\n"
                       "vllm:num_requests_waiting{model_name=\"m\"} 1\n";
    CHECK_INT(parse_str(body, &l), 0);
    CHECK(l.known & KVG_METRICS_HAS_LORA);
    CHECK_STR(l.lora_active, "sql,chat,math");
    CHECK_INT(l.lora_max, 4);
    CHECK_INT(parse_str("vllm:num_requests_waiting 1\n", &l), 0);
    CHECK(!(l.known & KVG_METRICS_HAS_LORA));
    CHECK_STR(l.lora_active, "");
    /* Nothing active is known, and says so. */
    CHECK_INT(parse_str("vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\","
                        "waiting_lora_adapters=\"\"} 5\n",
                        &l),
              0);
    CHECK(l.known & KVG_METRICS_HAS_LORA);
    CHECK_STR(l.lora_active, "");
    CHECK_INT(l.lora_max, 2);
}
