/* Unit tests for api/endpoints.c and api/errors.c: the endpoint table's
 * paths and methods, {id} segments, the Allow mask and header, the error
 * bodies of both shapes. */
#include "support/test.h"

#include "api/api.h"

static const struct kvg_api_endpoint *find(const char *path, const char *method, unsigned *allow)
{
    return kvg_api_find(path, strlen(path), method, allow, NULL, NULL);
}

TEST(api_find_every_enum_path)
{
    static const struct {
        const char *path, *method;
        enum kvg_api_kind kind;
    } want[] = {
        {"/v1/chat/completions", "POST", KVG_API_CHAT},
        {"/v1/completions", "POST", KVG_API_COMPLETIONS},
        {"/v1/responses", "POST", KVG_API_RESPONSES},
        {"/v1/responses/resp_1", "GET", KVG_API_RESPONSE_ID},
        {"/v1/responses/resp_1", "HEAD", KVG_API_RESPONSE_ID},
        {"/v1/responses/resp_1", "DELETE", KVG_API_RESPONSE_ID},
        {"/v1/responses/resp_1/cancel", "POST", KVG_API_RESPONSE_ID},
        {"/v1/messages", "POST", KVG_API_MESSAGES},
        {"/v1/messages/count_tokens", "POST", KVG_API_COUNT_TOKENS},
        {"/generate", "POST", KVG_API_GENERATE},
        {"/v1/embeddings", "POST", KVG_API_EMBEDDINGS},
        {"/pooling", "POST", KVG_API_POOLING},
        {"/classify", "POST", KVG_API_CLASSIFY},
        {"/score", "POST", KVG_API_SCORE},
        {"/v1/score", "POST", KVG_API_SCORE},
        {"/rerank", "POST", KVG_API_RERANK},
        {"/v1/rerank", "POST", KVG_API_RERANK},
        {"/v2/rerank", "POST", KVG_API_RERANK},
        {"/tokenize", "POST", KVG_API_TOKENIZE},
        {"/detokenize", "POST", KVG_API_DETOKENIZE},
        {"/v1/audio/transcriptions", "POST", KVG_API_TRANSCRIBE},
        {"/v1/audio/translations", "POST", KVG_API_TRANSLATE},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        unsigned allow = 0;
        const struct kvg_api_endpoint *e = find(want[i].path, want[i].method, &allow);
        if (!e) printf("# missing %s %s\n", want[i].method, want[i].path);
        CHECK(e);
        CHECK_INT(e->kind, want[i].kind);
        CHECK(allow & KVG_API_GET || allow & KVG_API_POST);
    }
    CHECK_INT(kvg_api_nendpoints, 20);
}

TEST(api_find_properties)
{
    const struct kvg_api_endpoint *e = find("/tokenize", "POST", NULL);
    CHECK_INT(e->routing, KVG_API_ROUTE_LOCAL);
    e = find("/detokenize", "POST", NULL);
    CHECK_INT(e->routing, KVG_API_ROUTE_LOCAL);
    e = find("/v1/messages/count_tokens", "POST", NULL);
    CHECK_INT(e->routing, KVG_API_ROUTE_LOCAL);
    CHECK_INT(e->shape, KVG_API_SHAPE_ANTHROPIC);
    e = find("/v1/messages", "POST", NULL);
    CHECK_INT(e->shape, KVG_API_SHAPE_ANTHROPIC);
    CHECK_INT(e->routing, KVG_API_ROUTE_PROMPT);
    CHECK_STR(e->name, "messages");
    e = find("/v1/audio/transcriptions", "POST", NULL);
    CHECK_INT(e->body, KVG_API_BODY_MULTIPART);
    e = find("/v1/audio/translations", "POST", NULL);
    CHECK_INT(e->body, KVG_API_BODY_MULTIPART);
    e = find("/v1/responses/x", "GET", NULL);
    CHECK_INT(e->routing, KVG_API_ROUTE_STORED);
    CHECK_INT(e->body, KVG_API_BODY_NONE);
    e = find("/v1/chat/completions", "POST", NULL);
    CHECK_INT(e->shape, KVG_API_SHAPE_OPENAI);
    CHECK_STR(e->name, "chat");
}

TEST(api_find_id_segment)
{
    const char *id = NULL;
    size_t n = 0;
    unsigned allow = 0;
    const char p[] = "/v1/responses/resp_abc/cancel";
    const struct kvg_api_endpoint *e = kvg_api_find(p, strlen(p), "POST", &allow, &id, &n);
    CHECK(e);
    CHECK_INT(n, 8);
    CHECK(!memcmp(id, "resp_abc", 8));
    const char q[] = "/v1/responses/resp_xyz";
    e = kvg_api_find(q, strlen(q), "DELETE", &allow, &id, &n);
    CHECK(e);
    CHECK_INT(allow, KVG_API_GET | KVG_API_DELETE);
    CHECK_INT(n, 8);
    CHECK(!memcmp(id, "resp_xyz", 8));
    /* the length given is the path: bytes past it (a query) do not count */
    const char r[] = "/v1/responses?x=1";
    e = kvg_api_find(r, 13, "POST", &allow, &id, &n);
    CHECK(e);
    CHECK(!id);
    CHECK_INT(e->kind, KVG_API_RESPONSES);
}

