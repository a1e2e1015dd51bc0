/* kvgate sim's HTTP front end: shared between its files, not a public face.
 * The engine model (sim.h) runs in real time here: a libuv timer steps it,
 * scaled by --speed, and every step's tokens are written to the waiting
 * clients as vLLM (or SGLang, or llama.cpp's server) would write them. */
#ifndef KVG_SIMSRV_SIMSRV_H
#define KVG_SIMSRV_SIMSRV_H

#include <stdint.h>
#include <uv.h>

#include "base/util.h"
#include "net/http.h"
#include "metrics/metrics.h"
#include "sim/sim.h"
#include "jinja/chat.h"
#include "tokenizer/tokenizer.h"

enum kvg_simsrv_flavor {
    KVG_SIMSRV_FLAVOR_VLLM,
    KVG_SIMSRV_FLAVOR_SGLANG,
    KVG_SIMSRV_FLAVOR_LLAMACPP
};

/* What /metrics serves, to stand in for engines as they really are: full
 * (the flavor's set), no-kv (no KV usage gauge: current llama.cpp, many
 * OpenAI-compatible servers), waiting-only (the queue gauge alone), none
 * (404: no metrics endpoint), error (500), garbage (200 with an HTML page). */
enum kvg_simsrv_metrics_mode {
    KVG_SIMSRV_METRICS_FULL,
    KVG_SIMSRV_METRICS_NO_KV,
    KVG_SIMSRV_METRICS_WAITING_ONLY,
    KVG_SIMSRV_METRICS_NONE,
    KVG_SIMSRV_METRICS_ERROR,
    KVG_SIMSRV_METRICS_GARBAGE,
};
/* "full", "no-kv", ...: the mode, or -1. */
int kvg_simsrv_metrics_mode_parse(const char *s);

struct kvg_simsrv_opts {
    char host[64];
    int port;
    char model[128];
    char profile[64];
    enum kvg_simsrv_flavor flavor;
    uint32_t block_size;             /* 0: the profile's */
    uint64_t kv_capacity_tokens;     /* 0: the profile's */
    uint32_t max_num_seqs;           /* 0: the profile's */
    uint64_t cpu_kv_capacity_tokens; /* --cpu-kv-capacity-tokens: a CPU tier (0: none) */
    double cpu_load_s_per_token;     /* < 0: the profile's */
    uint32_t dp_size;                /* --dp-size: data-parallel ranks behind this URL */
    char lora_adapters[8192];        /* --lora-adapters a,b: LoRA adapters served on top of model */
    char kv_events_endpoint[256];
    int kv_events_map; /* map encoding instead of arrays */
    char replay_endpoint[256];
    char kv_topic[128];
    double speed;
    uint64_t seed;
    char tokenizer[512];
    char tokenizer_config[512];
    /* fault injection */
    double fail_rate;         /* answer fail_status */
    uint32_t fail_status;     /* 500; 503 or 429: an engine shedding load */
    double hang_rate;         /* never answer, keep the socket */
    int64_t disconnect_after; /* cut streams after K tokens; -1 off */
    double cold_start_s;      /* /health 503 this long after start */
    double kv_events_drop;    /* drop event batches with this probability */
    int metrics_mode;         /* enum kvg_simsrv_metrics_mode, from the start */
    int metrics_later;        /* the mode after metrics_after_s real seconds (none|error|garbage) */
    double metrics_after_s;   /* < 0: never switch */
    int log_level;
    /* disaggregated serving (sim/pd.c) */
    int role;                   /* enum kvg_simsrv_role */
    double kv_hold_timeout_s;   /* a prefill's unpulled blocks are freed after this (480) */
    char labels[256];           /* k=v,...: node, rack, zone pick the KV link's bandwidth */
    int side_channel_port;      /* the prefill's KV side channel (0: none unless --role prefill) */
    double kv_transfer_extra_s; /* fault: every transfer takes this much longer */
    int kv_load_fail;           /* vLLM's kv_load_failure_policy: 1 fail (default), 0 recompute */
    int bootstrap_port;         /* an SGLang-flavor prefill's bootstrap listener (0: none) */
    double bootstrap_timeout_s; /* a decode waits this long for its room's KV (120) */
    char encoder_urls[1024];    /* SGLang: a prefill's encoders, URL[,URL] (sim/encode.c) */
    /* The endpoints beyond chat and completions (route.c and the api_*.c) */
    char served_names[1024];      /* --served-model-name a,b: every one is served, the first
                                     is the one answers name (vLLM); empty: --model */
    uint32_t disabled;            /* 1u << enum kvg_simsrv_api: answered as an unknown path */
    uint32_t embedding_dim;       /* the length of a pooling output (16) */
    int responses_store;          /* keep responses (vLLM's VLLM_ENABLE_RESPONSES_API_STORE) */
    uint32_t responses_store_max; /* stored responses kept, the oldest evicted first */
    uint32_t max_batch;           /* inputs of one pooling, score or rerank request */
    double max_audio_mb;          /* vLLM's VLLM_MAX_AUDIO_CLIP_FILESIZE_MB (25) */
    /* Sleep mode (sleep.c) */
    int enable_sleep_mode; /* --enable-sleep-mode (SGLang: its --enable-memory-saver) */
    int dev_mode;     /* VLLM_SERVER_DEV_MODE=1: vLLM attaches /sleep, /wake_up, /is_sleeping */
    double wake_s[2]; /* --wake-secs L1,L2: engine seconds (< 0: the profile's) */
};

