/* The endpoint table: every path the engines serve that kvgate passes on,
 * with its methods, how it is routed and in which shape it answers errors.
 * serve/endpoints.c dispatches through it; a path not here is a 404, a
 * known path with another method a 405 with the Allow header built here. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"

#define P KVG_API_POST
#define J KVG_API_BODY_JSON
#define OA KVG_API_SHAPE_OPENAI
#define AN KVG_API_SHAPE_ANTHROPIC

const struct kvg_api_endpoint kvg_api_endpoints[] = {
    {"/v1/chat/completions", KVG_API_CHAT, P, KVG_API_ROUTE_PROMPT, OA, J, "chat"},
    {"/v1/completions", KVG_API_COMPLETIONS, P, KVG_API_ROUTE_PROMPT, OA, J, "completions"},
    {"/v1/responses", KVG_API_RESPONSES, P, KVG_API_ROUTE_PROMPT, OA, J, "responses"},
    {"/v1/responses/{id}", KVG_API_RESPONSE_ID, KVG_API_GET | KVG_API_DELETE, KVG_API_ROUTE_STORED,
     OA, KVG_API_BODY_NONE, "response_id"},
    {"/v1/responses/{id}/cancel", KVG_API_RESPONSE_ID, P, KVG_API_ROUTE_STORED, OA,
     KVG_API_BODY_NONE, "response_id"},
    {"/v1/messages", KVG_API_MESSAGES, P, KVG_API_ROUTE_PROMPT, AN, J, "messages"},
    {"/v1/messages/count_tokens", KVG_API_COUNT_TOKENS, P, KVG_API_ROUTE_LOCAL, AN, J,
     "count_tokens"},
    {"/generate", KVG_API_GENERATE, P, KVG_API_ROUTE_PROMPT, OA, J, "generate"},
    {"/v1/embeddings", KVG_API_EMBEDDINGS, P, KVG_API_ROUTE_LOAD, OA, J, "embeddings"},
    {"/pooling", KVG_API_POOLING, P, KVG_API_ROUTE_LOAD, OA, J, "pooling"},
    {"/classify", KVG_API_CLASSIFY, P, KVG_API_ROUTE_LOAD, OA, J, "classify"},
    {"/score", KVG_API_SCORE, P, KVG_API_ROUTE_LOAD, OA, J, "score"},
    {"/v1/score", KVG_API_SCORE, P, KVG_API_ROUTE_LOAD, OA, J, "score"},
    {"/rerank", KVG_API_RERANK, P, KVG_API_ROUTE_LOAD, OA, J, "rerank"},
    {"/v1/rerank", KVG_API_RERANK, P, KVG_API_ROUTE_LOAD, OA, J, "rerank"},
    {"/v2/rerank", KVG_API_RERANK, P, KVG_API_ROUTE_LOAD, OA, J, "rerank"},
    {"/tokenize", KVG_API_TOKENIZE, P, KVG_API_ROUTE_LOCAL, OA, J, "tokenize"},
    {"/detokenize", KVG_API_DETOKENIZE, P, KVG_API_ROUTE_LOCAL, OA, J, "detokenize"},
    {"/v1/audio/transcriptions", KVG_API_TRANSCRIBE, P, KVG_API_ROUTE_LOAD, OA,
     KVG_API_BODY_MULTIPART, "transcribe"},
    {"/v1/audio/translations", KVG_API_TRANSLATE, P, KVG_API_ROUTE_LOAD, OA, KVG_API_BODY_MULTIPART,
     "translate"},
};
const size_t kvg_api_nendpoints = sizeof(kvg_api_endpoints) / sizeof(kvg_api_endpoints[0]);

static unsigned method_bit(const char *m)
{
    if (!m) return 0;
    if (!strcmp(m, "GET") || !strcmp(m, "HEAD")) return KVG_API_GET;
    if (!strcmp(m, "POST")) return KVG_API_POST;
    if (!strcmp(m, "DELETE")) return KVG_API_DELETE;
    return 0;
}

/* Whether path[0, n) matches pattern, a "{id}" in it standing for one
 * non-empty segment (its span in *id, *id_len). */
static int path_match(const char *pat, const char *path, size_t n, const char **id, size_t *id_len)
{
    size_t i = 0;
    while (*pat) {
        if (!strncmp(pat, "{id}", 4)) {
            size_t s = i;
            while (i < n && path[i] != '/') i++;
            if (i == s) return 0;
            *id = path + s;
            *id_len = i - s;
            pat += 4;
            continue;
        }
        if (i >= n || path[i] != *pat) return 0;
        i++;
        pat++;
    }
    return i == n;
}

const struct kvg_api_endpoint *kvg_api_find(const char *path, size_t path_len, const char *method,
                                            unsigned *allow, const char **id, size_t *id_len)
{
    unsigned want = method_bit(method), seen = 0;
    if (id) *id = NULL;
    if (id_len) *id_len = 0;
    for (size_t k = 0; path && k < kvg_api_nendpoints; k++) {
        const struct kvg_api_endpoint *e = &kvg_api_endpoints[k];
        const char *sid = NULL;
        size_t slen = 0;
        if (!path_match(e->path, path, path_len, &sid, &slen)) continue;
        seen |= e->methods;
        if (!(e->methods & want)) continue;
        if (id) *id = sid;
        if (id_len) *id_len = slen;
        if (allow) *allow = e->methods;
        return e;
    }
    if (allow) *allow = seen;
    return NULL;
}

size_t kvg_api_allow(unsigned methods, char *out, size_t cap)
{
    static const struct {
        unsigned bit;
        const char *name;
    } m[] = {{KVG_API_GET, "GET"}, {KVG_API_POST, "POST"}, {KVG_API_DELETE, "DELETE"}};
    size_t len = 0;
    if (!out || !cap) return 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        if (!(methods & m[i].bit)) continue;
        int w = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", m[i].name);
        if (w < 0 || (size_t)w >= cap - len) { /* cut: keep whole names only */
            out[len] = 0;
            break;
        }
        len += (size_t)w;
    }
    return len;
}

const char *kvg_api_kind_name(enum kvg_api_kind k)
{
    static const char *names[KVG_API_NKINDS] = {
        [KVG_API_CHAT] = "chat",
        [KVG_API_COMPLETIONS] = "completions",
        [KVG_API_RESPONSES] = "responses",
        [KVG_API_RESPONSE_ID] = "response_id",
        [KVG_API_MESSAGES] = "messages",
        [KVG_API_COUNT_TOKENS] = "count_tokens",
        [KVG_API_GENERATE] = "generate",
        [KVG_API_EMBEDDINGS] = "embeddings",
        [KVG_API_POOLING] = "pooling",
        [KVG_API_CLASSIFY] = "classify",
        [KVG_API_SCORE] = "score",
        [KVG_API_RERANK] = "rerank",
        [KVG_API_TOKENIZE] = "tokenize",
        [KVG_API_DETOKENIZE] = "detokenize",
        [KVG_API_TRANSCRIBE] = "transcribe",
        [KVG_API_TRANSLATE] = "translate",
    };
    return (unsigned)k < KVG_API_NKINDS && names[k] ? names[k] : "other";
}
