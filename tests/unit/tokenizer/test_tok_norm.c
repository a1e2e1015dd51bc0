/* Normalizers. Expected strings were taken from HF tokenizers itself
 * (Normalizer.normalizeString of the same JSON components). */
#include <stdlib.h>

#include "test_tok_util.h"

static const char *norm(const char *norm_json, const char *text)
{
    static char out[512];
    struct kvg_tok *t;
    char *j = tt_json("{\"a\":0}", "[]", NULL, NULL, norm_json, NULL, NULL, NULL);
    int rc = tt_load_json(j, &t);
    free(j);
    if (rc) {
        snprintf(out, sizeof out, "ERR %d %.400s", rc, tt_err);
        return out;
    }
    struct kvg_tok_scratch s;
    CHECK_INT(kvg__tok_scratch_init(&s, strlen(text)), 0);
    const char *p;
    size_t n;
    rc = kvg__tok_normalize(t, &s, text, strlen(text), &p, &n);
    if (rc)
        snprintf(out, sizeof out, "ERR %d", rc);
    else
        snprintf(out, sizeof out, "%.*s", (int)n, p);
    kvg__tok_scratch_free(&s);
    kvg_tok_free(t);
    return out;
}

TEST(replace)
{
    CHECK_STR(
        norm("{\"type\":\"Replace\",\"pattern\":{\"String\":\"ab\"},\"content\":\"X\"}", "abababa"),
        "XXXa");
    /* No group references in the content: "$0" is literal, as in HF. */
    CHECK_STR(norm("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"a+\"},\"content\":\"<$0>\"}",
                   "baaacab"),
              "b<$0>c<$0>b");
    /* Empty matches are replaced too, with onig's find_iter rules. */
    CHECK_STR(
        norm("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"x*\"},\"content\":\"-\"}", "abxc"),
        "-a-b-c-");
    CHECK_STR(
        norm("{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xE2\x96\x81\"}",
             " a  b"),
        "▁a▁▁b");
}

TEST(prepend_strip_lowercase)
{
    CHECK_STR(norm("{\"type\":\"Prepend\",\"prepend\":\"\xE2\x96\x81\"}", "hi"), "▁hi");
    CHECK_STR(norm("{\"type\":\"Prepend\",\"prepend\":\"\xE2\x96\x81\"}", ""), "");
    CHECK_STR(
        norm("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":false}", " \xC2\xA0 hi \t"),
        "hi \t");
    CHECK_STR(norm("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}",
                   " \xE3\x80\x80hi \xE2\x80\xA8"),
              "hi");
    CHECK_STR(norm("{\"type\":\"Lowercase\"}", "HeLLo İΣ ΑΣ Ǆ"), "hello i̇σ ασ ǆ");
}

TEST(unicode_forms_and_sequence)
{
    CHECK_STR(norm("{\"type\":\"NFD\"}", "é각"), "e\xCC\x81\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8");
    CHECK_STR(norm("{\"type\":\"NFC\"}", "e\xCC\x81 \xE2\x84\xAB"), "é Å");
    CHECK_STR(norm("{\"type\":\"NFC\"}", "already nfc"), "already nfc");
    CHECK_STR(norm("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFD\"},{\"type\":"
                   "\"Lowercase\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
                   "\"content\":\"\xE2\x96\x81\"},{\"type\":\"Prepend\",\"prepend\":"
                   "\"\xE2\x96\x81\"}]}",
                   "Éa B"),
              "▁e\xCC\x81"
              "a▁b");
    CHECK_STR(norm("{\"type\":\"Sequence\",\"normalizers\":[]}", "x"), "x");
    CHECK_STR(norm("null", "x"), "x");
}

TEST(unsupported_normalizers)
{
    static const char *const names[] = {"NFKC",         "NFKD", "BertNormalizer", "Precompiled",
                                        "StripAccents", "Nmt",  "ByteLevel"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char j[128];
        snprintf(j, sizeof j, "{\"type\":\"%s\"}", names[i]);
        const char *r = norm(j, "x");
        CHECK(!strncmp(r, "ERR -20004", 10));
        CHECK(strstr(r, names[i]) != NULL);
    }
    CHECK(!strncmp(
        norm("{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},\"content\":\"x\"}", "x"),
        "ERR -20004", 10));
    CHECK(!strncmp(norm("{\"nope\":1}", "x"), "ERR -20001", 10));
}
