/* Policy registry: names (and the peers' aliases) to constructors. */
#include "router/policy.h"

#include <string.h>

#include "base/err.h"

static const struct {
    const char *name;
    int (*make)(struct kvg_policy **out);
} registry[] = {
    {"random", kvg_policy_random_new},
    {"round_robin", kvg_policy_round_robin_new},
};

int kvg_policy_new(const char *name, struct kvg_policy **out)
{
    for (size_t i = 0; i < KVG_ARRAY_LEN(registry); i++)
        if (!strcmp(name, registry[i].name)) return registry[i].make(out);
    return KVG_ENOTFOUND;
}

const char *kvg_policy_names(void)
{
    return "random, round_robin";
}
