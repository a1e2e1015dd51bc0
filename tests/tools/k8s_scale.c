/* Test helper for tests/integration/autoscale_k8s.sh: drives the kubernetes
 * actuator (autoscale/actuator_k8s.h) directly, with no controller around it.
 *
 *   k8s_scale CONFIG POOL N     apply(N) to POOL: prints "ok" (rc 0) or
 *                               "error: REASON" (rc 1); for a pool with
 *                               standby "ok" is followed by its pods as
 *                               " NAME=STATE" (ops->replicas)
 *   k8s_scale CONFIG POOL get   prints "spec N status M" or the error
 * CONFIG is an autoscale YAML file (actuator: kubernetes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/actuator_k8s.h"
#include "base/err.h"
#include "base/util.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: k8s_scale CONFIG POOL N|get\n");
        return 2;
    }
    static struct kvg_autoscale_config cfg;
    char err[512] = "";
    struct kvg_autoscale_actuator *a = NULL;
    if (kvg_autoscale_config_load(argv[1], &cfg, err, sizeof err) ||
        kvg_autoscale_k8s_new(&cfg.kubernetes, NULL, &a, err, sizeof err)) {
        printf("error: %s\n", err);
        return 1;
    }
    const struct kvg_autoscale_pool_cfg *pc = NULL;
    for (size_t i = 0; i < cfg.npools; i++)
        if (!strcmp(cfg.pools[i].name, argv[2])) pc = &cfg.pools[i];
    int rc = 1;
    uint64_t n;
    if (!pc) {
        printf("error: no pool %s\n", argv[2]);
    } else if (!strcmp(argv[3], "get")) {
        uint32_t spec, status;
        if (!kvg_autoscale_k8s_get(a, pc, &spec, &status, err, sizeof err)) {
            printf("spec %u status %u\n", spec, status);
            rc = 0;
        } else {
            printf("error: %s\n", err);
        }
    } else if (kvg_parse_u64(argv[3], &n) || n > 100000) {
        printf("error: bad count %s\n", argv[3]);
    } else if (!a->ops->apply(a, pc, (uint32_t)n, 0, err, sizeof err)) {
        struct kvg_autoscale_replica reps[64];
        int nr = a->ops->replicas ? a->ops->replicas(a, pc, reps, 64) : -1;
        printf("ok");
        for (int i = 0; i < nr; i++) printf(" %s=%s", reps[i].url + 4, reps[i].state);
        printf("\n");
        rc = 0;
    } else {
        printf("error: %s\n", err);
    }
    a->ops->destroy(a);
    return rc;
}
