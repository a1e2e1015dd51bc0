/* The autoscaler as its own process (src/cmd/autoscale.c parses its flags
 * and runs it). Every interval a tick thread reads the signals over HTTP
 * (sources.h: the engines' /health and /metrics, the gateways' /metrics),
 * runs the same controller as kvgate serve --autoscale (ctl.h) and, when
 * this replica may act (not a dry run, and it holds the Redis lease when
 * one is configured: lease.h), applies each pool's decision through the
 * configured actuator (external: nothing, the count is exported; kubernetes:
 * the scale subresource). A libuv loop serves GET /autoscale (keyed as
 * serve's), /autoscale/metrics (KEDA metrics-api), /metrics and /health and
 * runs the lease.
 *
 * It lives with the controller, signals and actuators it runs so that the
 * autoscaler is one room; the clients it uses (HTTP server, blocking HTTPS
 * client, Redis) come from the common layer in src/net/. */
#ifndef KVG_AUTOSCALE_DAEMON_H
#define KVG_AUTOSCALE_DAEMON_H

struct kvg_autoscale_daemon_opts {
    const char *config_path; /* the autoscale YAML (docs/autoscale.md); required */
    const char *host;        /* listen address */
    int port;                /* GET /autoscale, /autoscale/metrics, /metrics, /health */
    const char *id;          /* this replica's name in the lease; NULL or "": HOSTNAME-PID */
    int dry_run;             /* plan and report, act on nothing, take no lease */
    /* API keys file, as kvgate serve's --keys: GET /autoscale then needs a
     * key with admin: true; NULL or "": it answers loopback clients only.
     * /autoscale/metrics, /metrics and /health stay open either way. */
    const char *keys_path;
};

/* Runs until SIGTERM/SIGINT. Returns the process exit status: 0 after a
 * clean stop, 1 when it could not start (the reason on stderr). */
int kvg_autoscale_daemon_run(const struct kvg_autoscale_daemon_opts *o);

#endif
