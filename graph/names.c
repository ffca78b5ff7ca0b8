/* One way to show a name from a model: see names.h. */
#include "graph/names.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when s does not start one. Overlong
 * forms, surrogates and code points above U+10FFFF are invalid. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if (c == 0xe0 && s[1] < 0xa0)
			return 0; /* overlong */
		if (c == 0xed && s[1] >= 0xa0)
			return 0; /* surrogate */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if (c == 0xf0 && s[1] < 0x90)
			return 0;
		if (c == 0xf4 && s[1] >= 0x90)
			return 0;
		return 4;
	}
	return 0;
}

/* An output cursor that counts what it could not store. */
struct sink {
	char *out;
	size_t cap, len;
};

static void put(struct sink *k, const char *p, size_t n)
{
	if (k->len < k->cap) {
		size_t room = k->cap - k->len;
		memcpy(k->out + k->len, p, n < room ? n : room);
	}
	k->len += n;
}

/* The escaped form of the character at s: writes it to k and returns how many bytes of s it
 * took. */
static size_t put_escaped_char(struct sink *k, const unsigned char *s, int cell)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = utf8_len(s);
	unsigned c = s[0];
	if (n == 1 && c >= 0x20 && c != 0x7f) {
		if (cell && c == '|')
			put(k, "\\|", 2);
		else
			put(k, (const char *)s, 1);
		return 1;
	}
	if (n == 2 && c == 0xc2 && s[1] < 0xa0) {
		/* C1 control (U+0080-U+009F): CSI and OSC have one-character forms */
		char e[8] = {'\\', 'x', hex[0xc], '2', '\\', 'x', hex[s[1] >> 4], hex[s[1] & 15]};
		put(k, e, 8);
		return 2;
	}
	if (n > 1) {
		put(k, (const char *)s, n);
		return n;
	}
	const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
	if (named) {
		put(k, named, 2);
	} else {
		char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
		put(k, e, 4);
	}
	return 1;
}

static void put_escaped(struct sink *k, const char *s, int cell)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p)
		p += put_escaped_char(k, p, cell);
}

size_t wh_name_escape(enum wh_name_style style, const char *s, char *out, size_t cap)
{
	struct sink k = {out, cap ? cap - 1 : 0, 0};
	if (!s)
		s = "";
	if (style == WH_NAME_TERM) {
		put_escaped(&k, s, 0);
	} else {
		size_t run = 0, longest = 0;
		for (const char *p = s; *p; p++) {
			run = *p == '`' ? run + 1 : 0;
			if (run > longest)
				longest = run;
		}
		size_t n = strlen(s);
		/* CommonMark strips one space from each side of a span that starts and ends with
		 * one and is not all spaces; padding both sides keeps such a name whole */
		int pad = n == 0 || s[0] == '`' || s[n - 1] == '`' || s[0] == ' ' || s[n - 1] == ' ';
		for (size_t i = 0; i <= longest; i++)
			put(&k, "`", 1);
		if (pad)
			put(&k, " ", 1);
		put_escaped(&k, s, style == WH_NAME_MD_CELL);
		if (pad && n)
			put(&k, " ", 1);
		for (size_t i = 0; i <= longest; i++)
			put(&k, "`", 1);
	}
	if (cap)
		out[k.len < k.cap ? k.len : k.cap] = 0;
	return k.len;
}

int wh_name_write(FILE *f, enum wh_name_style style, const char *s)
{
	char small[512];
	size_t need = wh_name_escape(style, s, small, sizeof small);
	if (need < sizeof small)
		return fputs(small, f) < 0 ? -1 : 0;
	char *big = malloc(need + 1);
	if (!big)
		return -1;
	wh_name_escape(style, s, big, need + 1);
	int rc = fputs(big, f) < 0 ? -1 : 0;
	free(big);
	return rc;
}

/* Where to cut t (escaped text: ASCII and whole UTF-8 sequences) to keep at most cut bytes
 * and no partial character. The byte at t[cut] cannot tell: wh_name_escape has put the NUL
 * there, so the last character kept is looked at instead. */
static size_t char_boundary(const char *t, size_t cut)
{
	size_t i = cut;
	while (i > 0 && ((unsigned char)t[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return 0;
	unsigned c = (unsigned char)t[i - 1];
	size_t n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	return i - 1 + n <= cut ? cut : i - 1;
}

/* The escaped text is cut at a character boundary (never inside an escape such as \x1b) and
 * marked with how much was left out; the Markdown styles then wrap the cut text, so their
 * fences always close. Escaping is idempotent, so wrapping the escaped text is exact. */
static const char *ring(enum wh_name_style style, const char *s)
{
	/* worst case: a fence of SHOW+33 backticks on each side around SHOW+32 bytes, each '|'
	 * doubled, and two pads */
	static _Thread_local char slots[WH_NAME_RING][4 * WH_NAME_SHOW + 256];
	static _Thread_local unsigned next;
	char *buf = slots[next++ % WH_NAME_RING];
	char text[WH_NAME_SHOW + 40];
	size_t need = wh_name_escape(WH_NAME_TERM, s, text, WH_NAME_SHOW + 1);
	if (need > WH_NAME_SHOW) {
		size_t cut = char_boundary(text, WH_NAME_SHOW);
		/* an escape is a backslash, then 'x' and two hex digits, or one letter */
		for (size_t back = 1; back <= 3 && back <= cut; back++)
			if (text[cut - back] == '\\' && (back == 1 || text[cut - back + 1] == 'x')) {
				cut -= back;
				break;
			}
		snprintf(text + cut, sizeof text - cut, "...(+%zu bytes)", need - cut);
	}
	if (style == WH_NAME_TERM)
		memcpy(buf, text, strlen(text) + 1);
	else
		wh_name_escape(style, text, buf, sizeof slots[0]);
	return buf;
}

const char *wh_name_term(const char *s) { return ring(WH_NAME_TERM, s); }
const char *wh_name_md(const char *s) { return ring(WH_NAME_MD_CODE, s); }
const char *wh_name_md_cell(const char *s) { return ring(WH_NAME_MD_CELL, s); }
const char *wh_name_as(enum wh_name_style style, const char *s) { return ring(style, s); }

void wh_name_escape_line(const char *line, char *out, size_t cap)
{
	size_t need = wh_name_escape(WH_NAME_TERM, line, out, cap);
	if (cap == 0 || need < cap)
		return;
	/* cut: back off to a character boundary */
	out[char_boundary(out, cap - 1)] = 0;
}
