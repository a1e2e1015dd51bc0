/* Decoders, one at a time and in the Llama-2 sequence. Expected strings were
 * taken from HF tokenizers' decode() on the same JSON and ids. */
#include <stdlib.h>

#include "test_tok_util.h"

/* ids: 0 Ġhello  1 Ġw  2 orld  3 ä½  4 ł  5 <0xE4>  6 <0xBD>  7 <0xA0>  8 a
 * 9 b  10 <0xe4>  11 <0x+A>  12 ▁Hello  13 ▁world  14 ▁  15 hi  16 "  "
 * 17 ▁▁x  18 <｜x｜> (special)  19 Ã */
static const char VOCAB[] =
    "{\"\xC4\xA0hello\":0,\"\xC4\xA0w\":1,\"orld\":2,\"\xC3\xA4\xC2\xBD\":3,\"\xC5\x82\":4,"
    "\"<0xE4>\":5,\"<0xBD>\":6,\"<0xA0>\":7,\"a\":8,\"b\":9,\"<0xe4>\":10,\"<0x+A>\":11,"
    "\"\xE2\x96\x81Hello\":12,\"\xE2\x96\x81world\":13,\"\xE2\x96\x81\":14,\"hi\":15,\"  \":16,"
    "\"\xE2\x96\x81\xE2\x96\x81x\":17,\"<\xEF\xBD\x9Cx\xEF\xBD\x9C>\":18,\"\xC3\x83\":19}";
static const char ADDED[] =
    "[{\"id\":18,\"content\":\"<\xEF\xBD\x9Cx\xEF\xBD\x9C>\",\"special\":true,"
    "\"normalized\":false}]";
static const char *const IDS[] = {"0 1 2",    "3",      "3 4",      "18 0",  "5 6 7 8",
                                  "5 6 9",    "10 6 7", "11",       "12 13", "14 17 12",
                                  "16 15 16", "19",     "0 18 18 1"};

static void check_decoder(const char *dec, const char *const *want)
{
    struct kvg_tok *t;
    char *j = tt_json(VOCAB, "[]", NULL, ADDED, NULL, NULL, NULL, dec);
    CHECK_INT(tt_load_json(j, &t), 0);
    free(j);
    for (size_t i = 0; i < sizeof IDS / sizeof IDS[0]; i++) {
        const char *got = tt_dec(t, IDS[i], 0);
        if (strcmp(got, want[i])) {
            fprintf(stderr, "decoder %s, ids %s: got \"%s\" want \"%s\"\n", dec ? dec : "none",
                    IDS[i], got, want[i]);
            kvg_tok_free(t);
            CHECK(0);
        }
    }
    kvg_tok_free(t);
}

#define FFFD "\xEF\xBF\xBD"

TEST(bytelevel)
{
    static const char *const want[] = {" hello world",
                                       FFFD,
                                       "你",
                                       "<｜x｜> hello",
                                       "<0xE4><0xBD><0xA0>a",
                                       "<0xE4><0xBD>b",
                                       "<0xe4><0xBD><0xA0>",
                                       "<0x+A>",
                                       "▁Hello▁world",
                                       "▁▁▁x▁Hello",
                                       "  hi  ",
                                       FFFD,
                                       " hello<｜x｜><｜x｜> w"};
    check_decoder("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,"
                  "\"use_regex\":true}",
                  want);
}

TEST(bytefallback_fuse)
{
    static const char *const want[] = {"ĠhelloĠworld",
                                       "ä½",
                                       "ä½ł",
                                       "<｜x｜>Ġhello",
                                       "你a",
                                       FFFD FFFD "b",
                                       "你",
                                       "\n",
                                       "▁Hello▁world",
                                       "▁▁▁x▁Hello",
                                       "  hi  ",
                                       "Ã",
                                       "Ġhello<｜x｜><｜x｜>Ġw"};
    check_decoder("{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"ByteFallback\"},{\"type\":"
                  "\"Fuse\"}]}",
                  want);
}

TEST(metaspace)
{
    static const char *const always[] = {"ĠhelloĠworld",
                                         "ä½",
                                         "ä½ł",
                                         "<｜x｜>Ġhello",
                                         "<0xE4><0xBD><0xA0>a",
                                         "<0xE4><0xBD>b",
                                         "<0xe4><0xBD><0xA0>",
                                         "<0x+A>",
                                         "Hello world",
                                         "  x Hello",
                                         "  hi  ",
                                         "Ã",
                                         "Ġhello<｜x｜><｜x｜>Ġw"};
    check_decoder("{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":"
                  "\"always\",\"split\":true}",
                  always);
    static const char *const never[] = {"ĠhelloĠworld",
                                        "ä½",
                                        "ä½ł",
                                        "<｜x｜>Ġhello",
                                        "<0xE4><0xBD><0xA0>a",
                                        "<0xE4><0xBD>b",
                                        "<0xe4><0xBD><0xA0>",
                                        "<0x+A>",
                                        " Hello world",
                                        "   x Hello",
                                        "  hi  ",
                                        "Ã",
                                        "Ġhello<｜x｜><｜x｜>Ġw"};
    check_decoder("{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":"
                  "\"never\",\"split\":true}",
                  never);
}

TEST(llama2_sequence_and_none)
{
    static const char *const llama2[] = {"ĠhelloĠworld",
                                         "ä½",
                                         "ä½ł",
                                         "<｜x｜>Ġhello",
                                         "你a",
                                         FFFD FFFD "b",
                                         "你",
                                         "\n",
                                         "Hello world",
                                         "  x Hello",
                                         " hi ",
                                         "Ã",
                                         "Ġhello<｜x｜><｜x｜>Ġw"};
    check_decoder("{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{"
                  "\"String\":\"\xE2\x96\x81\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},"
                  "{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \",\"start\":1,"
                  "\"stop\":1}]}",
                  llama2);
    static const char *const none[] = {"Ġhello Ġw orld",
                                       "ä½",
                                       "ä½ ł",
                                       "<｜x｜> Ġhello",
                                       "<0xE4> <0xBD> <0xA0> a",
                                       "<0xE4> <0xBD> b",
                                       "<0xe4> <0xBD> <0xA0>",
                                       "<0x+A>",
                                       "▁Hello ▁world",
                                       "▁ ▁▁x ▁Hello",
                                       "   hi   ",
                                       "Ã",
                                       "Ġhello <｜x｜> <｜x｜> Ġw"};
    check_decoder(NULL, none);
}

TEST(skip_special_and_empty)
{
    struct kvg_tok *t;
    char *j = tt_json(VOCAB, "[]", NULL, ADDED, NULL, NULL, NULL,
                      "{\"type\":\"ByteLevel\",\"add_prefix_space\":true}");
    CHECK_INT(tt_load_json(j, &t), 0);
    free(j);
    CHECK_STR(tt_dec(t, "0 18 18 1", 1), " hello w");
    CHECK_STR(tt_dec(t, "", 0), "");
    char *text = NULL;
    size_t len = 9;
    CHECK_INT(kvg_tok_decode(t, NULL, 0, 0, &text, &len), 0);
    CHECK(text != NULL && len == 0 && text[0] == 0);
    free(text);
    kvg_tok_free(t);
}
