/* Status codes, the error line, and logging.
 *
 * Errors are values: every fallible function returns enum wh_status. The place where a
 * failure is found knows its subject best, so it records the one-line explanation with
 * wh_error() ("<what>: <why> (<what to do>)"); callers pass the status up unchanged and only
 * the CLI prints it, prefixed with "whittle: ". The message lives in a per-thread slot,
 * like errno: the single piece of mutable state besides the CPU feature table and the log
 * verbosity, both set once at start-up (see docs/architecture.md). */
#ifndef WH_STATUS_H
#define WH_STATUS_H

#include <stdarg.h>

enum wh_status {
	WH_OK = 0,
	WH_ERR_NOMEM = -1,       /* allocation failed */
	WH_ERR_IO = -2,          /* file missing, unreadable or unwritable */
	WH_ERR_PARSE = -3,       /* bytes are not a valid model / tensor file */
	WH_ERR_INVALID = -4,     /* well-formed but semantically invalid input */
	WH_ERR_UNSUPPORTED = -5, /* valid but not implemented (op, dtype, attribute) */
	WH_ERR_SHAPE = -6,       /* shapes do not match */
	WH_ERR_OVERFLOW = -7,    /* a size computed from input overflows or is too large */
	WH_ERR_USAGE = -8,       /* bad command-line or API argument */
	WH_ERR_NOT_FOUND = -9,   /* a named tensor/node/file does not exist */
	WH_ERR_CYCLE = -10,      /* graph has a cycle */
	WH_ERR_CHECK = -11,      /* the user's check command is broken */
	WH_ERR_TIMEOUT = -12,
	WH_ERR_INTERNAL = -13,
};

const char *wh_status_name(enum wh_status st);

/* Record the explanation of a failure for this thread and return st, so callers write
 * `return wh_error(WH_ERR_IO, "%s: cannot open: %s (check the path)", path, strerror(e));`.
 * The message is also logged at debug level. */
enum wh_status wh_error(enum wh_status st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The last message recorded on this thread, or "" if none. Valid until the next wh_error. */
const char *wh_error_message(void);
void wh_error_clear(void);

enum wh_log_level { WH_LOG_ERROR = 0, WH_LOG_WARN = 1, WH_LOG_INFO = 2, WH_LOG_DEBUG = 3 };
/* Set once by the CLI before any thread starts. Default WH_LOG_WARN. */
void wh_log_set_level(enum wh_log_level level);
enum wh_log_level wh_log_get_level(void);
void wh_log(enum wh_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define wh_warn(...) wh_log(WH_LOG_WARN, __VA_ARGS__)
#define wh_info(...) wh_log(WH_LOG_INFO, __VA_ARGS__)
#define wh_debug(...) wh_log(WH_LOG_DEBUG, __VA_ARGS__)

#endif
