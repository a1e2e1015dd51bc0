/* The simulated inference engine's model: a vLLM-like scheduler over a paged,
 * prefix-cached KV cache, with a step-time model. It is a pure library: no
 * sockets, clocks or threads. Time is an input, so the same model runs in real
 * time behind `kvgate sim` (a libuv timer) and in virtual time inside the
 * offline benchmark (a discrete-event loop).
 *
 * How a caller drives it
 *   kvg_sim_submit() queues a request at any time. kvg_sim_step(e, now, &st)
 *   runs ONE scheduler iteration that starts at `now`: it picks the batch,
 *   advances every scheduled request and returns st.duration, the seconds the
 *   iteration takes, plus what happened to each request (st.updates). The
 *   outcome is what the GPU would have produced at now + st.duration, so the
 *   caller makes it visible then, and calls step again no earlier than that.
 *
 *   Real time (libuv):                    Virtual time (event loop):
 *     on submit: if no step in flight,      t = next event (arrival or the
 *       step(now) and arm a timer for         end of an engine's step)
 *       st.duration                          at an arrival: submit; if that
 *     on timer: deliver the previous          engine is not busy, step(t)
 *       step's updates (stream tokens,        and mark it busy until
 *       close finished requests); then        t + st.duration
 *       if !kvg_sim_idle(): step(now) and   at a step end: account for its
 *       re-arm, else stop the timer           updates at time t; step again
 *                                             unless idle
 *   Updates stay valid until the next kvg_sim_step or kvg_sim_free; the
 *   event view (below) until the next kvg_sim_step, kvg_sim_events,
 *   kvg_sim_events_clear, kvg_sim_reset_prefix_cache or kvg_sim_free.
 *   kvg_sim_abort() may be called at any time (a client went away); drop any
 *   undelivered update for that id.
 *
 * KV events: every block stored into or evicted from the prefix cache, and
 * every reset, is appended to an event log (when config.emit_events is set).
 * After a step the caller reads it with kvg_sim_events(), encodes it
 * (sim/kv_events.h) and publishes it (src/simsrv/kvpub.h), then calls
 * kvg_sim_events_clear(). The log grows until cleared.
 *
 * An engine is not thread-safe: one thread (the loop) owns it. */
#ifndef KVG_SIM_SIM_H
#define KVG_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

/* ---- Profiles: hardware + model constants (sim/profile.c documents where
 * every number comes from). */
struct kvg_sim_profile {
    const char *name;
    const char *description;
    uint32_t block_size;             /* tokens per KV block */
    uint64_t kv_capacity_tokens;     /* KV cache size; num_blocks = this / block_size */
    uint32_t max_num_seqs;           /* running batch limit */
    uint32_t max_num_batched_tokens; /* token budget per step (chunked prefill) */
    uint32_t max_model_len;          /* prompt + max_tokens limit */
    /* Step-time model, seconds; see kvg_sim_step_time(). */
    double t_fixed;         /* per step: weight reads, launch, sampling */
    double t_seq;           /* per scheduled sequence */
    double t_prefill_token; /* per prefill token (dense layers) */
    double t_prefill_attn;  /* per (prefill token x earlier token it attends to) */
    double t_decode_ctx;    /* per context token a decoding sequence reads */
    /* per token whose KV comes back from the CPU tier (PCIe copy) */
    double t_cpu_load_token;
    /* The model's KV shape, for the bytes a PD transfer moves per token:
     * layers x KV heads x head dim x 2 (K and V) x dtype bytes. */
    uint32_t n_layers, n_kv_heads, head_dim, kv_dtype_bytes;
    /* EPD: a vision encoder's time per image (simsrv/encode.c), seconds. */
    double t_encode_image;
    /* Sleep mode (simsrv/sleep.c): a wake from level 1 (weights back from
     * host memory) and from level 2 (weights reloaded), seconds. */
    double t_wake_l1, t_wake_l2;
};

/* KV bytes one token occupies (kvg_sim_profile's shape; 0 if unknown). */
uint64_t kvg_sim_kv_bytes_per_token(const struct kvg_sim_profile *p);

