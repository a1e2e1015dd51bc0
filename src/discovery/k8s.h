/* A small blocking HTTP/1.1 client for the Kubernetes API server, run on the
 * discovery thread only: one request at a time, HTTPS (OpenSSL, verifying
 * the server against the service account's CA) or plain HTTP (tests),
 * Content-Length, chunked or close-delimited bodies, read whole (lists, pods)
 * or line by line (watch streams). The autoscaler's kubernetes actuator
 * uses it too, on its own thread, for the scale subresource.
 *
 * Why not src/http/client.c: that client is the loops' non-blocking upstream
 * client, plain HTTP only, built for many short calls to engines. Discovery
 * makes one long-lived call at a time and nothing waits on it, so a blocking
 * client on its own thread keeps TLS and the watch out of the request path. */
#ifndef KVG_DISCOVERY_K8S_H
#define KVG_DISCOVERY_K8S_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ssl_ctx_st;
struct ssl_st;

struct kvg_discovery_api {
    char host[256];
    int port;
    int tls;
    char token_file[512]; /* re-read on every request: projected tokens rotate */
    struct ssl_ctx_st *ctx;
    uint32_t connect_timeout_ms;
    _Atomic int fd;      /* the open request's socket, -1 none: kvg_discovery_api_abort shuts it */
    _Atomic int aborted; /* set by kvg_discovery_api_abort: every later request fails */
};

/* One response being read. */
struct kvg_discovery_resp {
    int status;
    int fd;
    struct ssl_st *ssl;
    int chunked;
    int64_t left;     /* Content-Length left, or the current chunk's; -1 until close */
    int eof;          /* the body ended */
    char rbuf[16384]; /* raw bytes read, not yet consumed */
    size_t rpos, rlen;
};

/* Parses "https://host:port" (or http://) and loads ca_file for https (NULL:
 * the system's). 0, -EINVAL, KVG_ECONFIG with a message. Release with
 * kvg_discovery_api_free. */
int kvg_discovery_api_init(struct kvg_discovery_api *a, const char *url, const char *ca_file,
                           const char *token_file, char *err, size_t errlen);
void kvg_discovery_api_free(struct kvg_discovery_api *a);
/* Sends GET path and reads the head into r. read_timeout_ms bounds every
 * wait for bytes. 0 (whatever the status) or a negative code. The caller
 * closes r with kvg_discovery_resp_close. */
int kvg_discovery_api_get(struct kvg_discovery_api *a, const char *path, uint32_t read_timeout_ms,
                          struct kvg_discovery_resp *r);
/* The same with any method, and a body of content_type when that is not
 * NULL (Content-Length framed): the autoscaler's PATCH of a scale
 * subresource. */
int kvg_discovery_api_request(struct kvg_discovery_api *a, const char *method, const char *path,
                              const char *content_type, const char *body, size_t body_len,
                              uint32_t read_timeout_ms, struct kvg_discovery_resp *r);
/* Any thread: makes the open request's reads fail now (shutdown). */
void kvg_discovery_api_abort(struct kvg_discovery_api *a);
/* The whole body, up to cap bytes: *out malloc'd and NUL-terminated (caller
 * frees). 0, KVG_ETOOBIG, or a read error. */
int kvg_discovery_resp_body(struct kvg_discovery_resp *r, size_t cap, char **out, size_t *len);
/* The next '\n'-terminated line of the body into line[cap] (without the
 * newline): its length, KVG_ECLOSED at the end, KVG_ETOOBIG, or an error. */
int kvg_discovery_resp_line(struct kvg_discovery_resp *r, char *line, size_t cap);
void kvg_discovery_resp_close(struct kvg_discovery_api *a, struct kvg_discovery_resp *r);

#endif
