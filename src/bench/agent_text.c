/* The made-up text of the agent workload (agent.h): pseudo-English with
 * the agents' vocabulary, tools shaped like the agents' own (function tools
 * with JSON-schema parameters, a namespace tool, the hosted web_search;
 * Anthropic tools with input_schema), sized after the observed requests, and
 * the tool calls a session "makes". Everything comes from a generator the
 * caller seeds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/agent_int.h"

static const char *const WORDS[] = {
    "the",       "of",      "and",      "to",         "in",      "is",       "that",    "for",
    "it",        "as",      "with",     "be",         "on",      "this",     "are",     "or",
    "at",        "from",    "have",     "an",         "they",    "which",    "you",     "were",
    "all",       "there",   "would",    "their",      "will",    "when",     "who",     "more",
    "if",        "out",     "so",       "what",       "up",      "about",    "into",    "than",
    "can",       "only",    "other",    "new",        "some",    "time",     "these",   "may",
    "then",      "do",      "first",    "any",        "now",     "such",     "like",    "over",
    "after",     "also",    "before",   "must",       "through", "where",    "much",    "your",
    "well",      "should",  "because",  "each",       "just",    "those",    "how",     "make",
    "still",     "see",     "work",     "long",       "here",    "between",  "both",    "under",
    "never",     "same",    "another",  "know",       "while",   "last",     "might",   "use",
    "file",      "files",   "command",  "commands",   "shell",   "tool",     "tools",   "user",
    "task",      "code",    "change",   "changes",    "test",    "tests",    "run",     "output",
    "error",     "errors",  "function", "repository", "branch",  "commit",   "path",    "directory",
    "read",      "write",   "edit",     "search",     "result",  "results",  "request", "response",
    "agent",     "model",   "context",  "message",    "session", "build",    "patch",   "diff",
    "line",      "lines",   "always",   "prefer",     "avoid",   "instead",  "explain", "summary",
    "example",   "include", "return",   "check",      "verify",  "approval", "sandbox", "network",
    "workspace", "project", "module",   "config",     "value",   "default",  "option",  "string",
};

static const char *const PROPS[] = {
    "cmd",       "workdir",     "timeout_ms", "justification", "path",        "content",
    "pattern",   "description", "prompt",     "session_id",    "chars",       "max_output_tokens",
    "file_path", "old_string",  "new_string", "command",       "query",       "goal",
    "agent_id",  "message",     "limit",      "offset",        "replace_all", "glob",
};

int kvg__agent_words(struct kvg_rng *r, size_t n, struct kvg_buf *out)
{
    size_t start = out->len;
    int rc = 0;
    while (!rc && out->len - start < n) {
        uint64_t k = 6 + kvg_rng_below(r, 13); /* words in the sentence */
        for (uint64_t i = 0; !rc && i < k; i++) {
            const char *w = WORDS[kvg_rng_below(r, KVG_ARRAY_LEN(WORDS))];
            if (i) rc = kvg_buf_append(out, " ", 1);
            if (!rc && i == 0) {
                char c = (char)(w[0] - 'a' + 'A');
                rc = kvg_buf_append(out, &c, 1);
                if (!rc) rc = kvg_buf_append_str(out, w + 1);
            } else if (!rc) {
                rc = kvg_buf_append_str(out, w);
            }
        }
        static const char ends[] = "..,?!;:";
        if (!rc) rc = kvg_buf_append(out, &ends[kvg_rng_below(r, sizeof ends - 1)], 1);
        if (!rc) rc = kvg_buf_append(out, kvg_rng_below(r, 4) ? " " : "\n", 1);
    }
    if (!rc && out->len - start > n) out->len = start + n;
    /* A text ends on a letter or a mark, never on a space. */
    while (!rc && out->len > start &&
           (out->data[out->len - 1] == ' ' || out->data[out->len - 1] == '\n'))
        out->len--;
    return rc;
}

cJSON *kvg__agent_text(struct kvg_rng *r, size_t n)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    cJSON *s = NULL;
    if (!kvg__agent_words(r, n, &b)) {
        const char *c = b.len ? kvg_buf_cstr(&b) : "";
        if (c) s = cJSON_CreateString(c);
    }
    kvg_buf_free(&b);
    return s;
}