/* The KV link between two engines by their labels ("node=..,rack=..,zone=.."),
 * as a PD transfer takes it (link.c): 0 same node, 1 same rack, 2 same zone
 * (also two engines that say nothing), 3 across zones. Its bandwidth in
 * bytes/s and its name ("node", "rack", "zone", "across"). */
int kvg_sim_link_of(const char *a, const char *b);
double kvg_sim_link_bw(int link);
const char *kvg_sim_link_name(int link);

/* The built-in profiles ("tiny", "qwen3-32b-h100-tp2", ...), static storage.
 * kvg_sim_profile_find returns NULL for an unknown name; kvg_sim_profile_at
 * enumerates them (NULL past the end). */
const struct kvg_sim_profile *kvg_sim_profile_find(const char *name);
const struct kvg_sim_profile *kvg_sim_profile_at(size_t i);

/* Shape of one scheduler iteration, as the step-time model sees it. */
struct kvg_sim_batch_shape {
    uint32_t num_seqs;          /* sequences scheduled */
    uint32_t prefill_tokens;    /* tokens of prefill chunks */
    double prefill_attn_pairs;  /* sum over chunks of n * (start + (n + 1) / 2) */
    uint64_t decode_ctx_tokens; /* sum over decoding sequences of their context length */
    uint32_t cpu_load_tokens;   /* tokens of prefix hits copied back from the CPU tier */
};

/* duration = t_fixed + t_seq*num_seqs + t_prefill_token*prefill_tokens
 *          + t_prefill_attn*prefill_attn_pairs + t_decode_ctx*decode_ctx_tokens
 *          + t_cpu_load_token*cpu_load_tokens;
 * 0 for an empty batch. */
double kvg_sim_step_time(const struct kvg_sim_profile *p, const struct kvg_sim_batch_shape *b);

/* ---- Engine configuration. */
struct kvg_sim_config {
    struct kvg_sim_profile profile; /* a copy: override block_size, capacity, ... freely */
    uint64_t seed;                  /* output tokens and lengths */
    uint64_t hash_seed;             /* root of the block-hash chain (vLLM's PYTHONHASHSEED) */
    /* Token ids outputs are drawn from (e.g. printable bytes of the caller's
     * tokenizer). Copied at create. NULL/0: ids 32..126. */
    const uint32_t *output_vocab;
    size_t n_output_vocab;
    double mean_output_tokens; /* length distribution without ignore_eos (geometric) */
    int emit_events;           /* record KV events (off for runs that do not need them) */
    /* A CPU tier behind the GPU cache (vLLM's CPU offloading): this many
     * tokens of blocks evicted from the GPU are kept in host memory (LRU),
     * published as BlockStored/BlockRemoved with medium "CPU"; a request
     * whose prefix continues there copies those blocks back (they become
     * GPU blocks again) at t_cpu_load_token per token, paid in the step
     * that schedules it (a synchronous load: its TTFT carries it). 0: none. */
    uint64_t cpu_kv_capacity_tokens;
    /* LoRA adapter slots (vLLM --max-loras): at most this many adapters in
     * one batch and resident on the GPU; a waiting request whose adapter
     * would be one too many is skipped (later ones may go first, as vLLM's
     * scheduler does); an adapter no slot holds is loaded over the least
     * recently used one no running request uses, and the step that loads it
     * takes lora_load_s longer (the load is synchronous, before the forward
     * pass: the whole batch waits). 0: no slot model (every adapter always
     * resident, free), which is what kvgate sim serves. */
    uint32_t max_loras;
    double lora_load_s;
};

/* Fills c with defaults for profile p (which must not be NULL): seed 0,
 * hash_seed 42, printable-byte vocab, mean output 256 tokens, events on,
 * no adapter slots (max_loras 0) and KVG_SIM_LORA_LOAD_S per load. */
void kvg_sim_config_init(struct kvg_sim_config *c, const struct kvg_sim_profile *p);

