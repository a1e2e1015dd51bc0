/* The encode stage's request reading in the sim: media and their mm_hashes
 * (the same image, the same hash on every engine), the placeholder text a
 * prefilling engine renders instead of an image, and ec_transfer_params. */
#include "support/test.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "simsrv/simsrv.h"

static const char *IMG2 =
    "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},"
    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x/cat.png\"}},"
    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x/dog.png\"}}]}]}";

TEST(media_and_hashes)
{
    struct kvg_simsrv_server s;
    memset(&s, 0, sizeof s);
    s.o.role = KVG_SIMSRV_ROLE_PREFILL;
    struct kvg_simsrv_ec_req a, b;
    char msg[128];
    cJSON *j = cJSON_Parse(IMG2);
    CHECK_INT(kvg_simsrv_ec_parse(&s, j, &a, msg, sizeof msg), 0);
    CHECK_INT(a.n, 2);
    CHECK(a.hash[0] != a.hash[1]);
    CHECK_INT(a.has_params, 0);
    CHECK_INT(kvg_simsrv_ec_parse(&s, j, &b, msg, sizeof msg), 0);
    CHECK(a.hash[0] == b.hash[0] && a.hash[1] == b.hash[1]); /* deterministic */
    cJSON_Delete(j);
    cJSON *t = cJSON_Parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    CHECK_INT(kvg_simsrv_ec_parse(&s, t, &a, msg, sizeof msg), 0);
    CHECK_INT(a.n, 0);
    CHECK(kvg_simsrv_ec_text_body(t) == NULL); /* text: rendered as it is */
    cJSON_Delete(t);
}

TEST(images_render_as_placeholders)
{
    cJSON *j = cJSON_Parse(IMG2);
    char *s = kvg_simsrv_ec_text_body(j);
    CHECK(s != NULL);
    CHECK(strstr(s, "image_url") == NULL);
    CHECK(strstr(s, "\"text\":\"<image:") != NULL);
    CHECK(strstr(s, "\"text\":\"look\"") != NULL);
    cJSON *back = cJSON_Parse(s);
    struct kvg_simsrv_server srv;
    memset(&srv, 0, sizeof srv);
    struct kvg_simsrv_ec_req e;
    char msg[128];
    CHECK_INT(kvg_simsrv_ec_parse(&srv, back, &e, msg, sizeof msg), 0);
    CHECK_INT(e.n, 0); /* nothing left to encode */
    cJSON_Delete(back);
    free(s);
    cJSON_Delete(j);
}

TEST(ec_transfer_params)
{
    struct kvg_simsrv_server s;
    memset(&s, 0, sizeof s);
    s.o.role = KVG_SIMSRV_ROLE_PREFILL;
    struct kvg_simsrv_ec_req e;
    char msg[128];
    cJSON *j = cJSON_Parse("{\"ec_transfer_params\":{\"remote_engine_id\":\"e\",\"remote_host\":"
                           "\"127.0.0.1\",\"remote_port\":5700,\"mm_hashes\":[\"ab\"]}}");
    CHECK_INT(kvg_simsrv_ec_parse(&s, j, &e, msg, sizeof msg), 0);
    CHECK_INT(e.has_params, 1);
    CHECK_INT(e.remote_port, 5700);
    CHECK_STR(e.remote_host, "127.0.0.1");
    s.o.role = KVG_SIMSRV_ROLE_DECODE; /* a decode ignores them */
    CHECK_INT(kvg_simsrv_ec_parse(&s, j, &e, msg, sizeof msg), 0);
    CHECK_INT(e.has_params, 0);
    cJSON_Delete(j);
    s.o.role = KVG_SIMSRV_ROLE_PREFILL;
    static const char *bad[] = {
        "{\"ec_transfer_params\":1}", "{\"ec_transfer_params\":{\"remote_host\":\"h\"}}",
        "{\"ec_transfer_params\":{\"remote_engine_id\":\"e\",\"remote_host\":"
        "\"h\",\"remote_port\":70000}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *b = cJSON_Parse(bad[i]);
        CHECK_INT(kvg_simsrv_ec_parse(&s, b, &e, msg, sizeof msg), -1);
        cJSON_Delete(b);
    }
}
