/* The HTTP APIs the engines serve, as kvgate knows them: the endpoint table
 * (which paths exist, with which methods, how each is routed and in which
 * error shape it answers), error bodies in OpenAI's and Anthropic's shapes,
 * and the translations between the Responses and Anthropic Messages APIs and
 * chat completions:
 *
 *   kvg_api_to_chat         a Responses or Messages request as the chat
 *                           completions request the engine renders it as
 *                           (vLLM turns both into chat messages before its
 *                           chat template): kvgate's routing renders that,
 *                           and an engine without the endpoint is sent it;
 *   kvg_api_answer_from_chat / struct kvg_api_sse_xlate
 *                           a chat completions answer (whole, or its SSE
 *                           stream chunk by chunk) as the Responses or
 *                           Messages answer, for an engine without the
 *                           endpoint.
 *
 * The part knows bytes and JSON trees only (base/): no sockets, no pool. Its
 * users are the proxy (routing, translation), serve (the endpoint table) and
 * the simulated engine (which renders these APIs as vLLM does). */
#ifndef KVG_API_API_H
#define KVG_API_API_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* ------------------------------------------------------------ endpoints */

enum kvg_api_kind {
    KVG_API_CHAT,         /* POST /v1/chat/completions */
    KVG_API_COMPLETIONS,  /* POST /v1/completions */
    KVG_API_RESPONSES,    /* POST /v1/responses */
    KVG_API_RESPONSE_ID,  /* GET, DELETE /v1/responses/{id}; POST /v1/responses/{id}/cancel */
    KVG_API_MESSAGES,     /* POST /v1/messages (Anthropic) */
    KVG_API_COUNT_TOKENS, /* POST /v1/messages/count_tokens (Anthropic) */
    KVG_API_GENERATE,     /* POST /generate (SGLang's native API) */
    KVG_API_EMBEDDINGS,   /* POST /v1/embeddings */
    KVG_API_POOLING,      /* POST /pooling */
    KVG_API_CLASSIFY,     /* POST /classify */
    KVG_API_SCORE,        /* POST /score, /v1/score */
    KVG_API_RERANK,       /* POST /rerank, /v1/rerank, /v2/rerank */
    KVG_API_TOKENIZE,     /* POST /tokenize */
    KVG_API_DETOKENIZE,   /* POST /detokenize */
    KVG_API_TRANSCRIBE,   /* POST /v1/audio/transcriptions (multipart) */
    KVG_API_TRANSLATE,    /* POST /v1/audio/translations (multipart) */
    KVG_API_NKINDS
};

/* How a request of the endpoint finds its worker. */
enum kvg_api_routing {
    KVG_API_ROUTE_PROMPT, /* the prompt is rendered and tokenized: KV-aware, PD-capable */
    KVG_API_ROUTE_LOAD,   /* by load only (no KV reuse to chase) */
    KVG_API_ROUTE_STORED, /* to the worker that holds the object the path names */
    KVG_API_ROUTE_LOCAL,  /* answered by kvgate (its tokenizer), else forwarded by load */
};

enum kvg_api_shape { KVG_API_SHAPE_OPENAI, KVG_API_SHAPE_ANTHROPIC };
enum kvg_api_body { KVG_API_BODY_JSON, KVG_API_BODY_MULTIPART, KVG_API_BODY_NONE };

#define KVG_API_GET 1u
#define KVG_API_POST 2u
#define KVG_API_DELETE 4u

struct kvg_api_endpoint {
    const char *path; /* "{id}" stands for one path segment */
    enum kvg_api_kind kind;
    unsigned methods; /* KVG_API_GET | ... */
    enum kvg_api_routing routing;
    enum kvg_api_shape shape;
    enum kvg_api_body body;
    const char *name; /* the `endpoint` label of kvgate's series ("chat", "responses", ...) */
};

extern const struct kvg_api_endpoint kvg_api_endpoints[];
extern const size_t kvg_api_nendpoints;

/* The endpoint for a request's path (without its query string) and method
 * ("GET", "POST", ...; HEAD counts as GET). NULL when none: then *allow
 * holds the methods the path takes (0: an unknown path, a 404; else a 405
 * with an Allow header). id: the {id} segment, when the path has one (may be
 * NULL). */
const struct kvg_api_endpoint *kvg_api_find(const char *path, size_t path_len, const char *method,
                                            unsigned *allow, const char **id, size_t *id_len);
/* "GET, DELETE" for an Allow header; returns its length (out NUL-ended). */
size_t kvg_api_allow(unsigned methods, char *out, size_t cap);
/* The metric label of a kind ("chat", "completions", "responses", ...). */
const char *kvg_api_kind_name(enum kvg_api_kind k);

/* --------------------------------------------------------------- errors */

