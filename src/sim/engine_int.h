/* The simulated engine's state, shared by engine.c (the scheduler) and
 * engine_read.c (what callers read of it: metrics, requests, cache contents,
 * adapters). Not a public face. */
#ifndef KVG_SIM_ENGINE_INT_H
#define KVG_SIM_ENGINE_INT_H

#include "base/util.h"
#include "sim/kv_cache.h"
#include "sim/lora_slots.h"
#include "sim/sim.h"

enum { ST_WAITING, ST_RUNNING, ST_DONE, ST_HELD };

struct req {
    uint64_t id;
    uint32_t *tokens; /* prompt then output; room for prompt_len + max_tokens */
    uint64_t *hashes; /* chain hash of each full block, n_hashed of them */
    int32_t *blocks;  /* blocks held, in token order */
    uint32_t prompt_len, max_tokens, target_len;
    uint32_t num_tokens, num_computed, num_output;
    uint32_t n_hashed, n_blocks, n_stored; /* blocks [0, n_stored) are resident in the cache */
    uint32_t cached_tokens, preemptions;
    uint8_t state, ever_scheduled, finish;
    struct kvg_rng rng;
    struct req *wprev, *wnext;
    double arrival;
    uint64_t root;           /* chain root: the engine's, seeded by adapter and salt */
    const char *lora, *salt; /* interned (the engine's), NULL none */
    int lora_id;
    uint32_t remote_tokens; /* prompt tokens whose KV a remote prefill supplies */
    uint8_t hold;           /* keep the blocks after finishing (a PD prefill) */
};

struct sched {
    struct req *r;
    uint32_t n;
    uint32_t flags;
    uint32_t loaded; /* tokens copied back from the CPU tier for it */
};

struct kvg_sim {
    struct kvg_sim_profile p;
    uint32_t bs, nb;
    uint64_t seed, root;
    uint32_t *vocab;
    size_t nvocab;
    double mean_out;
    struct kvg_sim_kvc *kvc;

    struct req **map; /* id -> request, open addressing; NULL = empty */
    size_t mcap, mcount;

    struct req *whead, *wtail;
    uint32_t nwaiting;
    struct req **running;
    uint32_t nrunning;

    struct sched *sched;
    int32_t *hits;
    struct kvg_sim_update *ups;
    size_t nups;

    uint64_t q_tokens, h_tokens, cpu_h_tokens, preemptions, prompt_tokens, gen_tokens;
    uint64_t fin_length, fin_stop, aborted, steps;
    double busy;
    uint32_t nheld; /* finished requests still holding their blocks */
    char **strs;    /* interned adapter names and salts, freed with the engine */
    size_t nstrs, capstrs;
    /* LoRA slots (max_loras) and the adapters of the batch being built */
    struct kvg_sim_lora_slots slots;
    const char **active; /* slots.cap entries */
    uint32_t nactive, step_loads;
    double lora_load_s;
    /* vLLM's gauges (kvg_sim_reported_counts): those the last ended step
     * published, and those of the step in flight, published at its end. */
    uint32_t pub_running, pub_waiting, pend_running, pend_waiting;
    double pend_at;
    int pend;
};

/* The slot of request id in the engine's map, SIZE_MAX when absent. */
size_t kvg__sim_map_find(const struct kvg_sim *e, uint64_t id);

#endif
