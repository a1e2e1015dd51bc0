/* What the proxy observes of a request (proxy/obs.c): the error code read
 * from an engine's error body in each dialect, the token clock that turns
 * the usage filter's token-carrying events into the first token's time
 * and the inter-token gaps (events read together share the wait), and the
 * bounded model label. */
#include <cjson/cJSON.h>
#include <string.h>

#include "metrics/metrics.h"
#include "proxy/proxy_int.h"
#include "support/test.h"

static const char *code_of(const char *body)
{
    static char out[64];
    kvg__proxy_error_code(body, strlen(body), out, sizeof out);
    return out;
}

TEST(error_code_in_each_dialect)
{
    /* OpenAI's (and vLLM's newer) nested error with a string code. */
    CHECK_STR(code_of("{\"error\":{\"message\":\"m\",\"type\":\"invalid_request_error\","
                      "\"param\":null,\"code\":\"context_length_exceeded\"}}"),
              "context_length_exceeded");
    /* A null code: the type says it. */
    CHECK_STR(code_of("{\"error\":{\"message\":\"m\",\"type\":\"BadRequestError\",\"code\":null}}"),
              "BadRequestError");
    /* vLLM's flat ErrorResponse: its numeric code repeats the status,
     * the type says more; a numeric code alone is still a code. */
    CHECK_STR(code_of("{\"object\":\"error\",\"message\":\"m\",\"type\":\"BadRequestError\","
                      "\"param\":null,\"code\":400}"),
              "BadRequestError");
    CHECK_STR(code_of("{\"error\":{\"message\":\"m\",\"code\":429}}"), "429");
    /* Anthropic's: the type inside error, not the envelope's "error". */
    CHECK_STR(code_of("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                      "\"message\":\"m\"}}"),
              "overloaded_error");
    /* A string error with a type beside it (SGLang's older shape). */
    CHECK_STR(code_of("{\"error\":\"bad\",\"type\":\"invalid_request\"}"), "invalid_request");
    /* Nothing to say: "" and 0. */
    char out[64] = "x";
    CHECK_INT(kvg__proxy_error_code("not json", 8, out, sizeof out), 0);
    CHECK_STR(out, "");
    CHECK_INT(kvg__proxy_error_code("{\"type\":\"error\"}", 16, out, sizeof out), 0);
    CHECK_INT(kvg__proxy_error_code("[1]", 3, out, sizeof out), 0);
    /* A long code is cut to the buffer, never past it. */
    char small[8];
    const char *long_code = "{\"error\":{\"code\":\"abcdefghijkl\"}}";
    CHECK_INT(kvg__proxy_error_code(long_code, strlen(long_code), small, sizeof small), 1);
    CHECK_STR(small, "abcdefg");
}

/* The gate's filter says k more token events arrived with the read at t_ms. */
static void arrive(struct proxy_req *pr, uint64_t k, double t_ms)
{
    pr->gate.sse_filter.token_events += k;
    pr->last_ns = (uint64_t)(t_ms * 1e6);
    kvg__proxy_obs_tokens(pr);
}

/* What the host's observer was told (on_observe). */
static int firsts;
static double first_ttft;
static void observe(void *ud, const struct kvg_proxy_obs *o)
{
    (void)ud;
    if (o->kind == KVG_PROXY_OBS_FIRST) firsts++, first_ttft = o->ttft_s;
}