/* The APIs a simulated engine serves beyond /health, /metrics and
 * /v1/models: one bit each of --disable-endpoints, to stand in for an
 * engine build without them (then their paths answer as unknown ones). */
enum kvg_simsrv_api {
    KVG_SIMSRV_API_CHAT,
    KVG_SIMSRV_API_COMPLETIONS,
    KVG_SIMSRV_API_RESPONSES, /* POST /v1/responses and /v1/responses/{id}[/cancel] */
    KVG_SIMSRV_API_MESSAGES,  /* POST /v1/messages and /v1/messages/count_tokens */
    KVG_SIMSRV_API_GENERATE,  /* SGLang's POST /generate */
    KVG_SIMSRV_API_EMBEDDINGS,
    KVG_SIMSRV_API_POOLING,
    KVG_SIMSRV_API_CLASSIFY,
    KVG_SIMSRV_API_SCORE,
    KVG_SIMSRV_API_RERANK,
    KVG_SIMSRV_API_TOKENIZE,
    KVG_SIMSRV_API_DETOKENIZE,
    KVG_SIMSRV_API_AUDIO, /* /v1/audio/transcriptions and /translations */
    KVG_SIMSRV_API_N
};
/* "chat", "completions", "responses", "messages", "generate", "embeddings",
 * "pooling", "classify", "score", "rerank", "tokenize", "detokenize",
 * "audio": the API, or -1 (route.c). */
int kvg_simsrv_api_parse(const char *name, size_t len);
const char *kvg_simsrv_api_name(int api);

/* What a simulated engine is in a disaggregated deployment. both: today's
 * aggregated engine (it also answers either PD leg, as vLLM's kv_both). */
enum kvg_simsrv_role {
    KVG_SIMSRV_ROLE_BOTH,
    KVG_SIMSRV_ROLE_PREFILL,
    KVG_SIMSRV_ROLE_DECODE,
    KVG_SIMSRV_ROLE_ENCODE, /* an encoder-only engine (sim/encode.c): media in, embeddings held */
};

#define KVG_SIMSRV_MAX_MEDIA 16

/* A request's media and its ec_transfer_params (sim/encode.c). */
struct kvg_simsrv_ec_req {
    uint32_t n;                          /* image parts in its messages */
    uint64_t hash[KVG_SIMSRV_MAX_MEDIA]; /* each one's mm_hash (of its URL or data) */
    int has_params;                      /* ec_transfer_params came with it */
    char remote_engine_id[64];
    char remote_host[64];
    int remote_port;
};

/* A request's kv_transfer_params (vLLM NixlConnector's fields). */
struct kvg_simsrv_pd_params {
    int do_remote_decode;  /* a prefill whose decode happens elsewhere: hold the blocks */
    int do_remote_prefill; /* a decode whose prompt KV is pulled from remote_* */
    char remote_engine_id[64];
    char remote_request_id[64];
    char remote_host[64];
    int remote_port;
    int tp_size;
    uint32_t n_remote_blocks;
    /* SGLang's bootstrap protocol: the router put bootstrap_host/port/room
     * in the same body to both legs. On a prefill: hold the KV for the room;
     * on a decode: wait (bounded) for it on the prefill's bootstrap port. */
    int bootstrap_prefill, bootstrap_decode;
    char bootstrap_host[64];
    int bootstrap_port;
    char room[32]; /* the room as both legs print it (JSON numbers are doubles) */
};

