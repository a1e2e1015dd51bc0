/* kvgate bench's flags: scenario presets, overrides after them wherever
 * they stand, stage lists, and refusals; the scenarios' option tables
 * (suggestions, errors naming the flag, --help, unknown names) and their
 * shared output flags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "base/err.h"
#include "bench/routing/routing.h"
#include "support/test.h"

static int parse(struct kvg_bench_cfg *c, const char *const *args, int n)
{
    char *argv[64];
    argv[0] = (char *)"bench";
    for (int i = 0; i < n; i++) argv[i + 1] = (char *)args[i];
    FILE *keep = stderr;
    stderr = fopen("/dev/null", "w"); /* refusals print why; not here */
    int rc = kvg_cmd_bench_parse(c, n + 1, argv);
    fclose(stderr);
    stderr = keep;
    return rc;
}

TEST(llmd73_preset)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--scenario", "llmd-73"};
    CHECK_INT(parse(&c, a, 2), 0);
    CHECK_STR(c.scenario, "llmd-73");
    CHECK_INT(c.mode, KVG_BENCH_OFFLINE);
    CHECK_INT(c.des.engines, 8);
    CHECK_INT(c.des.profile.block_size, 64);
    CHECK_INT(c.des.profile.kv_capacity_tokens, 307328);
    CHECK_INT(c.des.wl.groups, 150);
    CHECK_INT(c.des.wl.prompts_per_group, 5);
    CHECK_INT(c.des.wl.system_len, 6000);
    CHECK_INT(c.des.wl.question_len, 1200);
    CHECK_INT(c.des.wl.nstages, 17);
    CHECK_INT(c.des.wl.warmup, 1);
    CHECK_NEAR(c.des.wl.stage[0].rate, 15, 0);
    CHECK_NEAR(c.des.wl.stage[0].secs, 50, 0);
    CHECK_NEAR(c.des.wl.stage[16].rate, 60, 0);
    double total = 0;
    for (size_t i = 0; i < c.des.wl.nstages; i++) total += c.des.wl.stage[i].secs;
    CHECK_NEAR(total, 502, 0);
    CHECK_INT(c.npolicies, 7); /* llm-d's four, then kvgate's three */
    CHECK_STR(c.policies[0], "precise");
    CHECK_STR(c.policies[6], "prefix_affinity");
    CHECK_INT(c.npub, 4);
}

TEST(overrides_after_the_scenario_wherever_they_stand)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--output-len",   "1000",   "--scenario", "llmd-73",   "--policies",
                       "random,precise", "--seed", "9",          "--profile", "qwen3-32b-h100-tp2"};
    CHECK_INT(parse(&c, a, 10), 0);
    CHECK_INT(c.des.wl.output_len, 1000);
    CHECK_INT(c.npolicies, 2);
    CHECK_STR(c.policies[1], "precise");
    CHECK_INT(c.des.seed, 9);
    CHECK_INT(c.des.wl.seed, 9);
    CHECK_STR(c.des.profile.name, "qwen3-32b-h100-tp2");
}

TEST(stage_lists)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--stages", "15x50,c8x30,2.5x10", "--warmup-stages", "1"};
    CHECK_INT(parse(&c, a, 4), 0);
    CHECK_INT(c.des.wl.nstages, 3);
    CHECK_NEAR(c.des.wl.stage[0].rate, 15, 0);
    CHECK_INT(c.des.wl.stage[1].conc, 8);
    CHECK_NEAR(c.des.wl.stage[1].secs, 30, 0);
    CHECK_NEAR(c.des.wl.stage[2].rate, 2.5, 0);
    CHECK_INT(c.des.wl.warmup, 1);
    const char *bad[][2] = {{"--stages", "15"},
                            {"--stages", "x5"},
                            {"--stages", "5x0"},
                            {"--stages", "c1.5x4"},
                            {"--stages", "5x5;3x1"}};
    for (int i = 0; i < 5; i++) CHECK_INT(parse(&c, bad[i], 2), -1);
}

TEST(refusals)
{
    static struct kvg_bench_cfg c;
    const char *a1[] = {"--scenario", "nope"};
    CHECK_INT(parse(&c, a1, 2), -1);
    const char *a2[] = {"--bogus", "1"};
    CHECK_INT(parse(&c, a2, 2), -1);
    const char *a3[] = {"--mode", "live"}; /* no target, nothing spawned */
    CHECK_INT(parse(&c, a3, 2), -1);
    const char *a4[] = {"--engines", "0"};
    CHECK_INT(parse(&c, a4, 2), -1);
    const char *a5[] = {"--seed"};
    CHECK_INT(parse(&c, a5, 1), -1);
    const char *a6[] = {"--profile", "no-such-gpu"};
    CHECK_INT(parse(&c, a6, 2), -1);
    const char *a7[] = {"--mode", "live", "--spawn-sims", "2"};
    CHECK_INT(parse(&c, a7, 4), 0);
    CHECK(c.des.wl.printable); /* live text is the byte tokenizer's ids */
    CHECK_INT(c.des.engines, 2);
}

