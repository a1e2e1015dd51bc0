/* The replicas' exchange of routing history, live (peers.c; the records and
 * batches are router/exchange.h's): serve's side of it, for serve.c and
 * endpoints.c. */
#ifndef KVG_SERVE_PEERS_H
#define KVG_SERVE_PEERS_H

#include <uv.h>

#include "net/http.h"

#define KVG_SERVE_PEERS_PATH "/peers/batch"

struct cJSON;
struct kvg_serve;
struct kvg_strlist;

/* With --peers: the outbox on the pool's picks and the peers' metrics
 * (after the router and the metrics are set up). 0 without; KVG_ECONFIG
 * with err for a peer that is no URL; -ENOMEM. */
int kvg__serve_peers_init(struct kvg_serve *sv, char *err, size_t errlen);
/* A SIGHUP's peer list (urls: checked as the configuration's peers, one URL
 * each), on the main loop: a peer no longer listed goes (its call in
 * flight, state, counts and series); a new one starts unknown; one listed
 * before keeps its state and counts. *added and *removed say how many.
 * 0; KVG_ECONFIG with err when the process started without peers (the
 * exchange starts with it); -ENOMEM. On failure the list stays as it was. */
int kvg__serve_peers_set(struct kvg_serve *sv, const struct kvg_strlist *urls, size_t *added,
                         size_t *removed, char *err, size_t errlen);
/* The same for the peers --peer-service's name gave (peers_dns.c): found
 * replaces them, the given ones stay. */
int kvg__serve_peers_found(struct kvg_serve *sv, const struct kvg_strlist *found, size_t *added,
                           size_t *removed, char *err, size_t errlen);
/* The batch timer and the client, on the main loop. */
int kvg__serve_peers_start(struct kvg_serve *sv, uv_loop_t *loop);
/* Stops sending (main loop; calls in flight cancelled). */
void kvg__serve_peers_stop(struct kvg_serve *sv);
void kvg__serve_peers_free(struct kvg_serve *sv);
/* /workers' "peers" (url, state, last_ok_ms_ago, sent, received,
 * dropped) and "peers_exchange" (this replica's side), into root. */
void kvg__serve_peers_json(struct kvg_serve *sv, struct cJSON *root);
/* The head of a POST /peers/batch: 0 to read on, 1 refused (out: 401 for
 * a wrong token, the admin check's 401/403 without one, 413 for a declared
 * size over --peer-batch-bytes). */
int kvg__serve_peers_head(struct kvg_serve *sv, struct kvg_http_req *req,
                          struct kvg_http_refusal *out);
/* The batch itself: 415, 413, 400 (nothing applied), or 200 with what was
 * applied. On the request's loop. */
void kvg__serve_peers_receive(struct kvg_serve *sv, struct kvg_http_req *req);

/* --peer-service (peers_dns.c): the name resolved now and every 10 s on
 * loop, its addresses the found peers. 0 without; -ENOMEM, libuv's code. */
int kvg__serve_peers_dns_start(struct kvg_serve *sv, uv_loop_t *loop);
/* Stops resolving (a resolve in flight is cancelled); main loop. */
void kvg__serve_peers_dns_stop(struct kvg_serve *sv);
/* Once the main loop has run out. */
void kvg__serve_peers_dns_free(struct kvg_serve *sv);
/* Each INET or INET6 address of the chain ai as http://ADDR:PORT
 * (brackets for IPv6), once each, sorted, added to out: 0, -ENOSPC past
 * KVG_OPT_LIST_MAX, -ENOMEM. */
struct addrinfo;
int kvg__serve_peers_addr_urls(const struct addrinfo *ai, const char *port,
                               struct kvg_strlist *out);

#endif
