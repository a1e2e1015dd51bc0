/* Pre-tokenizers and Split regexes. Expected pieces were taken from HF
 * tokenizers itself (PreTokenizer.preTokenizeString of the same JSON
 * components, through @anush008/tokenizers). */
#include <stdlib.h>

#include "test_tok_util.h"

/* ---- Split behaviours through kvg__tok_split_regex ---- */

static const char *split(const char *pat, int literal, const char *text, int behavior, int invert)
{
    static char out[512];
    struct kvg_tok_regex *re;
    char err[256];
    CHECK_INT(kvg__tok_regex_compile(pat, strlen(pat), literal, &re, err, sizeof err), 0);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    struct kvg_tok_spans sp = {0};
    CHECK_INT(kvg__tok_split_regex(re, md, text, strlen(text), behavior, invert, &sp), 0);
    size_t w = 0;
    out[0] = 0;
    /* Empty pieces are dropped afterwards (by the caller, as in HF). */
    for (size_t i = 0; i < sp.n; i++)
        if (sp.v[i].b > sp.v[i].a)
            w += (size_t)snprintf(out + w, sizeof out - w, "%s%.*s", w ? "|" : "",
                                  (int)(sp.v[i].b - sp.v[i].a), text + sp.v[i].a);
    free(sp.v);
    pcre2_match_data_free(md);
    kvg__tok_regex_free(re);
    return out;
}

enum {
    RD = KVG_TOK_B_REMOVED,
    ID = KVG_TOK_B_ISOLATED,
    MP = KVG_TOK_B_MERGED_PREV,
    MN = KVG_TOK_B_MERGED_NEXT,
    CT = KVG_TOK_B_CONTIGUOUS
};

TEST(split_behaviours_literal)
{
    const char *s = "a-b--c-";
    CHECK_STR(split("-", 1, s, RD, 0), "a|b|c");
    CHECK_STR(split("-", 1, s, RD, 1), "-|-|-|-");
    CHECK_STR(split("-", 1, s, ID, 0), "a|-|b|-|-|c|-");
    CHECK_STR(split("-", 1, s, MP, 0), "a-|b-|-|c-");
    CHECK_STR(split("-", 1, s, MP, 1), "a|-b|-|-c|-");
    CHECK_STR(split("-", 1, s, MN, 0), "a|-b|-|-c|-");
    CHECK_STR(split("-", 1, s, MN, 1), "a-|b-|-|c-");
    CHECK_STR(split("-", 1, s, CT, 0), "a|-|b|--|c|-");
    CHECK_STR(split("x*", 1, "ax*b", ID, 0), "a|x*|b"); /* literal: no regex meaning */
}

TEST(split_empty_matches_follow_onig)
{
    CHECK_STR(split("x*", 0, "axxbx", RD, 0), "a|b");
    CHECK_STR(split("x*", 0, "axxbx", RD, 1), "xx|x");
    CHECK_STR(split("x*", 0, "axxbx", MP, 0), "axx|bx");
    CHECK_STR(split("x*", 0, "axxbx", MP, 1), "a|xxb|x");
    CHECK_STR(split("x*", 0, "axxbx", MN, 0), "a|xxb|x");
    CHECK_STR(split("x*", 0, "axxbx", MN, 1), "axx|bx");
    CHECK_STR(split("x*", 0, "axxbx", CT, 0), "a|xx|b|x");
    CHECK_STR(split("b?", 0, "abba", MP, 0), "ab|b|a");
    CHECK_STR(split("b?", 0, "abba", MN, 1), "ab|b|a");
    CHECK_STR(split("b?", 0, "abba", CT, 0), "a|bb|a");
    CHECK_STR(split("(?=b)", 0, "abab", RD, 0), "a|ba|b");
    CHECK_STR(split("(?=b)", 0, "abab", RD, 1), "");
    CHECK_STR(split("a|", 0, "bab", MP, 0), "ba|b");
    CHECK_STR(split("a|", 0, "bab", MN, 0), "b|ab");
    CHECK_STR(split("\\s+", 0, "  a b  ", MP, 0), "  |a |b  ");
    CHECK_STR(split("\\s+", 0, "  a b  ", MN, 0), "  a| b|  ");
}

