/* Reports of kvgate bench: the JSON schema (one object per policy with the
 * seed's figures), the markdown table's column order, SVG plots that parse
 * as XML (checked with /usr/bin/python3's xml module), and the llm-d shape
 * checks on hand-made summaries. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "bench/report.h"
#include "support/test.h"

static struct kvg_bench_summary g_s[7];

/* Four llm-d rows shaped like the published ones, plus kvgate's. */
static void fill(void)
{
    memset(g_s, 0, sizeof g_s);
    const char *names[] = {"precise",  "estimated",   "load", "random",
                           "kv_aware", "cache_aware", "ghost"};
    const double p90[] = {0.5, 31, 95, 93, 0.4, 0.6, 0},
                 tok[] = {8730, 6944, 4266, 4429, 8900, 8000, 0};
    for (int i = 0; i < 7; i++) {
        struct kvg_bench_summary *s = &g_s[i];
        snprintf(s->policy, sizeof s->policy, "%s", names[i]);
        s->ttft_p90 = p90[i];
        s->ttft_mean = p90[i] / 2;
        s->ttft_p50 = p90[i] / 3;
        s->ttft_p99 = p90[i] * 2;
        s->output_tokens_per_s = tok[i];
        s->requests = 1000;
        s->completed = 1000;
        s->nstages = 3;
        for (int k = 0; k < 3; k++) {
            s->stage[k].rate = 10.0 * (k + 1);
            s->stage[k].secs = 20;
            s->stage[k].ttft_p50 = k ? p90[i] / 3 * k : 0; /* stage 0: a warm-up, no samples */
            s->stage[k].ttft_p90 = k ? p90[i] * k : 0;
            s->stage[k].output_tokens_per_s = tok[i] * (k + 1) / 3;
        }
    }
    g_s[6].status = KVG_ENOTFOUND;
    snprintf(g_s[6].note, sizeof g_s[6].note, "policy 'ghost' is not in this build");
}

static struct kvg_bench_report report(size_t n)
{
    struct kvg_bench_report r = {.title = "t <&> \"q\"",
                                 .scenario = "test",
                                 .mode = "offline",
                                 .command = "kvgate bench",
                                 .setup = "setup",
                                 .seed = 3,
                                 .s = g_s,
                                 .n = n};
    return r;
}

/* Writes via fn into a temporary file; returns its path (static). */
static const char *to_file(int (*fn)(const struct kvg_bench_report *, FILE *),
                           const struct kvg_bench_report *r)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/kvg-bench-report-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    int rc = fn(r, f);
    fclose(f);
    return rc ? NULL : path;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* 1 when python's XML parser accepts the file as an <svg> document. */
static int svg_ok(const char *path)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import sys,xml.etree.ElementTree as E; "
             "r=E.parse(sys.argv[1]).getroot(); sys.exit(0 if r.tag.endswith('svg') and "
             "len(r.findall('.//{http://www.w3.org/2000/svg}polyline'))>0 else 1)\" %s 2>/dev/null",
             path);
    return system(cmd) == 0;
}

TEST(json_schema)
{
    fill();
    struct kvg_bench_report r = report(7);
    const char *path = to_file(kvg_bench_report_json, &r);
    CHECK(path);
    cJSON *j = cJSON_Parse(slurp(path));
    unlink(path);
    CHECK(cJSON_IsArray(j));
    CHECK_INT(cJSON_GetArraySize(j), 7);
    const char *need[] = {"policy",
                          "ttft_p90_s",
                          "ttft_mean_s",
                          "output_tokens_per_s",
                          "ttft_p50_s",
                          "ttft_p99_s",
                          "itl_mean_s",
                          "requests_per_s",
                          "errors",
                          "queue_mean",
                          "queue_p90",
                          "queue_max",
                          "kv_usage_mean_pct",
                          "cache_hit_ratio",
                          "stages",
                          "scenario",
                          "mode",
                          "seed",
                          "status"};
    const cJSON *o;
    int i = 0;
    cJSON_ArrayForEach(o, j)
    {
        for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
            CHECK(cJSON_GetObjectItemCaseSensitive(o, need[k]));
        CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "policy")));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "ttft_p90_s")));
        CHECK_STR(cJSON_GetObjectItemCaseSensitive(o, "policy")->valuestring, g_s[i].policy);
        CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(o, "output_tokens_per_s")->valuedouble,
                   g_s[i].output_tokens_per_s, 1e-9);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "stages");
        CHECK_INT(cJSON_GetArraySize(st), i == 6 ? 3 : 3);
        CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(st, 1), "ttft_p90_s"));
        CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(st, 1), "kv_usage_mean_pct"));
        CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(st, 1), "queue_max"));
        i++;
    }
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(j, 6), "status")->valuestring,
              "not_run");
    cJSON_Delete(j);
}

