/* kvgate's commands: one file each in src/cmd/, holding the command's flags
 * and its entry point; src/main.c dispatches on argv[1]. A command parses its
 * arguments and hands a configuration to the part that does the work; no
 * part under src/ other than this folder reads argv.
 *
 * Each entry point gets argv with argv[0] the command's name and returns the
 * process exit status: 0 done, 1 failed, 2 bad usage. */
#ifndef KVG_CMD_CMD_H
#define KVG_CMD_CMD_H

#include <stddef.h>
#include <stdio.h>

#include "base/opt.h"

struct kvg_bench_cfg;
struct kvg_serve_config;
struct kvg_simsrv_opts;

int kvg_cmd_serve_main(int argc, char **argv);
/* serve's command line (argv[0] "serve") onto c, --config read first: 0, 1
 * when --help was printed, or KVG_ECONFIG / -ENOMEM with err set. */
int kvg_cmd_serve_parse(struct kvg_serve_config *c, int argc, char **argv, char *err,
                        size_t errlen);
void kvg_cmd_serve_usage(void);
int kvg_cmd_sim_main(int argc, char **argv);
int kvg_cmd_autoscale_main(int argc, char **argv);
int kvg_cmd_keys_main(int argc, char **argv);
int kvg_cmd_tokenize_main(int argc, char **argv);
int kvg_cmd_observe_main(int argc, char **argv);
int kvg_cmd_version_main(int argc, char **argv);
/* The release ("0.1.0"), the commit it was built from and that commit's
 * date ("" when built outside a git checkout). Static strings. */
const char *kvg_cmd_version(void);
const char *kvg_cmd_version_commit(void);
const char *kvg_cmd_version_date(void);

/* A command as src/main.c dispatches to it. */
struct kvg_cmd_entry {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *help; /* one line */
};
/* `kvgate help --man`: writes kvgate.1 (roff) to out, made of each command's
 * own --help (cmds[0..n), their option tables rendered as roff by
 * base/opt.h). 0, or 1 when a command's help could not be gathered. */
int kvg_cmd_man(const struct kvg_cmd_entry *cmds, size_t n, FILE *out);

/* The parse functions below fill their struct from its defaults and argv
 * (argv[0] the command's name): 0, 1 for --help or -h (nothing printed:
 * the _usage function prints it), or KVG_ECONFIG with a one-line reason
 * naming the flag in err. Their list values are freed with the _free
 * function. */

/* After a _parse that returned rc: -1 to go on, else the exit status (0
 * with usage printed for --help, 2 with "kvgate NAME: err" on stderr). */
int kvg__cmd_parsed(int rc, const char *name, const char *err, void (*usage)(FILE *out));

/* kvgate sim: into simsrv's options (src/simsrv/simsrv.h). */
int kvg_cmd_sim_parse(struct kvg_simsrv_opts *o, int argc, char **argv, char *err, size_t errlen);
void kvg_cmd_sim_usage(FILE *out);

/* kvgate autoscale (src/autoscale/daemon.h runs it). */
struct kvg_cmd_autoscale_opts {
    char config[4096]; /* required */
    char host[256];
    char id[128];
    char keys[4096]; /* "" none */
    int port;
    int dry_run;
};
int kvg_cmd_autoscale_parse(struct kvg_cmd_autoscale_opts *o, int argc, char **argv, char *err,
                            size_t errlen);
void kvg_cmd_autoscale_usage(FILE *out);

/* kvgate observe (src/ui/observe.h collects the views). */
struct kvg_cmd_observe_opts {
    struct kvg_strlist routers; /* at least one */
    struct kvg_strlist workers;
    int json, prometheus; /* at most one */
};
int kvg_cmd_observe_parse(struct kvg_cmd_observe_opts *o, int argc, char **argv, char *err,
                          size_t errlen);
void kvg_cmd_observe_usage(FILE *out);
void kvg_cmd_observe_free(struct kvg_cmd_observe_opts *o);

/* kvgate tokenize (src/tokenizer/tokenizer.h, src/jinja/chat.h). */
struct kvg_cmd_tokenize_opts {
    char tokenizer[4096]; /* required */
    char tokenizer_config[4096];
    char chat_template[4096];
    int chat, render, jsonl, add_special_tokens;
};
int kvg_cmd_tokenize_parse(struct kvg_cmd_tokenize_opts *o, int argc, char **argv, char *err,
                           size_t errlen);
void kvg_cmd_tokenize_usage(FILE *out);

/* kvgate bench: the routing runs (bench.c), which hand over to the suite
 * (bench_suite.c), the autoscaling days (bench_scale.c) and the PD tables
 * (bench_pd.c) by their flags. */
int kvg_cmd_bench_main(int argc, char **argv);
int kvg_cmd_bench_suite_main(int argc, char **argv);
int kvg_cmd_bench_scale_main(int argc, char **argv);
int kvg_cmd_bench_pd_main(int argc, char **argv);
/* Parses bench flags into c (the scenario first, then the rest override
 * it). 0, 1 for --help (printed), or -1 with the reason on stderr. */
int kvg_cmd_bench_parse(struct kvg_bench_cfg *c, int argc, char **argv);

#endif
