/* kvgate: one binary, one subcommand per job. This file only dispatches; each
 * subcommand lives in its part (serve: serve, sim: sim, ...). */
#include <stdio.h>
#include <string.h>

#include "autoscaled/autoscaled.h"
#include "bench/bench.h"
#include "gateway/keys.h"
#include "serve/serve.h"
#include "sim/http_sim.h"
#include "tokenizer/tokenizer.h"
#include "ui/observe.h"

#define KVG_VERSION "0.1.0"

struct subcommand {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *help;
};

static int version_main(int argc, char **argv)
{
    printf("kvgate %s\n", KVG_VERSION);
    return 0;
}

static const struct subcommand commands[] = {
    {"serve", kvg_serve_main, "run the gateway and router in front of engines"},
    {"autoscale", kvg_autoscaled_main,
     "the autoscaler as its own process: signals over HTTP, a Redis lease, actuators"},
    {"bench", kvg_bench_main, "measure routing policies: offline simulation or live HTTP load"},
    {"keys", kvg_keys_cli_main, "API keys: hash KEY prints the hash: line for the keys file"},
    {"sim", kvg_sim_main, "run a simulated inference engine (vLLM's API, metrics, KV events)"},
    {"observe", kvg_ui_observe_main,
     "what every gateway replica says of each worker (GET /serving)"},
    {"tokenize", kvg_tok_cli_main, "tokenize text or render and tokenize a chat request"},
    {"version", version_main, "print the version"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n`kvgate <command> --help` describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) return version_main(argc, argv);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "kvgate: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