TEST(regex_translation)
{
    /* \s is Unicode White_Space: NBSP and U+3000 yes, U+180E and U+200B no. */
    CHECK_STR(split("\\s+", 0,
                    "a\xC2\xA0"
                    "b\xE3\x80\x80"
                    "c\xE1\xA0\x8E"
                    "d",
                    RD, 0),
              "a|b|c\xE1\xA0\x8E"
              "d");
    CHECK_STR(split("[\\s,]+", 0,
                    "a, b\xE2\x80\x8B"
                    "c",
                    RD, 0),
              "a|b\xE2\x80\x8B"
              "c");
    CHECK_STR(split("\\S+", 0, "ab \xE1\xA0\x8E x", RD, 1), "ab|\xE1\xA0\x8E|x");
    CHECK_STR(split("\\h+", 0, "zz0fAq", ID, 0), "zz|0fA|q"); /* Oniguruma \h: hex digit */
    CHECK_STR(split("\\u0062", 0, "abc", ID, 0), "a|b|c");
    CHECK_STR(split("(?m:a.b)", 0, "xa\nby", ID, 0), "x|a\nb|y"); /* Ruby (?m): dot-all */
    CHECK_STR(split("a{,2}", 0, "aaab", ID, 0), "aa|a|b");
    CHECK_STR(split("[]x]", 0, "a]b", ID, 0), "a|]|b");
    CHECK_STR(split("(?i:'s|'t)", 0, "it'S'T", ID, 0), "it|'S|'T");
    CHECK_STR(split("\\p{N}{1,3}", 0, "a12345b", ID, 0), "a|123|45|b");
    /* Unicode 15.0 letters and digits count, as in HF's Oniguruma:
     * U+1E4F0 NAG MUNDARI DIGIT ZERO (Nd), U+31350 CJK EXT H (Lo). */
    CHECK_STR(split("\\p{N}+", 0,
                    "a\xF0\x9E\x93\xB0"
                    "1b",
                    ID, 0),
              "a|\xF0\x9E\x93\xB0"
              "1|b");
    CHECK_STR(split("\\p{Lo}+", 0,
                    "1\xF0\xB1\x8D\x90"
                    "2",
                    ID, 0),
              "1|\xF0\xB1\x8D\x90|2");
    CHECK_STR(split("[^\\p{L}\\p{N}]+", 0, "a\xF0\xB1\x8D\x90!?", ID, 0), "a\xF0\xB1\x8D\x90|!?");
    CHECK_STR(split("\\P{L}+", 0,
                    "\xF0\xB1\x8D\x90"
                    "12",
                    ID, 0),
              "\xF0\xB1\x8D\x90|12");
    CHECK_STR(split("\\pN+", 0,
                    "x\xF0\x9E\x93\xB0"
                    "9",
                    ID, 0),
              "x|\xF0\x9E\x93\xB0"
              "9");
    static const char *const refused[] = {"\\w+", "\\bx",  "[[:alpha:]]", "[a[b]]",  "[a&&b]",
                                          "\\R",  "[\\S]", "\\X",         "[\\P{L}]"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        struct kvg_tok_regex *re = NULL;
        char err[256];
        CHECK_INT(kvg__tok_regex_compile(refused[i], strlen(refused[i]), 0, &re, err, sizeof err),
                  KVG_EUNSUPP);
        CHECK(strstr(err, "Split regex") != NULL);
        CHECK(re == NULL);
    }
    struct kvg_tok_regex *re = NULL;
    char err[256];
    CHECK_INT(kvg__tok_regex_compile("(ab", 3, 0, &re, err, sizeof err), KVG_EUNSUPP);
}

/* ---- whole pre-tokenizers, pieces seen through the emit hook ---- */

struct pieces {
    char buf[1024];
    size_t n;
};

