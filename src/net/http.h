/* HTTP/1.1 server for kvgate's listeners (the gateway and the simulated
 * engine), on libuv + llhttp.
 *
 * One struct kvg_http_server runs on one libuv loop; a multi-threaded
 * listener is one server per loop thread, each with its own socket on the
 * same address (see enum kvg_http_bind), so the kernel spreads connections.
 *
 * A request is handed to the handler once its body is complete. The handler
 * answers with kvg_http_res_*; it may answer later (from the same loop), in
 * pieces (streams). While a request is being answered the connection reads
 * nothing more (no pipelining in parallel), except that it notices the client
 * going away: then the request's on_abort callback runs and the request is
 * freed, and the handler must not touch it again.
 *
 * Ownership: the server owns every struct kvg_http_req; a handler keeps a
 * pointer only until it calls kvg_http_res_end or its on_abort runs. */
#ifndef KVG_NET_HTTP_H
#define KVG_NET_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/buf.h"

struct kvg_http_server;
struct kvg_http_conn;

struct kvg_http_header {
    struct kvg_str name;
    struct kvg_str value;
};

struct kvg_http_limits {
    size_t max_header_bytes;     /* request line + headers; over it: 431 */
    size_t max_body_bytes;       /* over it: 413 */
    uint32_t header_timeout_ms;  /* from first byte to complete request head */
    uint32_t body_timeout_ms;    /* between body bytes */
    uint32_t body_deadline_ms;   /* from the request head to the end of its body */
    uint64_t max_buffered_bytes; /* request bodies held by the whole process; over it: 503 */
    uint32_t idle_timeout_ms;    /* keep-alive idle between requests */
    uint32_t max_conns;          /* per server (per loop thread); 0 = no limit */
    uint32_t max_headers;        /* count; over it: 431 */
    uint32_t send_buffer_bytes;  /* SO_SNDBUF of client connections, 0 = the kernel's (nginx's
                                    listen sndbuf=) */
};

void kvg_http_limits_default(struct kvg_http_limits *l);

/* An answer a server gives instead of reading a request any further. */
struct kvg_http_refusal {
    int status;
    const char *type, *code; /* NULL: from the status */
    const char *param;       /* the request parameter at fault, or NULL */
    char message[512];
    struct kvg_http_header headers[8]; /* views: valid until the answer is written */
    size_t nheaders;
    /* The body in the endpoint's own error shape (an Anthropic client
     * reads Anthropic's): appended to out, 0 or -ENOMEM. NULL: OpenAI's
     * shape (kvg_http_error_json). */
    int (*render)(const struct kvg_http_refusal *r, struct kvg_buf *out);
};

struct kvg_http_req;
typedef void (*kvg_http_handler)(struct kvg_http_req *req, void *ud);
typedef void (*kvg_http_req_cb)(struct kvg_http_req *req, void *ud);

struct kvg_http_req {
    /* Parsed request: views valid until the request is freed. */
    int method; /* llhttp_method_t */
    const char *method_name;
    struct kvg_str url;   /* as sent: path and query */
    struct kvg_str path;  /* url without the query */
    struct kvg_str query; /* after '?', may be empty */
    struct kvg_http_header *headers;
    size_t nheaders;
    struct kvg_buf body;
    int http_minor;    /* 1 for HTTP/1.1, 0 for 1.0 */
    int keep_alive;    /* client wants keep-alive */
    uint64_t start_ns; /* monotonic time the request head was complete */
    char peer[64];     /* "ip:port" or "[ip6]:port" of the client */
    /* What the head check leaves the handler (zeroed per request): kvgate's
     * gateway keeps the API key's digest there, so a key is hashed once. */
    struct kvg_http_note {
        int set;
        unsigned char b[32];
    } head_note;

    /* Set by the handler. */
    void *ud;
    kvg_http_req_cb on_abort; /* client went away before res_end */
    kvg_http_req_cb on_drain; /* write queue emptied after a res_write said "full" */

    /* Response state, read-only for handlers. */
    int status;
    uint64_t bytes_out;     /* body bytes written */
    uint64_t first_byte_ns; /* when the response head was written */
    int head_sent;
    int ended;

    struct kvg_http_conn *conn; /* private */
    int chunked;                /* private */
    int close_after;            /* private */
};

/* How a listener binds. EXCLUSIVE: alone. A group of servers (one per loop
 * thread of one process) shares an address: its FIRST binds exclusively (an
 * address held by anyone else is -EADDRINUSE, never silently shared with
 * another process), then the others JOIN with SO_REUSEPORT and the kernel
 * spreads connections. */
enum kvg_http_bind { KVG_HTTP_BIND_EXCLUSIVE, KVG_HTTP_BIND_GROUP_FIRST, KVG_HTTP_BIND_GROUP_JOIN };

/* Starts a server on `loop` listening on host:port. `handler` gets every request.
 * *out is owned by the caller: kvg_http_server_close() then wait for the
 * loop to finish closing handles. Returns 0 or a negative code. */
int kvg_http_server_start(uv_loop_t *loop, const char *host, int port, enum kvg_http_bind bind_mode,
                          const struct kvg_http_limits *limits, kvg_http_handler handler, void *ud,
                          struct kvg_http_server **out);
