/* Between the agent sessions (agent.c) and their text: the deployments'
 * instructions and tools and each turn's made-up content (agent_text.c).
 * Not a public face. */
#ifndef KVG_BENCH_AGENT_INT_H
#define KVG_BENCH_AGENT_INT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/util.h"

/* The agents' own sizes, characters (docs/agent-wire.md). */
#define KVG_AGENT_CODEX_DEV0 16979 /* base instructions */
#define KVG_AGENT_CODEX_DEV1 2156  /* skills */
#define KVG_AGENT_CODEX_DEV2 341   /* sandbox permissions */
#define KVG_AGENT_CODEX_ENV 427    /* <environment_context> */
#define KVG_AGENT_CODEX_FNS 7600   /* the 7 function tools (18.7k - the namespace) */
#define KVG_AGENT_CODEX_NS 11100   /* multi_agent_v1 and its 5 functions */
#define KVG_AGENT_CLAUDE_SYSTEM 6931
#define KVG_AGENT_CLAUDE_SYS2 9119 /* the role "system" message */
#define KVG_AGENT_CLAUDE_ENV 320   /* of it, the session's own environment */
#define KVG_AGENT_CLAUDE_REMINDER 576
#define KVG_AGENT_CLAUDE_TOOLS 31900

/* One deployment: what its sessions share, built from the seed. */
struct kvg__agent_group {
    cJSON *dev;    /* Responses: the three developer message items (an array) */
    cJSON *rtools; /* Responses: the tools */
    cJSON *system; /* Messages: the system blocks */
    char *sys2;    /* Messages: the role "system" message but its environment */
    cJSON *mtools; /* Messages: the tools */
};

/* Appends about n characters of pseudo-English (sentences of common and
 * programming words) to out. 0 or -ENOMEM. */
int kvg__agent_words(struct kvg_rng *r, size_t n, struct kvg_buf *out);
/* The same as a new cJSON string (NULL: out of memory). */
cJSON *kvg__agent_text(struct kvg_rng *r, size_t n);
/* Builds group g's parts for the APIs wanted (sizes times scale). */
int kvg__agent_group_build(struct kvg__agent_group *g, uint64_t seed, double scale, int responses,
                           int messages);
void kvg__agent_group_free(struct kvg__agent_group *g);
/* A tool call the model "made" this turn: its name (namespace: NULL, or
 * the Responses namespace it belongs to) and arguments as a JSON object. */
cJSON *kvg__agent_call_args(struct kvg_rng *r, int messages, const char **name, const char **ns);
/* Lowercase hex digits of n random bytes into out (2n + 1 bytes). */
void kvg__agent_hex(struct kvg_rng *r, size_t n, char *out);

#endif
