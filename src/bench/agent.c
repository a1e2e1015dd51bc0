/* Coding-agent sessions: their bodies turn by turn and, offline, the token
 * ids the proxy routes them on. See agent.h. */
#include "bench/agent.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/agent_int.h"
#include "jinja/chat.h"
#include "proxy/route_input.h"
#include "tokenizer/tokenizer.h"

/* The tokenizer's prefix cache, as kvgate serve's default: successive turns
 * of a session reuse their start's ids. */
#define AGENT_TOK_CACHE (64u << 20)

struct kvg_bench_agent {
    struct kvg_bench_wl_opts o;
    struct kvg__agent_group *g; /* o.chat_groups */
    struct kvg_tok *tok;        /* rendering only */
    struct kvg_jinja_chat *chat;
    struct kvg_tok_pcache *cache;
    uint32_t *vocab;
    size_t nvocab;
};

struct kvg_bench_agent_sess {
    int messages; /* the Messages API, else Responses */
    uint32_t group, turn, turns;
    uint64_t key;
    struct kvg_rng rng;
    char id[40]; /* the thread (Codex) or session (Claude Code) id, a UUID */
    cJSON *body; /* the next request */
    char *next;  /* body printed (cJSON's), NULL until needed */
    size_t next_len;
};

struct kvg_bench_agent_turn {
    char *body; /* cJSON's */
    struct kvg_rinput ri;
    int has_ri;
};

/* ---- The agent: deployments and the renderer. */

/* Whole-word ids for engines' answers: " word" for each of a list of
 * words, kept when it is one token. */
static int word_vocab(struct kvg_bench_agent *a)
{
    static const char *const w[] = {
        " the",   " of",     " and",    " to",     " in",     " is",      " that",   " for",
        " it",    " with",   " as",     " on",     " be",     " this",    " are",    " file",
        " code",  " test",   " run",    " change", " line",   " error",   " return", " value",
        " will",  " can",    " now",    " then",   " first",  " next",    " check",  " fix",
        " build", " output", " result", " path",   " update", " add",     " remove", " function",
        " call",  " read",   " write",  " new",    " old",    " command", " make",   " use"};
    if (!(a->vocab = malloc(KVG_ARRAY_LEN(w) * sizeof *a->vocab))) return -ENOMEM;
    for (size_t i = 0; i < KVG_ARRAY_LEN(w); i++) {
        uint32_t *ids = NULL;
        size_t n = 0;
        int rc = kvg_tok_encode(a->tok, w[i], strlen(w[i]), 0, &ids, &n);
        if (rc) return rc; /* plain ASCII: only out of memory */
        if (n == 1) a->vocab[a->nvocab++] = ids[0];
        free(ids);
    }
    /* The byte tokenizer splits every word: its printable bytes (the
     * engines' default) already come back as themselves. */
    if (a->nvocab < 8) a->nvocab = 0;
    return 0;
}

static int load_renderer(struct kvg_bench_agent *a, char *err, size_t errlen)
{
    const struct kvg_bench_wl_opts *o = &a->o;
    const char *path = o->tokenizer[0] ? o->tokenizer : "builtin:bytes";
    char why[512] = "";
    int rc = kvg_tok_load(path, o->tokenizer_config[0] ? o->tokenizer_config : NULL, &a->tok, why,
                          sizeof why);
    if (rc)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "tokenizer %s: %s", path,
                           why[0] ? why : kvg_strerror(rc));
    rc = kvg_jinja_chat_new(kvg_tok_chat_template(a->tok), kvg_tok_bos_token(a->tok),
                            kvg_tok_eos_token(a->tok), &a->chat, why, sizeof why);
    if (rc) return kvg_err_set(err, errlen, KVG_ECONFIG, "chat template of %s: %s", path, why);
    if ((rc = kvg_tok_pcache_new(a->tok, AGENT_TOK_CACHE, &a->cache))) return rc;
    return word_vocab(a);
}

