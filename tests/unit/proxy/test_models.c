/* When a prompt sends its request to the model's fallback (proxy/models.c):
 * past the context, with max_tokens counted when given. */
#include "proxy/proxy.h"
#include "support/test.h"

TEST(context_judged_as_the_engine_does)
{
    CHECK_INT(kvg_proxy_model_past_context(0, 1000000, 0), 0); /* unknown: anything fits */
    CHECK_INT(kvg_proxy_model_past_context(500, 499, 0), 0);   /* one token of room */
    CHECK_INT(kvg_proxy_model_past_context(500, 500, 0), 1);   /* none */
    CHECK_INT(kvg_proxy_model_past_context(500, 300, 200), 0);
    CHECK_INT(kvg_proxy_model_past_context(500, 300, 201), 1);
}
