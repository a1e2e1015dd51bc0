/* Logging to stderr: one line per call, written with a single write(2) so
 * lines from several threads never interleave. Level names follow the routers
 * kvgate replaces (--log-level debug|info|warn|error). */
#ifndef KVG_BASE_LOG_H
#define KVG_BASE_LOG_H

enum kvg_log_level { KVG_LOG_DEBUG, KVG_LOG_INFO, KVG_LOG_WARN, KVG_LOG_ERROR, KVG_LOG_OFF };

/* Parses "debug", "info", "warn"/"warning", "error", "off"; -1 if unknown. */
int kvg_log_parse_level(const char *s);
void kvg_log_set_level(enum kvg_log_level lvl);
int kvg_log_enabled(enum kvg_log_level lvl);
void kvg_log(enum kvg_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes a preformatted line (a JSON access-log record) as is, plus '\n'. */
void kvg_log_raw(const char *line, unsigned long len);

#define KVG_DEBUG(...)                                                                             \
    (kvg_log_enabled(KVG_LOG_DEBUG) ? kvg_log(KVG_LOG_DEBUG, __VA_ARGS__) : (void)0)
#define KVG_INFO(...) kvg_log(KVG_LOG_INFO, __VA_ARGS__)
#define KVG_WARN(...) kvg_log(KVG_LOG_WARN, __VA_ARGS__)
#define KVG_ERROR(...) kvg_log(KVG_LOG_ERROR, __VA_ARGS__)

#endif