TEST(markdown_seed_columns_first)
{
    fill();
    struct kvg_bench_report r = report(7);
    const char *path = to_file(kvg_bench_report_md, &r);
    CHECK(path);
    char *md = slurp(path);
    unlink(path);
    CHECK(strstr(md, "| policy | TTFT p90 (s) | output tok/s | TTFT mean (s) |"));
    CHECK(strstr(md, "| precise | 0.500 | 8730 |"));
    CHECK(strstr(md, "ghost | not run"));
    CHECK(strstr(md, "### The llm-d shape"));
    CHECK(strstr(md, "Command: `kvgate bench`"));
    CHECK(strstr(md, "### Engine queue (mean / max waiting requests per engine)"));
}

TEST(svg_well_formed)
{
    fill();
    struct kvg_bench_report r = report(7);
    const char *p1 = to_file(kvg_bench_svg_ttft, &r);
    CHECK(p1);
    CHECK(svg_ok(p1));
    CHECK(strstr(slurp(p1), "stroke-dasharray")); /* p50 lines */
    unlink(p1);
    const char *p2 = to_file(kvg_bench_svg_throughput, &r);
    CHECK(p2);
    CHECK(svg_ok(p2));
    unlink(p2);
    /* The check itself rejects broken XML (it can fail). */
    const char *p3 = "/tmp/kvg-bench-bad.svg";
    FILE *f = fopen(p3, "w");
    fputs("<svg xmlns=\"http://www.w3.org/2000/svg\"><polyline></svg>", f);
    fclose(f);
    CHECK(!svg_ok(p3));
    unlink(p3);
    /* No run at all: nothing to draw. */
    struct kvg_bench_report none = report(0);
    FILE *d = fopen("/dev/null", "w");
    CHECK_INT(kvg_bench_svg_ttft(&none, d), -EINVAL);
    fclose(d);
}

TEST(shape_checks)
{
    fill();
    FILE *f = fopen("/dev/null", "w");
    /* As published, with kv_aware better than precise on both: all pass. */
    CHECK_INT(kvg_bench_shape_check(g_s, 6, f), 0);
    /* precise only 1/10 of random: fails that one (kv_aware still wins). */
    g_s[0].ttft_p90 = 9.3;
    CHECK_INT(kvg_bench_shape_check(g_s, 6, f), 1);
    fill();
    g_s[0].output_tokens_per_s = 5000; /* < 1.6 x random */
    CHECK_INT(kvg_bench_shape_check(g_s, 6, f), 1);
    fill();
    g_s[4].output_tokens_per_s = 8731; /* a 0.01% / 4% "win" is a tie */
    g_s[4].ttft_p90 = 0.48;
    CHECK_INT(kvg_bench_shape_check(g_s, 6, f), 1);
    fill();
    g_s[2].ttft_p90 = 300; /* load-only far worse than random */
    CHECK_INT(kvg_bench_shape_check(g_s, 6, f), 1);
    /* Over 3+ seeds the noise is precise's own spread in the run: p90 0.49 to
     * 0.51 (4.1%), tokens/s 8700 to 8760 (0.69%). */
    fill();
    g_s[0].nseeds = 3;
    const double sp[] = {0.5, 0.51, 0.49}, sq[] = {8700, 8730, 8760};
    for (int k = 0; k < 3; k++) {
        g_s[0].seed_ttft_p90[k] = sp[k];
        g_s[0].seed_tok_s[k] = sq[k];
    }
    CHECK_INT(kvg_bench_shape_check(g_s, 6, f), 0); /* -20% / +1.9%: both beyond */
    g_s[4].output_tokens_per_s = 8780;              /* +0.57%: inside the spread */
    CHECK_INT(kvg_bench_shape_check(g_s, 6, f), 1);
    g_s[4].output_tokens_per_s = 8900;
    g_s[4].ttft_p90 = 0.53; /* +6% worse: a loss (and cache_aware, 0.6, is worse still) */
    FILE *t = tmpfile();
    CHECK_INT(kvg_bench_shape_check(g_s, 6, t), 1);
    char out[4096] = "";
    rewind(t);
    out[fread(out, 1, sizeof out - 1, t)] = 0;
    fclose(t);
    CHECK(strstr(out, "FAIL kvgate's best, kv_aware"));
    CHECK(strstr(out, "precise's spread over 3 seeds, 4.1% / 0.69%"));
    /* The oracle is a bound, not a kvgate policy: its win does not count
     * (cache_aware, the best left, loses), and the report states it. */
    fill();
    snprintf(g_s[4].policy, sizeof g_s[4].policy, "oracle");
    t = tmpfile();
    CHECK_INT(kvg_bench_shape_check(g_s, 6, t), 1);
    rewind(t);
    out[fread(out, 1, sizeof out - 1, t)] = 0;
    fclose(t);
    CHECK(strstr(out, "kvgate's best, cache_aware"));
    CHECK(strstr(out, "BOUND the oracle"));
    CHECK(strstr(out, "-20.0% vs precise"));
    /* Without the four llm-d configurations there is nothing to check. */
    CHECK_INT(kvg_bench_shape_check(g_s + 1, 5, f), -1);
    fclose(f);
}
