/* Workload generators of kvgate bench: what is sent, and when.
 *
 * Three kinds:
 *   shared_prefix  inference-perf's `shared_prefix` data: `groups` groups, each
 *                  a system prompt of system_len random token ids, and
 *                  prompts_per_group prompts = that prefix + a question of
 *                  question_len random ids. Ids are drawn uniformly from the
 *                  vocabulary, group by group (prefix, then its questions), as
 *                  inference-perf draws them before decoding to text. All
 *                  prompts are shuffled ONCE, then request n uses prompt
 *                  order[n mod (groups x prompts_per_group)]: every exact prompt
 *                  recurs once per full set.
 *   chat           multi-turn sessions that grow their context: turn 1 is a
 *                  shared system prompt (one of chat_groups) + a user message
 *                  of user_len ids; turn k+1 = turn k's prompt + its output +
 *                  a new user message, sent an exponential think time (mean
 *                  think_s) after turn k ended. Stage rates count sessions.
 *                  Variants: agentic sessions (turn counts and tool-result
 *                  lengths drawn per session / per turn) and a mix of short
 *                  chats with single questions about long documents.
 *   trace          replay of a JSONL file, one request per line (trace.c
 *                  documents the fields).
 *   agent          coding-agent sessions as the agents send them
 *                  (agent.h): JSON bodies of the Responses API (Codex-like)
 *                  or the Anthropic Messages API (Claude Code-like), long
 *                  shared instructions and tools, each turn appending the
 *                  model's answer, a tool call and its result. Offline, each
 *                  body is rendered to the engine's token ids the way the
 *                  proxy does (kvg_api_to_chat, the chat template, the
 *                  tokenizer: proxy/route_input.h); live sends the body.
 *
 * Load: a list of stages. A stage with rate > 0 is open loop (Poisson
 * arrivals at `rate` per second for `secs` seconds); a stage with conc > 0 is
 * closed loop (it keeps `conc` requests, or chat sessions, of its own in
 * flight for `secs` seconds). The first `warmup` stages are not measured.
 * Nothing arrives after the last stage ends (a chat session is cut there).
 *
 * Text: the live client sends text, the offline simulator routes on ids.
 * With `printable`, ids are printable ASCII bytes (32..126) and the text is
 * those bytes: kvgate's built-in byte tokenizer (the default of kvgate serve
 * and kvgate sim) turns it back into the same ids, so the router's hashes
 * and the engine's blocks agree. A shared-prefix prompt is then prefix + ' ' +
 * question, as inference-perf joins the decoded texts. Otherwise ids come
 * from [0, vocab) and `want_text` renders each id as four characters (three
 * base-64 digits and a space: llm-d's approximate scorer assumes ~4
 * characters per token) so text-keyed policies (cache_aware) have text too.
 *
 * Everything is a pure function of the options and the seed. One workload is
 * used by one thread. Requests are owned by the workload: pop hands one out,
 * done hands it back (and may schedule a follow-up, for chat and closed loop). */
#ifndef KVG_BENCH_WORKLOAD_H
#define KVG_BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "bench/stats.h"

enum kvg_bench_wl_kind {
    KVG_BENCH_WL_SHARED_PREFIX,
    KVG_BENCH_WL_CHAT,
    KVG_BENCH_WL_TRACE,
    KVG_BENCH_WL_AGENT
};

/* The API an agent session talks (agent workload). */
enum kvg_bench_agent_api {
    KVG_BENCH_AGENT_RESPONSES, /* POST /v1/responses, as Codex sends it */
    KVG_BENCH_AGENT_MESSAGES,  /* POST /v1/messages?beta=true, as Claude Code sends it */
    KVG_BENCH_AGENT_MIXED      /* every other session each */
};

struct kvg_bench_stage {
    double rate;   /* requests (chat: sessions) per second, Poisson; 0 for closed loop */
    uint32_t conc; /* closed loop: requests (sessions) kept in flight */
    double secs;
};