/* An error body in the endpoint's shape, appended to out:
 *   OpenAI:    {"error":{"message":..,"type":..,"param":..,"code":..}}
 *   Anthropic: {"type":"error","error":{"type":..,"message":..}}
 * type NULL: derived from the status (OpenAI: invalid_request_error,
 * authentication_error, permission_error, not_found_error, rate_limit_error,
 * server_error...; Anthropic: invalid_request_error, authentication_error,
 * permission_error, not_found_error, request_too_large, rate_limit_error,
 * api_error, overloaded_error). code, param: OpenAI only (NULL: null).
 * 0, or -ENOMEM. */
int kvg_api_error_body(enum kvg_api_shape shape, int status, const char *type, const char *code,
                       const char *msg, const char *param, struct kvg_buf *out);
/* The status an answer of this shape uses for a kvgate refusal of status
 * `status`: Anthropic's clients read 529 as "overloaded, retry" where
 * kvgate sheds load (a 503 of no healthy worker or the admission queue);
 * everything else is unchanged. */
int kvg_api_error_status(enum kvg_api_shape shape, int status);

/* --------------------------------------------- requests as chat requests */

/* A client error in a request: the message and the parameter at fault
 * (e.g. "input[3].type", "max_tokens"), both NUL-ended, param "" when none. */
struct kvg_api_err {
    char msg[256];
    char param[64];
};

/* The chat completions request a Responses (kind KVG_API_RESPONSES) or
 * Messages (KVG_API_MESSAGES, KVG_API_COUNT_TOKENS) request body is, as the
 * engine's own conversion makes it, appended to out as JSON:
 *   - "model", then "messages": Responses `instructions` as a system message,
 *     then each `input` item (a string input is one user message; message
 *     items with their role, developer included; function_call items as an
 *     assistant message's tool_calls, function_call_output as a tool
 *     message, reasoning items as the assistant's reasoning); Messages
 *     `system` (a string or text blocks) as a system message, then each
 *     message with its content blocks (text, image, tool_use as tool_calls,
 *     tool_result as a tool message, thinking as reasoning);
 *   - "tools" as chat function tools (Responses function tools, namespace
 *     tools flattened to their functions; Anthropic tools' input_schema as
 *     parameters; hosted tools such as web_search have no chat form and are
 *     dropped), "tool_choice" where it has a chat equivalent;
 *   - the sampling members that have a chat equivalent: max_output_tokens
 *     and max_tokens -> "max_tokens", temperature, top_p, top_k,
 *     stop_sequences -> "stop", "stream", and with stream
 *     "stream_options":{"include_usage":true} (both APIs always report
 *     usage).
 * Strings keep their bytes (kvg_json_str: a \u0000 is data). Members the
 * chat API has no place for (store, include, metadata, cache_control,
 * thinking, context_management, ...) are left out.
 * Returns 0, KVG_EPARSE (err filled: not an object, a missing or
 * mistyped member, an unknown item or block type, a Messages body without
 * max_tokens unless kind is KVG_API_COUNT_TOKENS), -ENOMEM. */
int kvg_api_to_chat(enum kvg_api_kind kind, const cJSON *body, struct kvg_buf *out,
                    struct kvg_api_err *err);

/* The string nodes of a request that a chat request written with
 * kvg_api_to_chat_refs names instead of copying (owned by the caller:
 * kvg_api_refs_free; the nodes are borrowed from the request's tree). */
struct kvg_api_refs {
    const cJSON **v;
    size_t n, cap;
};
/* kvg_api_to_chat for a caller that wants the chat request's tree, not its
 * bytes (the gateway renders it; an engine without the endpoint is sent
 * bytes made again with kvg_api_to_chat): each long string of body (and
 * each that starts with the byte 0x01) is written as a short placeholder
 * naming a node in refs, so it is neither escaped here nor read back by
 * the parse of out; kvg_api_refs_resolve then points the parsed tree's
 * placeholders at those nodes. The same returns as kvg_api_to_chat. */
int kvg_api_to_chat_refs(enum kvg_api_kind kind, const cJSON *body, struct kvg_buf *out,
                         struct kvg_api_refs *refs, struct kvg_api_err *err);
/* Every placeholder string of tree (parsed from kvg_api_to_chat_refs's
 * bytes by the fast reader, in an arena: base/json.h) made the node it
 * names: its string borrowed, not copied, so the request's tree must
 * outlive this one. 0, or KVG_EPARSE for a placeholder refs does not hold. */
int kvg_api_refs_resolve(cJSON *tree, const struct kvg_api_refs *refs);
void kvg_api_refs_free(struct kvg_api_refs *refs);

/* ------------------------------------------ chat answers as API answers */

/* What a translated answer names that the chat answer does not carry. */
struct kvg_api_xctx {
    enum kvg_api_kind kind; /* KVG_API_RESPONSES or KVG_API_MESSAGES */
    char model[256];        /* the model as the client asked for it */
    char id[96];            /* the answer's id: "resp_..." or "msg_..." (kvgate makes it) */
    int64_t created;        /* unix seconds */
    /* The request's namespace functions (kvg_api_namespaces; NULL: none),
     * borrowed: it outlives every use of x, a stream translator's copy
     * included. A function call the engine names "<namespace>__<name>"
     * for one of them is shown as `name` plus `namespace`, as vLLM does. */
    const struct kvg_buf *namespaces;
};

