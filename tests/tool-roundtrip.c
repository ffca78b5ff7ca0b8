/* Round-trip helper for tests/e2e-roundtrip.sh: loads each model with wh_model_load and
 * saves it with wh_model_save, all in one process (thousands of models, one start-up).
 *
 *   tool-roundtrip OUTDIR [MODEL...]     (no MODEL: paths are read from stdin, one a line)
 *
 * The k-th model (from 0) is saved as OUTDIR/<k>.onnx. One line per model on stdout,
 * tab-separated so paths may hold spaces:
 *   ok<TAB><saved path><TAB><model path>
 *   error<TAB><model path><TAB><status name>: <message>
 * Exit status: 0 when every model loaded and saved, 1 when any did not, 2 on usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ir.h"
#include "graph/onnx-io.h"
#include "graph/status.h"

static enum wh_status wh_roundtrip_one(const char *in, const char *out)
{
	struct wh_model *m = NULL;
	enum wh_status st = wh_model_load(in, &m);
	if (st == WH_OK)
		st = wh_model_save(m, out);
	wh_model_destroy(m);
	return st;
}

/* Returns 1 when the model failed, 0 when it round-tripped, -1 when the report could not
 * be written (stdout closed: nothing more is worth doing). */
static int wh_roundtrip_report(const char *outdir, unsigned long k, const char *in)
{
	char out[4096];
	int n = snprintf(out, sizeof out, "%s/%lu.onnx", outdir, k);
	if (n < 0 || (size_t)n >= sizeof out) {
		printf("error\t%s\t%s: output path too long\n", in, wh_status_name(WH_ERR_USAGE));
		return 1;
	}
	wh_error_clear();
	enum wh_status st = wh_roundtrip_one(in, out);
	if (st == WH_OK)
		n = printf("ok\t%s\t%s\n", out, in);
	else
		n = printf("error\t%s\t%s: %s\n", in, wh_status_name(st), wh_error_message());
	if (n < 0 || fflush(stdout) != 0)
		return -1;
	return st == WH_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(stderr, "usage: tool-roundtrip OUTDIR [MODEL...] (no MODEL: paths on stdin)\n");
		return 2;
	}
	const char *outdir = argv[1];
	unsigned long k = 0;
	int failed = 0;
	int r;

	if (argc > 2) {
		for (int i = 2; i < argc; i++) {
			r = wh_roundtrip_report(outdir, k++, argv[i]);
			if (r < 0)
				return 1;
			failed |= r;
		}
		return failed;
	}

	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, stdin)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0)
			continue;
		r = wh_roundtrip_report(outdir, k++, line);
		if (r < 0) {
			failed = 1;
			break;
		}
		failed |= r;
	}
	if (ferror(stdin)) {
		fprintf(stderr, "tool-roundtrip: reading model paths from stdin: %s\n", strerror(errno));
		failed = 1;
	}
	free(line);
	return failed;
}
