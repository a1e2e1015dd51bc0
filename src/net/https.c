/* The blocking HTTP(S) client; see https.h. */
#include "net/https.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/err.h"
#include "base/util.h"

int kvg_https_init(struct kvg_https *a, const char *url, const char *ca_file,
                   const char *token_file, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    atomic_store(&a->fd, -1);
    a->connect_timeout_ms = 5000;
    const char *hp;
    if (!strncmp(url, "https://", 8)) {
        a->tls = 1;
        hp = url + 8;
    } else if (!strncmp(url, "http://", 7)) {
        hp = url + 7;
    } else {
        return kvg_err_set(err, errlen, KVG_ECONFIG, "API server URL '%s': http(s)://host:port",
                           url);
    }
    size_t hl = strcspn(hp, "/");
    char hostport[256];
    if (hl == 0 || hl >= sizeof hostport)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "API server URL '%s': no host", url);
    memcpy(hostport, hp, hl);
    hostport[hl] = 0;
    char *colon = hostport[0] == '[' ? strstr(hostport, "]:") : strrchr(hostport, ':');
    if (colon && hostport[0] == '[') colon++;
    a->port = a->tls ? 443 : 80;
    if (colon) {
        *colon = 0;
        uint64_t p;
        if (kvg_parse_u64(colon + 1, &p) || p == 0 || p > 65535)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "API server URL '%s': bad port", url);
        a->port = (int)p;
    }
    char *h = hostport;
    if (h[0] == '[') {
        h++;
        h[strcspn(h, "]")] = 0;
    }
    snprintf(a->host, sizeof a->host, "%s", h);
    snprintf(a->token_file, sizeof a->token_file, "%s", token_file ? token_file : "");
    if (!a->tls) return 0;
    a->ctx = SSL_CTX_new(TLS_client_method());
    if (!a->ctx) return kvg_err_set(err, errlen, KVG_ECONFIG, "cannot create a TLS context");
    SSL_CTX_set_min_proto_version(a->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(a->ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file && ca_file[0] ? SSL_CTX_load_verify_locations(a->ctx, ca_file, NULL)
                                   : SSL_CTX_set_default_verify_paths(a->ctx);
    if (ok != 1) {
        unsigned long e = ERR_get_error();
        char reason[256] = "unknown error";
        if (e) ERR_error_string_n(e, reason, sizeof reason);
        ERR_clear_error();
        kvg_https_free(a);
        return kvg_err_set(err, errlen, KVG_ECONFIG, "API server CA %s: %s",
                           ca_file ? ca_file : "(system)", reason);
    }
    return 0;
}

void kvg_https_free(struct kvg_https *a)
{
    if (a->ctx) SSL_CTX_free(a->ctx);
    a->ctx = NULL;
}

void kvg_https_abort(struct kvg_https *a)
{
    atomic_store(&a->aborted, 1);
    int fd = atomic_load(&a->fd);
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
}

/* A TCP connection within the connect timeout; fd or a negative code. */
static int dial(struct kvg_https *a)
{
    char port[16];
    snprintf(port, sizeof port, "%d", a->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(a->host, port, &hints, &res) || !res) return KVG_ENOTFOUND;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return -errno;
    }
    int rc = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc && errno != EINPROGRESS) goto fail_errno;
    if (rc) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n = poll(&p, 1, (int)a->connect_timeout_ms);
        if (n == 0) {
            close(fd);
            return KVG_ETIMEOUT;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl)) goto fail_errno;
        if (soerr) {
            close(fd);
            return -soerr;
        }
    }
    /* Back to blocking: reads then wait under SO_RCVTIMEO. */
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) goto fail_errno;
    return fd;
fail_errno:
    rc = -errno;
    close(fd);
    return rc;
}

static int io_read(struct kvg_https_resp *r, char *p, size_t n)
{
    for (;;) {
        if (r->ssl) {
            int k = SSL_read(r->ssl, p, (int)KVG_MIN(n, (size_t)INT32_MAX));
            if (k > 0) return k;
            int e = SSL_get_error(r->ssl, k);
            ERR_clear_error();
            if (e == SSL_ERROR_ZERO_RETURN) return 0;
            if (e == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK))
                return KVG_ETIMEOUT;
            return e == SSL_ERROR_SYSCALL && k == 0 ? 0 : KVG_EUPSTREAM;
        }
        ssize_t k = recv(r->fd, p, n, 0);
        if (k >= 0) return (int)k;
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? KVG_ETIMEOUT : -errno;
    }
}

