/* `kvgate bench --scenario pd`: aggregated against prefill/decode splits,
 * offline (src/bench/pd/pd.h writes the report): its flags (an option table,
 * base/opt.h, with the output flags every scenario shares) and the writing
 * of the report (--out, else stdout) and of its rows (--json). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "cmd/bench_int.h"
#include "base/err.h"
#include "bench/pd/pd.h"
#include "sim/sim.h"

struct pd_args {
    struct kvg_bench_pd_opts o;
    struct kvg__bench_common com;
    char scenario[16];
    char profile[64]; /* o.profile points here */
};

#define A(field) offsetof(struct pd_args, field)
#define AS(field) sizeof(((struct pd_args *)0)->field)

static const char *const scenarios[] = {"pd", NULL};

static int profile_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                       size_t errlen)
{
    (void)o, (void)index;
    struct pd_args *a = obj;
    if (!kvg_sim_profile_find(v) || strlen(v) >= sizeof a->profile)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "expects one of %s, got '%s'",
                           kvg__bench_profile_names, v);
    snprintf(a->profile, sizeof a->profile, "%s", v);
    return 0;
}

static int profile_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    snprintf(out, cap, "%s", ((const struct pd_args *)obj)->profile);
    return 0;
}

static const struct kvg_opt opt_table[] = {
    {"scenario", NULL, KVG_OPT_ENUM, A(scenario), AS(scenario), .choices = scenarios,
     .section = "scenario", .help = "this scenario (kvgate bench --help: the others)"},
    {"requests", NULL, KVG_OPT_U32, A(o.requests), .min = 1, .max = (1u << 20) - 1,
     .help = "requests per run (the overload section runs 1.5 x N)"},
    {"prompt-len", NULL, KVG_OPT_U32, A(o.prompt), .min = 1, .max = (1u << 20) - 1,
     .help = "tokens of each prompt (unshared)"},
    {"output-len", NULL, KVG_OPT_U32, A(o.output), .min = 1, .max = (1u << 20) - 1,
     .help = "output tokens of each request (ignore_eos)"},
    {"profile", NULL, KVG_OPT_CUSTOM, 0, .meta = "NAME", .parse = profile_opt,
     .format = profile_text, .help = kvg__bench_profile_help},
    {NULL, NULL, KVG_OPT_INCLUDE, A(com), .sub = kvg__bench_common_table},
    KVG_OPT_END,
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate bench --scenario pd [--out FILE] [--json FILE] [flags]\n\n"
               "Prefill/decode disaggregation, offline in virtual time (deterministic per "
               "--seed):\n"
               "aggregated engines against P:D splits at 2, 3 and 4 pods, 1P:1D by KV link, the "
               "decode\n"
               "pick with and without locality, and overload with and without early "
               "rejection.\n\n");
}

static int report_md(const void *ud, FILE *f)
{
    if (!kvg_bench_pd_report(f, ud)) return 0;
    fprintf(stderr, "kvgate bench --scenario pd: cannot build the engines\n");
    return KVG_ECONFIG;
}

static int report_json(const void *ud, FILE *f)
{
    char *text = cJSON_Print(ud);
    if (!text) return -ENOMEM;
    int rc = fprintf(f, "%s\n", text) < 0 ? -EIO : 0;
    cJSON_free(text);
    return rc;
}

int kvg_cmd_bench_pd_main(int argc, char **argv)
{
    struct pd_args a;
    memset(&a, 0, sizeof a);
    kvg_bench_pd_opts_default(&a.o);
    snprintf(a.profile, sizeof a.profile, "%s", a.o.profile);
    a.com.seed = a.o.seed;
    kvg__bench_names_init();
    int rc = kvg__bench_parse(opt_table, &a, &a, argc, argv, usage, "kvgate bench --scenario pd");
    if (rc) return rc == 1 ? 0 : 2;
    a.o.profile = a.profile;
    a.o.seed = a.com.seed;
    if (a.com.json[0] && !(a.o.rows = cJSON_CreateArray())) return 1;
    /* The report first (its runs fill the rows), then the rows. */
    int status = kvg__bench_write(a.com.out, report_md, &a.o);
    if (!status && a.o.rows) status = kvg__bench_write(a.com.json, report_json, a.o.rows);
    if (!status && a.com.out[0] && !a.com.quiet) printf("wrote %s\n", a.com.out);
    cJSON_Delete(a.o.rows);
    return status;
}
