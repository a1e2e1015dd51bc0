/* Unit tests for base/json: the fast reader gives cJSON_ParseWithLength's
 * verdict and tree on edge cases (cJSON's leniencies, escapes, surrogates,
 * numbers, nesting, trailing bytes) and on random and mutated bodies, and
 * reads a chat body itself (no hand-over to cJSON). */
#include "support/test.h"

#include <string.h>

#include "base/json.h"
#include "base/util.h"

/* 1 when both readers agree on s; *took is whether the fast reader read it
 * without cJSON. */
static int agrees(const char *s, size_t n, int *took)
{
    cJSON *ref = cJSON_ParseWithLength(s, n);
    cJSON *fast = kvg_json_parse(s, n);
    cJSON *strict = kvg_json_parse_strict(s, n);
    /* The same readers with the tree in an arena: the same trees, and the
     * arena holds one exactly when the fast reader built it. */
    struct kvg_json_arena a = {0}, sa = {0};
    cJSON *in = kvg_json_parse_in(&a, s, n);
    cJSON *strict_in = kvg_json_parse_strict_in(&sa, s, n);
    /* But for a string holding \u0000, which only the arena's tree can
     * carry (with its length): there the arena readers read what the heap's
     * decline, the same bytes as cJSON's tree holds. */
    int nul = !strict && strict_in && kvg_json_has_nul_escape(s, n);
    int ok = kvg_json_same(ref, fast) && (!strict || kvg_json_same(ref, strict)) &&
             kvg_json_same(ref, in) && kvg_json_same(nul ? ref : strict, strict_in) &&
             (a.blocks != NULL) == (strict != NULL || nul) &&
             (sa.blocks != NULL) == (strict != NULL || nul);
    if (took) *took = strict != NULL;
    cJSON_Delete(ref);
    cJSON_Delete(fast);
    cJSON_Delete(strict);
    kvg_json_free(&a, in);
    kvg_json_free(&sa, strict_in);
    ok = ok && !a.blocks && !sa.blocks;
    return ok;
}

static int agrees_s(const char *s, int *took)
{
    return agrees(s, strlen(s), took);
}

TEST(json_edge_cases)
{
    static const char *cases[] = {
        "",
        " ",
        "{}",
        "[]",
        "[[]",
        "[1,",
        "{\"a\":",
        "{\"a\":1",
        "{\"a\":1} trailing",
        "1",
        "-",
        "-0",
        "0.5",
        "01",
        "1.",
        ".5",
        "1e",
        "1e+",
        "1E-7",
        "1e999",
        "-1e999",
        "2147483648",
        "-2147483649",
        "1-",
        "1.5.",
        "0x10",
        "+1",
        "123456789012345678901234567890123456789012345"
        "678901234567890",
        "true",
        "truex",
        "tru",
        "false",
        "null",
        "nul",
        "NaN",
        "Infinity",
        "\"abc\"",
        "\"a\\\"b\"",
        "\"a\\\\\"",
        "\"a\\\\\\\"b\"",
        "\"\\u00e9\\u4f60\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"",
        "\"\\ude00\"",
        "\"\\ud83dx\"",
        "\"\\ud83d\\u0041\"",
        "\"\\u0000\"",
        "\"\\u12\"",
        "\"\\uZZZZ\"",
        "\"\\x\"",
        "\"\\/\\b\\f\\n\\r\\t\"",
        "\"unterminated",
        "\"a\\\"",
        "\"raw\ttab\x01\"",
        "{\"a\":1,\"a\":2}",
        "{\"a\" 1}",
        "{1:2}",
        "{\"a\":1,}",
        "[1,]",
        "[,1]",
        "[1 2]",
        "\xEF\xBB\xBF{}",
        "\xEF\xBB\xBF{\"a\":1}",
        "\x01{}",
        "\v[]",
        "  \n\r\t[ 1 , 2 ]  ",
        "{\"k\":[true,false,null,{\"x\":\"y\"}]}",
        "[\"\xff\xfe\"]",
        "[1]]",
        "{\"a\":{}}}",
        "[-]",
        "[-1.0e+2]",
        "[1e5e]",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) CHECK(agrees_s(cases[i], NULL));
    CHECK(agrees("[\"a\0b\"]", 7, NULL)); /* a raw NUL inside a string */
    CHECK(agrees("{}\0junk", 7, NULL));
    CHECK(agrees("\0{}", 3, NULL)); /* cJSON skips a leading NUL as white space */
    CHECK(agrees("[1,2]", 3, NULL));
    int took = 0;
    CHECK(agrees_s("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi \\\"x\\\" "
                   "\\u00e9\\ud83d\\ude00\\n\"}],\"max_tokens\":16,\"t\":0.5,\"s\":true}",
                   &took));
    CHECK(took); /* read by the fast reader itself */
    CHECK(agrees_s("\"\\ud83d\"", &took));
    CHECK(!took); /* a lone surrogate is cJSON's to refuse */
}