/* Seconds to load a cold LoRA adapter onto the GPU: an assumption, not a
 * measurement. A rank-16 adapter on all seven projections of Qwen3-32B (64
 * layers, hidden 5,120, q 8,192, kv 1,024, MLP 25,600) is 16 x 2.1M x 64 =
 * 134M parameters, 268 MB in bf16. With vLLM's default max_cpu_loras (=
 * max_loras) an evicted adapter is not kept in host memory, so a cold one
 * is read back from its safetensors (page cache at best) and copied to
 * both GPUs; at an assumed ~5 GB/s end to end (file read, tensor build,
 * pinned staging; PCIe's ~25 GB/s is not the limit) that is ~54 ms. */
#define KVG_SIM_LORA_LOAD_S 0.05

struct kvg_sim;

/* Creates an engine. KVG_ECONFIG when the configuration is inconsistent
 * (block size 0, fewer than 2 blocks, max_model_len larger than the cache,
 * zero limits); -ENOMEM. On success *out is the caller's: kvg_sim_free(). */
int kvg_sim_create(const struct kvg_sim_config *c, struct kvg_sim **out);
void kvg_sim_free(struct kvg_sim *e);

/* ---- Requests. */
struct kvg_sim_request {
    uint64_t id;            /* caller-chosen, unique among live requests */
    const uint32_t *prompt; /* copied */
    uint32_t prompt_len;
    uint32_t max_tokens;
    int ignore_eos; /* emit exactly max_tokens tokens */
    int has_seed;   /* use `seed` (OpenAI's seed parameter) instead of engine seed + id */
    uint64_t seed;
    double arrival; /* the caller's clock; reported back, never used to schedule */
    /* The LoRA adapter it runs on (NULL: the base model) and its vLLM
     * lora_int_id, and its cache_salt (NULL: none). Both seed the request's
     * block hashes, as vLLM's extra keys do, so blocks are shared only
     * between requests of the same adapter and salt. Copied (interned for
     * the engine's life: a sim sees a bounded set). */
    const char *lora_name;
    int lora_id;
    const char *cache_salt;
    /* Disaggregated serving. remote_tokens: prompt tokens whose KV was
     * pulled from a prefill engine (vLLM's NIXL decode): counted computed
     * and cached at first scheduling, all but the last prompt token.
     * hold_blocks: a prefill for a remote decode: when it finishes its
     * blocks stay held (kvg_sim_release frees them), as vLLM's
     * NixlConnector delays freeing until the decode has read them. */
    uint32_t remote_tokens;
    int hold_blocks;
};

/* Queues r at the end of the waiting queue (FCFS). -EINVAL for an empty
 * prompt or max_tokens 0, -EEXIST when the id is live, KVG_ETOOBIG when
 * prompt_len + max_tokens exceeds max_model_len (vLLM answers 400), -ENOMEM. */
int kvg_sim_submit(struct kvg_sim *e, const struct kvg_sim_request *r);

/* Removes a waiting or running request (client gone). Its blocks are freed
 * (the full ones stay cached). One that leaves the engine idle sets the
 * reported counts (kvg_sim_reported_counts) to 0 / 0 from the end of the
 * step in flight, or at once: vLLM's empty step after an abort.
 * KVG_ENOTFOUND if the id is not live. */
int kvg_sim_abort(struct kvg_sim *e, uint64_t id);

/* Frees the blocks of a finished request submitted with hold_blocks.
 * KVG_ENOTFOUND unless id is such a held request. (kvg_sim_abort frees
 * one too, counted as aborted.) */
int kvg_sim_release(struct kvg_sim *e, uint64_t id);

/* 1 when nothing waits and nothing runs: no step is needed until a submit. */
int kvg_sim_idle(const struct kvg_sim *e);

enum kvg_sim_finish {
    KVG_SIM_FINISH_NONE = 0,
    KVG_SIM_FINISH_LENGTH, /* reached max_tokens */
    KVG_SIM_FINISH_STOP,   /* the sampled length ended first (an EOS) */
    KVG_SIM_FINISH_ABORT,  /* never from the engine: its server ended it (a sleep, simsrv) */
};

/* Update flags; several may be set at once. */
#define KVG_SIM_UP_SCHEDULED 0x01u /* entered the running batch (again, after a preemption) */
#define KVG_SIM_UP_PREFILL 0x02u   /* prompt tokens computed this step, no token yet */
#define KVG_SIM_UP_TOKEN 0x04u     /* `token` was emitted */
#define KVG_SIM_UP_FIRST 0x08u     /* that token is the first output token */
#define KVG_SIM_UP_FINISHED 0x10u  /* request done (`finish` says why); id no longer live */
#define KVG_SIM_UP_PREEMPTED 0x20u /* evicted from the batch, back at the queue head */

