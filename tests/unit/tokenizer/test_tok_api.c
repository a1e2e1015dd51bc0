/* The public API: builtin:bytes, invalid UTF-8, load errors (every
 * unsupported component is a KVG_EUNSUPP naming it), tokenizer_config.json,
 * and the post-processors that add_special applies. */
#include <stdlib.h>

#include "test_tok_util.h"

TEST(builtin_bytes)
{
    struct kvg_tok *t;
    char err[256];
    CHECK_INT(kvg_tok_load("builtin:bytes", NULL, &t, err, sizeof err), 0);
    CHECK_INT(kvg_tok_vocab_size(t), 260);
    CHECK_STR(kvg_tok_bos_token(t), "<|bos|>");
    CHECK_STR(kvg_tok_eos_token(t), "<|eos|>");
    CHECK(kvg_tok_chat_template(t) == NULL);
    CHECK_INT(kvg_tok_token_to_id(t, "<|bos|>"), 256);
    CHECK_INT(kvg_tok_token_to_id(t, "<|eos|>"), 257);
    CHECK_INT(kvg_tok_token_to_id(t, "<|im_start|>"), 258);
    CHECK_INT(kvg_tok_token_to_id(t, "<|im_end|>"), 259);
    CHECK_INT(kvg_tok_token_to_id(t, "a"), 97);
    CHECK_STR(kvg_tok_id_to_token(t, 259, NULL), "<|im_end|>");
    CHECK(kvg_tok_is_special(t, 257) && !kvg_tok_is_special(t, 97));
    CHECK_STR(tt_encs(t, "hi"), "104 105");
    CHECK_STR(tt_enc(t, "hi", 2, 1), "256 104 105");
    CHECK_STR(tt_encs(t, "\xC3\xA9"), "195 169");
    CHECK_STR(tt_encs(t, "<|im_start|>user\nhi<|im_end|>\n"),
              "258 117 115 101 114 10 104 105 259 10");
    CHECK_STR(tt_encs(t, "<|im_start"), "60 124 105 109 95 115 116 97 114 116");
    CHECK_STR(tt_enc(t, "a\0b", 3, 0), "97 0 98");
    CHECK_STR(tt_enc(t, "", 0, 1), "256");
    CHECK_STR(tt_dec(t, "104 105 256 259", 0), "hi<|bos|><|im_end|>");
    CHECK_STR(tt_dec(t, "104 105 256 259", 1), "hi");
    CHECK_STR(tt_dec(t, "195 169", 0), "\xC3\xA9");
    CHECK_STR(tt_dec(t, "195 104", 0), "\xEF\xBF\xBDh"); /* lossy, like the others */
    CHECK_STR(tt_enc(t, "\xC3", 1, 0), "ERR -20009");
    kvg_tok_free(t);
    CHECK_INT(kvg_tok_load("builtin:nope", NULL, &t, err, sizeof err), KVG_EUNSUPP);
}

