/* kvgate observe's verdicts: a fresh view decides; a stale or missing view
 * never says "serving". And the status page's ring. */
#include <string.h>

#include "support/test.h"
#include "ui/history.h"
#include "ui/observe.h"

static const char VIEW[] = "{\"router\":\"r\",\"generation\":7,\"taken_at\":1000.0,\"workers\":["
                           "{\"url\":\"http://a\",\"state\":\"serving\"},"
                           "{\"url\":\"http://b\",\"state\":\"unhealthy\"}]}";

TEST(fresh_view_decides)
{
    struct kvg_ui_view v[2];
    memset(v, 0, sizeof v);
    CHECK_INT(kvg_ui_view_parse(&v[0], VIEW, strlen(VIEW), 1005.0), 0);
    CHECK(v[0].fresh);
    CHECK_INT((int)v[0].generation, 7);
    CHECK_INT((int)v[0].nw, 2);
    CHECK_INT(kvg_ui_observe_worker(v, 1, "http://a"), KVG_UI_CONFIRMED);
    CHECK_INT(kvg_ui_observe_worker(v, 1, "http://b"), KVG_UI_NOT_SERVING);
    CHECK_INT(kvg_ui_observe_worker(v, 1, "http://c"), KVG_UI_UNKNOWN);
    /* A second replica that cannot be read changes nothing. */
    snprintf(v[1].error, sizeof v[1].error, "connection refused");
    CHECK_INT(kvg_ui_observe_worker(v, 2, "http://a"), KVG_UI_CONFIRMED);
    kvg_ui_view_free(&v[0]);
}

TEST(stale_view_is_no_view)
{
    struct kvg_ui_view v;
    memset(&v, 0, sizeof v);
    CHECK_INT(kvg_ui_view_parse(&v, VIEW, strlen(VIEW), 1016.0), 0); /* 16 s old */
    CHECK(v.fetched);
    CHECK(!v.fresh);
    CHECK_INT(kvg_ui_observe_worker(&v, 1, "http://a"), KVG_UI_UNKNOWN);
    kvg_ui_view_free(&v);
    memset(&v, 0, sizeof v);
    CHECK(kvg_ui_view_parse(&v, "{\"workers\":[]}", 14, 0) != 0);
    CHECK(!v.fetched);
    kvg_ui_view_free(&v);
}

TEST(history_ring_keeps_the_last)
{
    struct kvg_ui_history h;
    CHECK_INT(kvg_ui_history_init(&h), 0);
    struct kvg_ui_sample s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < KVG_UI_SAMPLES + 5; i++) {
        s.t = i;
        s.req_rate = i;
        s.ttft_p50 = -1;
        kvg_ui_history_push(&h, &s);
    }
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg_ui_history_json(&h, 2, &b), 0);
    kvg_buf_append(&b, "", 1);
    CHECK(strstr(b.data, "\"t\":303.000") && strstr(b.data, "\"t\":304.000"));
    CHECK(!strstr(b.data, "\"t\":302.000"));
    CHECK(strstr(b.data, "\"ttft_p50\":null"));
    kvg_buf_free(&b);
    kvg_ui_history_free(&h);
}
