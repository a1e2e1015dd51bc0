/* kvgate's commands: one file each in src/cmd/, holding the command's flags
 * and its entry point; src/main.c dispatches on argv[1]. A command parses its
 * arguments and hands a configuration to the part that does the work; no
 * part under src/ other than this folder reads argv.
 *
 * Each entry point gets argv with argv[0] the command's name and returns the
 * process exit status: 0 done, 1 failed, 2 bad usage. */
#ifndef KVG_CMD_CMD_H
#define KVG_CMD_CMD_H

struct kvg_bench_cfg;

int kvg_cmd_serve_main(int argc, char **argv);
int kvg_cmd_sim_main(int argc, char **argv);
int kvg_cmd_autoscale_main(int argc, char **argv);
int kvg_cmd_keys_main(int argc, char **argv);
int kvg_cmd_tokenize_main(int argc, char **argv);
int kvg_cmd_observe_main(int argc, char **argv);
int kvg_cmd_version_main(int argc, char **argv);

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
