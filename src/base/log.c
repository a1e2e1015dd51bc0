/* stderr logger; see log.h. */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Atomic int g_level = KVG_LOG_INFO;

int kvg_log_parse_level(const char *s)
{
    if (!strcasecmp(s, "debug") || !strcasecmp(s, "trace")) return KVG_LOG_DEBUG;
    if (!strcasecmp(s, "info")) return KVG_LOG_INFO;
    if (!strcasecmp(s, "warn") || !strcasecmp(s, "warning")) return KVG_LOG_WARN;
    if (!strcasecmp(s, "error")) return KVG_LOG_ERROR;
    if (!strcasecmp(s, "off")) return KVG_LOG_OFF;
    return -1;
}

void kvg_log_set_level(enum kvg_log_level lvl)
{
    g_level = lvl;
}

int kvg_log_enabled(enum kvg_log_level lvl)
{
    return (int)lvl >= g_level;
}

static void write_all(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

void kvg_log(enum kvg_log_level lvl, const char *fmt, ...)
{
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    if (!kvg_log_enabled(lvl) || lvl >= KVG_LOG_OFF) return;
    char line[2048];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int)(tv.tv_usec / 1000), names[lvl]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0) m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2) len = sizeof line - 2;
    line[len++] = '\n';
    write_all(line, len);
}

void kvg_log_raw(const char *line, unsigned long len)
{
    char small[1024];
    if (len < sizeof small) {
        memcpy(small, line, len);
        small[len] = '\n';
        write_all(small, len + 1);
        return;
    }
    write_all(line, len); /* long lines: two writes; access logs stay short */
    write_all("\n", 1);
}
