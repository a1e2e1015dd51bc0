/* Between the files of `kvgate bench` (bench.c, bench_scale.c, bench_suite.c,
 * bench_pd.c); not a public face. The flags every scenario shares are
 * declared once here (bench_opts.c) and included by each scenario's option
 * table (base/opt.h), with the checks of names (policies, profiles) and the
 * report writing they share. */
#ifndef KVG_CMD_BENCH_INT_H
#define KVG_CMD_BENCH_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/opt.h"

/* The output flags and the seed, the same in every scenario. No path has a
 * default: nothing is written unless asked, whatever the working directory. */
struct kvg__bench_common {
    char json[512]; /* --json: the rows as JSON; "" none */
    char out[512];  /* --out (--markdown): the report as markdown; "" stdout */
    uint64_t seed;
    int quiet;
};

/* Include with offsetof(your struct, its struct kvg__bench_common). */
extern const struct kvg_opt kvg__bench_common_table[];
/* --jobs: include with offsetof(your struct, its int). */
extern const struct kvg_opt kvg__bench_jobs_table[];

/* Text for --help's lines of the names known at run time (the policies,
 * the simulator's profiles); filled by kvg__bench_names_init. */
extern char kvg__bench_policy_help[512];
extern char kvg__bench_profile_help[512];
extern char kvg__bench_profile_names[400]; /* "tiny, ..." for errors */
void kvg__bench_names_init(void);

/* A CUSTOM parse of a double > 0 at the entry's offset, and its format. */
int kvg__bench_parse_positive(void *obj, const struct kvg_opt *o, const char *value, size_t index,
                              char *err, size_t errlen);
int kvg__bench_format_double(const void *obj, const struct kvg_opt *o, char *out, size_t cap);

/* 0 when name is a routing policy this build knows ("oracle" too when
 * oracle_ok), else KVG_ECONFIG with err naming the known ones. */
int kvg__bench_check_policy(const char *name, int oracle_ok, char *err, size_t errlen);

/* Parses argv into obj with table t: 0, 1 after printing usage() and the
 * table's --help on stdout (defaults read from defaults), 2 after printing
 * "kvgate bench: <why>" on stderr. who names the command in errors. */
int kvg__bench_parse(const struct kvg_opt *t, void *obj, const void *defaults, int argc,
                     char **argv, void (*usage)(FILE *), const char *who);

/* Writes a report with fn(ud, f) to path, or to stdout when path is "".
 * 0, or 1 with the reason on stderr. */
int kvg__bench_write(const char *path, int (*fn)(const void *ud, FILE *f), const void *ud);

/* The value of the last --scenario in argv ("--scenario X" or
 * "--scenario=X"), or NULL. */
const char *kvg__bench_scenario_of(int argc, char **argv);

/* Calls fn(ud, name, err, errlen) for each comma-separated name in list:
 * 0, its first failure, or KVG_ECONFIG when list is too long or empty. */
int kvg__bench_each_name(const char *list,
                         int (*fn)(void *ud, const char *name, char *err, size_t errlen), void *ud,
                         char *err, size_t errlen);

/* The n names at names, names + stride, ... joined by ',' into out. */
void kvg__bench_join(char *out, size_t cap, const char *names, size_t stride, size_t n);

/* "kvgate bench" and argv[1..] joined by spaces, cut at cap. */
void kvg__bench_command(char *out, size_t cap, int argc, char **argv);

#endif
