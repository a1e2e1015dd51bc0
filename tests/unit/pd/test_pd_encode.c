/* The encode stage's pure parts: which requests carry media, and what an
 * encoder's answer must hold (ec_transfer_params naming its mm_hashes). */
#include "support/test.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "pd/pd.h"

static uint32_t media(const char *body)
{
    cJSON *j = cJSON_Parse(body);
    uint32_t n = kvg_pd_media_items(j);
    cJSON_Delete(j);
    return n;
}

TEST(media_items_in_messages)
{
    CHECK_INT(media("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"), 0);
    CHECK_INT(media("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                    "\"text\":\"hi\"}]}]}"),
              0);
    CHECK_INT(media("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                    "\"a\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x/1.png\"}}]},"
                    "{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":"
                    "\"u\"},{\"image_url\":{\"url\":\"typeless\"}}]}]}"),
              3);
    /* Audio is not an image; a completion prompt has no messages. */
    CHECK_INT(
        media("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]}"), 0);
    CHECK_INT(media("{\"prompt\":\"image_url\"}"), 0);
    CHECK_INT(media("{\"messages\":{\"content\":[{\"type\":\"image_url\"}]}}"), 0);
    CHECK_INT(media("[1,2]"), 0);
    CHECK_INT(kvg_pd_media_items(NULL), 0);
}

static int parse(const char *body, size_t *n, cJSON **out)
{
    char err[160];
    return kvg_pd_ec_params_parse(body, body ? strlen(body) : 0, out, n, err, sizeof err);
}

TEST(ec_params_from_an_encoder)
{
    cJSON *p = NULL;
    size_t n = 0;
    CHECK_INT(parse("{\"choices\":[],\"ec_transfer_params\":{\"remote_engine_id\":\"e1\","
                    "\"remote_host\":\"127.0.0.1\",\"remote_port\":5600,\"mm_hashes\":[\"ab\","
                    "\"cd\"]}}",
                    &n, &p),
              0);
    CHECK_INT((int)n, 2);
    CHECK(cJSON_IsObject(p));
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(p, "remote_engine_id")->valuestring, "e1");
    cJSON_Delete(p);
    /* What a prefill cannot use is refused, *out stays NULL. */
    static const char *bad[] = {
        "",
        "not json",
        "[]",
        "{\"choices\":[]}",
        "{\"ec_transfer_params\":null}",
        "{\"ec_transfer_params\":\"x\"}",
        "{\"ec_transfer_params\":{}}",
        "{\"ec_transfer_params\":{\"mm_hashes\":[]}}",
        "{\"ec_transfer_params\":{\"mm_hashes\":\"ab\"}}",
        "{\"ec_transfer_params\":{\"mm_hashes\":[\"ab\",1]}}",
        "{\"ec_transfer_params\":{\"mm_hashes\":[\"\"]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = (cJSON *)1;
        CHECK_INT(parse(bad[i], &n, &p), KVG_EPARSE);
        CHECK(p == NULL);
        CHECK_INT((int)n, 0);
    }
    CHECK_INT(parse(NULL, &n, &p), KVG_EPARSE);
}

TEST(state_names)
{
    CHECK_STR(kvg_pd_state_name(KVG_PD_ENCODE), "encode");
    CHECK_STR(kvg_pd_state_name(KVG_PD_CANCELLED), "cancelled");
    CHECK_STR(kvg_pd_state_name(KVG_PD_ENCODE + 1), "?");
}
