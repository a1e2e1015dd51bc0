/* Coding-agent sessions for kvgate bench's agent workload (workload.h): what
 * Codex and Claude Code send a gateway, turn after turn, as
 * docs/agent-wire.md observed them from the CLIs themselves.
 *
 * Responses (Codex-like): POST /v1/responses, stream, store false, no
 * instructions and no max_output_tokens; `input` opens with three developer
 * messages (16,979 + 2,156 + 341 characters of instructions), then a user
 * <environment_context> (427) and the task; tools are 7 function tools, one
 * namespace tool (multi_agent_v1, 5 functions, 11.1k characters) and the
 * hosted web_search (18.7k characters in all); prompt_cache_key and the
 * session-id / thread-id headers carry the thread id. Each turn appends the
 * answer as an assistant message item, a function_call (now and then one of
 * the namespace's) and its function_call_output: a pure append.
 *
 * Messages (Claude Code-like): POST /v1/messages?beta=true, stream,
 * max_tokens, thinking, context_management, metadata.user_id (a JSON string
 * holding the session id); `system` is 3 text blocks (the per-release
 * billing header, then 2 marked cache_control: 6,931 characters); messages
 * open with a user message (<system-reminder> of 576 characters, then the
 * task) and a role "system" message (9,119 characters, its last ~320 this
 * session's environment); 12 tools with input_schema (31.9k characters).
 * Each turn appends an assistant message (the answer's text and a tool_use)
 * and a user message with the tool_result; the cache_control mark moves to
 * the newest user block and the system message turns from a one-block list
 * into a plain string after the first turn, as Claude Code's second turn
 * does: the JSON is not a prefix across turns, the rendered prompt is.
 *
 * The text is pseudo-English (about 5 characters per Qwen3 token). A
 * deployment (one of chat_groups) is one set of instructions and tools,
 * shared by its sessions; what a session adds is drawn from its own
 * generator (seed and session number), so a session's requests are the
 * same whichever policy routes them, up to the engine's answers.
 *
 * Rendering (agent_render): the body is parsed, converted and rendered by
 * the proxy's own route input (proxy/route_input.h: kvg_api_to_chat, the
 * chat template, the tokenizer with its prefix cache), so the ids are the
 * ones kvgate serve routes on and, the sim rendering the same way, the ones
 * the engine computes. */
#ifndef KVG_BENCH_AGENT_H
#define KVG_BENCH_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "bench/workload.h"

struct kvg_bench_agent;
struct kvg_bench_agent_sess;

/* What one request of a session is, owned by the request until
 * kvg_bench_agent_turn_free: the body, its path and headers, and when
 * rendering, the route input (tokens, routing text, parsed body). */
struct kvg_bench_agent_turn;

/* The deployments' instructions and tools and, when o->agent_render, the
 * tokenizer and chat template (o->tokenizer, o->tokenizer_config). *out is
 * the caller's (kvg_bench_agent_free). KVG_ECONFIG (err says why: a
 * tokenizer that does not load), -ENOMEM. */
int kvg_bench_agent_new(const struct kvg_bench_wl_opts *o, struct kvg_bench_agent **out, char *err,
                        size_t errlen);
void kvg_bench_agent_free(struct kvg_bench_agent *a);

/* Session number key (1, 2, ...): its API, deployment, thread id, task and
 * environment, and how many turns it runs. *out is the caller's. */
int kvg_bench_agent_sess_new(struct kvg_bench_agent *a, uint64_t key,
                             struct kvg_bench_agent_sess **out);
void kvg_bench_agent_sess_free(struct kvg_bench_agent_sess *s);
/* How many turns the session runs (its length, drawn at its start). */
uint32_t kvg_bench_agent_sess_turns(const struct kvg_bench_agent_sess *s);
/* A think (tool) time drawn from the session's generator, mean mean_s. */
double kvg_bench_agent_sess_think(struct kvg_bench_agent_sess *s, double mean_s);

/* The session's next request into r (body, path, headers, output seed,
 * output budget; rendered: tokens, text, parsed body). *turn is the
 * caller's and must outlive every use of r's agent fields. 0, -ENOMEM,
 * KVG_EPARSE with err (the proxy's route input refused the body: a bug of
 * this file), a tokenizer error (err says which). */
int kvg_bench_agent_request(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s,
                            struct kvg_bench_req *r, struct kvg_bench_agent_turn **turn, char *err,
                            size_t errlen);
void kvg_bench_agent_turn_free(struct kvg_bench_agent_turn *t);

/* The answer to the session's last request: its text, or (offline) its ids
 * decoded with the tokenizer. Appends the answer, a tool call and the tool's
 * result (user_len..user_len_max characters). 0 or -ENOMEM. */
int kvg_bench_agent_answer(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s,
                           const char *text, size_t len);
int kvg_bench_agent_answer_ids(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s,
                               const uint32_t *ids, size_t n);
/* The size in bytes of the session's next request body (the context
 * limit's measure). */
size_t kvg_bench_agent_next_size(struct kvg_bench_agent_sess *s);

/* Ids of whole words of the tokenizer (each " word" one token), for engines
 * whose answers must tokenize back to themselves; NULL under the byte
 * tokenizer (its printable bytes already do) or without rendering. */
const uint32_t *kvg_bench_agent_output_vocab(const struct kvg_bench_agent *a, size_t *n);

#endif
