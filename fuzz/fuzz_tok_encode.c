/* libFuzzer target for tokenizer encoding and decoding: the text of every
 * request goes through kvg_tok_encode, so it must take any bytes.
 *
 * The first input byte picks a tokenizer and add_special; the rest is the
 * text, copied into an exactly sized heap buffer so ASan flags any read past
 * its end. Tokenizers (built once, in memory):
 *   0  builtin:bytes;
 *   1  byte-level BPE with GPT-2's Split regex, a few merges, a special
 *      token and a single_word one (no lstrip / rstrip: they drop spaces);
 *   2  SentencePiece-style: NFC, Metaspace, byte fallback, fused unk, an
 *      added token with lstrip / rstrip.
 * Checked: valid UTF-8 always encodes, invalid UTF-8 is always KVG_EUTF8,
 * every id is inside the vocabulary, decoding always works, and for the
 * byte-level tokenizers decode(encode(text)) is the text itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tokenizer.h"

static struct kvg_tok *toks[3];

static char *bytelevel_json(void)
{
    static const char *const extra[] = {"Ġt", "he", "Ġthe", "in", "Ġa", "ĠĠ", "ĠĠĠĠ", "<|x|>"};
    static const char *const merges[] = {"Ġ t", "h e", "Ġt he", "i n", "Ġ a", "Ġ Ġ", "ĠĠ ĠĠ"};
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b,
                       "{\"added_tokens\":[{\"id\":263,\"content\":\"<|x|>\",\"special\":true,"
                       "\"normalized\":false},{\"id\":264,"
                       "\"content\":\"word\",\"single_word\":true,\"normalized\":true}],"
                       "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
                       "\"Split\",\"pattern\":{\"Regex\":\"'s|'t|'re|'ve|'m|'ll|'d| ?\\\\p{L}+"
                       "| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
                       "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","
                       "\"add_prefix_space\":false,\"use_regex\":false}]},\"decoder\":{\"type\":"
                       "\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (int i = 0; i < 256; i++) {
        char c[4];
        size_t l = kvg_utf8_put(kvg__tok_bl_char((uint8_t)i), c);
        kvg_buf_append_json_str(&b, c, l);
        kvg_buf_printf(&b, ":%d,", i);
    }
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        kvg_buf_append_json_str(&b, extra[i], strlen(extra[i]));
        kvg_buf_printf(&b, ":%zu%s", 256 + i, i + 1 < sizeof extra / sizeof extra[0] ? "," : "");
    }
    kvg_buf_append_str(&b, "},\"merges\":[");
    for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++) {
        kvg_buf_append_json_str(&b, merges[i], strlen(merges[i]));
        if (i + 1 < sizeof merges / sizeof merges[0]) kvg_buf_append(&b, ",", 1);
    }
    kvg_buf_append_str(&b, "]}}");
    return kvg_buf_cstr(&b);
}

static const char SP_JSON[] =
    "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true,\"normalized\":false},"
    "{\"id\":1,\"content\":\"<s>\",\"special\":true,\"normalized\":false},"
    "{\"id\":11,\"content\":\"<m>\",\"lstrip\":true,\"rstrip\":true,\"normalized\":false}],"
    "\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":\"Metaspace\","
    "\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":\"first\",\"split\":true},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":"
    "\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{"
    "\"<s>\":{\"id\":\"<s>\",\"ids\":[1],\"tokens\":[\"<s>\"]}}},"
    "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Metaspace\",\"replacement\":"
    "\"\xE2\x96\x81\",\"prepend_scheme\":\"first\"},{\"type\":\"ByteFallback\"},{\"type\":"
    "\"Fuse\"}]},\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":true,"
    "\"byte_fallback\":true,\"vocab\":{\"<unk>\":0,\"<s>\":1,\"<0x41>\":2,\"<0xC3>\":3,"
    "\"<0xA9>\":4,\"\xE2\x96\x81\":5,\"a\":6,\"b\":7,\"\xE2\x96\x81"
    "a\":8,\"ab\":9,"
    "\"\xE2\x96\x81"
    "ab\":10},\"merges\":[\"\xE2\x96\x81 a\",\"a b\",\"\xE2\x96\x81"
    "a b\"]}}";

static void init(void)
{
    char err[256];
    if (kvg_tok_load("builtin:bytes", NULL, &toks[0], err, sizeof err)) abort();
    char *bl = bytelevel_json();
    if (kvg__tok_load_mem(bl, strlen(bl), &toks[1], err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    free(bl);
    if (kvg__tok_load_mem(SP_JSON, sizeof SP_JSON - 1, &toks[2], err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!toks[0]) init();
    if (size < 1) return 0;
    int which = data[0] % 3, special = (data[0] >> 2) & 1;
    size_t n = size - 1;
    char *text = malloc(n ? n : 1);
    if (!text) return 0;
    if (n) memcpy(text, data + 1, n);
    const struct kvg_tok *tok = toks[which];
    uint32_t *ids = NULL;
    size_t nids = 0;
    int rc = kvg_tok_encode(tok, text, n, special, &ids, &nids);
    int valid = kvg_utf8_valid(text, n);
    if (valid ? rc != 0 : rc != KVG_EUTF8) abort();
    if (rc == 0) {
        for (size_t i = 0; i < nids; i++)
            if (ids[i] >= kvg_tok_vocab_size(tok)) abort();
        char *back = NULL;
        size_t blen = 0;
        if (kvg_tok_decode(tok, ids, nids, 0, &back, &blen)) abort();
        if (!kvg_utf8_valid(back, blen)) abort();
        if (which < 2 && !special && (blen != n || memcmp(back, text, n))) abort();
        free(back);
        if (kvg_tok_decode(tok, ids, nids, 1, &back, &blen)) abort();
        free(back);
    }
    free(ids);
    free(text);
    return 0;
}