struct kvg_bench_wl_opts {
    enum kvg_bench_wl_kind kind;
    uint64_t seed;
    uint32_t vocab;      /* ids in [0, vocab) unless printable */
    int printable;       /* ids are the bytes 32..126 and the text is those bytes */
    int want_text;       /* build text when not printable (4 characters per id) */
    uint32_t output_len; /* max_tokens of every request (trace: per line) */
    int ignore_eos;
    /* shared_prefix */
    uint32_t groups, prompts_per_group, system_len, question_len;
    /* chat */
    uint32_t turns, user_len, chat_groups, chat_system_len, max_context;
    double think_s;
    /* chat variants (0: off). Agentic sessions: each session runs a number
     * of turns drawn uniformly from [turns_min, turns], and each new message
     * (a tool result) has a length drawn from [user_len, user_len_max].
     * Mixed: a share long_frac of the sessions are one question of user_len
     * ids about a long document of long_len ids, one of long_docs documents
     * (drawn uniformly: documents recur), a single turn. */
    uint32_t turns_min, user_len_max;
    double long_frac;
    uint32_t long_len, long_docs;
    /* Multi-LoRA (lora_adapters > 0): each session runs on one adapter
     * ("lora-<i>"), one of the lora_hot hot ones with probability
     * lora_hot_frac, else one of the cold others, all uniformly; its
     * system prompt is the adapter's own (chat group i mod chat_groups).
     * Salted tenants (salt_tenants > 0): each session belongs to one tenant
     * drawn uniformly, sends its cache_salt ("tenant-<t>") and uses the
     * tenant's system prompt (group t mod chat_groups: with fewer groups
     * than tenants, tenants share texts that their salts keep apart). */
    uint32_t lora_adapters, lora_hot;
    double lora_hot_frac;
    uint32_t salt_tenants;
    /* agent: the sessions' API; the instructions' and tools' sizes relative
     * to the agents' own (agent.h; 1 = as observed); the tokenizer and its
     * config (chat template) the engines use ("builtin:bytes" and none by
     * default); agent_render: build each request's token ids and routing
     * text (offline; a live client sends the body only). Reused: turns and
     * turns_min (turns per session), user_len..user_len_max (characters of
     * each tool result), chat_groups (deployments: distinct instructions
     * and tools), think_s (tool time), output_len (Messages' max_tokens;
     * Codex sends none), max_context (a session ends before its request
     * body passes this many bytes; 0: never). */
    enum kvg_bench_agent_api agent_api;
    double agent_scale;
    char model[128]; /* the bodies' model */
    char tokenizer[512], tokenizer_config[512];
    int agent_render;
    /* trace */
    char trace_path[512];
    double trace_speed;   /* timestamps are divided by this (1 = as recorded) */
    uint32_t trace_block; /* tokens per hash_ids entry (512, Mooncake's) */
    /* load (ignored for a trace, which is one stage of its own length) */
    struct kvg_bench_stage stage[KVG_BENCH_MAX_STAGES];
    size_t nstages;
    size_t warmup; /* leading stages not measured */
};

/* Fills o with inference-perf's shared_prefix defaults at small scale and
 * one 10 s stage at 1 request/s: callers set what they need. */
void kvg_bench_wl_opts_default(struct kvg_bench_wl_opts *o);

struct kvg_bench_req {
    uint64_t id;            /* issue order, from 0 */
    double arrival;         /* seconds since the start of the run */
    int stage;              /* the stage it arrived in */
    int warmup;             /* arrived during a warm-up stage */
    const uint32_t *tokens; /* prompt ids (owned by the workload) */
    uint32_t ntokens;
    const char *text; /* prompt text, NULL when not built (owned by the workload) */
    size_t text_len;
    uint32_t max_tokens;
    int ignore_eos;
    uint32_t prompt;  /* shared_prefix: index of the prompt; chat: turn number */
    char session[24]; /* routing key (sent as x-session-id), "" for none */
    char lora[24];    /* the LoRA adapter it runs on (its `model`), "" for the base */
    int lora_id;      /* vLLM's lora_int_id of that adapter (1-based), 0 for the base */
    char salt[24];    /* its cache_salt, "" for none */
    /* Agent requests (NULL / 0 otherwise): the JSON body the client sends,
     * the path it goes to, the headers the agent sends with it (besides
     * content-type), the parsed body as the gateway's router sees it (a
     * cJSON tree), the output seed (the engine's output of this turn is a
     * function of it offline, whichever engine runs it) and the output
     * budget the body states (0: none; r->max_tokens is then 0 too, and the
     * engine gives what the context leaves). All owned by the workload. */
    const char *body;
    size_t body_len;
    const char *path;
    struct kvg_bench_hdr {
        const char *name, *value;
    } hdr[4];
    size_t nhdr;
    const void *json;
    uint64_t out_seed;
    /* private to the workload */
    void *priv;
    int slot_stage; /* closed loop: the stage whose slot this request holds, else -1 */
};

struct kvg_bench_wl;