struct kvg_simsrv_pd;
struct kvg_simsrv_rank;
struct kvg_http_call;

/* One request in flight (api.c; pd.c for its PD leg). */
struct sim_req {
    struct kvg_simsrv_server *s;
    struct kvg_simsrv_rank *rk; /* the data-parallel rank running it */
    struct kvg_http_req *req;
    uint64_t id;
    int chat, stream, include_usage, hung;
    char rid[64];
    uint32_t prompt_len, cached, ntok;
    double arrival, last_token_t;
    struct kvg_buf text;  /* non-stream: the answer so far */
    struct sim_req *next; /* live bucket chain */
    int lora;             /* index in s->adapters, -1 for the base model */
    struct kvg_simsrv_pd_params pd;
    /* A decode pulling its KV: the engine request waits here (ids owned). */
    struct kvg_sim_request pending;
    uint32_t *pending_ids;
    char pending_salt[256];
    struct kvg_http_call *pull; /* the side-channel call, NULL when none */
    int pull_status;
    char pull_body[512];
    size_t pull_len;
    struct kvg_simsrv_ec_req ec; /* its media (sim/encode.c) */
    int started;                 /* its stream's head was sent */
    /* An answer in another API's shape (Responses, Messages, SGLang's
     * /generate, audio, pooling): its hooks and their state (NULL: chat or
     * completions, written by api.c). */
    const struct kvg_simsrv_out *out;
    void *ext;
    uint32_t gidx; /* its index in a pooling request's group */
};

/* How a request's tokens reach its client when it is not a chat or
 * completions request. token: one output token, its id and text (first:
 * the first one; fin:
 * set on the last); done: the engine finished it, the answer ends; head
 * (optional): a stream's first events, right after its head; fail
 * (optional): the answer to a failure (NULL: vLLM's 500); release
 * (optional): frees ext, called once as r is freed, on every path. r->req
 * is NULL for a request no client waits on (a background response). */
struct kvg_simsrv_out {
    void (*head)(struct sim_req *r);
    void (*token)(struct sim_req *r, uint32_t id, const char *t, size_t n, int first,
                  enum kvg_sim_finish fin);
    void (*done)(struct sim_req *r, enum kvg_sim_finish fin);
    void (*fail)(struct sim_req *r, const char *msg);
    void (*release)(struct sim_req *r);
};

struct sim_metrics;

#define KVG_SIMSRV_MAX_ADAPTERS 64 /* vLLM serves hundreds: enough to test a router past a few */
#define KVG_SIMSRV_ADAPTER_NAME 256
#define KVG_SIMSRV_MAX_DP 16

/* One data-parallel rank (vLLM's engine core): its own cache, batch, step
 * timer, KV event publisher (endpoint port + rank) and metric series (label
 * engine="rank"). Without --dp-size there is one, rank 0. */
struct kvg_simsrv_rank {
    struct kvg_simsrv_server *s;
    int rank;
    struct kvg_sim *engine;
    uv_timer_t step_timer;
    int stepping;                 /* a step is "on the GPU" */
    struct kvg_sim_step pending;  /* its outcome, delivered when the timer fires */
    struct kvg_simsrv_kvpub *pub; /* NULL without --kv-events-endpoint */
    struct sim_metrics *m;
};