static int io_write_all(struct kvg_https_resp *r, const char *p, size_t n)
{
    while (n) {
        ssize_t k;
        if (r->ssl) {
            int w = SSL_write(r->ssl, p, (int)n);
            if (w <= 0) {
                ERR_clear_error();
                return KVG_EUPSTREAM;
            }
            k = w;
        } else {
            k = send(r->fd, p, n, MSG_NOSIGNAL);
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) return -errno;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* More raw bytes into rbuf: count read, 0 at close, or an error. */
static int fill(struct kvg_https_resp *r)
{
    if (r->rpos > 0) {
        memmove(r->rbuf, r->rbuf + r->rpos, r->rlen - r->rpos);
        r->rlen -= r->rpos;
        r->rpos = 0;
    }
    if (r->rlen == sizeof r->rbuf) return KVG_ETOOBIG;
    int k = io_read(r, r->rbuf + r->rlen, sizeof r->rbuf - r->rlen);
    if (k > 0) r->rlen += (size_t)k;
    return k;
}

/* A raw CRLF- or LF-terminated line (head, chunk sizes) into line[cap]. */
static int raw_line(struct kvg_https_resp *r, char *line, size_t cap)
{
    for (;;) {
        char *nl = memchr(r->rbuf + r->rpos, '\n', r->rlen - r->rpos);
        if (nl) {
            size_t n = (size_t)(nl - (r->rbuf + r->rpos));
            size_t m = n && r->rbuf[r->rpos + n - 1] == '\r' ? n - 1 : n;
            if (m >= cap) return KVG_ETOOBIG;
            memcpy(line, r->rbuf + r->rpos, m);
            line[m] = 0;
            r->rpos += n + 1;
            return (int)m;
        }
        int k = fill(r);
        if (k == 0) return KVG_ECLOSED;
        if (k < 0) return k;
    }
}

static void set_timeout(int fd, uint32_t ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int tls_start(struct kvg_https *a, struct kvg_https_resp *r)
{
    if (!(r->ssl = SSL_new(a->ctx))) return -ENOMEM;
    struct in6_addr ip;
    int is_ip = inet_pton(AF_INET, a->host, &ip) == 1 || inet_pton(AF_INET6, a->host, &ip) == 1;
    /* KUBERNETES_SERVICE_HOST is an IP: the API server's certificate names
     * it in an IP SAN, so verify the IP, not a name. */
    X509_VERIFY_PARAM *vp = SSL_get0_param(r->ssl);
    if (is_ip) {
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, a->host) != 1) return KVG_ECONFIG;
    } else {
        SSL_set_tlsext_host_name(r->ssl, a->host);
        if (SSL_set1_host(r->ssl, a->host) != 1) return KVG_ECONFIG;
    }
    SSL_set_fd(r->ssl, r->fd);
    if (SSL_connect(r->ssl) != 1) {
        ERR_clear_error();
        return KVG_EUPSTREAM;
    }
    return 0;
}

static void read_token(const char *file, char *tok, size_t cap)
{
    tok[0] = 0;
    if (!file[0]) return;
    FILE *f = fopen(file, "r");
    if (!f) return;
    size_t n = fread(tok, 1, cap - 1, f);
    fclose(f);
    while (n && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' ')) n--;
    tok[n] = 0;
}

static int read_head(struct kvg_https_resp *r)
{
    char line[8192];
    int k = raw_line(r, line, sizeof line);
    if (k < 0) return k == KVG_ECLOSED ? KVG_EUPSTREAM : k;
    int major, minor;
    if (sscanf(line, "HTTP/%d.%d %d", &major, &minor, &r->status) != 3) return KVG_EUPSTREAM;
    r->left = -1;
    for (int i = 0; i < 200; i++) {
        if ((k = raw_line(r, line, sizeof line)) < 0) return k == KVG_ECLOSED ? KVG_EUPSTREAM : k;
        if (k == 0) return 0;
        if (!strncasecmp(line, "content-length:", 15)) {
            r->left = strtoll(line + 15, NULL, 10);
            if (r->left < 0) return KVG_EUPSTREAM;
        } else if (!strncasecmp(line, "transfer-encoding:", 18) && strcasestr(line, "chunked")) {
            r->chunked = 1;
        }
    }
    return KVG_ETOOBIG;
}

int kvg_https_get(struct kvg_https *a, const char *path, uint32_t read_timeout_ms,
                  struct kvg_https_resp *r)
{
    return kvg_https_request(a, "GET", path, NULL, NULL, 0, read_timeout_ms, r);
}