TEST(mini_is_live_and_offline_able)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--scenario", "llmd-73-mini"};
    CHECK_INT(parse(&c, a, 2), 0);
    CHECK_INT(c.mode, KVG_BENCH_LIVE);
    CHECK_INT(c.spawn_sims, 4);
    CHECK(c.speed > 1);
    const char *b[] = {"--scenario", "llmd-73-mini", "--mode", "offline"};
    CHECK_INT(parse(&c, b, 4), 0);
    CHECK_INT(c.mode, KVG_BENCH_OFFLINE);
    CHECK_INT(c.des.engines, 4);
}

/* The agent workload's flags: its API, scale and tokenizer; its bodies are
 * rendered offline and left to the gateway live; the model named in them is
 * --model; a tokenizer for another workload is a mistake. */
TEST(agent_flags)
{
    static struct kvg_bench_cfg c;
    const char *a[] = {"--workload",    "agent", "--agent-api", "messages",
                       "--agent-scale", "0.5",   "--tokenizer", "/x/tokenizer.json",
                       "--model",       "coder"};
    CHECK_INT(parse(&c, a, 10), 0);
    CHECK_INT(c.des.wl.kind, KVG_BENCH_WL_AGENT);
    CHECK_INT(c.des.wl.agent_api, KVG_BENCH_AGENT_MESSAGES);
    CHECK_NEAR(c.des.wl.agent_scale, 0.5, 1e-9);
    CHECK_STR(c.des.wl.tokenizer, "/x/tokenizer.json");
    CHECK_STR(c.des.wl.model, "coder");
    CHECK(c.des.wl.agent_render);
    const char *b[] = {"--workload", "agent", "--mode", "live", "--spawn-sims", "2"};
    CHECK_INT(parse(&c, b, 6), 0);
    CHECK(!c.des.wl.agent_render);
    CHECK_INT(c.des.wl.agent_api, KVG_BENCH_AGENT_RESPONSES);
    const char *d[] = {"--workload", "chat", "--tokenizer", "/x/tokenizer.json"};
    CHECK_INT(parse(&c, d, 4), -1);
    const char *e[] = {"--workload", "agent", "--agent-api", "grpc"};
    CHECK_INT(parse(&c, e, 4), -1);
}

/* The command's stdout and stderr (the first cap - 1 bytes of each) and its
 * status, for the scenarios' own entry points. */
struct capture {
    char out[16384], err[4096];
};

static int run(int (*main_fn)(int, char **), const char *const *args, int n, struct capture *cap)
{
    char *argv[64];
    argv[0] = (char *)"bench";
    for (int i = 0; i < n; i++) argv[i + 1] = (char *)args[i];
    FILE *o = tmpfile(), *e = tmpfile();
    if (!o || !e) return -100;
    FILE *keep_out = stdout, *keep_err = stderr;
    stdout = o;
    stderr = e;
    int rc = main_fn(n + 1, argv);
    fflush(o);
    fflush(e);
    stdout = keep_out;
    stderr = keep_err;
    rewind(o);
    rewind(e);
    size_t k = fread(cap->out, 1, sizeof cap->out - 1, o);
    cap->out[k] = 0;
    k = fread(cap->err, 1, sizeof cap->err - 1, e);
    cap->err[k] = 0;
    fclose(o);
    fclose(e);
    return rc;
}

/* kvg_cmd_bench_parse into parse_cfg, as an entry point for run(). */
static struct kvg_bench_cfg *parse_cfg;

static int parse_main(int argc, char **argv)
{
    return kvg_cmd_bench_parse(parse_cfg, argc, argv);
}

static int parse_err(struct kvg_bench_cfg *c, const char *const *args, int n, struct capture *cap)
{
    parse_cfg = c;
    return run(parse_main, args, n, cap);
}

TEST(unknown_flag_suggests_the_nearest)
{
    static struct kvg_bench_cfg c;
    static struct capture cap;
    const char *a[] = {"--polices", "random"};
    CHECK_INT(parse_err(&c, a, 2, &cap), -1);
    CHECK(strstr(cap.err, "unknown flag '--polices'"));
    CHECK(strstr(cap.err, "did you mean --policies?"));
    const char *b[] = {"--scenario", "pd", "--requets", "5"};
    CHECK_INT(run(kvg_cmd_bench_main, b, 4, &cap), 2);
    CHECK(strstr(cap.err, "did you mean --requests?"));
    const char *d[] = {"--scenario", "diurnal", "--planer", "static"};
    CHECK_INT(run(kvg_cmd_bench_main, d, 4, &cap), 2);
    CHECK(strstr(cap.err, "did you mean --planners?"));
    const char *s[] = {"--suite", "routing", "--smoek"};
    CHECK_INT(run(kvg_cmd_bench_main, s, 3, &cap), 2);
    CHECK(strstr(cap.err, "did you mean --smoke?"));
}