struct kvg_simsrv_server {
    struct kvg_simsrv_opts o;
    uv_loop_t *loop;
    struct kvg_http_server *http;
    struct kvg_simsrv_rank ranks[KVG_SIMSRV_MAX_DP];
    int ndp;
    struct kvg_tok *tok;
    struct kvg_jinja_chat *tmpl;
    double t0; /* kvg_now_s() at start: the sim clock runs from it */
    double started_wall;
    uint64_t next_id;
    struct sim_req **live; /* by id & mask: open addressing */
    size_t live_cap, nlive;
    struct kvg_rng rng;
    /* The answers' ids (resp_, msg_, chatcmpl-, uuid4s): unique across
     * processes, as the engines' random uuids are; a gateway that follows a
     * stored response by its id needs two sims never to answer the same. */
    struct kvg_rng id_rng;
    struct kvg_metrics_registry *reg;
    uint32_t max_model_len;
    char adapters[KVG_SIMSRV_MAX_ADAPTERS][KVG_SIMSRV_ADAPTER_NAME]; /* from --lora-adapters */
    int nadapters;
    uint64_t kv_bytes_per_token; /* the profile's KV shape (a PD transfer's size) */
    struct kvg_simsrv_pd *pd;    /* PD state (sim/pd.c); NULL until kvg_simsrv_pd_start */
    struct kvg_simsrv_ec *ec;    /* encode state (sim/encode.c); NULL until kvg_simsrv_ec_start */
    double t_encode_image;       /* the profile's encode time per image, engine seconds */
    /* --served-model-name's names (names[0] is o.model) */
    char names[8][128];
    int nnames;
    struct kvg_simsrv_store *store; /* stored responses (resp_store.c); NULL without a store */
    struct sim_req *bg;             /* background responses running (api_responses.c) */
    uint32_t eos_id;                /* the tokenizer's EOS id (SGLang's matched stop) */
    struct kvg_simsrv_sleep *sleep; /* sleep mode (sleep.c); NULL without --enable-sleep-mode */
};

/* ---- simsrv/sleep.c: vLLM's sleep mode and SGLang's memory release. */
enum { KVG_SIMSRV_SLEEP_ABORT, KVG_SIMSRV_SLEEP_WAIT };
#define KVG_SIMSRV_TAG_WEIGHTS 1u
#define KVG_SIMSRV_TAG_KV_CACHE 2u
#define KVG_SIMSRV_TAG_CUDA_GRAPH 4u /* SGLang's third tag: accepted, costs nothing here */
struct kvg_simsrv_sleep_args {
    int level, mode;
    unsigned tags; /* 0: every tag */
};
/* A /sleep or /wake_up query string (level, mode, repeated tags; unknown
 * keys ignored, as FastAPI does): 0, or -1 with the reason in err. Pure. */
int kvg_simsrv_sleep_query(const char *q, size_t n, struct kvg_simsrv_sleep_args *out, char *err,
                           size_t errlen);
/* SGLang's body {"tags": [...]} (empty body or null tags: every tag): 0 or
 * -1 with the reason. Pure. */
int kvg_simsrv_sleep_tags_json(const char *body, size_t len, unsigned *tags, char *err,
                               size_t errlen);
/* With --enable-sleep-mode: the state and its timer on s->loop (wake times
 * in engine seconds). 0 or -ENOMEM. */
int kvg_simsrv_sleep_start(struct kvg_simsrv_server *s, double wake_l1_s, double wake_l2_s);
void kvg_simsrv_sleep_stop(struct kvg_simsrv_server *s);
/* 1 when req was a sleep route of this flavor (answered). */
int kvg_simsrv_sleep_route(struct kvg_simsrv_server *s, struct kvg_http_req *req);
/* 1 while the scheduler is paused by a sleep: submitted requests wait. */
int kvg_simsrv_paused(const struct kvg_simsrv_server *s);
/* The sleep level now (0 awake): for /metrics. */
int kvg_simsrv_sleep_level(const struct kvg_simsrv_server *s);
/* api.c: ends every running request as aborted (chat and completions with
 * finish_reason "abort", other APIs with their failure answer, msg). */
void kvg__simsrv_abort_all(struct kvg_simsrv_server *s, const char *msg);
/* api.c: starts rk's next step if it has work (after a wake). */
void kvg__simsrv_step(struct kvg_simsrv_rank *rk);
/* api.c: publishes and clears rk's recorded KV events. */
void kvg__simsrv_publish_events(struct kvg_simsrv_rank *rk);
/* route.c: FastAPI's 405 with its Allow header. */
void kvg__simsrv_not_allowed(struct kvg_simsrv_server *s, struct kvg_http_req *req,
                             const char *allow);

/* ---- sim/encode.c: the encode stage (EPD).
 * Starts the encoder state (every role: an encoder's cache and queue, a
 * prefill's --encoder-urls and HTTP client, everyone's counters). */
struct kvg_simsrv_ec;
struct cJSON;
int kvg_simsrv_ec_start(struct kvg_simsrv_server *s, char *err, size_t errlen);
void kvg_simsrv_ec_stop(struct kvg_simsrv_server *s);
/* Reads a request's media and ec_transfer_params into out; -1 with msg
 * when the params are malformed. Counts params seen (GET /debug/ec). */