static int collect(void *ctx, const char *w, size_t n)
{
    struct pieces *p = ctx;
    p->n +=
        (size_t)snprintf(p->buf + p->n, sizeof p->buf - p->n, "%s%.*s", p->n ? "|" : "", (int)n, w);
    return 0;
}

static const char *pretok(const char *pre_json, const char *text)
{
    static struct pieces p;
    struct kvg_tok *t;
    char *j = tt_json("{\"a\":0}", "[]", NULL, NULL, NULL, pre_json, NULL, NULL);
    int rc = tt_load_json(j, &t);
    free(j);
    if (rc) {
        snprintf(p.buf, sizeof p.buf, "ERR %d %s", rc, tt_err);
        return p.buf;
    }
    struct kvg_tok_scratch s;
    CHECK_INT(kvg__tok_scratch_init(&s, strlen(text)), 0);
    p.n = 0;
    p.buf[0] = 0;
    s.emit = collect;
    s.emit_ctx = &p;
    CHECK_INT(kvg__tok_pre_run(t, &s, text, strlen(text), 1), 0);
    kvg__tok_scratch_free(&s);
    kvg_tok_free(t);
    return p.buf;
}

#define META(scheme, split)                                                                        \
    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"String\":\"|\"}" \
    ","                                                                                            \
    "\"behavior\":\"Removed\",\"invert\":false},{\"type\":\"Metaspace\",\"replacement\":"          \
    "\"\xE2\x96\x81\",\"prepend_scheme\":\"" scheme "\",\"split\":" split "}]}"

TEST(metaspace)
{
    const char *text = "hey  you|\xE2\x96\x81x y| z|w";
    CHECK_STR(pretok(META("always", "true"), text), "▁hey|▁|▁you|▁x|▁y|▁z|▁w");
    CHECK_STR(pretok(META("always", "false"), text), "▁hey▁▁you|▁x▁y|▁z|▁w");
    CHECK_STR(pretok(META("first", "true"), text), "▁hey|▁|▁you|▁x|▁y|▁z|w");
    CHECK_STR(pretok(META("first", "false"), text), "▁hey▁▁you|▁x▁y|▁z|w");
    CHECK_STR(pretok(META("never", "true"), text), "hey|▁|▁you|▁x|▁y|▁z|w");
    CHECK_STR(pretok(META("never", "false"), text), "hey▁▁you|▁x▁y|▁z|w");
}

TEST(bytelevel_digits_whitespace)
{
    CHECK_STR(pretok("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}",
                     "Hello  world's 123 ok"),
              " Hello| | world|'s| 123| ok");
    CHECK_STR(pretok("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}",
                     "Hello  world"),
              "Hello  world");
    CHECK_STR(pretok("{\"type\":\"Digits\",\"individual_digits\":false}", "a12b3\xD9\xA3"
                                                                          "4"),
              "a|12|b|3\xD9\xA3"
              "4");
    CHECK_STR(pretok("{\"type\":\"Digits\",\"individual_digits\":true}", "a12b3\xD9\xA3"
                                                                         "4"),
              "a|1|2|b|3|\xD9\xA3|4");
    CHECK_STR(pretok("{\"type\":\"WhitespaceSplit\"}", " a\xC2\xA0"
                                                       "b\t c\xE3\x80\x80"),
              "a|b|c");
}

TEST(pretokenizer_errors)
{
    CHECK(!strncmp(pretok("{\"type\":\"Whitespace\"}", "x"), "ERR -20004", 10));
    CHECK(strstr(pretok("{\"type\":\"BertPreTokenizer\"}", "x"), "BertPreTokenizer"));
    CHECK(strstr(pretok("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"ByteLevel\"},"
                        "{\"type\":\"Digits\"}]}",
                        "x"),
                 "after ByteLevel"));
    CHECK(strstr(pretok("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\w+\"},\"behavior\":"
                        "\"Isolated\",\"invert\":false}",
                        "x"),
                 "\\w"));
    CHECK(!strncmp(pretok("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":"
                          "\"Sideways\",\"invert\":false}",
                          "x"),
                   "ERR -20001", 10));
}
