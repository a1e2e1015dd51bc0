/* The HTTP server's reading, from a raw loopback client: a declared body
 * read in place into its reserved room must come out byte for byte and stop
 * exactly at its end (the next request's bytes after it in the same stream),
 * whatever the sizes of the pieces it arrives in; a chunked one the usual
 * way; and pipelined requests that arrive while an earlier one is still
 * being answered, more than inbuf holds, must wait (reading pauses) and all
 * be answered afterwards, none dropped or corrupted; over TLS too, where the
 * rest waits in OpenSSL while reading pauses. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <uv.h>

#include "base/hash.h"
#include "net/http.h"
#include "support/test.h"

struct fixture {
    uv_loop_t loop;
    struct kvg_http_server *srv;
    SSL_CTX *server_tls, *client_tls; /* NULL: plain HTTP */
    SSL *ssl;                         /* the client's */
    int hold_first;                   /* the first request is answered only when released */
    struct kvg_http_req *held;        /* that request, while held */
    int requests;
};

static uint64_t fnv(const char *p, size_t n)
{
    return kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED_SHORT, p, n);
}

static void answer(struct kvg_http_req *req)
{
    char out[64];
    int n = snprintf(out, sizeof out, "[n=%zu h=%016llx]", req->body.len,
                     (unsigned long long)fnv(req->body.data, req->body.len));
    CHECK_INT(kvg_http_res_send(req, 200, "text/plain", NULL, 0, out, (size_t)n), 0);
}

static void on_request(struct kvg_http_req *req, void *ud)
{
    struct fixture *f = ud;
    if (f->hold_first && f->requests++ == 0) {
        f->held = req;
        return;
    }
    answer(req);
}

/* A self-signed certificate and key in PEM files under dir, loaded as the
 * server's context. */
static SSL_CTX *server_ctx(const char *dir)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    CHECK(key && x);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"localhost", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    CHECK(X509_sign(x, key, EVP_sha256()) > 0);
    char cert[256], kf[256], err[256];
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(kf, sizeof kf, "%s/key.pem", dir);
    FILE *fc = fopen(cert, "w"), *fk = fopen(kf, "w");
    CHECK(fc && fk);
    CHECK(PEM_write_X509(fc, x) == 1);
    CHECK(PEM_write_PrivateKey(fk, key, NULL, NULL, 0, NULL, NULL) == 1);
    fclose(fc);
    fclose(fk);
    X509_free(x);
    EVP_PKEY_free(key);
    SSL_CTX *ctx = NULL;
    CHECK_INT(kvg_tls_server_ctx(cert, kf, &ctx, err, sizeof err), 0);
    unlink(cert);
    unlink(kf);
    return ctx;
}

/* A server (TLS when tls) and a client connected to it; returns the
 * client's socket, non-blocking. */