/* Called once a request's head is complete, before its body is read or
 * `100 Continue` is sent: return 0 to read on, or non-zero with *out filled
 * to refuse the request (the connection then closes). Runs on the server's
 * loop with the server's ud; it may write req->head_note only. */
typedef int (*kvg_http_head_check)(struct kvg_http_req *req, void *ud,
                                   struct kvg_http_refusal *out);
void kvg_http_server_set_head_check(struct kvg_http_server *srv, kvg_http_head_check cb);
/* Called when the server itself refuses a request whose head it has read
 * (its body past a limit or too slow, a bad Expect, too many bodies held):
 * the host may set out->render (its endpoint's error shape) and log and
 * count the request as it does the ones it answers. Not called for the
 * head check's own refusals. Same thread and ud as the head check. */
typedef void (*kvg_http_refused_cb)(const struct kvg_http_req *req, void *ud,
                                    struct kvg_http_refusal *out);
void kvg_http_server_set_refused(struct kvg_http_server *srv, kvg_http_refused_cb cb);
/* Request body bytes held by every server of the process now. */
uint64_t kvg_http_buffered_bytes(void);
/* Serves HTTPS on this server's connections from now on (ctx from
 * kvg_tls_server_ctx; not owned, must outlive the server). */
struct ssl_ctx_st;
void kvg_http_server_set_tls(struct kvg_http_server *srv, struct ssl_ctx_st *ctx);
/* Loads a PEM certificate chain and private key into a new server context
 * (TLS 1.2+). On failure returns KVG_ECONFIG with OpenSSL's reason in err.
 * *out is the caller's: SSL_CTX_free. */
int kvg_tls_server_ctx(const char *cert_file, const char *key_file, struct ssl_ctx_st **out,
                       char *err, size_t errlen);
/* The bound port (useful with port 0). */
int kvg_http_server_port(const struct kvg_http_server *srv);
/* Stops accepting; idle keep-alive connections are closed; requests in flight
 * finish and their connections close afterwards. */
void kvg_http_server_stop_accepting(struct kvg_http_server *srv);
/* Connections and requests in flight on this server. */
unsigned kvg_http_server_conns(const struct kvg_http_server *srv);
unsigned kvg_http_server_active(const struct kvg_http_server *srv);
/* Closes everything now (in-flight requests are aborted) and frees the server
 * once its handles are closed (after the loop runs). */
void kvg_http_server_close(struct kvg_http_server *srv);

/* Header lookup, case-insensitive; returns an empty view with p == NULL when
 * absent. */
struct kvg_str kvg_http_req_header(const struct kvg_http_req *req, const char *name);

/* Response. res_start writes the status line and headers; content_length < 0
 * means the length is unknown (chunked for HTTP/1.1, close-delimited for 1.0).
 * `headers` are copied. res_write copies the bytes; it returns 0, or 1 when
 * the connection's write queue is over its high-water mark (the caller should
 * stop producing until on_drain), or a negative code. res_end completes the
 * response; the request is then freed (the caller's pointer dies). */
int kvg_http_res_start(struct kvg_http_req *req, int status, const struct kvg_http_header *headers,
                       size_t nheaders, int64_t content_length);
int kvg_http_res_write(struct kvg_http_req *req, const void *data, size_t len);
int kvg_http_res_end(struct kvg_http_req *req);
/* Whole response in one call. */
int kvg_http_res_send(struct kvg_http_req *req, int status, const char *content_type,
                      const struct kvg_http_header *extra, size_t nextra, const void *body,
                      size_t len);
/* OpenAI-style error: {"error":{"message","type","param":null,"code"}}. */
int kvg_http_res_error(struct kvg_http_req *req, int status, const char *type, const char *code,
                       const char *message, const struct kvg_http_header *extra, size_t nextra);
/* The same naming the request parameter at fault ("param":"max_tokens"). */
int kvg_http_res_error_param(struct kvg_http_req *req, int status, const char *type,
                             const char *code, const char *message, const char *param,
                             const struct kvg_http_header *extra, size_t nextra);
/* Drops the connection at once, mid-response if need be (the client sees
 * a cut stream): for fault injection in the simulated engine. The request
 * is freed; its on_abort does not run. */
void kvg_http_res_abort(struct kvg_http_req *req);
/* Marks the connection to close after this response. */
void kvg_http_res_close_after(struct kvg_http_req *req);

/* Appends {"error":{"message","type","param":null,"code"}} to b (no HTTP
 * framing; also used for SSE error events). type NULL: from the status;
 * code NULL: the status number as a string. */
int kvg_http_error_json(struct kvg_buf *b, int status, const char *type, const char *code,
                        const char *message);
/* The same with "param" set (NULL: null). */
int kvg_http_error_json_param(struct kvg_buf *b, int status, const char *type, const char *code,
                              const char *message, const char *param);

/* Standard reason phrase for a status code. */
const char *kvg_http_reason(int status);
/* OpenAI error "type" for a status (e.g. 400 invalid_request_error). */
const char *kvg_http_error_type(int status);

#endif