int kvg_https_request(struct kvg_https *a, const char *method, const char *path,
                      const char *content_type, const char *body, size_t body_len,
                      uint32_t read_timeout_ms, struct kvg_https_resp *r)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    int fd = dial(a);
    if (fd < 0) return fd;
    r->fd = fd;
    atomic_store(&a->fd, fd);
    /* Either the abort saw this fd or this sees the abort. */
    if (atomic_load(&a->aborted)) return KVG_ECLOSED;
    set_timeout(fd, read_timeout_ms);
    int rc;
    if (a->tls && (rc = tls_start(a, r))) return rc;
    char tok[4096];
    read_token(a->token_file, tok, sizeof tok);
    char req[8192], clen[96] = "";
    int host_v6 = strchr(a->host, ':') != NULL;
    if (content_type)
        snprintf(clen, sizeof clen, "Content-Type: %s\r\nContent-Length: %zu\r\n", content_type,
                 body_len);
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nAccept: application/json\r\n"
                     "User-Agent: kvgate\r\nConnection: close\r\n%s%s%s%s\r\n",
                     method, path, host_v6 ? "[" : "", a->host, host_v6 ? "]" : "", a->port,
                     tok[0] ? "Authorization: Bearer " : "", tok, tok[0] ? "\r\n" : "", clen);
    if (n < 0 || (size_t)n >= sizeof req) return KVG_ETOOBIG;
    if ((rc = io_write_all(r, req, (size_t)n))) return rc;
    if (body_len && (rc = io_write_all(r, body, body_len))) return rc;
    if ((rc = read_head(r))) return rc;
    if (!r->chunked && r->left == 0) r->eof = 1;
    return 0;
}

/* Up to n body bytes into p (de-chunked): count, 0 at the end, or an error. */
static int body_read(struct kvg_https_resp *r, char *p, size_t n)
{
    if (r->eof) return 0;
    if (r->chunked && r->left <= 0) {
        char line[128];
        int k;
        if (r->left == 0 && (k = raw_line(r, line, sizeof line)) < 0) return k; /* chunk's CRLF */
        if ((k = raw_line(r, line, sizeof line)) < 0) return k;
        char *end;
        long long size = strtoll(line, &end, 16);
        if (end == line || size < 0) return KVG_EUPSTREAM;
        if (size == 0) {
            r->eof = 1;
            return 0;
        }
        r->left = size;
    }
    if (r->rpos == r->rlen) {
        int k = fill(r);
        if (k < 0) return k;
        if (k == 0) {
            if (r->left < 0 && !r->chunked) {
                r->eof = 1; /* close-delimited: this is the end */
                return 0;
            }
            return KVG_ECLOSED; /* cut before the announced end */
        }
    }
    size_t m = r->rlen - r->rpos;
    if (m > n) m = n;
    if (r->left >= 0 && (int64_t)m > r->left) m = (size_t)r->left;
    memcpy(p, r->rbuf + r->rpos, m);
    r->rpos += m;
    if (r->left >= 0) {
        r->left -= (int64_t)m;
        if (!r->chunked && r->left == 0) r->eof = 1;
    }
    return (int)m;
}

int kvg_https_resp_body(struct kvg_https_resp *r, size_t cap, char **out, size_t *len)
{
    size_t n = 0, sz = 65536;
    char *b = malloc(sz);
    if (!b) return -ENOMEM;
    for (;;) {
        if (n + 1 >= sz) {
            if (sz >= cap) {
                free(b);
                return KVG_ETOOBIG;
            }
            char *nb = realloc(b, sz * 2);
            if (!nb) {
                free(b);
                return -ENOMEM;
            }
            b = nb;
            sz *= 2;
        }
        int k = body_read(r, b + n, sz - n - 1);
        if (k < 0) {
            free(b);
            return k;
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    b[n] = 0;
    *out = b;
    *len = n;
    return 0;
}

int kvg_https_resp_line(struct kvg_https_resp *r, char *line, size_t cap)
{
    size_t n = 0;
    for (;;) {
        if (n + 1 >= cap) return KVG_ETOOBIG;
        int k = body_read(r, line + n, 1);
        if (k < 0) return k;
        if (k == 0) {
            if (n == 0) return KVG_ECLOSED;
            break; /* a last line without its newline */
        }
        if (line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    return (int)n;
}

void kvg_https_resp_close(struct kvg_https *a, struct kvg_https_resp *r)
{
    if (r->ssl) {
        SSL_free(r->ssl);
        r->ssl = NULL;
    }
    if (r->fd >= 0) {
        atomic_store(&a->fd, -1);
        close(r->fd);
        r->fd = -1;
    }
}
