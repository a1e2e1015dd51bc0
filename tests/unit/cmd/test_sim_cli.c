/* kvgate sim's option table (src/cmd/sim.c): the defaults are
 * kvg_simsrv_opts_default's, enumerations and ranges refuse what they do not
 * know and name the flag, --metrics-fail-after's S:M, and --help lists the
 * flavors, the other choices and the profiles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "cmd/cmd.h"
#include "sim/sim.h"
#include "simsrv/simsrv.h"
#include "support/test.h"

static int parse(struct kvg_simsrv_opts *o, char *err, const char *const *args, int n)
{
    char *argv[32];
    argv[0] = (char *)"sim";
    for (int i = 0; i < n; i++) argv[i + 1] = (char *)args[i];
    err[0] = 0;
    return kvg_cmd_sim_parse(o, n + 1, argv, err, 512);
}

TEST(defaults_are_the_engines)
{
    struct kvg_simsrv_opts o, d;
    char err[512];
    kvg_simsrv_opts_default(&d);
    CHECK_INT(parse(&o, err, NULL, 0), 0);
    CHECK_INT(memcmp(&o, &d, sizeof o), 0);
    CHECK_STR(o.host, "127.0.0.1");
    CHECK_INT(o.port, 8000);
    CHECK_INT(o.disconnect_after, -1);
    CHECK(o.metrics_after_s < 0);
    CHECK_INT(o.side_channel_port, -1);
}

TEST(every_kind_of_flag)
{
    struct kvg_simsrv_opts o;
    char err[512];
    const char *a[] = {"--port",
                       "9001",
                       "--model",
                       "m",
                       "--flavor",
                       "sglang",
                       "--role",
                       "prefill",
                       "--block-size",
                       "16",
                       "--kv-capacity-tokens",
                       "1_000_000",
                       "--speed",
                       "50",
                       "--metrics-mode",
                       "no-kv",
                       "--kv-events-encoding",
                       "map",
                       "--kv-load-failure-policy",
                       "recompute",
                       "--disconnect-after-tokens",
                       "7",
                       "--log-level",
                       "warn",
                       "--side-channel-port",
                       "0",
                       "--seed=18446744073709551615"};
    CHECK_INT(parse(&o, err, a, 27), 0);
    CHECK_INT(o.port, 9001);
    CHECK_STR(o.model, "m");
    CHECK_INT(o.flavor, KVG_SIMSRV_FLAVOR_SGLANG);
    CHECK_INT(o.role, KVG_SIMSRV_ROLE_PREFILL);
    CHECK_INT(o.block_size, 16);
    CHECK(o.kv_capacity_tokens == 1000000);
    CHECK_NEAR(o.speed, 50, 0);
    CHECK_INT(o.metrics_mode, KVG_SIMSRV_METRICS_NO_KV);
    CHECK_INT(o.kv_events_map, 1);
    CHECK_INT(o.kv_load_fail, 0);
    CHECK_INT(o.disconnect_after, 7);
    CHECK_INT(o.log_level, KVG_LOG_WARN);
    CHECK_INT(o.side_channel_port, 0);
    CHECK(o.seed == UINT64_MAX);
}

TEST(refusals_name_the_flag_and_what_it_expects)
{
    struct kvg_simsrv_opts o;
    char err[512];
    const char *f[] = {"--flavor", "tgi"};
    CHECK_INT(parse(&o, err, f, 2), KVG_ECONFIG);
    CHECK_STR(err, "--flavor: expects one of vllm, sglang, llamacpp, got 'tgi'");
    const char *r[] = {"--role", "both", "--role", "mixed"};
    CHECK_INT(parse(&o, err, r, 4), KVG_ECONFIG);
    CHECK_STR(err, "--role: expects one of both, prefill, decode, encode, got 'mixed'");
    const char *p[] = {"--port", "70000"};
    CHECK_INT(parse(&o, err, p, 2), KVG_ECONFIG);
    CHECK_STR(err, "--port: expects an integer 0..65535, got '70000'");
    const char *s[] = {"--speed", "0"};
    CHECK_INT(parse(&o, err, s, 2), KVG_ECONFIG);
    CHECK_STR(err, "--speed: expects a number 0.001..1000000, got '0'");
    const char *d[] = {"--dp-size", "1000"};
    CHECK_INT(parse(&o, err, d, 2), KVG_ECONFIG);
    CHECK(strstr(err, "--dp-size: expects an integer 0..") == err);
    const char *k[] = {"--disconnect-after-tokens", "-1"};
    CHECK_INT(parse(&o, err, k, 2), KVG_ECONFIG);
    CHECK(strstr(err, "--disconnect-after-tokens: expects an integer") == err);
    const char *u[] = {"--flavour", "vllm"};
    CHECK_INT(parse(&o, err, u, 2), KVG_ECONFIG);
    CHECK_STR(err, "unknown flag '--flavour' (did you mean --flavor?)");
    const char *m[] = {"--model"};
    CHECK_INT(parse(&o, err, m, 1), KVG_ECONFIG);
    CHECK_STR(err, "--model: needs a value");
}

TEST(metrics_fail_after_takes_seconds_and_a_failing_mode)
{
    struct kvg_simsrv_opts o;
    char err[512];
    const char *a[] = {"--metrics-fail-after", "2.5:garbage"};
    CHECK_INT(parse(&o, err, a, 2), 0);
    CHECK_NEAR(o.metrics_after_s, 2.5, 0);
    CHECK_INT(o.metrics_later, KVG_SIMSRV_METRICS_GARBAGE);
    const char *bad[][2] = {{"--metrics-fail-after", "2:full"},
                            {"--metrics-fail-after", "2"},
                            {"--metrics-fail-after", "-1:none"},
                            {"--metrics-fail-after", "x:none"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_INT(parse(&o, err, bad[i], 2), KVG_ECONFIG);
        CHECK(strstr(err, "--metrics-fail-after: expects SECS:none|error|garbage") == err);
    }
}

TEST(help_lists_defaults_choices_and_profiles)
{
    struct kvg_simsrv_opts o;
    char err[512];
    const char *h[] = {"--port", "nonsense", "--help"};
    CHECK_INT(parse(&o, err, h, 3), 1); /* --help wins; nothing else is parsed */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    kvg_cmd_sim_usage(f);
    fclose(f);
    CHECK(strstr(text, "--flavor vllm|sglang|llamacpp") != NULL);
    CHECK(strstr(text, "(default: vllm)") != NULL);
    CHECK(strstr(text, "--role both|prefill|decode|encode") != NULL);
    CHECK(strstr(text, "--metrics-mode full|no-kv|waiting-only|none|error|garbage") != NULL);
    CHECK(strstr(text, "--kv-load-failure-policy recompute|fail") != NULL);
    CHECK(strstr(text, "listen port (default: 8000)") != NULL);
    CHECK(strstr(text, "(default: 480)") != NULL);
    CHECK(strstr(text, "fault injection:") != NULL);
    CHECK(strstr(text, "\nprofiles:\n") != NULL);
    for (size_t i = 0; kvg_sim_profile_at(i); i++) {
        char line[128];
        snprintf(line, sizeof line, "\n  %s ", kvg_sim_profile_at(i)->name);
        CHECK(strstr(text, line) != NULL);
    }
    free(text);
}
