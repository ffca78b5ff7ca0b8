/* reducer/driver-util.h's replay loader counts real lines (issue 22 finding 12): lines longer
 * than any buffer are read whole, and an error names the line it is on, not a count of 4 KiB
 * chunks. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reducer/driver-util.h"

static void write_replay(const char *path, int good_lines, size_t pad, const char *last)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	char *p = malloc(pad + 1);
	ck_assert_ptr_nonnull(p);
	memset(p, 'x', pad);
	p[pad] = '\0';
	for (int i = 0; i < good_lines; i++)
		fprintf(f, "{\"hash\":\"%032x\",\"verdict\":\"pass\",\"pad\":\"%s\"}\n", i + 1, p);
	if (last)
		fputs(last, f);
	free(p);
	fclose(f);
}

START_TEST(test_long_lines_are_lines)
{
	char path[] = "/tmp/wh-replay-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* 15 verdicts of 20000 bytes each and a 16th line that is not one */
	write_replay(path, 15, 20000, "not json\n");
	struct wh_verdict_cache c;
	wh_verdict_cache_init(&c);
	unsigned loaded = 0;
	ck_assert_int_eq(wh_verdict_cache_load(&c, path, NULL, &loaded), WH_ERR_PARSE);
	ck_assert_msg(strstr(wh_error_message(), ":16:") != NULL, "%s", wh_error_message());
	ck_assert_uint_eq(loaded, 15);
	wh_verdict_cache_release(&c);
	/* read whole, every long verdict is loaded; a cut last line (a killed run) is ignored */
	write_replay(path, 15, 20000, "{\"hash\":\"00");
	wh_verdict_cache_init(&c);
	ck_assert_int_eq(wh_verdict_cache_load(&c, path, NULL, &loaded), WH_OK);
	ck_assert_uint_eq(loaded, 15);
	ck_assert_uint_eq(c.n, 15);
	wh_verdict_cache_release(&c);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("replay-lines");
	TCase *tc = tcase_create("lines");
	tcase_add_test(tc, test_long_lines_are_lines);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
