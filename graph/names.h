/* One way to show a name that comes from a model (layer, tensor, input, tactic, op type).
 *
 * Model files are untrusted: a name may hold ESC sequences (clear the screen, print a fake
 * "PASS", set the clipboard through OSC 52), newlines that forge log lines or Markdown
 * headings, backticks that end a code span, `|` that breaks a table, or raw HTML. Every
 * name printed to a terminal, a log line or a report goes through this module; JSON output
 * needs none of it (jansson escapes).
 *
 * Escaping (every style): C0 control characters, DEL, C1 control characters (U+0080-U+009F
 * in UTF-8) and bytes that are not valid UTF-8 are written as `\n`, `\r`, `\t` or `\xNN`, as
 * git does for paths. A backslash is left alone, so escaping is idempotent (an escaped string
 * escapes to itself) and the usual names (`/model/layers.0/Add_1`) print unchanged.
 *
 * Styles:
 *   WH_NAME_TERM     the escaped text, for stdout/stderr.
 *   WH_NAME_MD_CODE  a CommonMark code span around the escaped text, its fence one backtick
 *                    longer than the longest backtick run inside, padded with a space where
 *                    the text starts or ends with a backtick or is blank: renders as exactly
 *                    the escaped text, with no HTML, emphasis or link.
 *   WH_NAME_MD_CELL  the code span for a GFM table cell: `|` is also written as `\|`, which
 *                    GFM removes inside cells (code spans included), so the table keeps its
 *                    columns.
 *
 * Ownership: wh_name_escape writes into the caller's buffer. wh_name_term/_md/_md_cell
 * return a pointer into a per-thread ring of WH_NAME_RING buffers, valid until as many later
 * calls on the same thread; a result longer than WH_NAME_SHOW bytes is cut at a character
 * boundary and ends in "...(+N bytes)". Use them inside one printf; use wh_name_write for
 * files, which never cuts. */
#ifndef WH_NAMES_H
#define WH_NAMES_H

#include <stddef.h>
#include <stdio.h>

enum wh_name_style { WH_NAME_TERM = 0, WH_NAME_MD_CODE = 1, WH_NAME_MD_CELL = 2 };

#define WH_NAME_RING 8
#define WH_NAME_SHOW 1024

/* Writes s (NULL reads as "") in the given style into out (cap bytes, cap 0 allowed), always
 * NUL-terminated when cap > 0. Returns the length the whole result needs, without the NUL,
 * as snprintf does. */
size_t wh_name_escape(enum wh_name_style style, const char *s, char *out, size_t cap);

/* Writes s in the given style to f, whole. Returns 0, or -1 on a write error. */
int wh_name_write(FILE *f, enum wh_name_style style, const char *s);

const char *wh_name_term(const char *s);
const char *wh_name_md(const char *s);
const char *wh_name_md_cell(const char *s);
/* The one of the three above that style names: for text built once in either form (a
 * terminal line or a report line). */
const char *wh_name_as(enum wh_name_style style, const char *s);

/* Writes line into out with every control character escaped for the terminal, as
 * WH_NAME_TERM does: for log and error lines whose parts were formatted before (defence in
 * depth: names should already be escaped, and escaping is idempotent). out gets at most cap
 * bytes, NUL included, cut at a character boundary. */
void wh_name_escape_line(const char *line, char *out, size_t cap);

#endif
