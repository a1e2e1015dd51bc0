/* The simulated engine's LoRA adapter slots, as vLLM manages them: the GPU
 * holds at most max_loras adapters (vLLM --max-loras, 1 by default); an
 * adapter a request needs and no slot holds is loaded into a free slot, or
 * into the least recently used slot whose adapter no running request uses
 * (vLLM's LRUCacheWorkerLoRAManager evicts that one). The scheduler keeps
 * the adapters of one batch within max_loras, so a slot can always be found
 * for an adapter it admits.
 *
 * Names are compared by pointer: the engine interns them (one pointer per
 * name for its life). Internal to src/sim; engine.c is the user, the public
 * face is sim.h. */
#ifndef KVG_SIM_LORA_SLOTS_H
#define KVG_SIM_LORA_SLOTS_H

#include <stddef.h>
#include <stdint.h>

struct kvg_sim_lora_slots {
    uint32_t cap;      /* max_loras; 0: no slot model (every adapter resident, free) */
    const char **name; /* cap entries, NULL for a free slot (owned array, borrowed names) */
    uint64_t *used;    /* last use of each slot (the tick), for LRU */
    uint64_t tick;
    uint64_t loads, evictions; /* ever */
};

/* Allocates cap slots, all free. 0 or -ENOMEM; free with _free. */
int kvg_sim_lora_slots_init(struct kvg_sim_lora_slots *s, uint32_t cap);
void kvg_sim_lora_slots_free(struct kvg_sim_lora_slots *s);

/* The slot holding name, or -1. */
int kvg_sim_lora_slots_find(const struct kvg_sim_lora_slots *s, const char *name);

/* Makes name resident and marks it used now. pinned[0..npinned) are the
 * adapters running requests use: never evicted. Returns 0 when it was
 * resident already (no cost), 1 when it was loaded (into a free slot or
 * over the least recently used unpinned one), -EBUSY when every slot
 * holds a pinned adapter (nothing changes). With cap 0 it returns 0. */
int kvg_sim_lora_slots_acquire(struct kvg_sim_lora_slots *s, const char *name,
                               const char *const *pinned, size_t npinned);

#endif
