/* What the scenarios of `kvgate bench` share (bench_int.h): the output flags
 * and the seed declared once, the names only known at run time for --help,
 * the policy check, parsing with the same error wording everywhere, and
 * writing a report to a file or stdout. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cmd/bench_int.h"
#include "base/err.h"
#include "base/util.h"
#include "router/policy.h"
#include "sim/sim.h"

#define C(field) offsetof(struct kvg__bench_common, field)
#define CS(field) sizeof(((struct kvg__bench_common *)0)->field)

const struct kvg_opt kvg__bench_common_table[] = {
    {"json", NULL, KVG_OPT_STR, C(json), CS(json), .meta = "FILE", .section = "output",
     .help = "write the rows (every figure) as JSON to FILE (default: not written)"},
    {"out", "markdown", KVG_OPT_STR, C(out), CS(out), .meta = "FILE",
     .help = "write the report (markdown) to FILE (default: stdout)"},
    {"quiet", NULL, KVG_OPT_BOOL, C(quiet), .help = "no progress lines"},
    {"seed", NULL, KVG_OPT_U64, C(seed), .section = "run",
     .help = "the randomness: workload, start-ups, engines and routing"},
    KVG_OPT_END,
};

const struct kvg_opt kvg__bench_jobs_table[] = {
    {"jobs", NULL, KVG_OPT_INT, 0, .min = 1, .max = 256, .section = "run",
     .help = "runs at once (threads)"},
    KVG_OPT_END,
};

char kvg__bench_policy_help[512];
char kvg__bench_profile_help[512];
char kvg__bench_profile_names[400];

void kvg__bench_names_init(void)
{
    snprintf(kvg__bench_policy_help, sizeof kvg__bench_policy_help,
             "comma-separated routing policies: %s; offline also oracle (a placement no "
             "router can make: the bound)",
             kvg_policy_names());
    size_t n = 0;
    const struct kvg_sim_profile *p;
    for (size_t i = 0; (p = kvg_sim_profile_at(i)) && n < sizeof kvg__bench_profile_names; i++)
        n += (size_t)snprintf(kvg__bench_profile_names + n, sizeof kvg__bench_profile_names - n,
                              "%s%s", i ? ", " : "", p->name);
    snprintf(kvg__bench_profile_help, sizeof kvg__bench_profile_help,
             "the engines' simulator profile: %s", kvg__bench_profile_names);
}

int kvg__bench_parse_positive(void *obj, const struct kvg_opt *o, const char *value, size_t index,
                              char *err, size_t errlen)
{
    (void)index;
    double d;
    if (kvg_parse_double(value, &d) || !(d > 0) || !isfinite(d))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "expects a number > 0, got '%s'", value);
    *(double *)(void *)((char *)obj + o->off) = d;
    return 0;
}

int kvg__bench_format_double(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    snprintf(out, cap, "%g", *(const double *)(const void *)((const char *)obj + o->off));
    return 0;
}

int kvg__bench_check_policy(const char *name, int oracle_ok, char *err, size_t errlen)
{
    if (oracle_ok && !strcmp(name, "oracle")) return 0;
    struct kvg_policy_opts po;
    kvg_policy_opts_default(&po);
    struct kvg_policy *p = NULL;
    int rc = kvg_policy_new(name, &po, &p);
    if (!rc) p->ops->destroy(p);
    if (rc != KVG_ENOTFOUND) return 0; /* known; other failures are the run's to report */
    return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown policy '%s' (known: %s%s)", name,
                       kvg_policy_names(), oracle_ok ? "; offline also oracle" : "");
}

int kvg__bench_parse(const struct kvg_opt *t, void *obj, const void *defaults, int argc,
                     char **argv, void (*usage)(FILE *), const char *who)
{
    char why[600];
    int rc = kvg_opt_parse_argv(t, obj, argc, argv, 1, why, sizeof why);
    if (rc == 1) {
        usage(stdout);
        kvg_opt_help(t, defaults, stdout);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "%s: %s\n", who, why);
        return 2;
    }
    return 0;
}

int kvg__bench_write(const char *path, int (*fn)(const void *ud, FILE *f), const void *ud)
{
    if (!path[0]) {
        int rc = fn(ud, stdout);
        if (fflush(stdout) && !rc) rc = -EIO;
        if (rc) fprintf(stderr, "kvgate bench: writing the report: %s\n", kvg_strerror(rc));
        return rc ? 1 : 0;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kvgate bench: %s: %s\n", path, strerror(errno));
        return 1;
    }
    int rc = fn(ud, f);
    if (fclose(f) && !rc) rc = -EIO;
    if (rc) fprintf(stderr, "kvgate bench: writing %s: %s\n", path, kvg_strerror(rc));
    return rc ? 1 : 0;
}

const char *kvg__bench_scenario_of(int argc, char **argv)
{
    const char *s = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--scenario=", 11))
            s = argv[i] + 11;
        else if (!strcmp(argv[i], "--scenario") && i + 1 < argc)
            s = argv[++i];
    }
    return s;
}

void kvg__bench_command(char *out, size_t cap, int argc, char **argv)
{
    size_t n = (size_t)snprintf(out, cap, "kvgate bench");
    for (int i = 1; i < argc && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, " %s", argv[i]);
}

void kvg__bench_join(char *out, size_t cap, const char *names, size_t stride, size_t n)
{
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%s", i ? "," : "", names + i * stride);
}

int kvg__bench_each_name(const char *list,
                         int (*fn)(void *ud, const char *name, char *err, size_t errlen), void *ud,
                         char *err, size_t errlen)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "too long (at most %zu bytes)",
                           sizeof buf - 1);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int rc = fn(ud, t, err, errlen);
        if (rc) return rc;
        n++;
    }
    return n ? 0 : kvg_err_set(err, errlen, KVG_ECONFIG, "expects at least one name");
}
