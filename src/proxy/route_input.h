/* What routing needs to know about an OpenAI request, computed once per
 * request and shared by the proxy and POST /debug/route: the parsed body,
 * model and stream flags, the routing text (approximate policies), and, when
 * the policy reads them, the prompt's token ids exactly as the engine will
 * compute them (chat template + tokenizer) and their block hashes. */
#ifndef KVG_PROXY_ROUTE_INPUT_H
#define KVG_PROXY_ROUTE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/json.h"
#include "router/policy.h"

struct kvg_tok;
struct kvg_tok_pcache;
struct kvg_jinja_chat;

/* What turns a request into the engine's token ids: the served model's
 * tokenizer and chat template (not owned, immutable, shared by threads) and
 * the engines' KV block size. */
struct kvg_rinput_tokenizer {
    const struct kvg_tok *tok;
    const struct kvg_jinja_chat *chat;
    uint32_t block_size;
    struct kvg_tok_pcache *cache; /* the tokenizer's prefix cache (nullable, thread-safe) */
};

/* The most inputs one embeddings, pooling or classify request, and the most
 * documents one rerank request or texts one score side, may carry (OpenAI's
 * bound on an embeddings batch). */
#define KVG_RINPUT_MAX_BATCH 2048

struct kvg_rinput {
    enum kvg_api_kind kind;
    struct cJSON *json;             /* owned: in json_mem, or cJSON's (kvg_json_free) */
    struct kvg_json_arena json_mem; /* the fast reader's tree's memory */
    /* What is rendered and tokenized: json itself (chat, completions), or
     * the chat request a Responses or Messages body is to the engine
     * (kvg_api_to_chat, converted set): converted (and so checked) by the
     * parse into chat_form, its placeholder bytes naming json's strings in
     * refs (kvg_api_to_chat_refs); its tree read from them into cjson only
     * when the routing text or the render first needs it (rjson NULL until
     * then), its long strings json's own (borrowed: the two are dropped
     * together). Its bytes, for an engine without the endpoint, in
     * chat_body once kvg_rinput_chat_bytes made them (kept to the end). */
    const struct cJSON *rjson;
    struct kvg_buf chat_form; /* owned, freed once cjson is read */
    struct kvg_api_refs refs; /* owned, the same */
    struct cJSON *cjson;      /* owned, in cjson_mem */
    struct kvg_json_arena cjson_mem;
    struct kvg_buf chat_body;
    struct kvg_buf namespaces; /* made with chat_body: its Responses namespace functions
                                  (kvg_api_namespaces), how its answer names their calls */
    int converted;             /* a Responses or Messages request read as its chat form */
    int chat;                  /* rjson is a chat request (messages); else a prompt */
    const char *prompt_key; /* the prompt's member when not chat: "prompt", "text", "input_ids" */
    const char *body;       /* borrowed: the request body, alive while the request is routed */
    size_t body_len;        /* the request body's bytes: the rendered prompt's expected size */
    char model[256];
    size_t model_len;
    int stream;
    uint32_t max_tokens;
    int adapter;          /* `model` names a LoRA adapter (the caller sets it before tokenizing,
                             from the engines' /v1/models): blocks are seeded by its name */
    char cache_salt[256]; /* the request's cache_salt ("" none): seeds its block hashes */
    /* The client's session key in the body, "" none: Responses'
     * prompt_cache_key (Codex: its thread id), Messages' metadata.user_id
     * (Claude Code: a JSON string holding its session_id). */
    char session[256];
    size_t session_len;
    char prev_id[128]; /* Responses' previous_response_id ("" none) */
    size_t cache_salt_len;
    struct kvg_buf text; /* routing text */
    uint32_t *ids;       /* owned, NULL when not tokenized */
    size_t nids;
    uint64_t *hashes; /* owned */
    size_t nhashes;
    uint32_t block_size;
    int tokenize_error;               /* tokenizing failed: routed without tokens */
    const char *bad_param, *bad_code; /* parse error: the parameter at fault (static, or
                                         bad_param_buf) */
    char bad_param_buf[64];           /* e.g. "messages[3].role" */
};

/* Parses body, a request of endpoint kind: 0, or KVG_EPARSE with a
 * client-facing message in msg (and, for the shape kvgate relies on: chat
 * "messages" an array of objects each with a string "role"; completions
 * "prompt" a string or an array of strings, token ids or arrays of token
 * ids; Responses and Messages as kvg_api_to_chat takes them; SGLang's
 * generate "text" or "input_ids"; the pooling endpoints a JSON object with
 * a string model; for a bad parameter, its name and OpenAI's code in
 * ri->bad_param and ri->bad_code). On error ri holds nothing to free. */
int kvg_rinput_parse(struct kvg_rinput *ri, const char *body, size_t len, enum kvg_api_kind kind,
                     char *msg, size_t msglen);
/* Computes the routing text (only policies that match on text need it). */
int kvg_rinput_text(struct kvg_rinput *ri);
/* The chat request's bytes (kvg_api_to_chat) into ri->chat_body, made once
 * from body: the converted request's bytes as they go out (the gateway's
 * edits and the served model's name in them). 0, KVG_EPARSE (ri is no
 * converted request, or body not its JSON), -ENOMEM. */
int kvg_rinput_chat_bytes(struct kvg_rinput *ri, const char *body, size_t len);
/* Renders and tokenizes the prompt and hashes its blocks (CPU work: run it
 * off the loop for long prompts). Thread-safe; nowait on an event loop (the
 * tokenizer cache is then only tried: kvg_tok_encode_cached). Failures are
 * not errors for the request: ri->tokenize_error is set and routing goes on
 * without tokens. */
void kvg_rinput_tokenize(struct kvg_rinput *ri, const struct kvg_rinput_tokenizer *rt, int nowait);
/* Fills the routing context's request fields from ri. */
void kvg_rinput_ctx(const struct kvg_rinput *ri, struct kvg_route_ctx *ctx);
/* Frees the parsed tree only (routing is done; ids and text may still serve
 * a retry). */
void kvg_rinput_drop_json(struct kvg_rinput *ri);
void kvg_rinput_free(struct kvg_rinput *ri);

#endif
