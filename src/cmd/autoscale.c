/* `kvgate autoscale --config FILE [--dry-run]`: the autoscaler as its own
 * process (src/autoscale/daemon.h says what it does). This file holds the
 * command's option table only. It listens on 127.0.0.1 unless --host says
 * otherwise: every interface is a choice made on purpose (the manifests
 * under deploy/ pass --host 0.0.0.0 when they run it). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "autoscale/daemon.h"
#include "base/err.h"
#include "base/opt.h"
#include "cmd/cmd.h"

#define F(field) offsetof(struct kvg_cmd_autoscale_opts, field)
#define S(field) sizeof(((struct kvg_cmd_autoscale_opts *)0)->field)

static const struct kvg_opt flags[] = {
    {"config", NULL, KVG_OPT_STR, F(config), S(config), .meta = "FILE",
     .help = "the autoscale YAML (docs/autoscale.md); required", .section = "options",
     .flags = KVG_OPT_F_NODEFAULT},
    {"dry-run", NULL, KVG_OPT_BOOL, F(dry_run),
     .help = "plan and report, act on nothing, take "
             "no lease"},
    {"port", NULL, KVG_OPT_INT, F(port),
     .help = "GET /autoscale, /autoscale/metrics, /metrics, "
             "/health",
     .min = 0, .max = 65535},
    {"host", NULL, KVG_OPT_STR, F(host), S(host), .meta = "ADDR", .help = "listen address"},
    {"id", NULL, KVG_OPT_STR, F(id), S(id), .meta = "NAME",
     .help = "this replica's name in the lease (default: HOSTNAME-PID)"},
    {"keys", NULL, KVG_OPT_STR, F(keys), S(keys), .meta = "FILE",
     .help = "API keys (kvgate serve's --keys): GET /autoscale needs an admin key; without, it "
             "answers loopback clients only"},
    KVG_OPT_END,
};

#undef F
#undef S

static void defaults(struct kvg_cmd_autoscale_opts *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->host, sizeof o->host, "127.0.0.1");
    o->port = 9090;
}

void kvg_cmd_autoscale_usage(FILE *out)
{
    fprintf(
        out,
        "usage: kvgate autoscale --config FILE [--dry-run] [--port N] [--host ADDR] [--id NAME]\n"
        "\n"
        "The autoscaler as its own process: reads the pools' engines (/health, /metrics)\n"
        "and gateways (/metrics) over HTTP, plans each pool, and acts through the\n"
        "configured actuator (external: exported only; kubernetes: the scale subresource).\n"
        "With lease: {redis: URL} in FILE, only the replica holding the lease acts.\n\n");
    struct kvg_cmd_autoscale_opts d;
    defaults(&d);
    kvg_opt_help(flags, &d, out);
}

int kvg_cmd_autoscale_parse(struct kvg_cmd_autoscale_opts *o, int argc, char **argv, char *err,
                            size_t errlen)
{
    defaults(o);
    int rc = kvg_opt_parse_argv(flags, o, argc, argv, 1, err, errlen);
    if (rc) return rc;
    if (!o->config[0]) return kvg_err_set(err, errlen, KVG_ECONFIG, "--config FILE is required");
    return 0;
}

int kvg_cmd_autoscale_main(int argc, char **argv)
{
    struct kvg_cmd_autoscale_opts o;
    char err[600];
    int rc = kvg_cmd_autoscale_parse(&o, argc, argv, err, sizeof err);
    if ((rc = kvg__cmd_parsed(rc, "autoscale", err, kvg_cmd_autoscale_usage)) >= 0) return rc;
    struct kvg_autoscale_daemon_opts d = {
        .config_path = o.config,
        .host = o.host,
        .port = o.port,
        .id = o.id,
        .keys_path = o.keys[0] ? o.keys : NULL,
        .dry_run = o.dry_run};
    return kvg_autoscale_daemon_run(&d);
}
