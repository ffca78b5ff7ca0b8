/* libFuzzer target for the name-to-file mapping (graph/tensor-file.h, issue 22): the bytes
 * are two tensor names (split at the first NUL). Each maps to a valid file name stem: at most
 * WH_TENSOR_STEM_MAX bytes (with ".npy", within NAME_MAX), not empty, no '/', no leading '.',
 * only [A-Za-z0-9._%~-]; distinct names give distinct stems; a tensor written under a name
 * (wh_tensor_set_write_dir) reads back (wh_tensor_set_read_dir) with exactly that name, and
 * so does a .npy under an escaped (not hashed) stem, which stores no name. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/tensor-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_stem(const char *name, const char *stem)
{
	size_t len = strlen(stem);
	if (!len || len > WH_TENSOR_STEM_MAX || len + 4 > 255 || stem[0] == '.')
		abort();
	for (size_t i = 0; i < len; i++) {
		char c = stem[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("._%~-", c)))
			abort();
	}
	/* only a name whose escaped form is too long is hashed (at most 3 bytes a byte) */
	if (wh_tensor_file_is_hashed(stem, len) && strlen(name) <= WH_TENSOR_STEM_MAX / 3)
		abort();
}

/* Each fuzzing process has its own scratch folder, empty between inputs and removed at
 * exit. */
static char scratch_dir[PATH_MAX];

static void scratch_remove(void)
{
	rmdir(scratch_dir);
}

static const char *scratch(void)
{
	if (!scratch_dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(scratch_dir, sizeof scratch_dir, "%s/whittle-fuzz-names-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(scratch_dir))
			abort();
		atexit(scratch_remove);
	}
	return scratch_dir;
}

static void read_back(const char *dir, const char *path, const char *name)
{
	struct wh_tensor_set r;
	wh_tensor_set_init(&r);
	if (wh_tensor_set_read_dir(dir, NULL, &r) != WH_OK || r.n != 1 || !r.items[0].name || strcmp(r.items[0].name, name))
		abort();
	wh_tensor_set_release(&r);
	if (unlink(path) != 0)
		abort();
}

static void round_trip(const char *name, const char *stem)
{
	const char *dir = scratch();
	struct wh_tensor t;
	wh_tensor_init(&t);
	int64_t dims[1] = {1};
	if (wh_tensor_alloc(&t, WH_DT_FLOAT, 1, dims) != WH_OK)
		abort();
	((float *)t.data)[0] = 1;
	struct wh_tensor_set s;
	wh_tensor_set_init(&s);
	char path[PATH_MAX];
	if (wh_tensor_set_add(&s, name, -1, &t) != WH_OK || wh_tensor_set_write_dir(dir, NULL, &s) != WH_OK ||
	    wh_tensor_file_path(dir, name, ".pb", path, sizeof path) != WH_OK || access(path, F_OK) != 0)
		abort();
	read_back(dir, path, name); /* the name stored in the .pb */
	/* input_<k>.npy and output_<k>.npy are read by position (tensor-file.h), as the ONNX
	 * test data has them */
	bool positional = false;
	for (int w = 0; w < 2; w++) {
		const char *word = w ? "output_" : "input_";
		size_t l = strlen(word), d = strspn(name + (strncmp(name, word, l) ? 0 : l), "0123456789");
		positional |= !strncmp(name, word, l) && d >= 1 && d <= 9 && !name[l + d];
	}
	if (!positional && !wh_tensor_file_is_hashed(stem, strlen(stem))) {
		/* a .npy stores no name: its file name must give it back */
		if (wh_tensor_file_path(dir, name, ".npy", path, sizeof path) != WH_OK || wh_tensor_write_npy(path, &t) != WH_OK)
			abort();
		read_back(dir, path, name);
	}
	wh_tensor_set_release(&s);
	wh_tensor_release(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *buf = malloc(size + 2);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = '\0';
	const char *a = buf, *b = buf + strlen(buf) + 1;
	if (b > buf + size)
		b = buf + size; /* no NUL: b is empty */
	char sa[WH_TENSOR_STEM_MAX + 1], sb[WH_TENSOR_STEM_MAX + 1];
	wh_tensor_name_to_file(a, sa);
	wh_tensor_name_to_file(b, sb);
	check_stem(a, sa);
	check_stem(b, sb);
	if (strcmp(a, b) != 0 && strcmp(sa, sb) == 0)
		abort();
	if (*a)
		round_trip(a, sa);
	free(buf);
	return 0;
}