TEST(bad_values_name_the_flag_and_what_it_expects)
{
    static struct kvg_bench_cfg c;
    static struct capture cap;
    const char *a[] = {"--engines", "zero"};
    CHECK_INT(parse_err(&c, a, 2, &cap), -1);
    CHECK(strstr(cap.err, "--engines: expects an integer 1..1024, got 'zero'"));
    const char *b[] = {"--mode", "offlin"};
    CHECK_INT(parse_err(&c, b, 2, &cap), -1);
    CHECK(strstr(cap.err, "--mode: expects one of offline, live, got 'offlin'"));
    const char *p[] = {"--scenario", "pd", "--requests", "0"};
    CHECK_INT(run(kvg_cmd_bench_main, p, 4, &cap), 2);
    CHECK(strstr(cap.err, "--requests: expects an integer"));
    const char *d[] = {"--scenario", "diurnal", "--mean-rate", "-1"};
    CHECK_INT(run(kvg_cmd_bench_main, d, 4, &cap), 2);
    CHECK(strstr(cap.err, "--mean-rate: expects a number > 0, got '-1'"));
    const char *q[] = {"--scenario", "diurnal", "--queue-preset", "llmd"};
    CHECK_INT(run(kvg_cmd_bench_main, q, 4, &cap), 2);
    CHECK(strstr(cap.err, "--queue-preset: expects one of llm-d, waiting"));
    const char *s[] = {"--suite", "routing", "--seeds", "0"};
    CHECK_INT(run(kvg_cmd_bench_main, s, 4, &cap), 2);
    CHECK(strstr(cap.err, "--seeds: expects an integer 1..16, got '0'"));
}

TEST(unknown_names_are_errors_naming_the_known_ones)
{
    static struct kvg_bench_cfg c;
    static struct capture cap;
    const char *w[] = {"--workload", "chta"};
    CHECK_INT(parse_err(&c, w, 2, &cap), -1);
    CHECK(strstr(cap.err,
                 "--workload: expects one of shared_prefix, chat, trace, agent, got 'chta'"));
    const char *p[] = {"--policies", "random,randm"};
    CHECK_INT(parse_err(&c, p, 2, &cap), -1);
    CHECK(strstr(cap.err, "unknown policy 'randm'"));
    CHECK(strstr(cap.err, "prefix_affinity"));
    const char *o[] = {"--policies", "random,oracle"}; /* offline's bound */
    CHECK_INT(parse_err(&c, o, 2, &cap), 0);
    const char *l[] = {"--mode", "live", "--spawn-sims", "2", "--policies", "oracle"};
    CHECK_INT(parse_err(&c, l, 6, &cap), -1);
    /* Against a --target the names only label what runs there. */
    const char *t[] = {"--mode", "live", "--target", "http://127.0.0.1:9", "--policies", "mine"};
    CHECK_INT(parse_err(&c, t, 6, &cap), 0);
    CHECK_STR(c.policies[0], "mine");
    const char *f[] = {"--profile", "h100"};
    CHECK_INT(parse_err(&c, f, 2, &cap), -1);
    CHECK(strstr(cap.err, "qwen3-32b-h100-tp2"));
    const char *sw[] = {"--suite", "routing", "--workloads", "chat,chta"};
    CHECK_INT(run(kvg_cmd_bench_main, sw, 4, &cap), 2);
    CHECK(strstr(cap.err, "unknown workload 'chta'"));
    CHECK(strstr(cap.err, "salted-tenants"));
    const char *sp[] = {"--suite", "routing", "--policies", "precise,nope"};
    CHECK_INT(run(kvg_cmd_bench_main, sp, 4, &cap), 2);
    CHECK(strstr(cap.err, "unknown policy 'nope'"));
    const char *dp[] = {"--scenario", "diurnal", "--planners", "static,kvgat"};
    CHECK_INT(run(kvg_cmd_bench_main, dp, 4, &cap), 2);
    CHECK(strstr(cap.err, "unknown planner 'kvgat'"));
    const char *pp[] = {"--scenario", "pd", "--profile", "nope"};
    CHECK_INT(run(kvg_cmd_bench_main, pp, 4, &cap), 2);
    CHECK(strstr(cap.err, "--profile: expects one of"));
    const char *sc[] = {"--scenario", "llmd73"};
    CHECK_INT(run(kvg_cmd_bench_main, sc, 2, &cap), 2);
    CHECK(strstr(cap.err, "expects one of llmd-73, llmd-73-mini, smoke, pd, diurnal"));
}