int kvg_simsrv_ec_parse(struct kvg_simsrv_server *s, const struct cJSON *j,
                        struct kvg_simsrv_ec_req *out, char *msg, size_t msglen);
/* The chat body with each image part turned into a placeholder text part
 * naming its mm_hash (what the template renders and the tokenizer counts
 * in place of the image's tokens); NULL when it has no media. Caller frees. */
char *kvg_simsrv_ec_text_body(const struct cJSON *j);
/* An encode-role engine answers a completion: encodes the media (the
 * profile's t_encode_image each, one at a time) and answers with
 * ec_transfer_params (vLLM's EPD). */
void kvg_simsrv_ec_encode(struct kvg_simsrv_server *s, struct kvg_http_req *req,
                          const struct cJSON *j, int chat);
/* SGLang's encoder endpoint (POST /encode), called by prefills. */
void kvg_simsrv_ec_encode_call(struct kvg_simsrv_server *s, struct kvg_http_req *req);
/* The side channel's POST /v1/ec/read on an encoder (sim/pd.c routes it). */
void kvg_simsrv_ec_read(struct kvg_simsrv_server *s, struct kvg_http_req *req);
/* 1 when r must get its embeddings before it runs: vLLM's (its
 * ec_transfer_params name an encoder) or SGLang's (a prefill with
 * --encoder-urls and media). */
int kvg_simsrv_ec_wanted(const struct sim_req *r);
/* Gets them (a real call to the encoder), then kvg_simsrv_run(r),
 * or fails r the way vLLM does (a 500). Uses r->pull. */
void kvg_simsrv_ec_fetch(struct sim_req *r);
/* GET /debug/ec: what this engine did in the encode stage. */
void kvg_simsrv_ec_debug(struct kvg_simsrv_server *s, struct kvg_http_req *req);

/* ---- sim/pd.c: the vLLM NIXL two-hop protocol.
 * Starts the PD state: an engine id (new at every start, as vLLM's), the
 * held-block table and, for a prefill, the side-channel listener decodes
 * pull KV blocks from. 0 or a negative code (message in err). */
int kvg_simsrv_pd_start(struct kvg_simsrv_server *s, char *err, size_t errlen);
void kvg_simsrv_pd_stop(struct kvg_simsrv_server *s);
/* The engine's id (new at every start) and its side channel's port (0: none). */
const char *kvg_simsrv_pd_engine_id(const struct kvg_simsrv_server *s);
int kvg_simsrv_pd_side_port(const struct kvg_simsrv_server *s);
/* Prefills whose KV rank holds for a decode (read or not yet). */
unsigned kvg_simsrv_pd_held(const struct kvg_simsrv_server *s, int rank);
/* Reads a request's kv_transfer_params into out (zeroed when absent); -1
 * with msg when they are malformed or the role refuses the leg. */
struct cJSON;
int kvg_simsrv_pd_parse(struct kvg_simsrv_server *s, const struct cJSON *j,
                        struct kvg_simsrv_pd_params *out, char *msg, size_t msglen);
/* A prefill finished: keep its blocks for the decode (when the finish was
 * length-capped, as vLLM) and write its kv_transfer_params into b (NULL: a
 * stream, none written) (a JSON
 * member ",\"kv_transfer_params\":{...}"). */
void kvg_simsrv_pd_prefill_done(struct sim_req *r, int length_capped, struct kvg_buf *b);
/* A decode with do_remote_prefill: pulls the blocks, then submits r
 * (kvg_simsrv_submit) or fails it the way vLLM does. Takes r->pending*. */
void kvg_simsrv_pd_pull(struct sim_req *r);
/* A bootstrap prefill ended before its KV was held (client gone): a decode
 * waiting for its room is told at once. */
void kvg_simsrv_pd_room_aborted(struct sim_req *r);
/* The client left while r was pulling: the pull is cancelled (the prefill
 * then frees its blocks, as vLLM's decode notifies it). */
void kvg_simsrv_pd_pull_abort(struct sim_req *r);
/* api.c: hands r->pending to the engine and makes r live; on failure
 * answers the client. remote_tokens: prompt tokens the pull supplied. */
void kvg_simsrv_submit(struct sim_req *r, uint32_t remote_tokens);
/* api.c: starts r's answer (a stream's head), then its KV pull or
 * kvg_simsrv_submit. */