TEST(token_clock_first_token_and_gaps)
{
    static struct kvg_proxy px;
    static struct kvg_proxy_loop pl;
    px.on_observe = observe;
    pl.px = &px;
    struct kvg_metrics_registry *reg;
    struct kvg_metrics_family *f;
    CHECK_INT(kvg_metrics_registry_new(0, &reg), 0);
    double b[3] = {0.001, 0.01, 0.1};
    CHECK_INT(kvg_metrics_histogram(reg, "itl_seconds", "h", NULL, 0, b, 3, &f), 0);
    static struct proxy_req pr; /* zeroed */
    pr.pl = &pl;
    CHECK_INT(kvg_metrics_series(f, NULL, 0, &pr.ms.itl), 0);
    pr.ms_set = 1;
    pr.gate.sse_filter_on = 1;
    pr.t0_ns = 1000000; /* arrival at 1 ms */
    arrive(&pr, 0, 5);  /* a role-only chunk (or response.created): no token, no clock */
    CHECK_INT(pr.tok_first_ns, 0);
    CHECK_INT(firsts, 0);
    arrive(&pr, 1, 20); /* the first token at 20 ms: no gap */
    CHECK_INT(pr.tok_first_ns, 20000000);
    CHECK_INT(firsts, 1); /* the observer's TTFT is the same clock's */
    CHECK_NEAR(first_ttft, 0.019, 1e-9);
    CHECK_INT(kvg_metrics_hist_count(pr.ms.itl), 0);
    arrive(&pr, 1, 25); /* one 5 ms gap */
    CHECK_INT(kvg_metrics_hist_count(pr.ms.itl), 1);
    CHECK_NEAR(kvg_metrics_hist_sum(pr.ms.itl), 0.005, 1e-9);
    arrive(&pr, 4, 45); /* four events read at once: 20 ms shared, 5 ms each */
    CHECK_INT(kvg_metrics_hist_count(pr.ms.itl), 5);
    CHECK_NEAR(kvg_metrics_hist_sum(pr.ms.itl), 0.025, 1e-9);
    uint64_t c[4];
    CHECK_INT(kvg_metrics_hist_read(pr.ms.itl, c, 4, NULL), 4);
    CHECK_INT(c[1], 5); /* every gap in (1 ms, 10 ms] */
    arrive(&pr, 0, 60); /* the usage chunk: nothing */
    CHECK_INT(kvg_metrics_hist_count(pr.ms.itl), 5);
    CHECK_INT(firsts, 1); /* told once */
    CHECK_INT(pr.tok_last_ns, 45000000);
    /* No series (the model's not taken): the clock still runs. */
    static struct proxy_req q;
    q.pl = &pl;
    q.gate.sse_filter_on = 1;
    arrive(&q, 3, 7);
    CHECK_INT(q.tok_first_ns, 7000000);
    CHECK_INT(q.tok_events, 3);
    kvg_metrics_series_release(pr.ms.itl);
    kvg_metrics_registry_free(reg);
}

/* The model label with the single-model flags (no catalog): the name asked
 * when the answering worker lists it, else "unknown" for every other name
 * (a client's made-up names are never a label), each looked up once per
 * loop. */
TEST(model_label_is_a_listed_name_or_unknown)
{
    struct kvg_metrics_registry *reg;
    CHECK_INT(kvg_metrics_registry_new(0, &reg), 0);
    static struct kvg_proxy_metrics m;
    const char *kl[] = {"model", "kind"}, *ml[] = {"model"};
    double b[2] = {0.1, 1};
    CHECK_INT(kvg_metrics_counter(reg, "tok_total", "t", kl, 2, &m.tokens_f), 0);
    CHECK_INT(kvg_metrics_histogram(reg, "ttft_seconds", "t", ml, 1, b, 2, &m.ttft_f), 0);
    static struct kvg_proxy px;
    px.m = &m;
    static struct kvg_proxy_loop pl;
    pl.px = &px;
    struct kvg_worker *w;
    CHECK_INT(kvg_worker_new("http://127.0.0.1:9", &w), 0);
    cJSON *list = cJSON_Parse("[{\"id\":\"served\"}]");
    kvg_worker_set_models(w, list);
    cJSON_Delete(list);
    static const char *const names[] = {"served", "made-up-1", "made-up-2", "served", "made-up-1"};
    static struct proxy_req pr[5];
    for (int i = 0; i < 5; i++) {
        pr[i].pl = &pl;
        pr[i].cmodel = -1;
        pr[i].ri.model_len = strlen(names[i]);
        memcpy(pr[i].ri.model, names[i], pr[i].ri.model_len);
        kvg__proxy_obs_model(&pr[i], w);
        CHECK_INT(pr[i].ms_set, 1);
        kvg_metrics_add(pr[i].ms.tokens[2], 1); /* a completion token each */
    }
    struct kvg_buf out;
    kvg_buf_init(&out, 0);
    CHECK_INT(kvg_metrics_render(reg, &out), 0);
    CHECK_INT(kvg_buf_append(&out, "", 1), 0);
    CHECK(strstr(out.data, "tok_total{model=\"served\",kind=\"completion\"} 2\n") != NULL);
    CHECK(strstr(out.data, "tok_total{model=\"unknown\",kind=\"completion\"} 3\n") != NULL);
    CHECK(strstr(out.data, "made-up") == NULL);
    CHECK(pr[0].ms.tokens[2] == pr[3].ms.tokens[2]); /* the loop's cache */
    CHECK(pr[1].ms.tokens[2] == pr[2].ms.tokens[2]);
    kvg_buf_free(&out);
    kvg__proxy_mcache_free(&pl);
    kvg_worker_unref(w);
    kvg_metrics_registry_free(reg);
}
