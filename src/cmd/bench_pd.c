/* `kvgate bench --scenario pd`: aggregated against prefill/decode splits,
 * offline (src/bench/pd/pd.h writes the report). */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "bench/pd/pd.h"
#include "cmd/cmd.h"
#include "sim/sim.h"

static int parse(int argc, char **argv, struct kvg_bench_pd_opts *o)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        uint64_t v;
        if (!strcmp(argv[i], "--scenario")) continue;
        if (!strcmp(argv[i], "--out")) {
            o->out = argv[i + 1];
        } else if (!strcmp(argv[i], "--profile")) {
            o->profile = argv[i + 1];
        } else if (!kvg_parse_u64(argv[i + 1], &v) && v > 0 && v < (1u << 20)) {
            if (!strcmp(argv[i], "--requests"))
                o->requests = (uint32_t)v;
            else if (!strcmp(argv[i], "--seed"))
                o->seed = v;
            else if (!strcmp(argv[i], "--prompt-len"))
                o->prompt = (uint32_t)v;
            else if (!strcmp(argv[i], "--output-len"))
                o->output = (uint32_t)v;
            else
                goto bad;
        } else {
        bad:
            fprintf(stderr,
                    "kvgate bench --scenario pd: flags --out FILE, --requests N, --seed S, "
                    "--prompt-len N, --output-len N, --profile NAME ('%s')\n",
                    argv[i]);
            return -1;
        }
    }
    return 0;
}

int kvg_cmd_bench_pd_main(int argc, char **argv)
{
    struct kvg_bench_pd_opts o;
    kvg_bench_pd_opts_default(&o);
    if (parse(argc, argv, &o)) return 2;
    if (!kvg_sim_profile_find(o.profile)) {
        fprintf(stderr,
                "kvgate bench --scenario pd: unknown --profile '%s' (kvgate sim --help "
                "lists them)\n",
                o.profile);
        return 2;
    }
    FILE *f = fopen(o.out, "w");
    if (!f) {
        perror(o.out);
        return 1;
    }
    int rc = kvg_bench_pd_report(f, &o);
    fclose(f);
    if (rc) {
        fprintf(stderr, "kvgate bench --scenario pd: cannot build the engines\n");
        return 1;
    }
    printf("wrote %s\n", o.out);
    return 0;
}
