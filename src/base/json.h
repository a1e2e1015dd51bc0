/* A faster reader for big JSON bodies that yields cJSON's own tree.
 * Ownership: the tree is the caller's, freed with cJSON_Delete (every node
 * and string comes from cJSON_malloc, as cJSON's parser allocates them). */
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
