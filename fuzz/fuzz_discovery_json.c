/* libFuzzer: what discovery reads from the Kubernetes API server (an
 * EndpointSlice with its port, and a pod's labels, its model label among
 * them): any bytes, an error or endpoints and a verdict, never a crash or a
 * leak. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "discovery/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (!j) return 0;
    char key[300], url[128];
    kvg_discovery_slice_key(j, key, sizeof key);
    struct kvg_discovery_endpoint *eps = NULL;
    size_t n = 0;
    if (kvg_discovery_slice_endpoints(j, &eps, &n) == 0) {
        for (size_t i = 0; i < n; i++)
            kvg_discovery_worker_url(eps[i].address, eps[i].port ? eps[i].port : 8000, url,
                                     sizeof url);
        free(eps);
    }
    static const char *terms[] = {"app=vllm", "role=prefill"};
    struct kvg_discovery_rules r = {.port = 8000};
    char err[128];
    kvg_discovery_selector_parse(terms, 1, &r.regular, err, sizeof err);
    kvg_discovery_selector_parse(terms + 1, 1, &r.prefill, err, sizeof err);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
    const cJSON *labels = md ? cJSON_GetObjectItemCaseSensitive(md, "labels") : j;
    int role, rank;
    kvg_discovery_label(labels, "kvgate.io/model"); /* a pod's model (--model-label) */
    kvg_discovery_classify(&r, labels, &role, &rank);
    r.dp_aware = 1;
    kvg_discovery_classify(&r, labels, &role, &rank);
    cJSON_Delete(j);
    return 0;
}
