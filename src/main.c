/* kvgate: one binary, one subcommand per job. This file only dispatches; each
 * command's flags and entry point are in src/cmd/ (cmd/cmd.h). */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"

static const struct kvg_cmd_entry commands[] = {
    {"serve", kvg_cmd_serve_main, "run the gateway and router in front of engines"},
    {"autoscale", kvg_cmd_autoscale_main,
     "the autoscaler as its own process: signals over HTTP, a Redis lease, actuators"},
    {"bench", kvg_cmd_bench_main, "measure routing policies: offline simulation or live HTTP load"},
    {"keys", kvg_cmd_keys_main, "API keys: hash KEY prints the hash: line for the keys file"},
    {"sim", kvg_cmd_sim_main, "run a simulated inference engine (vLLM's API, metrics, KV events)"},
    {"observe", kvg_cmd_observe_main,
     "what every gateway replica says of each worker (GET /serving)"},
    {"tokenize", kvg_cmd_tokenize_main, "tokenize text or render and tokenize a chat request"},
    {"version", kvg_cmd_version_main, "print the version and the git commit it was built from"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n`kvgate <command> --help` describes a command's options; `kvgate help --man`\n"
               "prints them all as the man page kvgate(1).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") && argc == 3 && !strcmp(argv[2], "--man"))
        return kvg_cmd_man(commands, sizeof commands / sizeof commands[0], stdout);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) return kvg_cmd_version_main(argc, argv);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "kvgate: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
