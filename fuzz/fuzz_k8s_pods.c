/* libFuzzer: what the kubernetes actuator reads from the API server for
 * parked pods (autoscale/actuator_k8s_park.c): a Scale's selector and a
 * PodList, any bytes: an error or pods with names fit for a path, never a
 * crash or a leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale/actuator_k8s_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    char sel[512];
    kvg__k8s_scale_selector(s, sel, sizeof sel);
    static struct kvg__k8s_pods ps;
    if (!kvg__k8s_pods_parse(s, &ps)) {
        if (ps.n > KVG__K8S_MAX_PODS) abort();
        for (uint32_t i = 0; i < ps.n; i++)
            if (!ps.pod[i].name[0] ||
                strspn(ps.pod[i].name, "abcdefghijklmnopqrstuvwxyz0123456789.-") !=
                    strlen(ps.pod[i].name))
                abort();
    }
    free(s);
    return 0;
}
