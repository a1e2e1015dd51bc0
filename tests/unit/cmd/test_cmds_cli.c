/* The option tables of kvgate autoscale, observe and tokenize (src/cmd/):
 * defaults (autoscale listens on 127.0.0.1), required flags, lists up to
 * the next flag, exclusive output formats. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "cmd/cmd.h"
#include "support/test.h"

#define ARGV(name, ...)                                                                            \
    char *argv[] = {(char *)name, __VA_ARGS__};                                                    \
    int argc = (int)(sizeof argv / sizeof *argv)

TEST(autoscale_defaults_and_flags)
{
    struct kvg_cmd_autoscale_opts o;
    char err[512];
    {
        ARGV("autoscale", "--config", "as.yaml");
        CHECK_INT(kvg_cmd_autoscale_parse(&o, argc, argv, err, sizeof err), 0);
        CHECK_STR(o.config, "as.yaml");
        CHECK_STR(o.host, "127.0.0.1"); /* not every interface unless asked */
        CHECK_INT(o.port, 9090);
        CHECK_INT(o.dry_run, 0);
        CHECK_STR(o.id, "");
    }
    {
        ARGV("autoscale", "--dry-run", "--host", "0.0.0.0", "--port=0", "--id", "r1", "--config",
             "x");
        CHECK_INT(kvg_cmd_autoscale_parse(&o, argc, argv, err, sizeof err), 0);
        CHECK_INT(o.dry_run, 1);
        CHECK_STR(o.host, "0.0.0.0");
        CHECK_INT(o.port, 0);
        CHECK_STR(o.id, "r1");
    }
    {
        ARGV("autoscale", "--port", "1");
        CHECK_INT(kvg_cmd_autoscale_parse(&o, argc, argv, err, sizeof err), KVG_ECONFIG);
        CHECK_STR(err, "--config FILE is required");
    }
    {
        ARGV("autoscale", "--config", "x", "--port", "65536");
        CHECK_INT(kvg_cmd_autoscale_parse(&o, argc, argv, err, sizeof err), KVG_ECONFIG);
        CHECK_STR(err, "--port: expects an integer 0..65535, got '65536'");
    }
}

TEST(observe_lists_and_formats)
{
    struct kvg_cmd_observe_opts o;
    char err[512];
    {
        ARGV("observe", "--routers", "http://a", "http://b", "--workers", "http://w", "--json",
             "--routers", "http://c");
        CHECK_INT(kvg_cmd_observe_parse(&o, argc, argv, err, sizeof err), 0);
        CHECK_INT(o.routers.n, 3); /* a second --routers adds, as it always has */
        CHECK_STR(o.routers.v[2], "http://c");
        CHECK_INT(o.workers.n, 1);
        CHECK_INT(o.json, 1);
        CHECK_INT(o.prometheus, 0);
        kvg_cmd_observe_free(&o);
    }
    {
        ARGV("observe", "--routers", "http://a", "--json", "--prometheus");
        CHECK_INT(kvg_cmd_observe_parse(&o, argc, argv, err, sizeof err), KVG_ECONFIG);
        CHECK_STR(err, "--json and --prometheus are exclusive");
        kvg_cmd_observe_free(&o);
    }
    {
        ARGV("observe", "--workers", "http://w");
        CHECK_INT(kvg_cmd_observe_parse(&o, argc, argv, err, sizeof err), KVG_ECONFIG);
        CHECK_STR(err, "--routers URL... is required");
        kvg_cmd_observe_free(&o);
    }
    {
        ARGV("observe", "--routers", "http://a", "--json", "stray");
        CHECK_INT(kvg_cmd_observe_parse(&o, argc, argv, err, sizeof err), KVG_ECONFIG);
        CHECK(strstr(err, "unexpected argument 'stray'") == err);
        kvg_cmd_observe_free(&o);
    }
    char *many[70];
    many[0] = (char *)"observe";
    many[1] = (char *)"--routers";
    for (int i = 2; i < 70; i++) many[i] = (char *)"http://r";
    CHECK_INT(kvg_cmd_observe_parse(&o, 68, many, err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--routers: at most 64 values");
    kvg_cmd_observe_free(&o);
}

TEST(tokenize_flags)
{
    struct kvg_cmd_tokenize_opts o;
    char err[512];
    {
        ARGV("tokenize", "--tokenizer", "builtin:bytes", "--chat", "--render", "--jsonl",
             "--add-special-tokens", "--chat-template", "t.jinja");
        CHECK_INT(kvg_cmd_tokenize_parse(&o, argc, argv, err, sizeof err), 0);
        CHECK_STR(o.tokenizer, "builtin:bytes");
        CHECK_STR(o.chat_template, "t.jinja");
        CHECK_STR(o.tokenizer_config, "");
        CHECK_INT(o.chat + o.render + o.jsonl + o.add_special_tokens, 4);
    }
    {
        ARGV("tokenize", "--chat");
        CHECK_INT(kvg_cmd_tokenize_parse(&o, argc, argv, err, sizeof err), KVG_ECONFIG);
        CHECK_STR(err, "--tokenizer is required");
    }
    {
        ARGV("tokenize", "--tokeniser", "x");
        CHECK_INT(kvg_cmd_tokenize_parse(&o, argc, argv, err, sizeof err), KVG_ECONFIG);
        CHECK_STR(err, "unknown flag '--tokeniser' (did you mean --tokenizer?)");
    }
    {
        ARGV("tokenize", "-h");
        CHECK_INT(kvg_cmd_tokenize_parse(&o, argc, argv, err, sizeof err), 1);
    }
}
