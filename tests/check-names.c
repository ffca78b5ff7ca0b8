/* graph/names.h: the one way to show a model's names on a terminal and in Markdown. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/names.h"

static int has_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
			return 1;
	return 0;
}

START_TEST(test_terminal_escapes_controls_and_keeps_plain_names)
{
	ck_assert_str_eq(wh_name_term("/model/layers.0/self_attn/MatMul_1"), "/model/layers.0/self_attn/MatMul_1");
	ck_assert_str_eq(wh_name_term("a\nb\tc\rd"), "a\\nb\\tc\\rd");
	ck_assert_str_eq(wh_name_term("\x1b[2J\x1b]52;c;cGFzcw==\a"), "\\x1b[2J\\x1b]52;c;cGFzcw==\\x07");
	ck_assert_str_eq(wh_name_term("del\x7f"), "del\\x7f");
	/* C1 CSI (U+009B) in UTF-8, a lone continuation byte, a truncated sequence */
	ck_assert_str_eq(wh_name_term("x\xc2\x9b" "2J"), "x\\xc2\\x9b2J");
	ck_assert_str_eq(wh_name_term("\x9b" "2J"), "\\x9b2J");
	ck_assert_str_eq(wh_name_term("\xe2\x82"), "\\xe2\\x82");
	/* valid UTF-8 stays readable; overlong and surrogate forms do not pass */
	ck_assert_str_eq(wh_name_term("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	ck_assert_str_eq(wh_name_term("\xc0\xaf"), "\\xc0\\xaf");
	ck_assert_str_eq(wh_name_term("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	ck_assert_str_eq(wh_name_term(NULL), "");
}
END_TEST

START_TEST(test_escaping_is_idempotent)
{
	const char *names[] = {"a\\nb", "\x1b[31mred", "x|y`z`", "\xff\xfe", "tab\there"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char once[256], twice[256];
		snprintf(once, sizeof once, "%s", wh_name_term(names[i]));
		snprintf(twice, sizeof twice, "%s", wh_name_term(once));
		ck_assert_str_eq(once, twice);
	}
}
END_TEST

START_TEST(test_markdown_code_span_fence_is_longer_than_any_backtick_run)
{
	ck_assert_str_eq(wh_name_md("conv1"), "`conv1`");
	ck_assert_str_eq(wh_name_md("a`b"), "``a`b``");
	ck_assert_str_eq(wh_name_md("a``b`c"), "```a``b`c```");
	ck_assert_str_eq(wh_name_md("`x"), "`` `x ``");
	ck_assert_str_eq(wh_name_md(""), "` `");
	ck_assert_str_eq(wh_name_md(" padded "), "`  padded  `");
	ck_assert_str_eq(wh_name_md("<script>alert(1)</script>"), "`<script>alert(1)</script>`");
	ck_assert_str_eq(wh_name_md("x\n# heading"), "`x\\n# heading`");
	/* outside a table a pipe stays a pipe; inside a cell it is escaped */
	ck_assert_str_eq(wh_name_md("a|b"), "`a|b`");
	ck_assert_str_eq(wh_name_md_cell("a|b"), "`a\\|b`");
}
END_TEST

START_TEST(test_long_names_are_cut_at_a_boundary_and_fences_close)
{
	size_t n = 5000;
	char *s = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		s[i] = i % 3 == 0 ? '\x1b' : i % 3 == 1 ? '`' : '\xc3';
	s[n] = 0;
	/* make the multi-byte characters valid: every 0xc3 needs a continuation */
	for (size_t i = 0; i + 1 < n; i++)
		if ((unsigned char)s[i] == 0xc3)
			s[i + 1] = (char)0xa9, i++;
	const char *t = wh_name_term(s);
	ck_assert(!has_control(t));
	ck_assert_ptr_nonnull(strstr(t, "...(+"));
	ck_assert_uint_le(strlen(t), WH_NAME_SHOW + 32);
	const char *m = wh_name_md(s);
	ck_assert(!has_control(m));
	/* the span opens and closes with fences of the same length */
	size_t open = strspn(m, "`"), len = strlen(m), close = 0;
	while (close < len && m[len - 1 - close] == '`')
		close++;
	ck_assert_uint_eq(open, close);
	/* the whole form is never cut */
	size_t need = wh_name_escape(WH_NAME_MD_CELL, s, NULL, 0);
	char *whole = malloc(need + 1);
	ck_assert_uint_eq(wh_name_escape(WH_NAME_MD_CELL, s, whole, need + 1), need);
	ck_assert_uint_eq(strlen(whole), need);
	ck_assert(!has_control(whole));
	free(whole);
	free(s);
}
END_TEST

START_TEST(test_escape_reports_the_needed_length_and_truncates_safely)
{
	char small[8];
	size_t need = wh_name_escape(WH_NAME_TERM, "\x1b\x1b\x1b", small, sizeof small);
	ck_assert_uint_eq(need, 12);
	ck_assert_uint_eq(strlen(small), 7);
	char line[16];
	wh_name_escape_line("ok \x1b[2J and more text", line, sizeof line);
	ck_assert(!has_control(line));
	ck_assert_uint_le(strlen(line), 15);
}
END_TEST

/* A cut never leaves half a character: the byte after the cut is the NUL wh_name_escape
 * wrote, so the cut looks at the last character kept (found by tests/fuzz-names.c) */
START_TEST(test_cut_keeps_whole_characters)
{
	char line[5];
	wh_name_escape_line("abc\xc3\xa9", line, sizeof line);
	ck_assert_str_eq(line, "abc");
	wh_name_escape_line("ab\xc3\xa9", line, sizeof line);
	ck_assert_str_eq(line, "ab\xc3\xa9");
	char name[WH_NAME_SHOW + 8];
	memset(name, 'a', WH_NAME_SHOW - 1);
	memcpy(name + WH_NAME_SHOW - 1, "\xc3\xa9zz", 5);
	const char *t = wh_name_term(name);
	ck_assert_ptr_nonnull(strstr(t, "a...(+4 bytes)"));
	ck_assert(!strchr(t, '\xc3'));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("escape");
	tcase_add_test(tc, test_terminal_escapes_controls_and_keeps_plain_names);
	tcase_add_test(tc, test_escaping_is_idempotent);
	tcase_add_test(tc, test_markdown_code_span_fence_is_longer_than_any_backtick_run);
	tcase_add_test(tc, test_long_names_are_cut_at_a_boundary_and_fences_close);
	tcase_add_test(tc, test_escape_reports_the_needed_length_and_truncates_safely);
	tcase_add_test(tc, test_cut_keeps_whole_characters);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