TEST(api_find_405_and_404)
{
    unsigned allow = 99;
    CHECK(!find("/v1/responses/r1", "POST", &allow));
    CHECK_INT(allow, KVG_API_GET | KVG_API_DELETE);
    CHECK(!find("/v1/chat/completions", "GET", &allow));
    CHECK_INT(allow, KVG_API_POST);
    CHECK(!find("/v1/responses/r1/cancel", "GET", &allow));
    CHECK_INT(allow, KVG_API_POST);
    CHECK(!find("/v1/chat/completions", "PUT", &allow));
    CHECK_INT(allow, KVG_API_POST);
    allow = 99;
    CHECK(!find("/v1/nothing", "POST", &allow));
    CHECK_INT(allow, 0);
    CHECK(!find("/v1/responses/", "GET", &allow)); /* an empty id is no id */
    CHECK_INT(allow, 0);
    CHECK(!find("/v1/responses/a/b", "GET", &allow));
    CHECK_INT(allow, 0);
    CHECK(!find("/v1/chat/completions/", "POST", &allow));
    CHECK_INT(allow, 0);
    CHECK(!find("/v1/chat/completion", "POST", &allow));
    CHECK(!find("", "POST", &allow));
    CHECK(!kvg_api_find(NULL, 0, "POST", &allow, NULL, NULL));
    CHECK(!find("/v1/chat/completions", NULL, &allow));
}

TEST(api_allow_header)
{
    char b[32];
    CHECK_INT(kvg_api_allow(KVG_API_GET | KVG_API_DELETE, b, sizeof b), 11);
    CHECK_STR(b, "GET, DELETE");
    CHECK_INT(kvg_api_allow(KVG_API_POST, b, sizeof b), 4);
    CHECK_STR(b, "POST");
    CHECK_INT(kvg_api_allow(7, b, sizeof b), 17);
    CHECK_STR(b, "GET, POST, DELETE");
    CHECK_INT(kvg_api_allow(0, b, sizeof b), 0);
    CHECK_STR(b, "");
    CHECK_INT(kvg_api_allow(7, b, 10), 9); /* whole names only */
    CHECK_STR(b, "GET, POST");
}

TEST(api_kind_names)
{
    CHECK_STR(kvg_api_kind_name(KVG_API_CHAT), "chat");
    CHECK_STR(kvg_api_kind_name(KVG_API_RESPONSES), "responses");
    CHECK_STR(kvg_api_kind_name(KVG_API_MESSAGES), "messages");
    CHECK_STR(kvg_api_kind_name(KVG_API_COUNT_TOKENS), "count_tokens");
    CHECK_STR(kvg_api_kind_name(KVG_API_NKINDS), "other");
    for (int k = 0; k < KVG_API_NKINDS; k++) CHECK(strcmp(kvg_api_kind_name(k), "other"));
    /* each table row's label is its kind's */
    for (size_t i = 0; i < kvg_api_nendpoints; i++)
        CHECK_STR(kvg_api_endpoints[i].name, kvg_api_kind_name(kvg_api_endpoints[i].kind));
}

static const char *err_body(enum kvg_api_shape s, int status, const char *type, const char *code,
                            const char *msg, const char *param, struct kvg_buf *b)
{
    kvg_buf_reset(b);
    if (kvg_api_error_body(s, status, type, code, msg, param, b)) return NULL;
    return kvg_buf_cstr(b);
}

TEST(api_error_bodies)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_STR(err_body(KVG_API_SHAPE_OPENAI, 400, NULL, NULL, "bad \"x\"", "input[3].type", &b),
              "{\"error\":{\"message\":\"bad \\\"x\\\"\",\"type\":\"invalid_request_error\","
              "\"param\":\"input[3].type\",\"code\":null}}");
    CHECK_STR(err_body(KVG_API_SHAPE_OPENAI, 429, NULL, "quota", "slow down", NULL, &b),
              "{\"error\":{\"message\":\"slow down\",\"type\":\"rate_limit_error\","
              "\"param\":null,\"code\":\"quota\"}}");
    CHECK_STR(err_body(KVG_API_SHAPE_OPENAI, 503, NULL, NULL, "no worker", NULL, &b),
              "{\"error\":{\"message\":\"no worker\",\"type\":\"server_error\",\"param\":null,"
              "\"code\":null}}");
    CHECK_STR(err_body(KVG_API_SHAPE_ANTHROPIC, 400, NULL, NULL, "max_tokens: Field required",
                       "max_tokens", &b),
              "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
              "\"message\":\"max_tokens: Field required\"}}");
    CHECK_STR(
        err_body(KVG_API_SHAPE_ANTHROPIC, 529, NULL, NULL, "busy", NULL, &b),
        "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}");
    CHECK_STR(
        err_body(KVG_API_SHAPE_ANTHROPIC, 401, NULL, NULL, "key", NULL, &b),
        "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"key\"}}");
    CHECK_STR(
        err_body(KVG_API_SHAPE_ANTHROPIC, 413, NULL, NULL, "big", NULL, &b),
        "{\"type\":\"error\",\"error\":{\"type\":\"request_too_large\",\"message\":\"big\"}}");
    CHECK_STR(err_body(KVG_API_SHAPE_ANTHROPIC, 500, NULL, NULL, "oops", NULL, &b),
              "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"oops\"}}");
    CHECK_STR(err_body(KVG_API_SHAPE_ANTHROPIC, 404, "not_found_error", NULL, "m", NULL, &b),
              "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"m\"}}");
    kvg_buf_free(&b);
}

TEST(api_error_status)
{
    CHECK_INT(kvg_api_error_status(KVG_API_SHAPE_ANTHROPIC, 503), 529);
    CHECK_INT(kvg_api_error_status(KVG_API_SHAPE_OPENAI, 503), 503);
    CHECK_INT(kvg_api_error_status(KVG_API_SHAPE_ANTHROPIC, 429), 429);
    CHECK_INT(kvg_api_error_status(KVG_API_SHAPE_ANTHROPIC, 502), 502);
}
