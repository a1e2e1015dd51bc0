/* The text a request is routed on by the approximate, character-keyed
 * policies (cache_aware, prefix_hash without tokens), as sglang's router
 * extracts it: for chat, the texts of all messages in order (content strings
 * or text parts; assistant reasoning_content after content), non-empty parts
 * joined by one space; for completions, the prompt string, or the strings of
 * a prompt array joined by one space. */
#ifndef KVG_ROUTER_ROUTE_TEXT_H
#define KVG_ROUTER_ROUTE_TEXT_H

#include "base/buf.h"

struct cJSON;

/* Appends the routing text of a parsed request to out; chat selects the chat
 * shape. 0 or a negative code (KVG_ETOOBIG at out's limit). */
int kvg_route_text(const struct cJSON *req, int chat, struct kvg_buf *out);

#endif
