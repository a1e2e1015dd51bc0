/* The status page's samples as /ui/state sends them: every field by its
 * name, unknowns (< 0, NaN) as null, per worker its four numbers, per
 * model its two. */
#include <math.h>
#include <string.h>

#include "support/test.h"
#include "ui/history.h"

TEST(sample_fields_and_workers)
{
    struct kvg_ui_history h;
    CHECK_INT(kvg_ui_history_init(&h), 0);
    struct kvg_ui_sample s;
    memset(&s, 0, sizeof s);
    s.t = 1700000000.5;
    s.req_rate = 12.5;
    s.err4_pct = -1;
    s.err5_pct = 25;
    s.tok_prompt = 1000;
    s.tok_cached = 250;
    s.tok_completion = 80;
    s.ttft_p50 = 0.125;
    s.ttft_p90 = NAN;
    s.itl_p50 = 0.02;
    s.itl_p90 = 0.04;
    s.hit_pct = 25;
    s.match_pct = -1;
    s.queue = 3;
    s.nw = 2;
    snprintf(s.w[0].url, sizeof s.w[0].url, "http://a\"b");
    s.w[0].in_flight = 2;
    s.w[0].waiting = -1;
    s.w[0].kv_usage = 0.5;
    s.w[0].sent_rate = 4;
    snprintf(s.w[1].url, sizeof s.w[1].url, "http://c");
    s.w[1].waiting = 1;
    s.w[1].kv_usage = -1;
    s.nm = 1;
    snprintf(s.m[0].name, sizeof s.m[0].name, "m");
    s.m[0].sent_rate = 4;
    s.m[0].in_flight = 2;
    kvg_ui_history_push(&h, &s);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg_ui_history_json(&h, 10, &b), 0);
    kvg_buf_append(&b, "", 1);
    CHECK_STR(b.data,
              "{\"samples\":[{\"t\":1700000000.500,\"req_rate\":12.5,\"err4_pct\":null,"
              "\"err5_pct\":25,\"tok_prompt\":1000,\"tok_cached\":250,\"tok_completion\":80,"
              "\"ttft_p50\":0.125,\"ttft_p90\":null,\"itl_p50\":0.02,\"itl_p90\":0.04,"
              "\"hit_pct\":25,\"match_pct\":null,\"queue\":3,\"workers\":{"
              "\"http://a\\\"b\":[2,null,0.5,4],\"http://c\":[0,1,null,0]},"
              "\"models\":{\"m\":[4,2]}}]}");
    kvg_buf_free(&b);
    kvg_ui_history_free(&h);
}