TEST(json_nesting)
{
    char buf[2100];
    for (int depth = 400; depth <= 1040; depth += 40) {
        memset(buf, '[', (size_t)depth);
        memset(buf + depth, ']', (size_t)depth);
        CHECK(agrees(buf, (size_t)depth * 2, NULL));
    }
}

/* Many small nodes outgrow the arena's first block (sized for strings):
 * the tree spans several blocks and is still cJSON's; a body that fails
 * after that (truncated) leaves the arena empty. */
TEST(json_arena_grows)
{
    enum { N = 20000 };
    static char buf[2 * N + 2];
    size_t n = 0;
    buf[n++] = '[';
    for (int i = 0; i < N; i++) {
        buf[n++] = (char)('0' + i % 10);
        buf[n++] = i + 1 < N ? ',' : ']';
    }
    int took = 0;
    CHECK(agrees(buf, n, &took));
    CHECK(took);
    CHECK(agrees(buf, n - 1, &took)); /* no closing bracket */
    CHECK(!took);
    struct kvg_json_arena a = {0};
    cJSON *t = kvg_json_parse_in(&a, buf, n);
    CHECK_INT(cJSON_GetArraySize(t), N);
    CHECK(kvg_json_parse_in(&a, buf, n) == NULL); /* the arena is taken */
    kvg_json_free(&a, t);
    CHECK(a.blocks == NULL);
}

static const char *const PIECES[] = {
    "{",  "}",   "[",    "]",       ",",    ":",    "\"",       "\\",   "\"k\"", "\"v\\n\"",
    "1",  "-",   ".",    "e",       "0",    "9",    "true",     "null", "fals",  " ",
    "\n", "\\u", "d83d", "\\ude00", "00e9", "\x01", "\xc3\xa9", "+",
};

TEST(json_random)
{
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 19);
    char buf[256];
    int bad = 0;
    for (int it = 0; it < 20000; it++) {
        size_t n = 0;
        uint64_t k = 1 + kvg_rng_below(&rng, 24);
        for (uint64_t i = 0; i < k; i++) {
            const char *p = PIECES[kvg_rng_below(&rng, sizeof PIECES / sizeof *PIECES)];
            size_t l = strlen(p);
            if (n + l >= sizeof buf) break;
            memcpy(buf + n, p, l);
            n += l;
        }
        if (!agrees(buf, n, NULL)) bad++;
    }
    CHECK_INT(bad, 0);
}

TEST(json_mutated_body)
{
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be "
                       "brief.\"},{\"role\":\"user\",\"content\":\"a \\\"q\\\" \\u00e9 "
                       "\\ud83d\\ude00\\t end\"}],\"max_tokens\":1,\"stream\":false,"
                       "\"temperature\":-0.25e1,\"stop\":[\"\\n\",null]}";
    size_t n = strlen(body);
    char buf[512];
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 7);
    int bad = 0, took = 0, fast = 0;
    CHECK(agrees(body, n, &took));
    CHECK(took);
    for (int it = 0; it < 20000; it++) {
        memcpy(buf, body, n);
        size_t m = n;
        for (uint64_t e = 1 + kvg_rng_below(&rng, 3); e && m; e--) {
            size_t at = kvg_rng_below(&rng, m);
            switch (kvg_rng_below(&rng, 3)) {
            case 0:
                buf[at] = "{}[],:\"\\0.e-u \x01"[kvg_rng_below(&rng, 15)];
                break;
            case 1:
                memmove(buf + at, buf + at + 1, m - at - 1), m--;
                break;
            default:
                m = at;
                break; /* truncated */
            }
        }
        if (!agrees(buf, m, &took)) bad++;
        fast += took;
    }
    CHECK_INT(bad, 0);
    CHECK(fast > 0);
}

/* A string holding \u0000 carries its length in the arena's tree. */
TEST(json_nul_string_carries_its_length)
{
    const char s[] = "{\"p\":\"a\\u0000b\\u0000\",\"k\":\"plain\"}";
    struct kvg_json_arena a = {0};
    cJSON *j = kvg_json_parse_strict_in(&a, s, strlen(s));
    CHECK(j != NULL && a.blocks != NULL);
    size_t n = 0;
    const char *p = kvg_json_str(cJSON_GetObjectItemCaseSensitive(j, "p"), &n);
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "p")));
    CHECK_INT((int)n, 4);
    CHECK(p && !memcmp(p, "a\0b\0", 4));
    CHECK_STR(kvg_json_str(cJSON_GetObjectItemCaseSensitive(j, "k"), &n), "plain");
    CHECK_INT((int)n, 5);
    CHECK(kvg_json_str(j, &n) == NULL);
    kvg_json_free(&a, j);
    /* a key holding it is still the hand-over's (cJSON's tree) */
    const char k[] = "{\"a\\u0000\":1}";
    CHECK(kvg_json_parse_strict_in(&a, k, strlen(k)) == NULL);
    CHECK(kvg_json_has_nul_escape(s, strlen(s)));
    CHECK(!kvg_json_has_nul_escape("\"\\u0001\"", 8));
}