/* The function tools of a Responses request's namespace tools, which
 * kvg_api_to_chat flattened to "<namespace>__<name>", appended to out as
 * pairs of NUL-ended strings (namespace, name): the map an answer's
 * function call names are read back through. A name or namespace holding a
 * NUL byte has no entry (its calls are shown flat). 0, -ENOMEM. */
int kvg_api_namespaces(const cJSON *body, struct kvg_buf *out);

/* A whole chat completions answer (JSON) as the Responses object or the
 * Messages answer: output text, reasoning, tool calls (function_call items
 * / tool_use blocks), the stop reason (finish_reason stop/length/tool_calls
 * -> completed/incomplete, end_turn/max_tokens/tool_use), usage
 * (input_tokens, output_tokens, cached tokens). Appended to out. 0,
 * KVG_EPARSE (not a chat answer), -ENOMEM. */
int kvg_api_answer_from_chat(const struct kvg_api_xctx *x, const char *chat, size_t len,
                             struct kvg_buf *out);

/* A chat completions SSE stream turned, event by event, into the Responses
 * stream (response.created, response.in_progress, response.output_item.added,
 * response.content_part.added, response.output_text.delta, ...,
 * response.completed with usage) or the Messages stream (message_start,
 * content_block_start/delta/stop, message_delta with stop_reason and usage,
 * message_stop). Chat events may arrive split anywhere; nothing is held past
 * its event's end. Memory per stream is bounded (KVG_API_XLATE_MAX_EVENT per
 * event held). Zeroed is not initialised: call init. */
#define KVG_API_XLATE_MAX_EVENT (1024u * 1024)
/* What a Responses stream holds to repeat at its end (the open item's text
 * for its .done events, the finished items for response.completed): past
 * it, KVG_ETOOBIG. A Messages stream holds neither. */
#define KVG_API_XLATE_MAX_HELD (64u * 1024 * 1024)
struct kvg_api_sse_xlate {
    struct kvg_api_xctx x;
    struct kvg_buf ev; /* the current chat event's data lines, then its partial line */
    size_t line;       /* internal: where ev's partial line starts */
    int state;         /* internal: flags (started, done, data seen) */
    int block;         /* internal: the open output item / content block's kind, -1 none */
    int nblocks;       /* items / blocks opened so far (the open one is nblocks - 1) */
    int tool_index;    /* internal: the chat tool call index of the open tool block */
    int64_t seq;       /* Responses' sequence_number */
    int64_t input_tokens, output_tokens, cached_tokens, reasoning_tokens;
    int usage_found;
    char finish[24];      /* the last finish_reason */
    struct kvg_buf text;  /* Responses: the open item's text so far */
    struct kvg_buf tools; /* internal: Responses' finished output items, JSON */
    struct kvg_buf call;  /* internal: the open tool call's id, then its name */
    size_t call_split;    /* internal: the id's length in call */
};
void kvg_api_sse_xlate_init(struct kvg_api_sse_xlate *t, const struct kvg_api_xctx *x);
/* Engine bytes in, the client's bytes appended to out. 0, -ENOMEM,
 * KVG_ETOOBIG (an event past the bound). */
int kvg_api_sse_xlate_feed(struct kvg_api_sse_xlate *t, const char *p, size_t n,
                           struct kvg_buf *out);
/* The engine's stream ended ([DONE] or not): the closing events (a stream
 * cut before its end gets the API's error event instead). */
int kvg_api_sse_xlate_end(struct kvg_api_sse_xlate *t, int cut, struct kvg_buf *out);
void kvg_api_sse_xlate_free(struct kvg_api_sse_xlate *t);

/* ------------------------------------------------ multipart/form-data */

/* An upload's body (RFC 7578), split into its parts: the audio endpoints'
 * form (the gateway reads its model field, the simulated engine its file);
 * a parser of outside bytes (fuzz/fuzz_api_multipart.c). */
struct kvg_api_part {
    const char *name; /* views into the body */
    size_t name_len;
    const char *filename; /* NULL: a plain field */
    size_t filename_len;
    const char *data;
    size_t len;
};
#define KVG_API_MAX_PARTS 32
/* Splits body by the boundary of content_type (a Content-Type header's
 * value). 0 and parts[0..*n) (views into body), or KVG_EPARSE and msg: not
 * multipart/form-data, no boundary, a part without its headers' end or its
 * closing boundary (a body cut in the middle), more than max parts. */
int kvg_api_multipart_parse(const char *content_type, size_t ct_len, const char *body, size_t len,
                            struct kvg_api_part *parts, size_t max, size_t *n, char *msg,
                            size_t msglen);

#endif
