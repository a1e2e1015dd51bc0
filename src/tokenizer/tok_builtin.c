/* "builtin:bytes": the tokenizer kvgate serve and kvgate sim share when no
 * model files are given, so that an out-of-the-box gateway and simulated
 * engines agree on every token.
 *
 *   ids 0..255   the byte with that value (any byte sequence round-trips);
 *   256 <|bos|>  257 <|eos|>  258 <|im_start|>  259 <|im_end|>
 *                special tokens, matched in the text like HF's added tokens.
 *
 * encode(add_special=1) puts <|bos|> first; nothing is appended. The BOS and
 * EOS token strings are "<|bos|>" and "<|eos|>"; there is no chat template
 * (the renderer uses its plain built-in one). Decoding concatenates the bytes
 * and replaces invalid UTF-8 with U+FFFD.
 *
 * It is built from the same parts as a loaded tokenizer: a byte-level BPE
 * model without merges, and four special added tokens. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

static const char *const SPECIALS[] = {"<|bos|>", "<|eos|>", "<|im_start|>", "<|im_end|>"};

int kvg__tok_builtin_init(struct kvg_tok *tok, char *err, size_t errlen)
{
    int rc = kvg__tok_ids_reserve(tok, 256 + 4);
    if (!rc) rc = kvg__tok_smap_init(&tok->vocab, 256);
    if (!rc) rc = kvg__tok_smap_init(&tok->added_map, 4);
    if (rc) return rc;
    tok->kind = KVG_TOK_BUILTIN;
    tok->byte_level = 1;
    tok->builtin_decoder = 1;
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        int64_t off = kvg__tok_arena_str(&tok->arena, &c, 1);
        if (off < 0) return (int)off;
        tok->vocab_off[b] = (uint32_t)off;
        tok->vocab_len[b] = 1;
        if ((rc = kvg__tok_smap_put(&tok->vocab, tok->arena.p, (uint32_t)off, 1, (uint32_t)b)))
            return rc;
        tok->bsym[b] = (struct kvg_tok_bsym){.n = 1, .ids = {(uint32_t)b, 0}};
        tok->fallback[b] = KVG_TOK_NONE;
    }
    tok->added = calloc(4, sizeof *tok->added);
    tok->post = malloc(2 * sizeof *tok->post);
    tok->bos = strdup(SPECIALS[0]);
    tok->eos = strdup(SPECIALS[1]);
    if (!tok->added || !tok->post || !tok->bos || !tok->eos) return -ENOMEM;
    for (uint32_t i = 0; i < 4; i++) {
        size_t len = strlen(SPECIALS[i]);
        int64_t off = kvg__tok_arena_str(&tok->arena, SPECIALS[i], len);
        if (off < 0) return (int)off;
        tok->added[i] = (struct kvg_tok_added){
            .id = 256 + i, .off = (uint32_t)off, .len = (uint32_t)len, .special = 1};
        tok->added_ix[256 + i] = (int32_t)i;
        tok->special[256 + i] = 1;
        if ((rc = kvg__tok_smap_put(&tok->added_map, tok->arena.p, (uint32_t)off, (uint32_t)len,
                                    256 + i)))
            return rc;
    }
    tok->n_added = 4;
    tok->post[0] = 256;
    tok->post[1] = KVG_TOK_NONE;
    tok->n_post = 2;
    tok->has_post = 1;
    return kvg__tok_added_build(tok, err, errlen);
}
