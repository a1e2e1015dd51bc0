/* libFuzzer: what the gateway does with a client's request body before
 * routing: JSON parse, model/stream/max_tokens extraction, routing text,
 * chat rendering through the built-in template and tokenizing with the
 * built-in tokenizer, block hashing. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxy/route_input.h"
#include "jinja/chat.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct kvg_rinput_tokenizer rt;
    static int init;
    char err[256];
    if (!init) {
        struct kvg_tok *tok;
        struct kvg_jinja_chat *chat;
        if (kvg_tok_load("builtin:bytes", NULL, &tok, err, sizeof err) ||
            kvg_jinja_chat_new(NULL, NULL, NULL, &chat, err, sizeof err))
            return 0;
        rt = (struct kvg_rinput_tokenizer){tok, chat, 16, NULL};
        init = 1;
    }
    /* Every endpoint whose body routing reads: chat, completions, Responses
     * and Messages (through their chat conversion), SGLang's generate,
     * /tokenize, embeddings. */
    static const enum kvg_api_kind kinds[] = {
        KVG_API_CHAT,     KVG_API_COMPLETIONS, KVG_API_RESPONSES, KVG_API_MESSAGES,
        KVG_API_GENERATE, KVG_API_TOKENIZE,    KVG_API_EMBEDDINGS};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        struct kvg_rinput ri;
        if (kvg_rinput_parse(&ri, (const char *)data, size, kinds[k], err, sizeof err)) continue;
        kvg_rinput_text(&ri);
        kvg_rinput_tokenize(&ri, &rt, 0);
        kvg_rinput_free(&ri);
    }
    return 0;
}