void kvg_simsrv_run(struct sim_req *r);
/* api.c: vLLM's error body {"error": {message, type, param, code}}. */
void kvg_simsrv_error(struct kvg_http_req *req, int status, const char *type, const char *msg);
/* llama.cpp's flavor (simsrv/llamacpp.c): does llama.cpp's server refuse
 * body j (chat: a chat completion)? 1 and msg set when it does. */
int kvg__simsrv_llamacpp_refuses(const struct cJSON *j, int chat, char *msg, size_t msglen);
/* Answers status with llama.cpp's error body. */
void kvg__simsrv_llamacpp_error(struct kvg_http_req *req, int status, const char *msg);
/* api.c: ends r with vLLM's 500 (JSON, or an SSE error event and
 * [DONE] once the stream has started) and frees it. */
void kvg_simsrv_fail(struct sim_req *r, const char *msg);

/* Adapters of the live requests, comma-separated, each once: those running
 * and those waiting (vLLM's vllm:lora_requests_info labels). */
void kvg_simsrv_lora_active(struct kvg_simsrv_server *s, char *running, size_t rcap, char *waiting,
                            size_t wcap);

/* Engine clock: seconds since start, times --speed. */
double kvg_simsrv_now(const struct kvg_simsrv_server *s);
/* The request handler (api.c). */
void kvg_simsrv_handle(struct kvg_http_req *req, void *ud);
/* Metrics (metrics.c). */
int kvg_simsrv_metrics_init(struct kvg_simsrv_server *s);
void kvg_simsrv_metrics_free(struct kvg_simsrv_server *s);
void kvg_simsrv_metrics_render(struct kvg_simsrv_server *s, struct kvg_http_req *req);
void kvg_simsrv_observe_ttft(struct kvg_simsrv_rank *rk, double secs);
void kvg_simsrv_observe_itl(struct kvg_simsrv_rank *rk, double secs);
void kvg_simsrv_observe_e2e(struct kvg_simsrv_rank *rk, double secs, int finish_length);
/* Encodes and publishes the rank's pending KV events (server.c). */
void kvg_simsrv_publish(struct kvg_simsrv_rank *rk);
/* kvgate sim's defaults (server.c). */
void kvg_simsrv_opts_default(struct kvg_simsrv_opts *o);
/* Runs the simulated engine with o until SIGTERM/SIGINT (server.c). Returns
 * the process exit status: 0, 1 when it cannot listen, 2 on a rejected
 * configuration (the reason on stderr). */
int kvg_simsrv_main(const struct kvg_simsrv_opts *o);

/* ---- Shared by the endpoints (gen.c). */

/* What a generation asks of the engine. */
struct kvg_simsrv_gen {
    struct kvg_http_req *req; /* NULL: no client waits (a background response) */
    struct kvg_simsrv_rank *rk;
    int lora; /* index in s->adapters, -1 the base model */
    int chat; /* api.c's chat shape (with out NULL) */
    int stream, include_usage;
    uint32_t *ids; /* taken: freed on every path */
    size_t nids;
    uint32_t max_tokens; /* >= 1 and within the context: checked by the caller */
    int ignore_eos;
    int64_t seed;     /* < 0: none */
    const char *salt; /* NULL: none */
    const char *rid;  /* the answer's id (copied) */
    const struct kvg_simsrv_out *out;
    void *ext;  /* out's state: the request's (out->release frees it) once kvg__simsrv_req_new
                   returned it */
    int member; /* one of a group: the caller owns req's on_abort, no hang fault */
};
/* api.c: a live request for g (not yet submitted); NULL when out of memory
 * (g's ids freed, its ext still the caller's, nothing answered). */
struct sim_req *kvg__simsrv_req_new(struct kvg_simsrv_server *s, const struct kvg_simsrv_gen *g);
/* api.c: starts r: the hang fault, its encoder fetch, or kvg_simsrv_run. */
void kvg__simsrv_req_start(struct sim_req *r);
/* api.c: drops a live (submitted) request: aborted in the engine, freed. */
void kvg__simsrv_req_drop(struct sim_req *r);
/* api.c: vLLM's answer to r's failure (a 500, or an SSE error event and
 * [DONE] once its stream started); nothing when no client waits. */
void kvg__simsrv_fail_answer(struct sim_req *r, const char *msg);
/* api.c: POST /reset_prefix_cache on every rank (409 while requests run). */
void kvg__simsrv_reset_prefix_cache(struct kvg_simsrv_server *s, struct kvg_http_req *req);

