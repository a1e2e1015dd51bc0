/* `kvgate autoscale --config FILE [--dry-run]`: the autoscaler as its own
 * process (src/autoscale/daemon.h says what it does). This file holds the
 * command's flags only. */
#include <stdio.h>
#include <string.h>

#include "autoscale/daemon.h"
#include "base/util.h"
#include "cmd/cmd.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: kvgate autoscale --config FILE [--dry-run] [--port N] [--host ADDR] [--id NAME]\n"
        "                        [--keys FILE]\n"
        "\n"
        "The autoscaler as its own process: reads the pools' engines (/health, /metrics)\n"
        "and gateways (/metrics) over HTTP, plans each pool, and acts through the\n"
        "configured actuator (external: exported only; kubernetes: the scale subresource).\n"
        "With lease: {redis: URL} in FILE, only the replica holding the lease acts.\n"
        "\n"
        "  --config FILE   the autoscale YAML (docs/autoscale.md)\n"
        "  --dry-run       plan and report, act on nothing, take no lease\n"
        "  --port N        GET /autoscale, /autoscale/metrics, /metrics, /health (9090)\n"
        "  --host ADDR     listen address (0.0.0.0)\n"
        "  --id NAME       this replica's name in the lease (HOSTNAME-PID)\n"
        "  --keys FILE     API keys (kvgate serve's --keys): GET /autoscale needs an admin\n"
        "                  key; without, it answers loopback clients only\n");
}

int kvg_cmd_autoscale_main(int argc, char **argv)
{
    struct kvg_autoscale_daemon_opts o = {.host = "0.0.0.0", .port = 9090};
    uint64_t port = 9090;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--dry-run")) {
            o.dry_run = 1;
        } else if (v && !strcmp(a, "--config")) {
            o.config_path = argv[++i];
        } else if (v && !strcmp(a, "--host")) {
            o.host = argv[++i];
        } else if (v && !strcmp(a, "--keys")) {
            o.keys_path = argv[++i];
        } else if (v && !strcmp(a, "--id")) {
            o.id = argv[++i];
        } else if (v && !strcmp(a, "--port")) {
            if (kvg_parse_u64(argv[++i], &port) || port > 65535) {
                fprintf(stderr, "kvgate autoscale: --port: 0..65535\n");
                return 2;
            }
            o.port = (int)port;
        } else {
            fprintf(stderr, "kvgate autoscale: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o.config_path) {
        fprintf(stderr, "kvgate autoscale: --config FILE is required\n\n");
        usage(stderr);
        return 2;
    }
    return kvg_autoscale_daemon_run(&o);
}