TEST(invalid_utf8_rejected)
{
    struct kvg_tok *t;
    char *j = tt_json("{\"a\":0}", "[]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), 0);
    free(j);
    static const char *const bad[] = {"\x80", "a\xC0\x80", "\xED\xA0\x80", "abc\xF4\x90\x80\x80",
                                      "\xE4\xBD"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t *ids = (uint32_t *)1;
        size_t n = 7;
        CHECK_INT(kvg_tok_encode(t, bad[i], strlen(bad[i]), 0, &ids, &n), KVG_EUTF8);
        CHECK(ids == NULL && n == 0);
    }
    kvg_tok_free(t);
}

/* Loads a tokenizer with one component replaced; returns the code, the
 * message is in tt_err. */
static int load_with(const char *model_extra, const char *added, const char *norm, const char *pre,
                     const char *post, const char *dec)
{
    struct kvg_tok *t = NULL;
    char *j = tt_json("{\"a\":0,\"b\":1,\"ab\":2}", "[\"a b\"]", model_extra, added, norm, pre,
                      post, dec);
    int rc = tt_load_json(j, &t);
    free(j);
    kvg_tok_free(t);
    return rc;
}

TEST(unsupported_components_named)
{
    CHECK_INT(load_with("\"continuing_subword_prefix\":\"##\",", 0, 0, 0, 0, 0), KVG_EUNSUPP);
    CHECK(strstr(tt_err, "continuing_subword_prefix"));
    CHECK_INT(load_with("\"dropout\":0.1,", 0, 0, 0, 0, 0), KVG_EUNSUPP);
    CHECK(strstr(tt_err, "dropout"));
    CHECK_INT(load_with(0, 0, 0, 0, "{\"type\":\"Unknown\"}", 0), KVG_EUNSUPP);
    CHECK(strstr(tt_err, "post_processor Unknown"));
    CHECK_INT(load_with(0, 0, 0, 0, 0, "{\"type\":\"WordPiece\",\"prefix\":\"##\"}"), KVG_EUNSUPP);
    CHECK(strstr(tt_err, "decoder WordPiece"));
    CHECK_INT(load_with(0, 0, 0, 0, 0, "{\"type\":\"CTC\"}"), KVG_EUNSUPP);
    CHECK_INT(load_with(0, 0, "{\"type\":\"NFKC\"}", 0, 0, 0), KVG_EUNSUPP);
    CHECK(strstr(tt_err, "normalizer NFKC"));
    CHECK_INT(load_with(0, 0, 0, "{\"type\":\"Punctuation\"}", 0, 0), KVG_EUNSUPP);
    CHECK(strstr(tt_err, "pre_tokenizer Punctuation"));
    CHECK_INT(load_with(0, 0, 0, 0,
                        "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"B\","
                        "\"type_id\":0}}],\"special_tokens\":{}}",
                        0),
              KVG_EUNSUPP);
    struct kvg_tok *t;
    CHECK_INT(tt_load_json("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", &t), KVG_EUNSUPP);
    CHECK(strstr(tt_err, "model type WordPiece"));
    CHECK_INT(tt_load_json("{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", &t), KVG_EUNSUPP);
    CHECK_INT(tt_load_json("{\"truncation\":{\"max_length\":5},\"model\":{\"type\":\"BPE\","
                           "\"vocab\":{},\"merges\":[]}}",
                           &t),
              KVG_EUNSUPP);
    CHECK(strstr(tt_err, "truncation"));
    CHECK_INT(tt_load_json("{\"padding\":{\"strategy\":{\"Fixed\":8}},\"model\":{\"type\":\"BPE\","
                           "\"vocab\":{},\"merges\":[]}}",
                           &t),
              KVG_EUNSUPP);
    /* Padding to the longest of a batch does nothing to one sequence. */
    CHECK_INT(tt_load_json("{\"padding\":{\"strategy\":\"BatchLongest\"},\"model\":{\"type\":"
                           "\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                           &t),
              0);
    CHECK_STR(tt_encs(t, "aa"), "0 0");
    kvg_tok_free(t);
}

TEST(malformed_files)
{
    struct kvg_tok *t = (struct kvg_tok *)1;
    char err[256];
    CHECK(kvg_tok_load("/nonexistent/tokenizer.json", NULL, &t, err, sizeof err) < 0);
    CHECK(t == NULL);
    CHECK(strstr(err, "/nonexistent/tokenizer.json") != NULL);
    CHECK_INT(tt_load_json("", &t), KVG_EPARSE);
    CHECK_INT(tt_load_json("{\"model\":", &t), KVG_EPARSE);
    CHECK_INT(tt_load_json("[]", &t), KVG_EPARSE);
    CHECK_INT(tt_load_json("{\"version\":\"1.0\"}", &t), KVG_EPARSE); /* no model */
    CHECK_INT(tt_load_json("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", &t),
              KVG_EPARSE);
    CHECK_INT(
        tt_load_json("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"\\ud800\":0},\"merges\":[]}}", &t),
        KVG_EPARSE); /* lone surrogate */
    CHECK_INT(tt_load_json("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}", &t), KVG_EPARSE);
    CHECK_INT(tt_load_json("{\"normalizer\":{\"type\":\"NFC\",},\"model\":{\"type\":\"BPE\","
                           "\"vocab\":{},\"merges\":[]}}",
                           &t),
              KVG_EPARSE);
    CHECK_INT(
        tt_load_json("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}} \xFF", &t),
        KVG_EPARSE); /* not UTF-8 */
}

TEST(json_escapes_in_vocab)
{
    struct kvg_tok *t;
    CHECK_INT(tt_load_json("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\\\"b\":0,\"\\u00e9\":1,"
                           "\"\\ud83d\\ude00\":2,\"\\\\n\\/\\t\":3},\"merges\":[]}}",
                           &t),
              0);
    CHECK_INT(kvg_tok_token_to_id(t, "a\"b"), 0);
    CHECK_INT(kvg_tok_token_to_id(t, "\xC3\xA9"), 1);
    CHECK_INT(kvg_tok_token_to_id(t, "\xF0\x9F\x98\x80"), 2);
    CHECK_INT(kvg_tok_token_to_id(t, "\\n/\t"), 3);
    kvg_tok_free(t);
}

static const char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/kvg-tokcfg.XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    return path;
}

TEST(tokenizer_config)
{
    struct kvg_tok *t;
    char err[256];
    const char *cfg = write_tmp("{\"bos_token\":{\"__type\":\"AddedToken\",\"content\":\"<s>\"},"
                                "\"eos_token\":\"</s>\",\"chat_template\":[{\"name\":\"tool_use\","
                                "\"template\":\"T\"},{\"name\":\"default\",\"template\":\"D\"}]}");
    CHECK_INT(kvg_tok_load("builtin:bytes", cfg, &t, err, sizeof err), 0);
    unlink(cfg);
    CHECK_STR(kvg_tok_bos_token(t), "<s>");
    CHECK_STR(kvg_tok_eos_token(t), "</s>");
    CHECK_STR(kvg_tok_chat_template(t), "D");
    kvg_tok_free(t);
    cfg = write_tmp("{\"bos_token\":null,\"chat_template\":\"{{ messages }}\"}");
    CHECK_INT(kvg_tok_load("builtin:bytes", cfg, &t, err, sizeof err), 0);
    unlink(cfg);
    CHECK_STR(kvg_tok_bos_token(t), "<|bos|>"); /* null keeps the default */
    CHECK_STR(kvg_tok_chat_template(t), "{{ messages }}");
    kvg_tok_free(t);
    cfg = write_tmp("{not json");
    CHECK_INT(kvg_tok_load("builtin:bytes", cfg, &t, err, sizeof err), KVG_EPARSE);
    unlink(cfg);
}

/* A Llama-class config rebuilds the post-processor (transformers does). */
TEST(llama_config_post_processor)
{
    char *j = tt_json("{\"<s>\":0,\"</s>\":1,\"a\":2}", "[]", NULL,
                      "[{\"id\":0,\"content\":\"<s>\",\"special\":true},"
                      "{\"id\":1,\"content\":\"</s>\",\"special\":true}]",
                      NULL, NULL, "{\"type\":\"ByteLevel\"}", NULL);
    char path[] = "/tmp/kvg-toktpl.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, j, strlen(j)) == (ssize_t)strlen(j));
    close(fd);
    free(j);
    static const struct {
        const char *cfg, *want;
        int rc;
    } cases[] = {
        {"{\"tokenizer_class\":\"LlamaTokenizerFast\",\"bos_token\":\"<s>\"}", "0 2", 0},
        {"{\"tokenizer_class\":\"LlamaTokenizerFast\",\"bos_token\":\"<s>\",\"eos_token\":"
         "\"</s>\",\"add_eos_token\":true}",
         "0 2 1", 0},
        {"{\"tokenizer_class\":\"GemmaTokenizer\",\"bos_token\":\"<s>\",\"add_bos_token\":"
         "false}",
         "2", 0},
        {"{\"tokenizer_class\":\"Qwen2Tokenizer\",\"bos_token\":\"<s>\"}", "2", 0},
        {"{\"tokenizer_class\":\"LlamaTokenizerFast\",\"bos_token\":\"<nope>\"}", "", KVG_ECONFIG},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *cfg = write_tmp(cases[i].cfg);
        struct kvg_tok *t = NULL;
        char err[256];
        CHECK_INT(kvg_tok_load(path, cfg, &t, err, sizeof err), cases[i].rc);
        unlink(cfg);
        if (t) CHECK_STR(tt_enc(t, "a", 1, 1), cases[i].want);
        kvg_tok_free(t);
    }
    unlink(path);
}

static const char *with_post(const char *post, const char *text)
{
    static char out[256];
    struct kvg_tok *t;
    char *j = tt_json("{\"<s>\":0,\"</s>\":1,\"a\":2,\"b\":3,\"ab\":4}", "[\"a b\"]", NULL,
                      "[{\"id\":0,\"content\":\"<s>\",\"special\":true,\"normalized\":false},"
                      "{\"id\":1,\"content\":\"</s>\",\"special\":true,\"normalized\":false}]",
                      NULL, NULL, post, NULL);
    int rc = tt_load_json(j, &t);
    free(j);
    if (rc) {
        snprintf(out, sizeof out, "ERR %d", rc);
        return out;
    }
    char with[128];
    snprintf(with, sizeof with, "%.100s", tt_enc(t, text, strlen(text), 1));
    snprintf(out, sizeof out, "%.100s / %.100s", with, tt_encs(t, text));
    kvg_tok_free(t);
    return out;
}

#define TEMPLATE(single)                                                                           \
    "{\"type\":\"TemplateProcessing\",\"single\":[" single "],\"pair\":[],\"special_tokens\":{"    \
    "\"<s>\":{\"id\":\"<s>\",\"ids\":[0],\"tokens\":[\"<s>\"]},\"</s>\":{\"id\":\"</s>\","         \
    "\"ids\":[1],\"tokens\":[\"</s>\"]}}}"
#define SP(x) "{\"SpecialToken\":{\"id\":\"" x "\",\"type_id\":0}}"
#define SEQ "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}"

TEST(post_processors)
{
    CHECK_STR(with_post("null", "ab"), "4 / 4");
    CHECK_STR(with_post("{\"type\":\"ByteLevel\",\"trim_offsets\":false}", "ab"), "4 / 4");
    CHECK_STR(with_post(TEMPLATE(SP("<s>") "," SEQ), "ab"), "0 4 / 4");
    CHECK_STR(with_post(TEMPLATE(SP("<s>") "," SEQ "," SP("</s>")), "abb"), "0 4 3 1 / 4 3");
    CHECK_STR(with_post(TEMPLATE(SEQ "," SP("</s>")), ""), "1 / ");
    CHECK_STR(with_post("{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",1],\"cls\":[\"<s>\",0],"
                        "\"trim_offsets\":true,\"add_prefix_space\":false}",
                        "a"),
              "0 2 1 / 2");
    CHECK_STR(
        with_post("{\"type\":\"BertProcessing\",\"sep\":[\"</s>\",1],\"cls\":[\"<s>\",0]}", "b"),
        "0 3 1 / 3");
    CHECK_STR(with_post("{\"type\":\"Sequence\",\"processors\":[{\"type\":\"ByteLevel\"}," TEMPLATE(
                            SP("<s>") "," SEQ) "]}",
                        "ab"),
              "0 4 / 4");
    /* Specials in the text are matched whether or not add_special is set. */
    CHECK_STR(with_post(TEMPLATE(SP("<s>") "," SEQ), "<s>ab</s>"), "0 0 4 1 / 0 4 1");
    CHECK_STR(with_post(TEMPLATE(SP("<x>") "," SEQ), "a"), "ERR -20001");
}
