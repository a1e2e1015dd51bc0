/* The blocking HTTP/1.1 client of the common layer: one request at a time on
 * the caller's own thread, HTTPS (OpenSSL, verifying the server against a CA
 * file such as a service account's) or plain HTTP, Content-Length, chunked or
 * close-delimited bodies, read whole or line by line (watch streams). Its
 * users: Kubernetes discovery (EndpointSlice lists and watches), the
 * autoscaler's kubernetes actuator (the scale subresource) and the autoscale
 * daemon's scrapes of gateways and engines.
 *
 * Why not net/http_client.c: that client is the loops' non-blocking upstream
 * client, plain HTTP only, built for many short calls to engines. These users
 * make one long-lived call at a time and nothing on a loop waits on it, so a
 * blocking client on their own thread keeps TLS and watches off the loops. */
#ifndef KVG_NET_HTTPS_H
#define KVG_NET_HTTPS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ssl_ctx_st;
struct ssl_st;

struct kvg_https {
    char host[256];
    int port;
    int tls;
    char token_file[512]; /* re-read on every request: projected tokens rotate */
    struct ssl_ctx_st *ctx;
    uint32_t connect_timeout_ms;
    _Atomic int fd;      /* the open request's socket, -1 none: kvg_https_abort shuts it */
    _Atomic int aborted; /* set by kvg_https_abort: every later request fails */
};

/* One response being read. */
struct kvg_https_resp {
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
 * kvg_https_free. */
int kvg_https_init(struct kvg_https *a, const char *url, const char *ca_file,
                   const char *token_file, char *err, size_t errlen);
void kvg_https_free(struct kvg_https *a);
/* Sends GET path and reads the head into r. read_timeout_ms bounds every
 * wait for bytes. 0 (whatever the status) or a negative code. The caller
 * closes r with kvg_https_resp_close. */
int kvg_https_get(struct kvg_https *a, const char *path, uint32_t read_timeout_ms,
                  struct kvg_https_resp *r);
/* The same with any method, and a body of content_type when that is not
 * NULL (Content-Length framed): the autoscaler's PATCH of a scale
 * subresource. */
int kvg_https_request(struct kvg_https *a, const char *method, const char *path,
                      const char *content_type, const char *body, size_t body_len,
                      uint32_t read_timeout_ms, struct kvg_https_resp *r);
/* Any thread: makes the open request's reads fail now (shutdown). */
void kvg_https_abort(struct kvg_https *a);
/* The whole body, up to cap bytes: *out malloc'd and NUL-terminated (caller
 * frees). 0, KVG_ETOOBIG, or a read error. */
int kvg_https_resp_body(struct kvg_https_resp *r, size_t cap, char **out, size_t *len);
/* The next '\n'-terminated line of the body into line[cap] (without the
 * newline): its length, KVG_ECLOSED at the end, KVG_ETOOBIG, or an error. */
int kvg_https_resp_line(struct kvg_https_resp *r, char *line, size_t cap);
void kvg_https_resp_close(struct kvg_https *a, struct kvg_https_resp *r);

#endif