int kvg_bench_agent_new(const struct kvg_bench_wl_opts *o, struct kvg_bench_agent **out, char *err,
                        size_t errlen)
{
    if (!o->chat_groups || !(o->agent_scale > 0 && o->agent_scale <= 100))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "agent sessions need deployments (chat groups) and a scale in (0, 100]");
    struct kvg_bench_agent *a = calloc(1, sizeof *a);
    if (!a) return -ENOMEM;
    a->o = *o;
    int rc = 0;
    int want_r = o->agent_api != KVG_BENCH_AGENT_MESSAGES;
    int want_m = o->agent_api != KVG_BENCH_AGENT_RESPONSES;
    if (!(a->g = calloc(o->chat_groups, sizeof *a->g))) rc = -ENOMEM;
    for (uint32_t i = 0; !rc && i < o->chat_groups; i++)
        rc = kvg__agent_group_build(&a->g[i], o->seed * 0x9e3779b97f4a7c15ull + i + 1,
                                    o->agent_scale, want_r, want_m);
    if (rc) snprintf(err, errlen, "out of memory building the agents' instructions");
    if (!rc && o->agent_render) rc = load_renderer(a, err, errlen);
    if (rc) {
        kvg_bench_agent_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

void kvg_bench_agent_free(struct kvg_bench_agent *a)
{
    if (!a) return;
    for (uint32_t i = 0; a->g && i < a->o.chat_groups; i++) kvg__agent_group_free(&a->g[i]);
    free(a->g);
    if (a->cache) kvg_tok_pcache_free(a->cache);
    if (a->chat) kvg_jinja_chat_free(a->chat);
    if (a->tok) kvg_tok_free(a->tok);
    free(a->vocab);
    free(a);
}

const uint32_t *kvg_bench_agent_output_vocab(const struct kvg_bench_agent *a, size_t *n)
{
    *n = a->nvocab;
    return a->nvocab ? a->vocab : NULL;
}

/* ---- Sessions. */

static void uuid(struct kvg_rng *r, char out[37])
{
    char h[33];
    kvg__agent_hex(r, 16, h);
    snprintf(out, 37, "%.8s-%.4s-4%.3s-%c%.3s-%.12s", h, h + 8, h + 13,
             "89ab"[kvg_hex_digit(h[16]) & 3], h + 17, h + 20);
}

/* The session's environment: what the agent tells the model about where it
 * runs, about n characters, appended to out. */
static int environment(struct kvg_bench_agent_sess *s, int codex, size_t n, struct kvg_buf *out)
{
    size_t start = out->len;
    int rc = codex
                 ? kvg_buf_printf(out,
                                  "<environment_context>\n  <cwd>/home/dev/src/project-%llu</cwd>\n"
                                  "  <approval_policy>never</approval_policy>\n"
                                  "  <sandbox_mode>read-only</sandbox_mode>\n"
                                  "  <network_access>restricted</network_access>\n"
                                  "  <shell>bash</shell>\n  <notes>",
                                  (unsigned long long)s->key)
                 : kvg_buf_printf(out,
                                  "\n# Environment\nWorking directory: /home/dev/src/project-%llu\n"
                                  "Platform: linux\nOS Version: Linux 6.1.0\nToday's date: "
                                  "2026-12-%02d\nNotes: ",
                                  (unsigned long long)s->key, 1 + (int)(s->key % 28));
    if (!rc && out->len - start < n) rc = kvg__agent_words(&s->rng, n - (out->len - start), out);
    if (!rc && codex) rc = kvg_buf_append_str(out, "</notes>\n</environment_context>");
    return rc;
}

/* The task the user gives the agent, as a JSON string appended to out. */
static int task(struct kvg_bench_agent_sess *s, struct kvg_buf *out)
{
    struct kvg_buf t;
    kvg_buf_init(&t, 0);
    int rc = kvg__agent_words(&s->rng, 120 + (size_t)kvg_rng_below(&s->rng, 480), &t);
    if (!rc) rc = kvg_buf_append_json_str(out, t.data ? t.data : "", t.len);
    kvg_buf_free(&t);
    return rc;
}

/* Appends the raw text in t as a JSON string to out, then frees t. */
static int put_str(struct kvg_buf *out, struct kvg_buf *t, int rc)
{
    if (!rc) rc = kvg_buf_append_json_str(out, t->data ? t->data : "", t->len);
    kvg_buf_free(t);
    return rc;
}

/* A member placed as null in the JSON text, replaced by a copy of v (its
 * place kept: the agents' member order). */
static int replace(cJSON *o, const char *key, const cJSON *v)
{
    cJSON *d = cJSON_Duplicate(v, 1);
    if (d && cJSON_ReplaceItemInObjectCaseSensitive(o, key, d)) return 0;
    cJSON_Delete(d);
    return -ENOMEM;
}

/* Codex's first request: developer instructions, environment, task. */
static int codex_body(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s, struct kvg_buf *j)
{
    const struct kvg__agent_group *g = &a->g[s->group];
    struct kvg_buf t;
    char inst[33];
    kvg__agent_hex(&s->rng, 16, inst);
    int rc = kvg_buf_append_str(j, "{\"model\":");
    if (!rc) rc = kvg_buf_append_json_str(j, a->o.model, strlen(a->o.model));
    if (!rc)
        rc =
            kvg_buf_append_str(j, ",\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":"
                                  "[{\"type\":\"input_text\",\"text\":");
    kvg_buf_init(&t, 0);
    if (!rc)
        rc = put_str(j, &t,
                     environment(s, 1, (size_t)(KVG_AGENT_CODEX_ENV * a->o.agent_scale) + 1, &t));
    kvg_buf_free(&t);
    if (!rc)
        rc = kvg_buf_append_str(j, "}]},{\"type\":\"message\",\"role\":\"user\",\"content\":"
                                   "[{\"type\":\"input_text\",\"text\":");
    if (!rc) rc = task(s, j);
    if (!rc)
        rc = kvg_buf_printf(j,
                            "}]}],\"tools\":null,\"tool_choice\":\"auto\",\"parallel_tool_calls\":"
                            "true,\"reasoning\":{\"summary\":\"auto\"},\"store\":false,\"stream\":"
                            "true,\"include\":[\"reasoning.encrypted_content\"],"
                            "\"prompt_cache_key\":\"%s\",\"client_metadata\":{"
                            "\"x-codex-installation-id\":\"%s\"}}",
                            s->id, inst);
    if (rc) return rc;
    if (!(s->body = cJSON_ParseWithLength(j->data, j->len))) return -ENOMEM;
    /* The developer items go first: a new array (cJSON 1.7.15 cannot insert
     * twice into one), then the session's own items moved behind them. */
    cJSON *in = cJSON_GetObjectItemCaseSensitive(s->body, "input"),
          *na = cJSON_Duplicate(g->dev, 1);
    if (!na) return -ENOMEM;
    for (cJSON *it; (it = cJSON_DetachItemFromArray(in, 0));)
        if (!cJSON_AddItemToArray(na, it)) {
            cJSON_Delete(it);
            cJSON_Delete(na);
            return -ENOMEM;
        }
    if (!cJSON_ReplaceItemInObjectCaseSensitive(s->body, "input", na)) {
        cJSON_Delete(na);
        return -ENOMEM;
    }
    return replace(s->body, "tools", g->rtools);
}

/* Claude Code's first request: the user's message (reminders, task), the
 * second system prompt, system blocks, tools and the rest. */
static int claude_body(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s, struct kvg_buf *j)
{
    const struct kvg__agent_group *g = &a->g[s->group];
    struct kvg_buf t;
    char dev[65], uid[200];
    kvg__agent_hex(&s->rng, 32, dev);
    snprintf(uid, sizeof uid, "{\"device_id\":\"%s\",\"account_uuid\":\"\",\"session_id\":\"%s\"}",
             dev, s->id);
    int rc = kvg_buf_append_str(j, "{\"model\":");
    if (!rc) rc = kvg_buf_append_json_str(j, a->o.model, strlen(a->o.model));
    if (!rc)
        rc = kvg_buf_append_str(j, ",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                                   "\"text\",\"text\":");
    kvg_buf_init(&t, 0);
    if (!rc) rc = kvg_buf_append_str(&t, "<system-reminder>\n");
    if (!rc)
        rc = kvg__agent_words(&s->rng, (size_t)(KVG_AGENT_CLAUDE_REMINDER * a->o.agent_scale) + 1,
                              &t);
    if (!rc) rc = kvg_buf_append_str(&t, "\n</system-reminder>");
    rc = put_str(j, &t, rc);
    if (!rc) rc = kvg_buf_append_str(j, "},{\"type\":\"text\",\"text\":");
    if (!rc) rc = task(s, j);
    if (!rc)
        rc = kvg_buf_append_str(j, ",\"cache_control\":{\"type\":\"ephemeral\"}}]},{\"role\":"
                                   "\"system\",\"content\":[{\"type\":\"text\",\"text\":");
    kvg_buf_init(&t, 0);
    if (!rc) rc = kvg_buf_append_str(&t, g->sys2);
    if (!rc) rc = environment(s, 0, (size_t)(KVG_AGENT_CLAUDE_ENV * a->o.agent_scale) + 1, &t);
    rc = put_str(j, &t, rc);
    if (!rc)
        rc =
            kvg_buf_append_str(j, ",\"cache_control\":{\"type\":\"ephemeral\"}}]}],\"system\":null,"
                                  "\"tools\":null,\"metadata\":{\"user_id\":");
    if (!rc) rc = kvg_buf_append_json_str(j, uid, strlen(uid));
    if (!rc)
        rc = kvg_buf_printf(j,
                            "},\"max_tokens\":%u,\"thinking\":{\"type\":\"adaptive\",\"display\":"
                            "\"omitted\"},\"context_management\":{\"edits\":[{\"type\":"
                            "\"clear_thinking_20251015\",\"keep\":\"all\"}]},\"output_config\":{"
                            "\"effort\":\"high\"},\"stream\":true}",
                            a->o.output_len);
    if (rc) return rc;
    if (!(s->body = cJSON_ParseWithLength(j->data, j->len))) return -ENOMEM;
    if ((rc = replace(s->body, "system", g->system))) return rc;
    return replace(s->body, "tools", g->mtools);
}

int kvg_bench_agent_sess_new(struct kvg_bench_agent *a, uint64_t key,
                             struct kvg_bench_agent_sess **out)
{
    struct kvg_bench_agent_sess *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    const struct kvg_bench_wl_opts *o = &a->o;
    s->key = key;
    kvg_rng_seed(&s->rng, o->seed * 0xbf58476d1ce4e5b9ull ^ (key * 0x94d049bb133111ebull + 7));
    s->messages = o->agent_api == KVG_BENCH_AGENT_MESSAGES ||
                  (o->agent_api == KVG_BENCH_AGENT_MIXED && key % 2 == 0);
    s->group = (uint32_t)kvg_rng_below(&s->rng, o->chat_groups);
    s->turns = o->turns;
    if (o->turns_min && o->turns_min < o->turns)
        s->turns = o->turns_min + (uint32_t)kvg_rng_below(&s->rng, o->turns - o->turns_min + 1);
    uuid(&s->rng, s->id);
    struct kvg_buf j;
    kvg_buf_init(&j, 0);
    int rc = s->messages ? claude_body(a, s, &j) : codex_body(a, s, &j);
    kvg_buf_free(&j);
    if (rc) {
        kvg_bench_agent_sess_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void kvg_bench_agent_sess_free(struct kvg_bench_agent_sess *s)
{
    if (!s) return;
    cJSON_Delete(s->body);
    cJSON_free(s->next);
    free(s);
}

uint32_t kvg_bench_agent_sess_turns(const struct kvg_bench_agent_sess *s)
{
    return s->turns;
}

double kvg_bench_agent_sess_think(struct kvg_bench_agent_sess *s, double mean_s)
{
    return mean_s > 0 ? -log1p(-kvg_rng_double(&s->rng)) * mean_s : 0;
}

/* The body as it will be sent (printed once per turn). */
static int print_next(struct kvg_bench_agent_sess *s)
{
    if (s->next) return 0;
    if (!(s->next = cJSON_PrintUnformatted(s->body))) return -ENOMEM;
    s->next_len = strlen(s->next);
    return 0;
}

size_t kvg_bench_agent_next_size(struct kvg_bench_agent_sess *s)
{
    return print_next(s) ? SIZE_MAX : s->next_len;
}

/* ---- Turns. */

int kvg_bench_agent_request(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s,
                            struct kvg_bench_req *r, struct kvg_bench_agent_turn **turn, char *err,
                            size_t errlen)
{
    struct kvg_bench_agent_turn *t = calloc(1, sizeof *t);
    if (!t || print_next(s)) {
        free(t);
        return -ENOMEM;
    }
    t->body = s->next;
    s->next = NULL;
    r->body = t->body;
    r->body_len = s->next_len;
    size_t h = 0;
    if (s->messages) {
        /* Claude Code's path carries a query string; its session id travels
         * in a header of its own. */
        r->path = "/v1/messages?beta=true";
        r->hdr[h++] = (struct kvg_bench_hdr){"x-claude-code-session-id", s->id};
        r->hdr[h++] = (struct kvg_bench_hdr){"anthropic-version", "2023-06-01"};
        r->hdr[h++] = (struct kvg_bench_hdr){
            "anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"};
        r->hdr[h++] = (struct kvg_bench_hdr){"x-app", "cli"};
        r->max_tokens = a->o.output_len;
    } else {
        r->path = "/v1/responses";
        r->hdr[h++] = (struct kvg_bench_hdr){"session-id", s->id};
        r->hdr[h++] = (struct kvg_bench_hdr){"thread-id", s->id};
        r->hdr[h++] = (struct kvg_bench_hdr){"originator", "codex_exec"};
        r->hdr[h++] = (struct kvg_bench_hdr){"accept", "text/event-stream"};
        r->max_tokens = 0; /* Codex sends no max_output_tokens */
    }
    r->nhdr = h;
    r->ignore_eos = 0; /* an agent's turn ends where the model stops */
    r->out_seed = (a->o.seed * 0x9e3779b97f4a7c15ull) ^ (s->key << 20) ^ s->turn ^ 1;
    *turn = t;
    if (!a->o.agent_render) return 0;
    /* As the proxy: parse, convert to the chat request, render, tokenize. */
    char msg[256];
    int rc = kvg_rinput_parse(&t->ri, t->body, r->body_len,
                              s->messages ? KVG_API_MESSAGES : KVG_API_RESPONSES, msg, sizeof msg);
    if (rc) {
        snprintf(err, errlen, "agent body refused by the route input: %s", msg);
        return rc;
    }
    t->has_ri = 1;
    if ((rc = kvg_rinput_text(&t->ri))) return rc;
    struct kvg_rinput_tokenizer rt = {a->tok, a->chat, 0, a->cache};
    kvg_rinput_tokenize(&t->ri, &rt, 0);
    if (t->ri.tokenize_error || !t->ri.nids) {
        snprintf(err, errlen, "agent body not rendered: %s",
                 kvg_strerror(t->ri.tokenize_error ? t->ri.tokenize_error : KVG_EPARSE));
        return t->ri.tokenize_error ? t->ri.tokenize_error : KVG_EPARSE;
    }
    if (t->ri.nids > UINT32_MAX) return KVG_ETOOBIG;
    r->tokens = t->ri.ids;
    r->ntokens = (uint32_t)t->ri.nids;
    r->text = t->ri.text.data;
    r->text_len = t->ri.text.len;
    r->json = t->ri.json;
    r->max_tokens = t->ri.max_tokens;
    return 0;
}

void kvg_bench_agent_turn_free(struct kvg_bench_agent_turn *t)
{
    if (!t) return;
    if (t->has_ri) kvg_rinput_free(&t->ri);
    cJSON_free(t->body);
    free(t);
}

/* A cJSON string of the bytes p[0, n) (cut at a NUL: the answers are text). */
static cJSON *str_n(const char *p, size_t n)
{
    char *c = malloc(n + 1);
    if (!c) return NULL;
    memcpy(c, p, n);
    c[n] = 0;
    cJSON *s = cJSON_CreateString(c);
    free(c);
    return s;
}

/* The tool's result: user_len..user_len_max characters. */
static cJSON *tool_result(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s)
{
    const struct kvg_bench_wl_opts *o = &a->o;
    size_t n = o->user_len;
    if (o->user_len_max > o->user_len)
        n += (size_t)kvg_rng_below(&s->rng, (uint64_t)o->user_len_max - o->user_len + 1);
    return kvg__agent_text(&s->rng, n ? n : 1);
}

static int push(cJSON *arr, cJSON *v)
{
    if (v && cJSON_AddItemToArray(arr, v)) return 0;
    cJSON_Delete(v);
    return -ENOMEM;
}

/* Adds key: v (owned) to o. */
static int add(cJSON *o, const char *key, cJSON *v)
{
    if (v && cJSON_AddItemToObject(o, key, v)) return 0;
    cJSON_Delete(v);
    return -ENOMEM;
}

/* Codex: the answer as an assistant message item, the function call the
 * model made and its output. A pure append. */
static int codex_answer(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s, cJSON *text)
{
    cJSON *in = cJSON_GetObjectItemCaseSensitive(s->body, "input"), *p = cJSON_CreateObject();
    cJSON *m = NULL, *c = NULL;
    char id[64], hex[25];
    if (!p || !cJSON_AddStringToObject(p, "type", "output_text")) {
        cJSON_Delete(p);
        cJSON_Delete(text);
        return -ENOMEM;
    }
    if (add(p, "text", text) || !cJSON_AddArrayToObject(p, "annotations") ||
        push(in, m = cJSON_CreateObject())) {
        cJSON_Delete(p);
        return -ENOMEM;
    }
    kvg__agent_hex(&s->rng, 12, hex);
    snprintf(id, sizeof id, "msg_%s", hex);
    if (!cJSON_AddStringToObject(m, "type", "message") ||
        !cJSON_AddStringToObject(m, "role", "assistant") || !cJSON_AddStringToObject(m, "id", id) ||
        !(c = cJSON_AddArrayToObject(m, "content"))) {
        cJSON_Delete(p);
        return -ENOMEM;
    }
    if (push(c, p)) return -ENOMEM;
    int rc = 0;
    const char *name, *ns;
    cJSON *args = kvg__agent_call_args(&s->rng, 0, &name, &ns);
    char *as = args ? cJSON_PrintUnformatted(args) : NULL;
    cJSON_Delete(args);
    kvg__agent_hex(&s->rng, 12, hex);
    snprintf(id, sizeof id, "call_%s", hex);
    cJSON *f = NULL, *out = NULL;
    if (!as || push(in, f = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(f, "type", "function_call") ||
        !cJSON_AddStringToObject(f, "name", name) ||
        (ns && !cJSON_AddStringToObject(f, "namespace", ns)) ||
        !cJSON_AddStringToObject(f, "arguments", as) ||
        !cJSON_AddStringToObject(f, "call_id", id) || push(in, out = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(out, "type", "function_call_output") ||
        !cJSON_AddStringToObject(out, "call_id", id) || add(out, "output", tool_result(a, s)))
        rc = -ENOMEM;
    cJSON_free(as);
    return rc;
}

/* Removes the cache_control marks of every user message's blocks. */
static void unmark(cJSON *msgs)
{
    for (cJSON *m = msgs->child; m; m = m->next) {
        cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsArray(c)) continue;
        for (cJSON *b = c->child; b; b = b->next)
            cJSON_DeleteItemFromObjectCaseSensitive(b, "cache_control");
    }
}

/* Claude Code: the system message becomes a plain string after the first
 * answer, the answer and its tool_use an assistant message, the result a
 * user message holding the tool_result, the cache_control mark on it. */
static int claude_answer(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s, cJSON *text)
{
    cJSON *msgs = cJSON_GetObjectItemCaseSensitive(s->body, "messages");
    for (cJSON *m = msgs->child; m; m = m->next) {
        cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsString(role) || strcmp(role->valuestring, "system") || !cJSON_IsArray(content))
            continue;
        cJSON *t = cJSON_GetObjectItemCaseSensitive(content->child, "text");
        cJSON *plain = cJSON_IsString(t) ? cJSON_CreateString(t->valuestring) : NULL;
        if (!plain || !cJSON_ReplaceItemInObjectCaseSensitive(m, "content", plain)) {
            cJSON_Delete(plain);
            cJSON_Delete(text);
            return -ENOMEM;
        }
    }
    unmark(msgs);
    cJSON *m = cJSON_CreateObject(), *c = NULL, *b = NULL;
    if (push(msgs, m) || !cJSON_AddStringToObject(m, "role", "assistant") ||
        !(c = cJSON_AddArrayToObject(m, "content"))) {
        cJSON_Delete(text);
        return -ENOMEM;
    }
    if (!text->valuestring[0]) { /* Anthropic's API refuses an empty text block */
        cJSON_Delete(text);
    } else if (push(c, b = cJSON_CreateObject()) || !cJSON_AddStringToObject(b, "type", "text") ||
               add(b, "text", text)) {
        if (!b || !cJSON_GetObjectItemCaseSensitive(b, "text")) cJSON_Delete(text);
        return -ENOMEM;
    }
    const char *name, *ns;
    char id[64], hex[25];
    cJSON *args = kvg__agent_call_args(&s->rng, 1, &name, &ns);
    kvg__agent_hex(&s->rng, 12, hex);
    snprintf(id, sizeof id, "toolu_%s", hex);
    cJSON *u = NULL, *uc = NULL, *cc = NULL;
    if (!args || push(c, b = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(b, "type", "tool_use") || !cJSON_AddStringToObject(b, "id", id) ||
        !cJSON_AddStringToObject(b, "name", name) || add(b, "input", args))
        return -ENOMEM;
    if (push(msgs, u = cJSON_CreateObject()) || !cJSON_AddStringToObject(u, "role", "user") ||
        !(uc = cJSON_AddArrayToObject(u, "content")) || push(uc, b = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(b, "type", "tool_result") ||
        !cJSON_AddStringToObject(b, "tool_use_id", id) || add(b, "content", tool_result(a, s)) ||
        !(cc = cJSON_AddObjectToObject(b, "cache_control")) ||
        !cJSON_AddStringToObject(cc, "type", "ephemeral"))
        return -ENOMEM;
    return 0;
}

int kvg_bench_agent_answer(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s,
                           const char *text, size_t len)
{
    cJSON *t = str_n(text ? text : "", text ? len : 0);
    if (!t) return -ENOMEM;
    int rc = s->messages ? claude_answer(a, s, t) : codex_answer(a, s, t);
    cJSON_free(s->next);
    s->next = NULL;
    s->turn++;
    return rc;
}

int kvg_bench_agent_answer_ids(struct kvg_bench_agent *a, struct kvg_bench_agent_sess *s,
                               const uint32_t *ids, size_t n)
{
    if (!a->tok) { /* no tokenizer: the ids are bytes, as the byte tokenizer's */
        char *b = malloc(n + 1);
        if (!b) return -ENOMEM;
        for (size_t i = 0; i < n; i++) b[i] = (char)ids[i];
        int rc = kvg_bench_agent_answer(a, s, b, n);
        free(b);
        return rc;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = kvg_tok_decode(a->tok, ids, n, 1, &text, &len);
    if (!rc) rc = kvg_bench_agent_answer(a, s, text, len);
    free(text);
    return rc;
}