TEST(help_lists_sections_and_enumerations)
{
    static struct capture cap;
    const char *r[] = {"--help"};
    CHECK_INT(run(kvg_cmd_bench_main, r, 1, &cap), 0);
    CHECK(strstr(cap.out, "\noutput:\n"));
    CHECK(strstr(cap.out, "\nworkload:\n"));
    CHECK(strstr(cap.out, "\nengines:\n"));
    CHECK(strstr(cap.out, "\npolicy options:\n"));
    CHECK(strstr(cap.out, "--workload shared_prefix|chat|trace"));
    CHECK(strstr(cap.out, "--kv-path none|direct|wire"));
    CHECK(strstr(cap.out, "(default: direct)"));
    CHECK(strstr(cap.out, "qwen3-32b-h100-tp2-roofline")); /* the profiles */
    CHECK(strstr(cap.out, "session_affinity"));            /* the policies */
    const char *p[] = {"--scenario", "pd", "--help"};
    CHECK_INT(run(kvg_cmd_bench_main, p, 3, &cap), 0);
    CHECK(strstr(cap.out, "--requests N"));
    CHECK(strstr(cap.out, "--json FILE"));
    CHECK(strstr(cap.out, "(default: stdout)"));
    const char *d[] = {"--scenario", "diurnal-pd", "--help"};
    CHECK_INT(run(kvg_cmd_bench_main, d, 3, &cap), 0);
    CHECK(strstr(cap.out, "--queue-preset llm-d|waiting"));
    CHECK(strstr(cap.out, "diurnal-pd experiments"));
    CHECK(strstr(cap.out, "--out FILE"));
    const char *s[] = {"--suite", "routing", "--help"};
    CHECK_INT(run(kvg_cmd_bench_main, s, 3, &cap), 0);
    CHECK(strstr(cap.out, "--suite routing"));
    CHECK(strstr(cap.out, "salted-tenants")); /* the workloads */
    CHECK(strstr(cap.out, "--out FILE"));
}

/* The first bytes of a file ("" when it cannot be read). */
static void head_of(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(out, 1, cap - 1, f) : 0;
    out[k] = 0;
    if (f) fclose(f);
}

/* Each scenario, for real on a tiny setup: --json FILE gets the rows,
 * --out FILE the markdown report, and nothing else is written. */
TEST(every_scenario_takes_json_and_out)
{
    static struct capture cap;
    char dir[] = "/tmp/kvg-bench-cli-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char json[64], md[64], head[64];
    snprintf(json, sizeof json, "%s/rows.json", dir);
    snprintf(md, sizeof md, "%s/report.md", dir);
    const char *routing[] = {"--scenario", "smoke",  "--policies", "random", "--stages", "20x1",
                             "--quiet",    "--json", json,         "--out",  md};
    const char *pd[] = {"--scenario", "pd",    "--requests", "4",      "--json",
                        json,         "--out", md,           "--quiet"};
    const char *diurnal[] = {"--scenario", "diurnal",     "--planners", "static",     "--day-secs",
                             "600",        "--mean-rate", "1",          "--knee-rps", "1",
                             "--quiet",    "--json",      json,         "--out",      md};
    const char *suite[] = {"--suite",     "routing", "--smoke",    "--seeds", "1",
                           "--workloads", "chat",    "--policies", "random",  "--quiet",
                           "--json",      json,      "--out",      md};
    const char *agents[] = {"--suite",
                            "routing",
                            "--smoke",
                            "--seeds",
                            "1",
                            "--workloads",
                            "agentic-responses,agentic-messages",
                            "--policies",
                            "prefix_affinity",
                            "--quiet",
                            "--json",
                            json,
                            "--out",
                            md};
    struct {
        const char *const *args;
        int n;
        const char *md_mark;
    } cases[] = {{routing, 11, "| random |"},
                 {pd, 9, "# Prefill/decode"},
                 {diurnal, 15, "| static |"},
                 {suite, 14, "kvgate bench --suite routing"},
                 {agents, 14, "### agentic-messages"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        remove(json);
        remove(md);
        CHECK_INT(run(kvg_cmd_bench_main, cases[i].args, cases[i].n, &cap), 0);
        head_of(json, head, sizeof head);
        CHECK(head[0] == '[');
        static char report[16384];
        head_of(md, report, sizeof report);
        CHECK(strstr(report, cases[i].md_mark));
    }
    /* pd's report without --out is stdout, not a file under the working directory. */
    const char *pd_stdout[] = {"--scenario", "pd", "--requests", "4"};
    CHECK_INT(run(kvg_cmd_bench_main, pd_stdout, 4, &cap), 0);
    CHECK(strstr(cap.out, "# Prefill/decode"));
    remove(json);
    remove(md);
    CHECK_INT(rmdir(dir), 0);
}