/* What one step did to one request. */
struct kvg_sim_update {
    uint64_t id;
    uint32_t flags;
    uint32_t token; /* with KVG_SIM_UP_TOKEN */
    uint32_t prompt_len;
    uint32_t prompt_computed; /* prompt tokens whose KV exists after this step */
    uint32_t num_output;      /* output tokens emitted so far, this one included */
    uint32_t cached_tokens;   /* prefix-cache hit at first scheduling (usage cached_tokens) */
    enum kvg_sim_finish finish;
};

struct kvg_sim_step {
    double duration;                      /* seconds; 0 only when the engine was idle */
    const struct kvg_sim_update *updates; /* owned by the engine; see the top of this file */
    size_t n_updates;
    struct kvg_sim_batch_shape shape; /* what was timed */
    uint32_t num_decode_seqs;
    uint32_t lora_loads; /* adapters loaded in this step (each adds lora_load_s) */
    size_t n_events;     /* KV events in the log after this step */
};

/* Runs one scheduler iteration starting at `now` (seconds, caller's clock)
 * and fills *out. vLLM's order: running requests first (decode or the next
 * prefill chunk), preempting the most recently admitted ones when blocks run
 * out; then, if nothing was preempted, waiting requests FCFS while the batch
 * has room (max_num_seqs), the token budget lasts and blocks can be
 * allocated. Returns 0. When the engine has work but could schedule nothing
 * (everything just got preempted) the duration is t_fixed, never 0. */
int kvg_sim_step(struct kvg_sim *e, double now, struct kvg_sim_step *out);

/* ---- KV events (vLLM's BlockStored / BlockRemoved / AllBlocksCleared). */
enum kvg_sim_event_type {
    KVG_SIM_EV_STORED,  /* hashes/tokens of consecutive full blocks of one chain */
    KVG_SIM_EV_REMOVED, /* hashes of evicted blocks */
    KVG_SIM_EV_CLEARED, /* the whole prefix cache was reset */
};

struct kvg_sim_event {
    enum kvg_sim_event_type type;
    int has_parent;  /* STORED: 0 when hashes[0] is the first block of a prompt */
    uint64_t parent; /* STORED: hash of the block before hashes[0] */
    const uint64_t *hashes;
    uint32_t n_hashes;
    const uint32_t *tokens; /* STORED: n_hashes * block_size token ids */
    uint32_t n_tokens;
    uint32_t block_size;
    /* STORED: the adapter its blocks belong to (NULL: base) and its id, and
     * the cache salt when hashes[0] is a request's first block (vLLM puts
     * the salt in the first block's extra keys only); engine-owned. */
    const char *lora_name;
    int lora_id;
    const char *cache_salt;
    int cpu; /* the event's medium: 1 "CPU" (the CPU tier), 0 "GPU" */
};

struct kvg_sim_events {
    const struct kvg_sim_event *ev; /* owned by the engine */
    size_t n;
    uint64_t lost; /* events that could not be recorded (out of memory), ever */
};

/* The events recorded since the last kvg_sim_events_clear(), oldest first. */
void kvg_sim_events(struct kvg_sim *e, struct kvg_sim_events *out);
void kvg_sim_events_clear(struct kvg_sim *e);

/* Drops every cached block and records AllBlocksCleared (vLLM's
 * reset_prefix_cache). -EBUSY while any request holds blocks. */
int kvg_sim_reset_prefix_cache(struct kvg_sim *e);

/* The engine's block hash: XXH3-64 of the block's token ids (little-endian
 * uint32) seeded with the parent's hash; the first block's parent is
 * kvg_sim_root_hash(hash_seed). Never 0. A router does not need it (it hashes
 * token ids itself); tests use it to check events. */
uint64_t kvg_sim_block_hash(uint64_t parent, const uint32_t *tokens, uint32_t n);
uint64_t kvg_sim_root_hash(uint64_t hash_seed);