void kvg__agent_hex(struct kvg_rng *r, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        unsigned b = (unsigned)kvg_rng_below(r, 256);
        out[2 * i] = hex[b >> 4];
        out[2 * i + 1] = hex[b & 15];
    }
    out[2 * n] = 0;
}

/* Adds key: a text of n characters to o; 0 or -ENOMEM. */
static int add_text(cJSON *o, const char *key, struct kvg_rng *r, size_t n)
{
    cJSON *t = kvg__agent_text(r, n);
    return t && cJSON_AddItemToObject(o, key, t) ? 0 : (cJSON_Delete(t), -ENOMEM);
}

/* A JSON-schema object of nprops string properties whose descriptions take
 * about chars characters; anthropic adds the draft's $schema as Claude
 * Code's tools carry it. */
static cJSON *schema(struct kvg_rng *r, size_t chars, int nprops, int anthropic)
{
    cJSON *s = cJSON_CreateObject(), *props = NULL, *req = NULL;
    int ok = s && cJSON_AddStringToObject(s, "type", "object") &&
             (props = cJSON_AddObjectToObject(s, "properties")) != NULL;
    size_t first = (size_t)kvg_rng_below(r, KVG_ARRAY_LEN(PROPS));
    for (int i = 0; ok && i < nprops; i++) {
        cJSON *p = cJSON_CreateObject();
        ok = p &&
             cJSON_AddItemToObject(props, PROPS[(first + (size_t)i) % KVG_ARRAY_LEN(PROPS)], p) &&
             cJSON_AddStringToObject(p, "type", i == 2 ? "number" : "string") &&
             !add_text(p, "description", r, chars / (size_t)nprops);
    }
    ok = ok && (req = cJSON_AddArrayToObject(s, "required")) &&
         cJSON_AddItemToArray(req, cJSON_CreateString(PROPS[first])) &&
         cJSON_AddFalseToObject(s, "additionalProperties");
    if (ok && anthropic)
        ok = cJSON_AddStringToObject(s, "$schema", "http://json-schema.org/draft-07/schema#") !=
             NULL;
    if (!ok) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

/* A Responses function tool of about chars characters. */
static cJSON *function_tool(struct kvg_rng *r, const char *name, size_t chars)
{
    cJSON *t = cJSON_CreateObject();
    cJSON *p = schema(r, chars * 2 / 5, 3 + (int)kvg_rng_below(r, 3), 0);
    int ok = t && p && cJSON_AddStringToObject(t, "type", "function") &&
             cJSON_AddStringToObject(t, "name", name) &&
             !add_text(t, "description", r, chars / 2) && cJSON_AddFalseToObject(t, "strict") &&
             cJSON_AddItemToObject(t, "parameters", p);
    if (!ok) {
        if (!(t && cJSON_GetObjectItemCaseSensitive(t, "parameters"))) cJSON_Delete(p);
        cJSON_Delete(t);
        return NULL;
    }
    return t;
}

/* An Anthropic tool of about chars characters. */
static cJSON *anthropic_tool(struct kvg_rng *r, const char *name, size_t chars)
{
    cJSON *t = cJSON_CreateObject();
    cJSON *p = schema(r, chars * 2 / 5, 2 + (int)kvg_rng_below(r, 4), 1);
    int ok = t && p && cJSON_AddStringToObject(t, "name", name) &&
             !add_text(t, "description", r, chars / 2) &&
             cJSON_AddItemToObject(t, "input_schema", p);
    if (!ok) {
        if (!(t && cJSON_GetObjectItemCaseSensitive(t, "input_schema"))) cJSON_Delete(p);
        cJSON_Delete(t);
        return NULL;
    }
    return t;
}

static const char *const CODEX_FNS[] = {"exec_command", "write_stdin", "request_user_input",
                                        "view_image",   "get_goal",    "create_goal",
                                        "update_goal"};
static const char *const CODEX_NS_FNS[] = {"spawn_agent", "send_input", "wait", "close_agent",
                                           "list_agents"};
static const char *const CLAUDE_TOOLS[] = {"Agent",
                                           "Bash",
                                           "Edit",
                                           "ListAgents",
                                           "Read",
                                           "ReportFindings",
                                           "ScheduleWakeup",
                                           "Skill",
                                           "ToolSearch",
                                           "Workflow",
                                           "DeferredToolPlaceholder",
                                           "Write"};

/* A developer message item of n characters. */
static cJSON *dev_item(struct kvg_rng *r, size_t n)
{
    cJSON *m = cJSON_CreateObject(), *c = NULL, *part = NULL;
    int ok = m && cJSON_AddStringToObject(m, "type", "message") &&
             cJSON_AddStringToObject(m, "role", "developer") &&
             (c = cJSON_AddArrayToObject(m, "content")) && (part = cJSON_CreateObject()) &&
             cJSON_AddItemToArray(c, part) && cJSON_AddStringToObject(part, "type", "input_text") &&
             !add_text(part, "text", r, n);
    if (!ok) {
        if (part && !(c && c->child == part)) cJSON_Delete(part);
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

static int build_responses(struct kvg__agent_group *g, struct kvg_rng *r, double scale)
{
    const size_t dev[3] = {KVG_AGENT_CODEX_DEV0, KVG_AGENT_CODEX_DEV1, KVG_AGENT_CODEX_DEV2};
    if (!(g->dev = cJSON_CreateArray()) || !(g->rtools = cJSON_CreateArray())) return -ENOMEM;
    for (int i = 0; i < 3; i++)
        if (!cJSON_AddItemToArray(g->dev, dev_item(r, (size_t)(dev[i] * scale) + 1)))
            return -ENOMEM;
    size_t fn = (size_t)(KVG_AGENT_CODEX_FNS * scale / KVG_ARRAY_LEN(CODEX_FNS)) + 1;
    for (size_t i = 0; i < KVG_ARRAY_LEN(CODEX_FNS); i++)
        if (!cJSON_AddItemToArray(g->rtools, function_tool(r, CODEX_FNS[i], fn))) return -ENOMEM;
    cJSON *ns = cJSON_CreateObject(), *fns = NULL;
    if (!ns || !cJSON_AddItemToArray(g->rtools, ns)) {
        cJSON_Delete(ns);
        return -ENOMEM;
    }
    if (!cJSON_AddStringToObject(ns, "type", "namespace") ||
        !cJSON_AddStringToObject(ns, "name", "multi_agent_v1") ||
        add_text(ns, "description", r, (size_t)(400 * scale) + 1) ||
        !(fns = cJSON_AddArrayToObject(ns, "tools")))
        return -ENOMEM;
    size_t nsf = (size_t)((KVG_AGENT_CODEX_NS - 400) * scale / KVG_ARRAY_LEN(CODEX_NS_FNS)) + 1;
    for (size_t i = 0; i < KVG_ARRAY_LEN(CODEX_NS_FNS); i++)
        if (!cJSON_AddItemToArray(fns, function_tool(r, CODEX_NS_FNS[i], nsf))) return -ENOMEM;
    cJSON *ws = cJSON_CreateObject();
    if (!ws || !cJSON_AddItemToArray(g->rtools, ws)) {
        cJSON_Delete(ws);
        return -ENOMEM;
    }
    if (!cJSON_AddStringToObject(ws, "type", "web_search") ||
        !cJSON_AddFalseToObject(ws, "external_web_access"))
        return -ENOMEM;
    return 0;
}

/* A system text block; cached: marked cache_control ephemeral. */
static cJSON *text_block(cJSON *text, int cached)
{
    cJSON *b = cJSON_CreateObject(), *cc = NULL;
    int ok = b && text && cJSON_AddStringToObject(b, "type", "text") &&
             cJSON_AddItemToObject(b, "text", text);
    if (!ok) {
        if (!(b && cJSON_GetObjectItemCaseSensitive(b, "text"))) cJSON_Delete(text);
        cJSON_Delete(b);
        return NULL;
    }
    if (cached && (!(cc = cJSON_AddObjectToObject(b, "cache_control")) ||
                   !cJSON_AddStringToObject(cc, "type", "ephemeral"))) {
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}

static int build_messages(struct kvg__agent_group *g, struct kvg_rng *r, double scale, uint64_t n)
{
    char billing[160];
    char rel[9];
    kvg__agent_hex(r, 4, rel);
    snprintf(billing, sizeof billing,
             "x-anthropic-billing-header: cc_version=2.1.332.%s; cc_entrypoint=sdk-cli; "
             "cc_deployment=%llu;",
             rel, (unsigned long long)n);
    static const char intro[] = "You are Claude Code, Anthropic's official CLI for Claude.";
    size_t rest = (size_t)(KVG_AGENT_CLAUDE_SYSTEM * scale);
    rest = rest > strlen(billing) + sizeof intro ? rest - strlen(billing) - sizeof intro : 1;
    if (!(g->system = cJSON_CreateArray()) || !(g->mtools = cJSON_CreateArray())) return -ENOMEM;
    if (!cJSON_AddItemToArray(g->system, text_block(cJSON_CreateString(billing), 0)) ||
        !cJSON_AddItemToArray(g->system, text_block(cJSON_CreateString(intro), 1)) ||
        !cJSON_AddItemToArray(g->system, text_block(kvg__agent_text(r, rest), 1)))
        return -ENOMEM;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    size_t s2 = (size_t)((KVG_AGENT_CLAUDE_SYS2 - KVG_AGENT_CLAUDE_ENV) * scale) + 1;
    int rc = kvg__agent_words(r, s2, &b);
    if (!rc && !(g->sys2 = strdup(kvg_buf_cstr(&b) ? b.data : ""))) rc = -ENOMEM;
    kvg_buf_free(&b);
    if (rc) return rc;
    size_t tool = (size_t)(KVG_AGENT_CLAUDE_TOOLS * scale / KVG_ARRAY_LEN(CLAUDE_TOOLS)) + 1;
    for (size_t i = 0; i < KVG_ARRAY_LEN(CLAUDE_TOOLS); i++)
        if (!cJSON_AddItemToArray(g->mtools, anthropic_tool(r, CLAUDE_TOOLS[i], tool)))
            return -ENOMEM;
    return 0;
}

int kvg__agent_group_build(struct kvg__agent_group *g, uint64_t seed, double scale, int responses,
                           int messages)
{
    struct kvg_rng r;
    memset(g, 0, sizeof *g);
    kvg_rng_seed(&r, seed);
    int rc = responses ? build_responses(g, &r, scale) : 0;
    if (!rc && messages) rc = build_messages(g, &r, scale, seed);
    return rc;
}

void kvg__agent_group_free(struct kvg__agent_group *g)
{
    cJSON_Delete(g->dev);
    cJSON_Delete(g->rtools);
    cJSON_Delete(g->system);
    cJSON_Delete(g->mtools);
    free(g->sys2);
    memset(g, 0, sizeof *g);
}

cJSON *kvg__agent_call_args(struct kvg_rng *r, int messages, const char **name, const char **ns)
{
    cJSON *a = cJSON_CreateObject();
    *ns = NULL;
    if (!a) return NULL;
    int ok;
    if (messages) {
        static const char *const used[] = {"Bash", "Read", "Edit", "Bash", "Write", "Agent"};
        *name = used[kvg_rng_below(r, KVG_ARRAY_LEN(used))];
        ok = !add_text(a, "command", r, 30 + (size_t)kvg_rng_below(r, 90)) &&
             !add_text(a, "description", r, 20 + (size_t)kvg_rng_below(r, 40));
    } else if (!kvg_rng_below(r, 5)) { /* now and then, one of the namespace's */
        *ns = "multi_agent_v1";
        *name = CODEX_NS_FNS[kvg_rng_below(r, KVG_ARRAY_LEN(CODEX_NS_FNS))];
        ok = !add_text(a, "message", r, 40 + (size_t)kvg_rng_below(r, 120));
    } else {
        *name = "exec_command";
        ok = !add_text(a, "cmd", r, 30 + (size_t)kvg_rng_below(r, 90)) &&
             cJSON_AddNumberToObject(a, "timeout_ms", 10000) != NULL;
    }
    if (!ok) {
        cJSON_Delete(a);
        return NULL;
    }
    return a;
}