static int start(struct fixture *f, int tls)
{
    memset(f, 0, sizeof *f);
    CHECK_INT(uv_loop_init(&f->loop), 0);
    struct kvg_http_limits l;
    kvg_http_limits_default(&l);
    /* inbuf: 8 KB + one read, so 300 KB of pipelining overflows it */
    l.max_header_bytes = 8 * 1024;
    CHECK_INT(kvg_http_server_start(&f->loop, "127.0.0.1", 0, KVG_HTTP_BIND_EXCLUSIVE, &l,
                                    on_request, f, &f->srv),
              0);
    if (tls) {
        char dir[] = "/tmp/kvg-test-server-XXXXXX";
        CHECK(mkdtemp(dir));
        f->server_tls = server_ctx(dir);
        rmdir(dir);
        kvg_http_server_set_tls(f->srv, f->server_tls);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(kvg_http_server_port(f->srv))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(fd >= 0);
    CHECK_INT(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    /* Small socket buffers, so that a big stream arrives in many reads. */
    int sz = 16 * 1024;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    if (tls) { /* the handshake, the loop run between the client's steps */
        CHECK((f->client_tls = SSL_CTX_new(TLS_client_method())));
        CHECK((f->ssl = SSL_new(f->client_tls)));
        SSL_set_mode(f->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        SSL_set_fd(f->ssl, fd);
        CHECK(fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
        int r = 0;
        for (int turn = 0; turn < 20000 && (r = SSL_connect(f->ssl)) != 1; turn++) {
            int e = SSL_get_error(f->ssl, r);
            CHECK(e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE);
            uv_run(&f->loop, UV_RUN_NOWAIT);
            usleep(50);
        }
        CHECK_INT(r, 1);
    }
    return fd;
}

static void stop(struct fixture *f, int fd)
{
    if (f->ssl) SSL_free(f->ssl);
    close(fd);
    kvg_http_server_close(f->srv);
    for (int turn = 0; turn < 10000 && uv_loop_alive(&f->loop); turn++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    CHECK_INT(uv_loop_close(&f->loop), 0);
    SSL_CTX_free(f->client_tls);
    SSL_CTX_free(f->server_tls);
}

/* The client's send and receive, plain or TLS: bytes moved, 0 for "not
 * now"; a failure ends the test. */
static size_t client_send(struct fixture *f, int fd, const char *p, size_t n)
{
    if (!f->ssl) {
        ssize_t w = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
        return w > 0 ? (size_t)w : 0;
    }
    int w = SSL_write(f->ssl, p, (int)(n > 16384 ? 16384 : n));
    if (w <= 0) {
        int e = SSL_get_error(f->ssl, w);
        CHECK(e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE);
    }
    return w > 0 ? (size_t)w : 0;
}

static size_t client_recv(struct fixture *f, int fd, char *p, size_t n)
{
    if (!f->ssl) {
        ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
        return r > 0 ? (size_t)r : 0;
    }
    int r = SSL_read(f->ssl, p, (int)n);
    return r > 0 ? (size_t)r : 0;
}

/* Appends a request with a declared body of n bytes (its bytes seeded). */
static size_t add_request(char *out, size_t n, unsigned seed, uint64_t *hash)
{
    int h = sprintf(out, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n", n);
    char *b = out + h;
    for (size_t i = 0; i < n; i++) b[i] = (char)('a' + (i * 31 + seed * 7 + i / 97) % 26);
    *hash = fnv(b, n);
    return (size_t)h + n;
}

/* Appends the same body as chunked, in pieces of `piece` bytes. */
static size_t add_chunked(char *out, const char *body, size_t n, size_t piece)
{
    size_t o =
        (size_t)sprintf(out, "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (size_t off = 0; off < n; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        o += (size_t)sprintf(out + o, "%zx\r\n", k);
        memcpy(out + o, body + off, k);
        o += k;
        out[o++] = '\r';
        out[o++] = '\n';
    }
    o += (size_t)sprintf(out + o, "0\r\n\r\n");
    return o;
}

/* Sends data in pieces of the given sizes (cycled), running the loop
 * between them, and collects what comes back until `answers` answers have
 * come or the turns run out. release: after this many bytes are sent, or
 * once sending has stalled (the server stopped reading), the held request is
 * answered (0: never). Returns the answers' bytes (owned). */
static char *exchange(struct fixture *f, int fd, const char *data, size_t len, const size_t *pieces,
                      size_t npieces, int answers, size_t release)
{
    size_t cap = 1 << 16, got = 0, sent = 0, k = 0, stalled = 0;
    char *in = calloc(1, cap);
    CHECK(in);
    for (int turn = 0; turn < 200000; turn++) {
        if (sent < len) {
            size_t want = pieces[k % npieces];
            if (want > len - sent) want = len - sent;
            size_t w = client_send(f, fd, data + sent, want);
            if (w) {
                sent += w;
                k++;
                stalled = 0;
            } else {
                stalled++;
            }
        }
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (f->held && release && (sent >= release || stalled > 2000)) {
            answer(f->held);
            f->held = NULL;
        }
        size_t r = client_recv(f, fd, in + got, cap - got - 1);
        got += r;
        if (got + 1 >= cap) CHECK((in = realloc(in, cap *= 2)));
        in[got] = 0;
        int seen = 0;
        for (const char *p = in; (p = strstr(p, "[n=")); p++) seen++;
        if (seen >= answers && sent == len) break;
        if (!r) usleep(50);
    }
    CHECK_INT(sent, len);
    return in;
}

/* The i-th answer's "[n=... h=...]" matches n bytes hashing to h. */
static void check_answer(const char *in, int i, size_t n, uint64_t h)
{
    const char *p = in;
    for (int k = 0; k <= i; k++, p++) CHECK((p = strstr(p, "[n=")) != NULL);
    char want[64];
    snprintf(want, sizeof want, "[n=%zu h=%016llx]", n, (unsigned long long)h);
    CHECK(!strncmp(p - 1, want, strlen(want)));
}

/* Two requests with declared bodies of n1 and n2 bytes in one stream, sent
 * in pieces of the given sizes: both answered with their own bytes. */
static void two_requests(int tls, size_t n1, size_t n2, const size_t *pieces, size_t npieces)
{
    struct fixture f;
    int fd = start(&f, tls);
    char *data = malloc(n1 + n2 + 1024);
    CHECK(data);
    uint64_t h1, h2;
    size_t len = add_request(data, n1, 1, &h1);
    len += add_request(data + len, n2, 2, &h2);
    char *in = exchange(&f, fd, data, len, pieces ? pieces : &len, pieces ? npieces : 1, 2, 0);
    check_answer(in, 0, n1, h1);
    check_answer(in, 1, n2, h2);
    free(in);
    free(data);
    stop(&f, fd);
}

TEST(big_body_in_place_then_a_pipelined_request_in_the_same_stream)
{
    static const size_t pieces[][6] = {{1, 7, 4096, 65536, 100000, 333},
                                       {300000 + 200, 1, 1, 1, 1, 1},
                                       {65536, 65537, 4095, 4097, 1, 2}};
    for (size_t v = 0; v < sizeof pieces / sizeof pieces[0]; v++)
        two_requests(0, 300000, 10, pieces[v], 6);
}

TEST(two_big_declared_bodies_back_to_back)
{
    two_requests(0, 200000, 250000, NULL, 0); /* the whole stream in one send */
}

TEST(tls_big_bodies_back_to_back)
{
    static const size_t pieces[] = {1, 5000, 16384, 333};
    two_requests(1, 200000, 250000, pieces, 4);
}

TEST(chunked_big_body)
{
    struct fixture f;
    int fd = start(&f, 0);
    char *body = malloc(200000), *data = malloc(300000);
    for (size_t i = 0; i < 200000; i++) body[i] = (char)('A' + i % 23);
    size_t len = add_chunked(data, body, 200000, 9999);
    static const size_t pieces[] = {1000, 70000, 3};
    char *in = exchange(&f, fd, data, len, pieces, 3, 1, 0);
    check_answer(in, 0, 200000, fnv(body, 200000));
    free(in);
    free(body);
    free(data);
    stop(&f, fd);
}

static void pipelined_past_inbuf(int tls)
{
    struct fixture f;
    int fd = start(&f, tls);
    f.hold_first = 1;
    char *data = malloc(400000);
    uint64_t h[4];
    size_t len = add_request(data, 5, 10, &h[0]);
    size_t first = len;
    len += add_request(data + len, 100000, 11, &h[1]);
    len += add_request(data + len, 120000, 12, &h[2]);
    len += add_request(data + len, 80000, 13, &h[3]);
    static const size_t pieces[] = {4096};
    /* The first answer is held until everything is sent: 300 KB behind it
     * against an inbuf of 72 KB. */
    char *in = exchange(&f, fd, data, len, pieces, 1, 4, len);
    CHECK(first < len);
    check_answer(in, 0, 5, h[0]);
    check_answer(in, 1, 100000, h[1]);
    check_answer(in, 2, 120000, h[2]);
    check_answer(in, 3, 80000, h[3]);
    free(in);
    free(data);
    stop(&f, fd);
}

TEST(pipelined_past_inbuf_while_answering_waits_and_is_all_answered)
{
    pipelined_past_inbuf(0);
}

TEST(tls_pipelined_past_inbuf_while_answering_waits_and_is_all_answered)
{
    pipelined_past_inbuf(1);
}
