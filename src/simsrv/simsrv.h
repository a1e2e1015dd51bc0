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
    double fail_rate;         /* answer 500 */
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
};

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
    char rid[40];
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
    struct kvg_metrics_registry *reg;
    uint32_t max_model_len;
    char adapters[KVG_SIMSRV_MAX_ADAPTERS][KVG_SIMSRV_ADAPTER_NAME]; /* from --lora-adapters */
    int nadapters;
    uint64_t kv_bytes_per_token; /* the profile's KV shape (a PD transfer's size) */
    struct kvg_simsrv_pd *pd;    /* PD state (sim/pd.c); NULL until kvg_simsrv_pd_start */
    struct kvg_simsrv_ec *ec;    /* encode state (sim/encode.c); NULL until kvg_simsrv_ec_start */
    double t_encode_image;       /* the profile's encode time per image, engine seconds */
};

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

#endif
