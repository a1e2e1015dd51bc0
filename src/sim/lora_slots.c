/* LoRA adapter slots of the simulated engine: residency and LRU eviction
 * (see lora_slots.h). */
#include "sim/lora_slots.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int kvg_sim_lora_slots_init(struct kvg_sim_lora_slots *s, uint32_t cap)
{
    memset(s, 0, sizeof *s);
    s->cap = cap;
    if (!cap) return 0;
    s->name = calloc(cap, sizeof *s->name);
    s->used = calloc(cap, sizeof *s->used);
    if (!s->name || !s->used) {
        kvg_sim_lora_slots_free(s);
        return -ENOMEM;
    }
    return 0;
}

void kvg_sim_lora_slots_free(struct kvg_sim_lora_slots *s)
{
    free(s->name);
    free(s->used);
    s->name = NULL;
    s->used = NULL;
    s->cap = 0;
}

int kvg_sim_lora_slots_find(const struct kvg_sim_lora_slots *s, const char *name)
{
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->name[i] == name) return (int)i;
    return -1;
}

static int pinned_has(const char *const *pinned, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (pinned[i] == name) return 1;
    return 0;
}

int kvg_sim_lora_slots_acquire(struct kvg_sim_lora_slots *s, const char *name,
                               const char *const *pinned, size_t npinned)
{
    if (!s->cap || !name) return 0;
    int k = kvg_sim_lora_slots_find(s, name);
    if (k >= 0) {
        s->used[k] = ++s->tick;
        return 0;
    }
    /* A free slot first, else the least recently used unpinned one. */
    int victim = -1;
    for (uint32_t i = 0; i < s->cap; i++) {
        if (!s->name[i]) {
            victim = (int)i;
            break;
        }
        if (pinned_has(pinned, npinned, s->name[i])) continue;
        if (victim < 0 || s->used[i] < s->used[victim]) victim = (int)i;
    }
    if (victim < 0) return -EBUSY;
    if (s->name[victim]) s->evictions++;
    s->name[victim] = name;
    s->used[victim] = ++s->tick;
    s->loads++;
    return 1;
}