/* Builds the workload (generates every prompt and open-loop arrival). On
 * success *out is the caller's (kvg_bench_wl_free). On failure err says why:
 * KVG_ECONFIG (bad options), a trace file error, -ENOMEM. */
int kvg_bench_wl_new(const struct kvg_bench_wl_opts *o, struct kvg_bench_wl **out, char *err,
                     size_t errlen);
void kvg_bench_wl_free(struct kvg_bench_wl *wl);

/* Time of the next arrival, INFINITY when none is pending (more may come
 * when requests in flight end). */
double kvg_bench_wl_next(const struct kvg_bench_wl *wl);
/* Removes the next arrival and builds its request into *out (the
 * workload's until kvg_bench_wl_done). KVG_ENOTFOUND when none is pending. */
int kvg_bench_wl_pop(struct kvg_bench_wl *wl, struct kvg_bench_req **out);
/* The request ended at `now` (ok = it completed). out[0..n) are its output
 * token ids when the workload wants them (chat context), else ignored. Frees
 * the request and schedules what follows it. 0 or -ENOMEM. */
int kvg_bench_wl_done(struct kvg_bench_wl *wl, struct kvg_bench_req *r, double now,
                      const uint32_t *out, size_t n, int ok);
/* The same with the answer's text (the live client's): under the byte
 * tokenizer its bytes are the ids; an agent session appends the text. */
int kvg_bench_wl_done_text(struct kvg_bench_wl *wl, struct kvg_bench_req *r, double now,
                           const char *text, size_t len, int ok);
/* 1 when kvg_bench_wl_done wants output ids. */
int kvg_bench_wl_wants_output(const struct kvg_bench_wl *wl);
/* The token ids an engine should answer with so that the answer's text
 * tokenizes back to them (an agent workload with a real tokenizer: whole
 * words); NULL (n 0) for the engines' default. Owned by the workload. */
const uint32_t *kvg_bench_wl_output_vocab(const struct kvg_bench_wl *wl, size_t *n);
/* shared_prefix: the group (0..groups-1) of r's prompt; -1 for the other
 * workloads, which have no groups. */
int64_t kvg_bench_wl_group(const struct kvg_bench_wl *wl, const struct kvg_bench_req *r);

/* The stage schedule as run (a trace is one stage). */
size_t kvg_bench_wl_nstages(const struct kvg_bench_wl *wl);
const struct kvg_bench_stage *kvg_bench_wl_stage(const struct kvg_bench_wl *wl, size_t i,
                                                 double *start);
/* Index of the stage holding time t (the last one past the end). */
int kvg_bench_wl_stage_at(const struct kvg_bench_wl *wl, double t);
double kvg_bench_wl_warm_end(const struct kvg_bench_wl *wl); /* end of the warm-up stages */
double kvg_bench_wl_end(const struct kvg_bench_wl *wl);      /* end of the last stage */
/* Open-loop arrivals planned in advance (for progress), requests issued so far. */
uint64_t kvg_bench_wl_planned(const struct kvg_bench_wl *wl);
uint64_t kvg_bench_wl_issued(const struct kvg_bench_wl *wl);

/* shared_prefix introspection (tests): the i-th prompt in generation order
 * and the shuffled order. NULL / 0 for other kinds. */
const uint32_t *kvg_bench_wl_prompt(const struct kvg_bench_wl *wl, uint32_t i, uint32_t *n);
const uint32_t *kvg_bench_wl_order(const struct kvg_bench_wl *wl, uint32_t *n);

/* Writes the four-character rendering of id into out[0..4). */
void kvg_bench_render_id(uint32_t id, char out[4]);

/* ---- Trace loading (trace.c), used by kvg_bench_wl_new. */
struct kvg_bench_trace_rec {
    double t; /* arrival, seconds (already divided by the speed) */
    uint32_t input_len, output_len;
    char *text; /* owned: the prompt itself, or NULL */
    size_t text_len;
    uint64_t *hash_ids; /* owned: shared blocks of trace_block tokens, or NULL */
    uint32_t nhash;
    uint64_t prefix_id; /* hashed prefix id, 0 for none */
    uint32_t prefix_len;
    char session[24];
};

/* Reads a JSONL trace, sorted by time (stable). *out and every owned field
 * are the caller's (kvg_bench_trace_free). KVG_EPARSE with err naming the
 * line, -errno for I/O. */
int kvg_bench_trace_load(const char *path, double speed, struct kvg_bench_trace_rec **out,
                         size_t *n, char *err, size_t errlen);
void kvg_bench_trace_free(struct kvg_bench_trace_rec *recs, size_t n);

#endif
