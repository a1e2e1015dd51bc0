/* `kvgate serve`: the gateway's command line and config file, read through
 * serve's option table (src/serve/config.c, which the gateway also re-reads
 * on SIGHUP), then src/serve/serve.h runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/opt.h"
#include "cmd/cmd.h"
#include "router/policy.h"
#include "serve/serve.h"

void kvg_cmd_serve_usage(void)
{
    printf("usage: kvgate serve [--worker-urls URL...] [--config FILE] [options]\n\n"
           "Without workers, kvgate serve starts a few local simulated engines and\n"
           "fronts them (the embedded default). The --config file takes the same\n"
           "names as keys ('_' or '-'), plus workers: a list of {url, ...}.\n\n");
    struct kvg_serve_config *d = malloc(sizeof *d);
    if (d) kvg_serve_config_default(d);
    kvg_opt_help(kvg_serve_config_table(), d, stdout); /* without the defaults when out of memory */
    free(d);
    printf("\npolicies (--policy, --prefill-policy, --decode-policy, --session-fallback):\n  %s\n",
           kvg_policy_names());
}

int kvg_cmd_serve_parse(struct kvg_serve_config *c, int argc, char **argv, char *err, size_t errlen)
{
    const struct kvg_opt *t = kvg_serve_config_table();
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            kvg_cmd_serve_usage();
            return 1;
        }
    /* The file first, so that flags override it. */
    for (int i = 1; i < argc; i++) {
        const char *path = !strncmp(argv[i], "--config=", 9)              ? argv[i] + 9
                           : !strcmp(argv[i], "--config") && i + 1 < argc ? argv[i + 1]
                                                                          : NULL;
        int rc = path ? kvg_opt_load_yaml(t, c, path, err, errlen) : 0;
        if (rc) return rc;
    }
    int rc = kvg_opt_parse_argv(t, c, argc, argv, 1, err, errlen);
    if (rc) return rc < 0 ? rc : KVG_ECONFIG;
    return kvg_serve_config_check(c, err, errlen);
}

int kvg_cmd_serve_main(int argc, char **argv)
{
    struct kvg_serve_config c;
    kvg_serve_config_default(&c);
    char err[512];
    int rc = kvg_cmd_serve_parse(&c, argc, argv, err, sizeof err);
    if (rc == 1) return 0;
    if (rc) {
        fprintf(stderr, "kvgate serve: %s\n", err);
        kvg_serve_config_free(&c);
        return 2;
    }
    return kvg_serve_run(&c);
}
