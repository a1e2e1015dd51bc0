/* The BPE model's settings and the tables derived from the vocabulary once
 * it is loaded: the unknown token, <0xXX> byte-fallback ids, and in
 * byte-level mode the raw-bytes view of the vocabulary.
 *
 * Byte-level BPE (GPT-2 and its descendants) maps every input byte to a
 * printable character before BPE, and the vocabulary is written in those
 * characters ("Ġthe" is " the"). Rather than mapping every input word, the
 * vocabulary is mapped back to raw bytes here, once: BPE then starts from
 * bytes and the ignore_merges whole-word lookup is a raw-bytes lookup. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

/* GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the
 * 68 others to U+0100.. in byte order. */
uint32_t kvg__tok_bl_char(uint8_t b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    uint32_t n = 0;
    for (uint32_t x = 0; x < b; x++)
        if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) n++;
    return 256 + n;
}

static int16_t g_inv[324];
static pthread_once_t g_inv_once = PTHREAD_ONCE_INIT;

static void inv_init(void)
{
    for (int i = 0; i < 324; i++) g_inv[i] = -1;
    for (int b = 0; b < 256; b++) g_inv[kvg__tok_bl_char((uint8_t)b)] = (int16_t)b;
}

int kvg__tok_bl_byte(uint32_t cp)
{
    pthread_once(&g_inv_once, inv_init);
    return cp < 324 ? g_inv[cp] : -1;
}

int kvg__tok_model_options(struct kvg_tok *tok, const cJSON *m, char *err, size_t errlen)
{
    const char *type = kvg__tok_jstr(m, "type");
    if (type && strcmp(type, "BPE"))
        return kvg_err_set(err, errlen, KVG_EUNSUPP, "unsupported component: model type %s", type);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "dropout");
    if (d && !cJSON_IsNull(d) && !(cJSON_IsNumber(d) && d->valuedouble == 0))
        return kvg_err_set(err, errlen, KVG_EUNSUPP,
                           "unsupported component: BPE dropout (not deterministic)");
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (size_t i = 0; i < 2; i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, affixes[i]);
        if (a && !cJSON_IsNull(a) && !(cJSON_IsString(a) && !a->valuestring[0]))
            return kvg_err_set(err, errlen, KVG_EUNSUPP, "unsupported component: BPE %s",
                               affixes[i]);
    }
    tok->fuse_unk = kvg__tok_jbool(m, "fuse_unk", 0);
    tok->byte_fallback = kvg__tok_jbool(m, "byte_fallback", 0);
    tok->ignore_merges = kvg__tok_jbool(m, "ignore_merges", 0);
    const char *unk = kvg__tok_jstr(m, "unk_token");
    if (unk) {
        int64_t off = kvg__tok_arena_str(&tok->arena, unk, strlen(unk));
        if (off < 0) return (int)off;
        tok->unk_off = (uint32_t)off;
        tok->unk_len = (uint32_t)strlen(unk);
        tok->has_unk = 1;
    }
    return 0;
}

/* Converts a byte-level vocabulary string to raw bytes; -1 if some char is
 * outside the 256-char alphabet (BPE on bytes can never produce it). */
static long to_raw(const char *s, size_t n, char *out)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += kvg_utf8_decode_fast(s + i, SIZE_MAX, &cp);
        int b = kvg__tok_bl_byte(cp);
        if (b < 0) return -1;
        out[w++] = (char)b;
    }
    return (long)w;
}

int kvg__tok_model_finish(struct kvg_tok *tok, char *err, size_t errlen)
{
    int rc;
    if (tok->has_unk) {
        tok->unk_id =
            kvg__tok_smap_get(&tok->vocab, tok->arena.p, tok->arena.p + tok->unk_off, tok->unk_len);
        /* HF fails at encode time when it needs a missing unk token; so do we. */
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        int64_t id = kvg__tok_smap_get(&tok->vocab, tok->arena.p, name, 6);
        tok->fallback[b] = id < 0 ? KVG_TOK_NONE : (uint32_t)id;
    }
    /* The raw-bytes view is only for ignore_merges' whole-word lookup. */
    if (tok->byte_level && tok->ignore_merges) {
        if ((rc = kvg__tok_smap_init(&tok->raw, tok->vocab.count))) return rc;
        char *tmp = malloc(1 << 16);
        if (!tmp) return -ENOMEM;
        for (uint32_t id = 0; id < tok->n_ids; id++) {
            if (tok->vocab_off[id] == KVG_TOK_NONE || tok->vocab_len[id] > (1 << 16)) continue;
            long n = to_raw(tok->arena.p + tok->vocab_off[id], tok->vocab_len[id], tmp);
            if (n <= 0) continue;
            int64_t off = kvg__tok_arena_add(&tok->arena, tmp, (size_t)n);
            if (off < 0) {
                free(tmp);
                return (int)off;
            }
            if ((rc = kvg__tok_smap_put(&tok->raw, tok->arena.p, (uint32_t)off, (uint32_t)n, id))) {
                free(tmp);
                return rc;
            }
        }
        free(tmp);
    }
    if (tok->byte_level) {
        /* The first symbol of each byte: its character's id, else its
         * character's UTF-8 bytes as <0xXX> (byte_fallback), else none. */
        for (int b = 0; b < 256; b++) {
            char c[4];
            size_t cl = kvg_utf8_put(kvg__tok_bl_char((uint8_t)b), c);
            int64_t id = kvg__tok_smap_get(&tok->vocab, tok->arena.p, c, cl);
            struct kvg_tok_bsym *s = &tok->bsym[b];
            s->n = 0;
            if (id >= 0) {
                s->n = 1;
                s->ids[0] = (uint32_t)id;
            } else if (tok->byte_fallback) {
                int all = 1;
                for (size_t k = 0; k < cl; k++) all &= tok->fallback[(uint8_t)c[k]] != KVG_TOK_NONE;
                if (all) {
                    s->n = (uint8_t)cl;
                    s->fallback = 1;
                    for (size_t k = 0; k < cl; k++) s->ids[k] = tok->fallback[(uint8_t)c[k]];
                }
            }
        }
    }
    (void)err;
    (void)errlen;
    return kvg__tok_cache_alloc(tok, KVG_TOK_CACHE_ENTRIES);
}