/* ---- Metrics and introspection. */
struct kvg_sim_metrics {
    uint32_t num_waiting;
    uint32_t num_running;
    double kv_usage; /* blocks held by requests / num_blocks (vllm:kv_cache_usage_perc) */
    uint32_t num_blocks;
    uint32_t block_size;
    uint32_t num_cached_blocks;    /* blocks holding a prefix-cache entry */
    uint64_t prefix_cache_queries; /* tokens looked up (first scheduling of each request) */
    uint64_t prefix_cache_hits;    /* tokens found on the GPU */
    uint32_t cpu_num_blocks;       /* CPU tier size (0: none) */
    uint32_t cpu_cached_blocks;    /* blocks held there */
    uint64_t cpu_hit_tokens;       /* tokens found there (vllm:external_prefix_cache_hits) */
    uint64_t num_preemptions;
    uint64_t prompt_tokens;     /* of requests whose prefill completed */
    uint64_t generation_tokens; /* tokens emitted */
    uint64_t finished_length, finished_stop, aborted;
    uint64_t steps;
    double busy_time; /* sum of step durations */
    uint32_t max_num_seqs, max_num_batched_tokens, max_model_len;
    uint32_t max_loras;                  /* adapter slots (0: no slot model) */
    uint64_t lora_loads, lora_evictions; /* adapters loaded / evicted, ever */
};
void kvg_sim_get_metrics(const struct kvg_sim *e, struct kvg_sim_metrics *m);

/* vLLM's vllm:num_requests_running and vllm:num_requests_waiting at `now`
 * (the caller's clock): the queue lengths as the last step that ended by then
 * left them. vLLM takes them (Scheduler.make_stats) at the end of
 * update_from_output, after the step's finished requests left `running`, and
 * a request that arrives during a step joins `waiting` before the next one
 * (EngineCore's input queue), so it shows when the next step ends. The metrics
 * above are the queues now, with the step in flight already applied: a
 * finishing request leaves them when its last step starts. 0, 0 before any
 * step ended, and after an abort that left the engine idle (kvg_sim_abort). */
void kvg_sim_reported_counts(const struct kvg_sim *e, double now, uint32_t *running,
                             uint32_t *waiting);

enum kvg_sim_state { KVG_SIM_WAITING, KVG_SIM_RUNNING };

struct kvg_sim_request_info {
    enum kvg_sim_state state;
    uint32_t prompt_len, max_tokens, target_len; /* target_len: tokens it will emit */
    uint32_t num_computed;                       /* tokens whose KV exists */
    uint32_t num_output;
    uint32_t cached_tokens;
    uint32_t num_blocks; /* blocks it holds */
    uint32_t num_preemptions;
    double arrival;
};
/* KVG_ENOTFOUND if the id is not live. */
int kvg_sim_request_get(const struct kvg_sim *e, uint64_t id, struct kvg_sim_request_info *out);

/* Copies up to cap hashes of the resident prefix cache into out (block-pool
 * order) and returns how many there are in all. */
size_t kvg_sim_cached_hashes(const struct kvg_sim *e, uint64_t *out, size_t cap);
/* Copies up to cap hashes of cached blocks no request holds, in the order
 * they would be evicted (next victim first); returns how many in all. */
size_t kvg_sim_eviction_order(const struct kvg_sim *e, uint64_t *out, size_t cap);
/* Copies up to cap hashes of the CPU tier into out, next victim first;
 * returns how many there are in all (0 without a CPU tier). */
size_t kvg_sim_cpu_cached_hashes(const struct kvg_sim *e, uint64_t *out, size_t cap);

/* vLLM's vllm:lora_requests_info labels: the adapters of running requests
 * and of waiting ones, each comma-separated without repeats (running first
 * seen first), truncated to whole names that fit. */
void kvg_sim_lora_requests(const struct kvg_sim *e, char *running, size_t rcap, char *waiting,
                           size_t wcap);
/* Copies up to cap names of the adapters the slots hold (slot order, free
 * slots skipped; engine-owned strings); returns how many are resident. */
size_t kvg_sim_lora_resident(const struct kvg_sim *e, const char **out, size_t cap);

#endif
