/* --tokenizer names a model directory as the engines take one: its
 * tokenizer.json and tokenizer_config.json are found there (an explicit
 * config wins); a directory without tokenizer.json and a HuggingFace model
 * id are refused with a message saying what to pass. */
#include <stdlib.h>
#include <sys/stat.h>

#include "test_tok_util.h"

static char dir[64];

static void put(const char *name, const char *text)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    CHECK(fputs(text, f) >= 0);
    CHECK(fclose(f) == 0);
}

static void drop(const char *name)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
}

TEST(model_directory)
{
    snprintf(dir, sizeof dir, "/tmp/kvg-tokdir.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char *j =
        tt_json("{\"a\":0,\"b\":1,\"ab\":2}", "[\"a b\"]", NULL, NULL, NULL, NULL, NULL, NULL);
    put("tokenizer.json", j);
    free(j);
    put("tokenizer_config.json", "{\"eos_token\":\"</s>\",\"chat_template\":\"DIR\"}");
    struct kvg_tok *t = NULL;
    char err[512], slash[80], other[128];
    CHECK_INT(kvg_tok_load(dir, NULL, &t, err, sizeof err), 0);
    CHECK_STR(tt_encs(t, "ab"), "2");
    CHECK_STR(kvg_tok_chat_template(t), "DIR"); /* the directory's config */
    CHECK_STR(kvg_tok_eos_token(t), "</s>");
    kvg_tok_free(t);
    snprintf(slash, sizeof slash, "%s/", dir);
    CHECK_INT(kvg_tok_load(slash, NULL, &t, err, sizeof err), 0);
    kvg_tok_free(t);
    /* A config named apart wins over the directory's; a directory as the
     * config means its tokenizer_config.json. */
    snprintf(other, sizeof other, "%s/other_config.json", dir);
    put("other_config.json", "{\"chat_template\":\"OTHER\"}");
    CHECK_INT(kvg_tok_load(dir, other, &t, err, sizeof err), 0);
    CHECK_STR(kvg_tok_chat_template(t), "OTHER");
    kvg_tok_free(t);
    CHECK_INT(kvg_tok_load(dir, dir, &t, err, sizeof err), 0);
    CHECK_STR(kvg_tok_chat_template(t), "DIR");
    kvg_tok_free(t);
    /* Without a tokenizer_config.json: the tokenizer alone. */
    drop("tokenizer_config.json");
    CHECK_INT(kvg_tok_load(dir, NULL, &t, err, sizeof err), 0);
    CHECK(kvg_tok_chat_template(t) == NULL);
    kvg_tok_free(t);
    /* Without tokenizer.json: refused, saying what is missing. */
    drop("tokenizer.json");
    t = (struct kvg_tok *)1;
    CHECK(kvg_tok_load(dir, NULL, &t, err, sizeof err) < 0);
    CHECK(t == NULL);
    CHECK(strstr(err, "a directory without tokenizer.json") != NULL);
    CHECK(strstr(err, "SentencePiece") == NULL);
    put("tokenizer.model", "x");
    CHECK(kvg_tok_load(dir, NULL, &t, err, sizeof err) < 0);
    CHECK(strstr(err, "SentencePiece tokenizer.model") != NULL);
    drop("tokenizer.model");
    drop("other_config.json");
    CHECK(rmdir(dir) == 0);
}

TEST(hub_id_refused_with_what_to_pass)
{
    struct kvg_tok *t = (struct kvg_tok *)1;
    char err[1024];
    CHECK(kvg_tok_load("Qwen/Qwen3-8B", NULL, &t, err, sizeof err) < 0);
    CHECK(t == NULL);
    CHECK(strstr(err, "'Qwen/Qwen3-8B' is not a file or directory here") != NULL);
    CHECK(strstr(err, "HuggingFace model id") != NULL);
    CHECK(strstr(err, "downloads nothing") != NULL);
    CHECK(strstr(err, "--tokenizer DIR") != NULL);
    CHECK(strstr(err, "huggingface-cli download Qwen/Qwen3-8B ") != NULL);
    /* Paths that are no id: the plain "no such file". */
    static const char *const not_ids[] = {"/nonexistent/tokenizer.json",
                                          "models/tokenizer.json",
                                          "a/b/c",
                                          "./x/y",
                                          "tokenizer.json",
                                          "org/.hidden"};
    for (size_t i = 0; i < sizeof not_ids / sizeof not_ids[0]; i++) {
        CHECK(kvg_tok_load(not_ids[i], NULL, &t, err, sizeof err) < 0);
        CHECK(strstr(err, "HuggingFace") == NULL);
        CHECK(strstr(err, not_ids[i]) != NULL);
    }
}