/* The rank a request runs on (api.c's rule), NULL and msg when it names a
 * rank this server does not have. */
struct kvg_simsrv_rank *kvg__simsrv_pick_rank(struct kvg_simsrv_server *s, struct kvg_http_req *req,
                                              const struct cJSON *j, char *msg, size_t msglen);
/* The model a request names: -1 the base model (a served name, or none
 * given), an adapter's index, or -2 (unknown; msg holds vLLM's words). */
int kvg__simsrv_model(const struct kvg_simsrv_server *s, const struct cJSON *model, char *msg,
                      size_t msglen);
/* The name an answer reports for lora (-1: the first served name). */
const char *kvg__simsrv_model_name(const struct kvg_simsrv_server *s, int lora);
/* A chat completions body as prompt ids: the chat template, then the
 * tokenizer. 0, or non-zero with msg set. *ids is the caller's. */
int kvg__simsrv_chat_ids(struct kvg_simsrv_server *s, const char *body, size_t len, uint32_t **ids,
                         size_t *n, char *msg, size_t msglen);
/* A completions prompt (a string or token ids) as prompt ids. */
int kvg__simsrv_prompt_ids(struct kvg_simsrv_server *s, const struct cJSON *p, int add_special,
                           uint32_t **ids, size_t *n, char *msg, size_t msglen);
/* j[key] as an integer 0..1e9 (dflt when absent or null); -1 and msg. */
int kvg__simsrv_get_uint(const struct cJSON *j, const char *key, int64_t dflt, int64_t *out,
                         char *msg, size_t msglen);
/* vLLM's context check of a generation: max_tokens (< 0: the rest of the
 * context) fitted; -1 and vLLM's message when it does not fit. */
int kvg__simsrv_fit(const struct kvg_simsrv_server *s, size_t nids, int64_t *max_tokens, char *msg,
                    size_t msglen);
/* Ids as vLLM's random_uuid() (32 hex digits) and str(uuid.uuid4()). */
void kvg__simsrv_hex_id(struct kvg_simsrv_server *s, char out[33]);
void kvg__simsrv_uuid4(struct kvg_simsrv_server *s, char out[37]);
/* Error bodies: vLLM's with a param (NULL: null); Anthropic's
 * {"type":"error","error":{type,message}}; FastAPI's {"detail":..};
 * SGLang's native {"error":{"message":..}}; vLLM's request validation
 * error (pydantic's, 400, type "Bad Request") naming the parameter. */
void kvg__simsrv_error_param(struct kvg_http_req *req, int status, const char *type,
                             const char *msg, const char *param);
void kvg__simsrv_error_anthropic(struct kvg_http_req *req, int status, const char *type,
                                 const char *msg);
/* A JSON answer: open, msg as a JSON string, close ({"detail": ...} and
 * the like, each engine's own error envelope). */
void kvg__simsrv_send_wrapped(struct kvg_http_req *req, int status, const char *open,
                              const char *msg, const char *close);
void kvg__simsrv_error_detail(struct kvg_http_req *req, int status, const char *detail);
void kvg__simsrv_error_sglang(struct kvg_http_req *req, int status, const char *msg);
void kvg__simsrv_error_validation(struct kvg_http_req *req, const char *param, const char *msg);
/* The fault injection of every POST endpoint: 1 when it answered (a 500). */
int kvg__simsrv_inject_fail(struct kvg_simsrv_server *s, struct kvg_http_req *req);
/* A float as Python prints it (1.0, 0.7, 1e-05). */
void kvg__simsrv_pyfloat(struct kvg_buf *b, double v);
/* A request's member echoed as compact JSON; dflt ("null", "[]") when it
 * is absent or null. */
void kvg__simsrv_raw(struct kvg_buf *b, const struct cJSON *v, const char *dflt);
/* Starts a stream's answer: 200, text/event-stream. */
void kvg__simsrv_sse_start(struct kvg_http_req *req);

/* ---- The endpoints (api_*.c, audio.c), each answering req. */
void kvg__simsrv_completion(struct kvg_simsrv_server *s, struct kvg_http_req *req, int chat);
void kvg__simsrv_responses(struct kvg_simsrv_server *s, struct kvg_http_req *req);
void kvg__simsrv_response_id(struct kvg_simsrv_server *s, struct kvg_http_req *req, const char *id,
                             size_t idlen, int cancel);
