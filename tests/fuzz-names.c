/* libFuzzer target for graph/names.h: the input (cut at its first NUL) is escaped in every
 * style, whole (wh_name_escape into a buffer of the size it asks for, and into a short one)
 * and through the ring (wh_name_term/_md/_md_cell, cut past WH_NAME_SHOW), and by
 * wh_name_escape_line. Asserts: no control byte (C0, DEL, C1 in UTF-8) and nothing that is
 * not UTF-8 in any output; the returned length equals strlen of the whole result and a short
 * buffer holds its prefix; terminal escaping is idempotent; each Markdown span opens and
 * closes with fences of the same length, longer than every backtick run inside; a table
 * cell holds no unescaped `|`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void clean_or_abort(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		if (c < 0x20 || c == 0x7f)
			abort();
		if (c < 0x80) {
			p++;
			continue;
		}
		size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		if (!n)
			abort();
		for (size_t k = 1; k < n; k++)
			if ((p[k] & 0xc0) != 0x80)
				abort();
		if (c == 0xc2 && p[1] < 0xa0)
			abort(); /* C1 */
		p += n;
	}
}

static size_t run_of(const char *s, size_t from, size_t len)
{
	size_t n = 0;
	while (from + n < len && s[from + n] == '`')
		n++;
	return n;
}

static void span_or_abort(const char *m, int cell)
{
	size_t len = strlen(m), open = run_of(m, 0, len), close = 0;
	while (close < len && m[len - 1 - close] == '`')
		close++;
	if (!open || open != close || 2 * open > len)
		abort();
	/* inside: no backtick run as long as the fence */
	for (size_t i = open; i < len - close;) {
		size_t r = run_of(m, i, len - close);
		if (r >= open)
			abort();
		i += r ? r : 1;
	}
	if (cell)
		for (size_t i = 0; i < len; i++)
			if (m[i] == '|' && (i == 0 || m[i - 1] != '\\'))
				abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	for (int style = WH_NAME_TERM; style <= WH_NAME_MD_CELL; style++) {
		size_t need = wh_name_escape((enum wh_name_style)style, s, NULL, 0);
		char *whole = malloc(need + 1);
		if (!whole)
			break;
		if (wh_name_escape((enum wh_name_style)style, s, whole, need + 1) != need || strlen(whole) != need)
			abort();
		clean_or_abort(whole);
		char small[7];
		wh_name_escape((enum wh_name_style)style, s, small, sizeof small);
		if (strncmp(small, whole, sizeof small - 1) || strlen(small) != (need < sizeof small ? need : sizeof small - 1))
			abort();
		if (style == WH_NAME_TERM) {
			size_t again = wh_name_escape(WH_NAME_TERM, whole, NULL, 0);
			char *twice = malloc(again + 1);
			if (twice) {
				wh_name_escape(WH_NAME_TERM, whole, twice, again + 1);
				if (again != need || strcmp(twice, whole))
					abort();
			}
			free(twice);
		} else {
			span_or_abort(whole, style == WH_NAME_MD_CELL);
		}
		const char *shown = wh_name_as((enum wh_name_style)style, s);
		clean_or_abort(shown);
		if (style != WH_NAME_TERM)
			span_or_abort(shown, style == WH_NAME_MD_CELL);
		else if (need <= WH_NAME_SHOW && strcmp(shown, whole))
			abort();
		free(whole);
	}
	char line[97];
	wh_name_escape_line(s, line, sizeof line);
	clean_or_abort(line);
	free(s);
	return 0;
}
