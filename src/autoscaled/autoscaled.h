/* `kvgate autoscale --config FILE [--dry-run]`: the autoscaler as its own
 * process. Every interval a tick thread reads the signals over HTTP
 * (sources.h: the engines' /health and /metrics, the gateways' /metrics),
 * runs the same controller as kvgate serve --autoscale (autoscale/ctl.h)
 * and, when this replica may act (not a dry run, and it holds the Redis
 * lease when one is configured: lease.h), applies each pool's decision
 * through the configured actuator (external: nothing, the count is
 * exported; kubernetes: the scale subresource). A libuv loop serves
 * GET /autoscale, /autoscale/metrics (KEDA metrics-api), /metrics and
 * /health on --port and runs the lease.
 *
 * Why its own part (src/autoscaled/) and not inside src/autoscale/: it is
 * a process that wires several parts (autoscale, http, metrics, the Redis
 * client in gateway, the API client in discovery), as src/serve/ is for the
 * gateway; the autoscale library itself stays free of loops and sockets
 * (its actuators excepted), and nothing includes this part but main.c. */
#ifndef KVG_AUTOSCALED_AUTOSCALED_H
#define KVG_AUTOSCALED_AUTOSCALED_H

int kvg_autoscaled_main(int argc, char **argv);

#endif