void kvg__simsrv_messages(struct kvg_simsrv_server *s, struct kvg_http_req *req, int count_only);
void kvg__simsrv_generate(struct kvg_simsrv_server *s, struct kvg_http_req *req);
void kvg__simsrv_pooling(struct kvg_simsrv_server *s, struct kvg_http_req *req, int api);
void kvg__simsrv_score(struct kvg_simsrv_server *s, struct kvg_http_req *req, int rerank);
void kvg__simsrv_tokenize(struct kvg_simsrv_server *s, struct kvg_http_req *req, int detok);
void kvg__simsrv_audio(struct kvg_simsrv_server *s, struct kvg_http_req *req, int translate);

/* ---- Pooling requests (pool_group.c): n prompt-only engine requests (ids[i]
 * of nids[i] >= 1 tokens, taken) for one client request; answer(req, ud,
 * cached hits per input, n) once all finished. free_ud(ud) runs once, when
 * the last of them is gone (answered, failed or the client left). The hang
 * fault applies to the whole request. */
typedef void (*kvg_simsrv_group_answer)(struct kvg_http_req *req, void *ud, const uint32_t *cached,
                                        size_t n);
void kvg__simsrv_group_run(struct kvg_simsrv_server *s, struct kvg_http_req *req,
                           struct kvg_simsrv_rank *rk, int lora, uint32_t **ids, const size_t *nids,
                           size_t n, kvg_simsrv_group_answer answer, void *ud,
                           void (*free_ud)(void *ud));

/* Inputs of a pooling request (api_pooling.c): token ids per input. */
struct kvg_simsrv_inputs {
    uint32_t **ids;
    size_t *len;
    size_t n, cap;
    const char *operation; /* what vLLM's over-length message names (NULL: embedding generation) */
};
#define KVG_SIMSRV_MAX_DIM 4096
/* vLLM's `input`: a string, strings, token ids or lists of them, each one
 * input, at most --max-batch of them, each within the context. 0, or
 * KVG_EPARSE / KVG_ETOOBIG / -ENOMEM with msg (vLLM's words). */
int kvg__simsrv_inputs_read(struct kvg_simsrv_server *s, const struct cJSON *input, int add_special,
                            struct kvg_simsrv_inputs *in, char *msg, size_t msglen);
void kvg__simsrv_inputs_free(struct kvg_simsrv_inputs *in);
/* The sim's embedding of token ids: each id a fixed pseudo-random vector,
 * their sum normalised (dim <= KVG_SIMSRV_MAX_DIM). */
void kvg__simsrv_embed(const uint32_t *ids, size_t n, uint32_t dim, float *out);
/* Two embeddings' cosine similarity mapped to 0..1 (the sim's score). */
double kvg__simsrv_similarity(const float *a, const float *b, uint32_t dim);
/* An error of a pooling endpoint in the flavor's shape. */
void kvg__simsrv_pool_error(struct kvg_simsrv_server *s, struct kvg_http_req *req, int status,
                            const char *msg);

/* ---- Stored responses (resp_store.c): a bounded map from a response's
 * id to its Response object and its conversation, oldest evicted first. */
struct kvg_simsrv_store;
int kvg__simsrv_store_new(uint32_t max, struct kvg_simsrv_store **out);
void kvg__simsrv_store_free(struct kvg_simsrv_store *st);
/* Keeps (a copy of) a response: its JSON object, its conversation (the
 * chat messages it was rendered from, a JSON array) and its output text.
 * A kept id is replaced. 0 or -ENOMEM. */
int kvg__simsrv_store_put(struct kvg_simsrv_store *st, const char *id, const char *response,
                          size_t rlen, const char *messages, size_t mlen, const char *output,
                          size_t olen);
/* A kept response (views valid until the next put or del), or NULL. */
struct kvg_simsrv_stored {
    const char *response, *messages, *output;
    size_t rlen, mlen, olen;
};
int kvg__simsrv_store_get(const struct kvg_simsrv_store *st, const char *id, size_t idlen,
                          struct kvg_simsrv_stored *out);
/* 0, or KVG_ENOTFOUND. */
int kvg__simsrv_store_del(struct kvg_simsrv_store *st, const char *id, size_t idlen);

/* audio.c: seconds of audio in a file (a WAV's header, else its size at
 * 16 kHz 16-bit mono). */
double kvg__simsrv_audio_seconds(const unsigned char *f, size_t n);

#endif
