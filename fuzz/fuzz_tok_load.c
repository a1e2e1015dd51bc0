/* libFuzzer target for the tokenizer.json loader (tokenizer files are
 * outside bytes: downloaded with a model, named on the command line).
 * Seeds: tests/fixtures/tokenizer/sp_*.json.
 *
 * The input is loaded from memory (kvg__tok_load_mem, the same code as a file
 * load), copied into an exactly sized heap buffer so ASan flags any read past
 * its end. A load either fails with a message or gives a tokenizer that then
 * encodes and decodes a few fixed texts without error beyond the documented
 * ones (an unknown token missing from the vocabulary, regex resource
 * limits). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = malloc(size ? size : 1);
    if (!json) return 0;
    if (size) memcpy(json, data, size);
    struct kvg_tok *tok = NULL;
    char err[256];
    err[0] = 0;
    int rc = kvg__tok_load_mem(json, size, &tok, err, sizeof err);
    if (rc) {
        if (tok || !err[0]) abort(); /* a failure always says why */
    } else {
        static const char *const texts[] = {"", "Hello world!", " a  b\n\tc", "<s>x</s>",
                                            "\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80 123"};
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
            uint32_t *ids = NULL;
            size_t n = 0;
            rc = kvg_tok_encode(tok, texts[i], strlen(texts[i]), (int)(i & 1), &ids, &n);
            if (rc && rc != KVG_ENOTFOUND && rc != KVG_ETOOBIG) abort();
            char *back = NULL;
            size_t blen = 0;
            if (!rc && kvg_tok_decode(tok, ids, n, (int)(i & 1), &back, &blen)) abort();
            if (back && !kvg_utf8_valid(back, blen)) abort();
            free(back);
            free(ids);
        }
        kvg_tok_free(tok);
    }
    free(json);
    return 0;
}
