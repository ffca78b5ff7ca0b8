#include "graph/status.h"

#include "graph/names.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char error_message[1024];
static enum wh_log_level log_level = WH_LOG_WARN;

const char *wh_status_name(enum wh_status st)
{
	switch (st) {
	case WH_OK: return "ok";
	case WH_ERR_NOMEM: return "out of memory";
	case WH_ERR_IO: return "i/o error";
	case WH_ERR_PARSE: return "parse error";
	case WH_ERR_INVALID: return "invalid input";
	case WH_ERR_UNSUPPORTED: return "unsupported";
	case WH_ERR_SHAPE: return "shape mismatch";
	case WH_ERR_OVERFLOW: return "size overflow";
	case WH_ERR_USAGE: return "usage error";
	case WH_ERR_NOT_FOUND: return "not found";
	case WH_ERR_CYCLE: return "cycle";
	case WH_ERR_CHECK: return "check command broken";
	case WH_ERR_TIMEOUT: return "timeout";
	case WH_ERR_INTERNAL: return "internal error";
	}
	return "unknown status";
}

enum wh_status wh_error(enum wh_status st, const char *fmt, ...)
{
	/* formatted aside first: callers may wrap the current message
	 * (wh_error(st, "...: %s", wh_error_message())), and formatting into the buffer one
	 * reads from erases it */
	char line[sizeof error_message];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	memcpy(error_message, line, sizeof line);
	/* one line, always */
	for (char *p = error_message; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	wh_debug("error: %s", error_message);
	return st;
}

const char *wh_error_message(void)
{
	return error_message;
}

void wh_error_clear(void)
{
	error_message[0] = '\0';
}

void wh_log_set_level(enum wh_log_level level)
{
	log_level = level;
}

enum wh_log_level wh_log_get_level(void)
{
	return log_level;
}

void wh_log(enum wh_log_level level, const char *fmt, ...)
{
	if (level > log_level)
		return;
	static const char *const prefix[] = {"error", "warning", "info", "debug"};
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* names inside were escaped where they were formatted; this keeps a missed one (or a
	 * path, a check's output) from reaching the terminal raw */
	char shown[4096];
	wh_name_escape_line(buf, shown, sizeof shown);
	fprintf(stderr, "whittle: %s: %s\n", prefix[level], shown);
}
