/* A faster reader for big JSON bodies that yields cJSON's own tree.
 * Ownership: a tree from kvg_json_parse(_strict) is the caller's, freed with
 * cJSON_Delete (every node and string comes from cJSON_malloc, as cJSON's
 * parser allocates them); one from kvg_json_parse_in(_strict) lives in the
 * caller's arena and is freed with kvg_json_free. */
#ifndef KVG_BASE_JSON_H
#define KVG_BASE_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* The tree cJSON_ParseWithLength(s, n) returns, node for node (types,
 * numbers, strings, keys, order), and NULL exactly when it returns NULL.
 * Strict JSON with long strings is read here (strings copied between
 * backslashes with memchr/memcpy, where cJSON walks every byte twice);
 * anything else (cJSON's leniencies, a BOM, lone surrogates, \u0000, deep
 * nesting, numbers strtod might read differently) is handed to
 * cJSON_ParseWithLength itself, so the two cannot disagree. */
cJSON *kvg_json_parse(const char *s, size_t n);

/* Memory for one tree the fast reader builds: its nodes and strings carved
 * from a few big blocks and freed together, where cJSON mallocs and frees
 * each one (a long conversation's tree is hundreds of them, and freeing
 * them was 7% of a 30k-token request's gateway CPU). Zeroed is empty.
 * Ownership: the arena owns its blocks; a tree in it is read-only (no cJSON
 * call that frees, detaches or adds a node may see it) and lives until
 * kvg_json_free. */
struct kvg_json_block;
struct kvg_json_arena {
    struct kvg_json_block *blocks; /* newest first; NULL: no tree in the arena */
};

/* kvg_json_parse / kvg_json_parse_strict, the tree built in a (empty) when
 * the fast reader reads the bytes; a tree cJSON builds (the hand-over) is
 * on the heap, and a stays empty. The same trees, node for node, but for
 * one thing cJSON cannot hold: here a string value may hold a \u0000 (a NUL
 * is data: HuggingFace's tokenizers and the engines read "a\u0000b" as three
 * characters). So every string node of the fast reader carries its byte
 * length (KVG_JSON_STRING_LEN in its type, beside cJSON_String:
 * cJSON_IsString still says yes; its valueint the length, which also spares
 * a reader of a long prompt a strlen); read it with kvg_json_str. A key
 * holding \u0000 is still declined. */
cJSON *kvg_json_parse_in(struct kvg_json_arena *a, const char *s, size_t n);
cJSON *kvg_json_parse_strict_in(struct kvg_json_arena *a, const char *s, size_t n);
#define KVG_JSON_STRING_LEN 0x1000 /* a string node's valueint is its byte length */
/* A string node's bytes and (*len) their length, a NUL inside counted, from
 * either reader; NULL when n is not a string. */
const char *kvg_json_str(const cJSON *n, size_t *len);
/* Whether s[0, n) holds the text \u0000 (a string cJSON's tree would cut
 * there: a tree from the hand-over cannot be read exactly). */
int kvg_json_has_nul_escape(const char *s, size_t n);
/* Frees tree, from either: the arena's blocks when it holds the tree, else
 * cJSON_Delete. a is empty after it. */
void kvg_json_free(struct kvg_json_arena *a, cJSON *tree);

/* The byte a one-character JSON escape stands for ('n' -> '\n', '"', '\\',
 * '/', 'b', 'f', 'r', 't'), or -1 for any other character ('u' included:
 * \uXXXX is the caller's). Shared by every JSON reader of the project. */
int kvg_json_unescape(char c);
/* The \uXXXX escape whose hex digits start at p (just after "\u"), before
 * end, with its low half when it is a high surrogate: the code point in *cp
 * and the bytes read past p (4, or 10 for a pair), or 0 for bad hex, a
 * lone or reversed surrogate. */
size_t kvg_json_u_escape(const char *p, const char *end, uint32_t *cp);

/* The same, but never handing over to cJSON: NULL where the fast reader
 * declines. For the differential tests (a decline is not a verdict). */
cJSON *kvg_json_parse_strict(const char *s, size_t n);

/* Whether two trees are the same node for node: types, numbers (bit for
 * bit), keys, strings, order and the sibling links (a first child's prev is
 * the last). For the differential tests against cJSON. */
int kvg_json_same(const cJSON *a, const cJSON *b);

#endif
