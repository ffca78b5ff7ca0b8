/* Tensor files: .pb and .npy round trips for every type, files written by numpy and onnx
 * (fixtures/tensors, made by scripts/gen-tensor-fixtures.py), the ONNX backend test data,
 * data-set folders, and hostile input. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/tensor-file.h"

/* ---- helpers ---- */

/* snprintf into a path buffer that must not truncate */
#define PATHF(buf, ...) ck_assert_int_lt(snprintf(buf, sizeof buf, __VA_ARGS__), (int)sizeof buf)

static char tmp_root[PATH_MAX];

static void make_tmp_root(void)
{
	const char *base = getenv("TMPDIR");
	PATHF(tmp_root, "%s/wh-tensor-file-XXXXXX", base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmp_root));
}

static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char sub[PATH_MAX];
			PATHF(sub, "%s/%s", path, de->d_name);
			remove_tree(sub);
		}
		closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

static void setup(void)
{
	make_tmp_root();
}

static void teardown(void)
{
	remove_tree(tmp_root);
}

static const char *tmp_path(char *buf, size_t size, const char *name)
{
	ck_assert_int_lt(snprintf(buf, size, "%s/%s", tmp_root, name), (int)size);
	return buf;
}

static const char *src_dir(void)
{
	const char *s = getenv("WHITTLE_SRC");
	return s && *s ? s : ".";
}


/* A tensor of type dt whose bytes follow a pattern that every type can hold. */
static void make_pattern(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	if (dt == WH_DT_STRING) {
		uint64_t count;
		ck_assert(wh_shape_count(dims, rank, &count));
		const char *s[64];
		size_t l[64];
		char bufs[64][16];
		ck_assert_uint_le(count, 64);
		if (!count) {
			/* wh_tensor_alloc_strings trips UBSan (NULL + 0) for an empty tensor */
			ck_assert_int_eq(wh_tensor_alloc(t, WH_DT_STRING, rank, dims), WH_OK);
			return;
		}
		for (uint64_t i = 0; i < count; i++) {
			snprintf(bufs[i], sizeof bufs[i], i % 3 ? "s%llu" : "", (unsigned long long)i * 7);
			s[i] = bufs[i];
			l[i] = strlen(bufs[i]);
		}
		ck_assert_int_eq(wh_tensor_alloc_strings(t, rank, dims, s, l), WH_OK);
		return;
	}
	ck_assert_int_eq(wh_tensor_alloc(t, dt, rank, dims), WH_OK);
	uint8_t *p = t->data;
	size_t n = wh_tensor_nbytes(t);
	for (size_t i = 0; i < n; i++) {
		uint8_t v = (uint8_t)(i * 37 + 11);
		int bits = wh_dtype_bits(dt);
		if (dt == WH_DT_BOOL)
			v &= 1;
		else if (dt == WH_DT_INT4 || dt == WH_DT_INT2) /* sign-extended */
			v = (uint8_t)((int8_t)(uint8_t)(v << (8 - bits)) >> (8 - bits));
		else if (wh_dtype_is_subbyte(dt))
			v &= (uint8_t)((1u << bits) - 1);
		p[i] = v;
	}
}

static void assert_same_tensor(const struct wh_tensor *a, const struct wh_tensor *b)
{
	ck_assert_int_eq(a->dtype, b->dtype);
	ck_assert_int_eq(a->rank, b->rank);
	for (int32_t i = 0; i < a->rank; i++)
		ck_assert_int_eq(a->dims[i], b->dims[i]);
	ck_assert_uint_eq(a->count, b->count);
	if (a->dtype == WH_DT_STRING) {
		const char *const *x = a->data, *const *y = b->data;
		for (uint64_t i = 0; i < a->count; i++)
			ck_assert_str_eq(x[i], y[i]);
		return;
	}
	ck_assert_uint_eq(wh_tensor_nbytes(a), wh_tensor_nbytes(b));
	if (wh_tensor_nbytes(a))
		ck_assert_mem_eq(a->data, b->data, wh_tensor_nbytes(a));
}

static bool npy_type(enum wh_dtype dt)
{
	switch (dt) {
	case WH_DT_BOOL: case WH_DT_INT8: case WH_DT_UINT8: case WH_DT_INT16: case WH_DT_UINT16:
	case WH_DT_INT32: case WH_DT_UINT32: case WH_DT_INT64: case WH_DT_UINT64:
	case WH_DT_FLOAT16: case WH_DT_FLOAT: case WH_DT_DOUBLE: case WH_DT_COMPLEX64:
	case WH_DT_COMPLEX128:
		return true;
	default:
		return false;
	}
}

static uint8_t *read_all(const char *path, size_t *len_out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len_out = (size_t)n;
	return buf;
}

static void write_all(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* ---- round trips ---- */

START_TEST(test_pb_roundtrip_every_type)
{
	enum wh_dtype dt = (enum wh_dtype)_i;
	/* 15 elements leave the last byte of 4-bit and 2-bit types partly filled */
	const int64_t dims[2] = {3, 5};
	struct wh_tensor t, u;
	wh_tensor_init(&t);
	wh_tensor_init(&u);
	make_pattern(&t, dt, 2, dims);
	char path[PATH_MAX], *name = NULL;
	tmp_path(path, sizeof path, "t.pb");
	ck_assert_int_eq(wh_tensor_write_pb(path, "my tensor", &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_pb(path, &u, &name), WH_OK);
	ck_assert_str_eq(name, "my tensor");
	assert_same_tensor(&t, &u);
	free(name);

	/* the buffer reader gives the same result, and the name may be ignored */
	size_t len;
	uint8_t *buf = read_all(path, &len);
	ck_assert_ptr_nonnull(buf);
	wh_tensor_release(&u);
	ck_assert_int_eq(wh_tensor_read_pb_buffer(buf, len, "buf", &u, NULL), WH_OK);
	assert_same_tensor(&t, &u);
	free(buf);

	/* no name: none comes back */
	ck_assert_int_eq(wh_tensor_write_pb(path, NULL, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_pb(path, &u, &name), WH_OK);
	ck_assert_ptr_null(name);
	assert_same_tensor(&t, &u);

	/* scalar and empty */
	const int64_t zero[2] = {4, 0};
	make_pattern(&t, dt, 0, NULL);
	ck_assert_int_eq(wh_tensor_write_pb(path, "s", &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_file(path, &u, &name), WH_OK);
	assert_same_tensor(&t, &u);
	free(name);
	make_pattern(&t, dt, 2, zero);
	ck_assert_int_eq(wh_tensor_write_pb(path, "e", &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_pb(path, &u, NULL), WH_OK);
	assert_same_tensor(&t, &u);
	wh_tensor_release(&t);
	wh_tensor_release(&u);
}
END_TEST

START_TEST(test_npy_roundtrip_every_type)
{
	enum wh_dtype dt = (enum wh_dtype)_i;
	const int64_t dims[3] = {2, 3, 2};
	struct wh_tensor t, u;
	wh_tensor_init(&t);
	wh_tensor_init(&u);
	make_pattern(&t, dt, 3, dims);
	char path[PATH_MAX];
	tmp_path(path, sizeof path, "t.npy");
	enum wh_status st = wh_tensor_write_npy(path, &t);
	if (!npy_type(dt)) {
		/* bfloat16, fp8, 4-bit and strings have no numpy type: refused, named, no file left */
		ck_assert_int_eq(st, WH_ERR_UNSUPPORTED);
		ck_assert_ptr_nonnull(strstr(wh_error_message(), wh_dtype_name(dt)));
		ck_assert_int_ne(access(path, F_OK), 0);
		wh_tensor_release(&t);
		return;
	}
	ck_assert_int_eq(st, WH_OK);
	ck_assert(wh_npy_holds(dt));
	ck_assert_int_eq(wh_tensor_read_npy(path, &u), WH_OK);
	assert_same_tensor(&t, &u);
	ck_assert_int_eq(wh_tensor_read_file(path, &u, NULL), WH_OK);
	assert_same_tensor(&t, &u);
	/* mapped: the same elements, viewed in the file (bool is copied: its bytes are checked) */
	ck_assert_int_eq(wh_tensor_map_npy(path, &u), WH_OK);
	assert_same_tensor(&t, &u);
	ck_assert_int_eq(wh_blob_is_mapped(u.blob), dt != WH_DT_BOOL);
	const struct wh_blob_file *bf = NULL;
	uint64_t off = 0;
	if (dt != WH_DT_BOOL) {
		ck_assert(wh_blob_origin(u.blob, &bf, &off));
		ck_assert_uint_eq(off % 64, 0); /* the header is padded: the view needs no copy */
	}
	/* the mapping outlives the file's name (a work folder removed while in use) */
	ck_assert_int_eq(unlink(path), 0);
	assert_same_tensor(&t, &u);
	ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_OK);

	/* what numpy needs: magic, version 1.0, header padded to 64 bytes ending in '\n' */
	size_t len;
	uint8_t *buf = read_all(path, &len);
	ck_assert_mem_eq(buf, "\x93NUMPY\x01\x00", 8);
	size_t hlen = buf[8] | (size_t)buf[9] << 8;
	ck_assert_uint_eq((10 + hlen) % 64, 0);
	ck_assert_int_eq(buf[10 + hlen - 1], '\n');
	ck_assert_uint_eq(len, 10 + hlen + wh_tensor_nbytes(&t));
	ck_assert_ptr_nonnull(memmem(buf, 10 + hlen, "'shape': (2, 3, 2), }", 21));
	ck_assert_int_eq(wh_tensor_read_npy_buffer(buf, len, "b", &u), WH_OK);
	assert_same_tensor(&t, &u);
	free(buf);

	/* scalar "()", one dimension "(n,)", empty */
	const int64_t one[1] = {7}, empty[2] = {0, 9};
	make_pattern(&t, dt, 0, NULL);
	ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_npy(path, &u), WH_OK);
	assert_same_tensor(&t, &u);
	make_pattern(&t, dt, 1, one);
	ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_OK);
	buf = read_all(path, &len);
	ck_assert_ptr_nonnull(memmem(buf, len, "'shape': (7,)", 13));
	free(buf);
	ck_assert_int_eq(wh_tensor_read_npy(path, &u), WH_OK);
	assert_same_tensor(&t, &u);
	make_pattern(&t, dt, 2, empty);
	ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_npy(path, &u), WH_OK);
	assert_same_tensor(&t, &u);
	wh_tensor_release(&t);
	wh_tensor_release(&u);
}
END_TEST

START_TEST(test_npy_header_exact)
{
	const int64_t dims[2] = {2, 3};
	struct wh_tensor t;
	wh_tensor_init(&t);
	ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_FLOAT, 2, dims), WH_OK);
	for (int i = 0; i < 6; i++)
		((float *)t.data)[i] = (float)i - 2.5f;
	char path[PATH_MAX];
	tmp_path(path, sizeof path, "h.npy");
	ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_OK);
	size_t len;
	uint8_t *buf = read_all(path, &len);
	/* byte for byte what numpy.save writes for numpy.arange(6, dtype='f4').reshape(2,3)-2.5 */
	static const char head[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
	ck_assert_uint_eq(len, 128 + 24);
	ck_assert_mem_eq(buf, head, sizeof head - 1);
	for (size_t i = sizeof head - 1; i < 127; i++)
		ck_assert_int_eq(buf[i], ' ');
	ck_assert_int_eq(buf[127], '\n');
	ck_assert_mem_eq(buf + 128, t.data, 24);
	free(buf);
	wh_tensor_release(&t);
}
END_TEST

/* ---- fixtures written by numpy and onnx ---- */

struct expected {
	enum wh_dtype dtype;
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	uint8_t *bytes; /* in-memory layout, or NULL for strings */
	size_t nbytes;
	char **strings;
	size_t n_strings;
};

static int unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	while (s[0] && s[0] != '\n' && s[1] && s[1] != '\n') {
		unsigned v;
		ck_assert_int_eq(sscanf(s, "%2x", &v), 1);
		ck_assert_uint_lt(n, max);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return (int)n;
}

static bool load_expected(const char *txt, struct expected *e)
{
	memset(e, 0, sizeof *e);
	FILE *f = fopen(txt, "r");
	if (!f)
		return false;
	char line[8192];
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	char *p = line;
	int dt, rank, used;
	ck_assert_int_eq(sscanf(p, "%d %d%n", &dt, &rank, &used), 2);
	p += used;
	e->dtype = (enum wh_dtype)dt;
	e->rank = rank;
	for (int i = 0; i < rank; i++) {
		long long d;
		ck_assert_int_eq(sscanf(p, "%lld%n", &d, &used), 1);
		p += used;
		e->dims[i] = d;
	}
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "x:", 2)) {
			e->bytes = malloc(4096);
			e->nbytes = (size_t)unhex(line + 2, e->bytes, 4096);
		} else if (!strncmp(line, "s:", 2)) {
			e->strings = realloc(e->strings, (e->n_strings + 1) * sizeof *e->strings);
			uint8_t tmp[256];
			int n = unhex(line + 2, tmp, sizeof tmp - 1);
			tmp[n] = 0;
			e->strings[e->n_strings++] = strdup((char *)tmp);
		}
	}
	fclose(f);
	return true;
}

static void free_expected(struct expected *e)
{
	free(e->bytes);
	for (size_t i = 0; i < e->n_strings; i++)
		free(e->strings[i]);
	free(e->strings);
}

static void assert_expected(const struct wh_tensor *t, const struct expected *e, const char *what)
{
	ck_assert_msg(t->dtype == e->dtype, "%s: type %d, expected %d", what, t->dtype, e->dtype);
	ck_assert_msg(t->rank == e->rank, "%s: rank %d, expected %d", what, t->rank, e->rank);
	for (int32_t i = 0; i < t->rank; i++)
		ck_assert_msg(t->dims[i] == e->dims[i], "%s: dim %d differs", what, i);
	if (e->dtype == WH_DT_STRING) {
		ck_assert_uint_eq(t->count, e->n_strings);
		for (size_t i = 0; i < e->n_strings; i++)
			ck_assert_str_eq(((const char *const *)t->data)[i], e->strings[i]);
		return;
	}
	ck_assert_msg(wh_tensor_nbytes(t) == e->nbytes, "%s: %zu bytes, expected %zu", what, wh_tensor_nbytes(t), e->nbytes);
	if (e->nbytes)
		ck_assert_msg(!memcmp(t->data, e->bytes, e->nbytes), "%s: values differ", what);
}

START_TEST(test_fixtures_match_expected)
{
	char dir[PATH_MAX];
	PATHF(dir, "%s/fixtures/tensors", src_dir());
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "%s: missing (run scripts/gen-tensor-fixtures.py)", dir);
	struct dirent *de;
	int n_txt = 0, n_npy = 0, n_pb = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".txt"))
			continue;
		char stem[256], path[PATH_MAX + 300];
		PATHF(stem, "%.*s", (int)(l - 4), de->d_name);
		PATHF(path, "%s/%s", dir, de->d_name);
		struct expected e;
		ck_assert(load_expected(path, &e));
		n_txt++;
		int found = 0;
		struct wh_tensor t;
		wh_tensor_init(&t);
		PATHF(path, "%s/%s.npy", dir, stem);
		if (access(path, F_OK) == 0) {
			ck_assert_msg(wh_tensor_read_npy(path, &t) == WH_OK, "%s: %s", path, wh_error_message());
			assert_expected(&t, &e, path);
			found++;
			n_npy++;
		}
		PATHF(path, "%s/%s.pb", dir, stem);
		if (access(path, F_OK) == 0) {
			char *name = NULL;
			ck_assert_msg(wh_tensor_read_pb(path, &t, &name) == WH_OK, "%s: %s", path, wh_error_message());
			assert_expected(&t, &e, path);
			free(name);
			found++;
			n_pb++;
		}
		ck_assert_msg(found, "%s: no .npy or .pb beside the .txt", stem);
		wh_tensor_release(&t);
		free_expected(&e);
	}
	closedir(d);
	/* the generator writes 14 numpy types as both, plus the special cases */
	ck_assert_int_ge(n_txt, 30);
	ck_assert_int_ge(n_npy, 20);
	ck_assert_int_ge(n_pb, 20);
}
END_TEST

START_TEST(test_fixtures_names_and_special)
{
	char path[PATH_MAX], *name = NULL;
	struct wh_tensor t;
	wh_tensor_init(&t);
	PATHF(path, "%s/fixtures/tensors/float32.pb", src_dir());
	ck_assert_int_eq(wh_tensor_read_pb(path, &t, &name), WH_OK);
	ck_assert_str_eq(name, "t_float32");
	free(name);
	/* the same data written by numpy and by onnx reads the same */
	struct wh_tensor u;
	wh_tensor_init(&u);
	PATHF(path, "%s/fixtures/tensors/float32.npy", src_dir());
	ck_assert_int_eq(wh_tensor_read_file(path, &u, &name), WH_OK);
	ck_assert_ptr_null(name);
	assert_same_tensor(&t, &u);
	ck_assert_float_eq(((float *)u.data)[0], 1.5f);
	ck_assert(isinf(((float *)u.data)[2]));
	/* big-endian numpy data comes back in host order */
	PATHF(path, "%s/fixtures/tensors/be-float32.npy", src_dir());
	ck_assert_int_eq(wh_tensor_read_npy(path, &u), WH_OK);
	assert_same_tensor(&t, &u);
	PATHF(path, "%s/fixtures/tensors/be-int64.npy", src_dir());
	ck_assert_int_eq(wh_tensor_read_npy(path, &u), WH_OK);
	ck_assert_int_eq(((int64_t *)u.data)[0], INT64_MIN);
	ck_assert_int_eq(((int64_t *)u.data)[1], INT64_MAX);
	/* int4 from a .pb unpacks sign-extended */
	PATHF(path, "%s/fixtures/tensors/int4.pb", src_dir());
	ck_assert_int_eq(wh_tensor_read_pb(path, &u, NULL), WH_OK);
	ck_assert_int_eq(u.dtype, WH_DT_INT4);
	ck_assert_int_eq(((int8_t *)u.data)[0], -8);
	ck_assert_int_eq(((int8_t *)u.data)[3], 7);
	ck_assert_int_eq(((int8_t *)u.data)[4], 3);
	/* a string tensor re-written by whittle reads back equal */
	PATHF(path, "%s/fixtures/tensors/string.pb", src_dir());
	ck_assert_int_eq(wh_tensor_read_pb(path, &t, &name), WH_OK);
	ck_assert_str_eq(name, "names");
	ck_assert_str_eq(((const char *const *)t.data)[2], "gr\xc3\xbc\xc3\x9f" "e \xe2\x9c\x93");
	char out[PATH_MAX];
	tmp_path(out, sizeof out, "s.pb");
	ck_assert_int_eq(wh_tensor_write_pb(out, name, &t), WH_OK);
	free(name);
	ck_assert_int_eq(wh_tensor_read_pb(out, &u, &name), WH_OK);
	ck_assert_str_eq(name, "names");
	assert_same_tensor(&t, &u);
	free(name);
	wh_tensor_release(&t);
	wh_tensor_release(&u);
}
END_TEST

static const struct {
	const char *file;
	enum wh_status st;
	const char *msg; /* a word the error must contain */
} bad_fixtures[] = {
	{"bad-fortran.npy", WH_ERR_UNSUPPORTED, "fortran"},
	{"bad-unicode.npy", WH_ERR_UNSUPPORTED, "<U2"},
	{"bad-void2.npy", WH_ERR_UNSUPPORTED, "bfloat16"},
	{"bad-struct.npy", WH_ERR_UNSUPPORTED, "structured"},
	{"bad-f16.npy", WH_ERR_UNSUPPORTED, "<f16"},
	{"bad-truncated.npy", WH_ERR_PARSE, "cut short"},
	{"bad-rawsize.pb", WH_ERR_INVALID, "20 bytes"},
	{"bad-type.pb", WH_ERR_INVALID, "99"},
	{"bad-negdim.pb", WH_ERR_INVALID, "negative"},
	{"bad-hugedim.pb", WH_ERR_OVERFLOW, "too many"},
	{"bad-truncated.pb", WH_ERR_PARSE, "TensorProto"},
};

START_TEST(test_fixtures_bad)
{
	char path[PATH_MAX];
	PATHF(path, "%s/fixtures/tensors/%s", src_dir(), bad_fixtures[_i].file);
	ck_assert_msg(access(path, F_OK) == 0, "%s: missing (run scripts/gen-tensor-fixtures.py)", path);
	struct wh_tensor t;
	wh_tensor_init(&t);
	char *name = (char *)"untouched";
	enum wh_status st = wh_tensor_read_file(path, &t, &name);
	ck_assert_msg(st == bad_fixtures[_i].st, "%s: status %d (%s), expected %d", path, st, wh_error_message(), bad_fixtures[_i].st);
	const char *m = wh_error_message();
	ck_assert_msg(strcasestr(m, bad_fixtures[_i].msg), "%s: message '%s' lacks '%s'", path, m, bad_fixtures[_i].msg);
	ck_assert_ptr_null(strchr(m, '\n'));
	ck_assert_ptr_null(name);
	ck_assert_ptr_null(t.data);
}
END_TEST

/* ---- ONNX backend test data ---- */

static bool onnx_case(const char *name, const char *file, char *path, size_t size)
{
	const char *root = getenv("WHITTLE_ONNX_TESTS");
	char def[PATH_MAX];
	if (!root || !*root) {
		PATHF(def, "%s/../shared/onnx-tests", src_dir());
		root = def;
	}
	ck_assert_int_lt(snprintf(path, size, "%s/node/%s/test_data_set_0/%s", root, name, file), (int)size);
	if (access(path, F_OK) == 0)
		return true;
	fprintf(stderr, "check-tensor-file: %s not found, skipped\n", path);
	return false;
}

static float half_to_float(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
	return (h & 0x8000) ? -v : v;
}

START_TEST(test_onnx_test_data)
{
	char in[PATH_MAX], out[PATH_MAX], *name = NULL;
	struct wh_tensor a, b;
	wh_tensor_init(&a);
	wh_tensor_init(&b);
	int checked = 0;

	/* float: Abs of the input is the output */
	if (onnx_case("test_abs", "input_0.pb", in, sizeof in) && onnx_case("test_abs", "output_0.pb", out, sizeof out)) {
		ck_assert_int_eq(wh_tensor_read_pb(in, &a, &name), WH_OK);
		ck_assert_str_eq(name, "x");
		free(name);
		ck_assert_int_eq(wh_tensor_read_pb(out, &b, NULL), WH_OK);
		ck_assert_int_eq(a.dtype, WH_DT_FLOAT);
		ck_assert_int_eq(a.rank, 3);
		ck_assert_int_eq(a.dims[0], 3);
		ck_assert_int_eq(a.dims[2], 5);
		ck_assert(wh_tensor_same_shape(&a, &b));
		for (uint64_t i = 0; i < a.count; i++)
			ck_assert_float_eq(fabsf(((float *)a.data)[i]), ((float *)b.data)[i]);
		checked++;
	}
	/* float16: Cast to float of the input is the output */
	if (onnx_case("test_cast_FLOAT16_to_FLOAT", "input_0.pb", in, sizeof in) &&
	    onnx_case("test_cast_FLOAT16_to_FLOAT", "output_0.pb", out, sizeof out)) {
		ck_assert_int_eq(wh_tensor_read_pb(in, &a, NULL), WH_OK);
		ck_assert_int_eq(wh_tensor_read_pb(out, &b, NULL), WH_OK);
		ck_assert_int_eq(a.dtype, WH_DT_FLOAT16);
		ck_assert_uint_eq(a.count, b.count);
		ck_assert_uint_gt(a.count, 0);
		for (uint64_t i = 0; i < a.count; i++) {
			float x = half_to_float(((uint16_t *)a.data)[i]), y = ((float *)b.data)[i];
			ck_assert(x == y || (isnan(x) && isnan(y)));
		}
		checked++;
	}
	/* int4: packed two per byte in the file, one per byte in memory */
	if (onnx_case("test_cast_INT4_to_FLOAT", "input_0.pb", in, sizeof in) &&
	    onnx_case("test_cast_INT4_to_FLOAT", "output_0.pb", out, sizeof out)) {
		ck_assert_int_eq(wh_tensor_read_pb(in, &a, NULL), WH_OK);
		ck_assert_int_eq(wh_tensor_read_pb(out, &b, NULL), WH_OK);
		ck_assert_int_eq(a.dtype, WH_DT_INT4);
		ck_assert_uint_eq(a.count, b.count);
		bool negative = false;
		for (uint64_t i = 0; i < a.count; i++) {
			int8_t v = ((int8_t *)a.data)[i];
			ck_assert_int_ge(v, -8);
			ck_assert_int_le(v, 7);
			negative |= v < 0;
			ck_assert_float_eq((float)v, ((float *)b.data)[i]);
		}
		ck_assert(negative);
		/* written back, the file holds the same packed bytes */
		char again[PATH_MAX];
		tmp_path(again, sizeof again, "int4.pb");
		ck_assert_int_eq(wh_tensor_write_pb(again, "input", &a), WH_OK);
		ck_assert_int_eq(wh_tensor_read_pb(again, &b, NULL), WH_OK);
		assert_same_tensor(&a, &b);
		checked++;
	}
	/* strings */
	if (onnx_case("test_ai_onnx_ml_label_encoder_string_int", "input_0.pb", in, sizeof in)) {
		ck_assert_int_eq(wh_tensor_read_pb(in, &a, &name), WH_OK);
		ck_assert_str_eq(name, "X");
		free(name);
		ck_assert_int_eq(a.dtype, WH_DT_STRING);
		ck_assert_uint_eq(a.count, 5);
		ck_assert_str_eq(((const char *const *)a.data)[0], "a");
		checked++;
	}
	/* a whole data set, by position */
	if (onnx_case("test_abs", "input_0.pb", in, sizeof in)) {
		char *slash = strrchr(in, '/');
		*slash = '\0';
		struct wh_tensor_set s;
		wh_tensor_set_init(&s);
		ck_assert_int_eq(wh_tensor_set_read_dir(in, "input", &s), WH_OK);
		ck_assert_uint_eq(s.n, 1);
		ck_assert_str_eq(s.items[0].name, "x");
		ck_assert_int_eq(s.items[0].index, 0);
		ck_assert_ptr_nonnull(wh_tensor_set_find(&s, "x"));
		ck_assert_int_eq(wh_tensor_set_read_dir(in, NULL, &s), WH_OK);
		ck_assert_uint_eq(s.n, 2);
		ck_assert_ptr_nonnull(wh_tensor_set_find(&s, "y"));
		wh_tensor_set_release(&s);
	}
	if (!checked)
		fprintf(stderr, "check-tensor-file: no ONNX backend test data found, skipped\n");
	wh_tensor_release(&a);
	wh_tensor_release(&b);
}
END_TEST

/* ---- data sets ---- */

/* SequenceProto and OptionalProto files: written and read back as the kind they are, with
 * the ONNX test data as the oracle for the layout, and refused when their items disagree. */
START_TEST(test_sequence_and_optional_files)
{
	const int64_t d1[2] = {2, 3}, d2[1] = {5}, d3[3] = {1, 1, 4};
	struct wh_tensor seq, back, t, none;
	wh_tensor_init(&seq);
	wh_tensor_init(&back);
	wh_tensor_init(&t);
	wh_tensor_init(&none);
	ck_assert_int_eq(wh_seq_new(&seq, WH_DT_FLOAT, 3), WH_OK);
	make_pattern(wh_seq_item_mut(&seq, 0), WH_DT_FLOAT, 2, d1);
	make_pattern(wh_seq_item_mut(&seq, 1), WH_DT_FLOAT, 1, d2);
	make_pattern(wh_seq_item_mut(&seq, 2), WH_DT_FLOAT, 3, d3);
	char path[PATH_MAX], *name = NULL;
	tmp_path(path, sizeof path, "seq.pb");
	ck_assert_int_eq(wh_tensor_write_pb(path, "s", &seq), WH_OK);
	ck_assert_int_eq(wh_value_read_pb(path, WH_PB_SEQUENCE, &back, &name), WH_OK);
	ck_assert_str_eq(name, "s");
	free(name);
	ck_assert_int_eq(back.kind, WH_VALUE_SEQUENCE);
	ck_assert_int_eq(back.elem, WH_DT_FLOAT);
	ck_assert_uint_eq(wh_seq_len(&back), 3);
	for (uint32_t i = 0; i < 3; i++)
		assert_same_tensor(wh_seq_item(&back, i), wh_seq_item(&seq, i));
	/* every prefix of the file: an error or fewer items, never a crash (ASan) */
	size_t len;
	uint8_t *bytes = read_all(path, &len);
	for (size_t n = 0; n < len; n++) {
		char cut[PATH_MAX];
		tmp_path(cut, sizeof cut, "cut.pb");
		write_all(cut, bytes, n);
		if (wh_value_read_pb(cut, WH_PB_SEQUENCE, &t, NULL) == WH_OK)
			ck_assert_uint_le(wh_seq_len(&t), 3);
	}
	free(bytes);
	/* a sequence under an optional, a tensor under an optional, an empty optional */
	ck_assert_int_eq(wh_value_write_pb(path, "o", &seq, WH_PB_OPTIONAL), WH_OK);
	ck_assert_int_eq(wh_value_read_pb(path, WH_PB_OPTIONAL, &back, NULL), WH_OK);
	ck_assert_int_eq(back.kind, WH_VALUE_SEQUENCE);
	ck_assert_uint_eq(wh_seq_len(&back), 3);
	ck_assert_int_eq(wh_value_write_pb(path, "o", wh_seq_item(&seq, 1), WH_PB_OPTIONAL), WH_OK);
	ck_assert_int_eq(wh_value_read_pb(path, WH_PB_OPTIONAL, &back, NULL), WH_OK);
	ck_assert_int_eq(back.kind, WH_VALUE_TENSOR);
	assert_same_tensor(&back, wh_seq_item(&seq, 1));
	wh_value_set_none(&none, WH_DT_FLOAT);
	ck_assert_int_eq(wh_tensor_write_pb(path, "n", &none), WH_OK);
	ck_assert_int_eq(wh_value_read_pb(path, WH_PB_OPTIONAL, &back, NULL), WH_OK);
	ck_assert_int_eq(back.kind, WH_VALUE_NONE);
	ck_assert(wh_value_present(&back));
	/* a tensor is not a sequence */
	ck_assert_int_eq(wh_value_write_pb(path, "t", wh_seq_item(&seq, 0), WH_PB_SEQUENCE), WH_ERR_USAGE);
	/* items of two types */
	make_pattern(wh_seq_item_mut(&seq, 2), WH_DT_INT64, 3, d3);
	ck_assert_int_eq(wh_tensor_write_pb(path, "mixed", &seq), WH_OK);
	ck_assert_int_eq(wh_value_read_pb(path, WH_PB_SEQUENCE, &back, NULL), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "one type"));
	ck_assert_int_eq(back.kind, WH_VALUE_NONE); /* a failed read leaves the value alone */
	/* ONNX's own files: a sequence of two 2-D float tensors, and an empty optional */
	char in[PATH_MAX];
	if (onnx_case("test_identity_sequence", "input_0.pb", in, sizeof in)) {
		ck_assert_int_eq(wh_value_read_pb(in, WH_PB_SEQUENCE, &back, NULL), WH_OK);
		ck_assert_int_eq(back.kind, WH_VALUE_SEQUENCE);
		ck_assert_uint_eq(wh_seq_len(&back), 2);
		ck_assert_int_eq(wh_seq_item(&back, 0)->dtype, WH_DT_FLOAT);
		ck_assert_int_eq(wh_seq_item(&back, 0)->rank, 4);
		/* read as a tensor, the same bytes are refused with one line, not misread */
		ck_assert_int_ne(wh_value_read_pb(in, WH_PB_TENSOR, &t, NULL), WH_OK);
	}
	if (onnx_case("test_optional_has_element_empty_optional_input", "input_0.pb", in, sizeof in)) {
		ck_assert_int_eq(wh_value_read_pb(in, WH_PB_OPTIONAL, &back, NULL), WH_OK);
		ck_assert_int_eq(back.kind, WH_VALUE_NONE);
	}
	wh_tensor_release(&seq);
	wh_tensor_release(&back);
	wh_tensor_release(&t);
	wh_tensor_release(&none);
}
END_TEST

START_TEST(test_set_positional)
{
	struct wh_tensor_set s, r;
	wh_tensor_set_init(&s);
	wh_tensor_set_init(&r);
	struct wh_tensor t;
	wh_tensor_init(&t);
	const int64_t dims[1] = {1};
	/* 12 inputs: input_10 must come after input_9, not after input_1 */
	for (int k = 0; k < 12; k++) {
		ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_INT32, 1, dims), WH_OK);
		((int32_t *)t.data)[0] = k * 100;
		ck_assert_int_eq(wh_tensor_set_add(&s, NULL, k, &t), WH_OK);
	}
	char dir[PATH_MAX], path[PATH_MAX + 32];
	tmp_path(dir, sizeof dir, "set/a/b");
	ck_assert_int_eq(wh_tensor_set_write_dir(dir, "input", &s), WH_OK);
	PATHF(path, "%s/input_11.pb", dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	/* files of another prefix and stray files are left alone */
	PATHF(path, "%s/output_0.pb", dir);
	ck_assert_int_eq(wh_tensor_write_pb(path, NULL, &t), WH_OK);
	PATHF(path, "%s/notes.txt", dir);
	write_all(path, "hi", 2);
	ck_assert_int_eq(wh_tensor_set_read_dir(dir, "input", &r), WH_OK);
	ck_assert_uint_eq(r.n, 12);
	for (int k = 0; k < 12; k++) {
		ck_assert_int_eq(r.items[k].index, k);
		ck_assert_ptr_null(r.items[k].name);
		ck_assert_int_eq(((int32_t *)r.items[k].t.data)[0], k * 100);
	}
	ck_assert_int_eq(wh_tensor_set_read_dir(dir, "output", &r), WH_OK);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_int_eq(r.items[0].index, 0);
	/* a second file for the same position */
	PATHF(path, "%s/input_03.pb", dir);
	ck_assert_int_eq(wh_tensor_write_pb(path, NULL, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_set_read_dir(dir, "input", &r), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "position 3"));
	/* the failed read left the previous contents alone */
	ck_assert_uint_eq(r.n, 1);
	wh_tensor_set_release(&s);
	wh_tensor_set_release(&r);
	wh_tensor_release(&t);
}
END_TEST

START_TEST(test_set_named)
{
	static const char *const names[] = {"a/b:c", "x y", ".hidden", "gr\xc3\xbc\xc3\x9f" "e", "plain-name_1.2", "100%", "input_0"};
	static const char *const files[] = {"a%2Fb%3Ac.pb", "x%20y.pb", "%2Ehidden.pb", "gr%C3%BC%C3%9Fe.pb", "plain-name_1.2.pb", "100%25.pb", "input_0.pb"};
	const size_t n = sizeof names / sizeof names[0];
	struct wh_tensor_set s, r;
	wh_tensor_set_init(&s);
	wh_tensor_set_init(&r);
	struct wh_tensor t;
	wh_tensor_init(&t);
	const int64_t dims[1] = {2};
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_FLOAT, 1, dims), WH_OK);
		((float *)t.data)[0] = (float)i;
		((float *)t.data)[1] = -(float)i;
		ck_assert_int_eq(wh_tensor_set_add(&s, names[i], -1, &t), WH_OK);
	}
	/* a name already in the set */
	ck_assert_int_eq(wh_tensor_set_add(&s, "x y", -1, &t), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "'x y'"));
	ck_assert_uint_eq(s.n, n);

	char dir[PATH_MAX], path[PATH_MAX + 64];
	tmp_path(dir, sizeof dir, "named");
	ck_assert_int_eq(wh_tensor_set_write_dir(dir, NULL, &s), WH_OK);
	for (size_t i = 0; i < n; i++) {
		PATHF(path, "%s/%s", dir, files[i]);
		ck_assert_msg(access(path, F_OK) == 0, "%s missing", path);
	}
	/* a .npy has no stored name: it comes from the file name */
	const int64_t d3[1] = {3};
	ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_INT64, 1, d3), WH_OK);
	for (int i = 0; i < 3; i++)
		((int64_t *)t.data)[i] = 1000 + i;
	PATHF(path, "%s/my%%20t%%3A0.npy", dir);
	ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_OK);

	ck_assert_int_eq(wh_tensor_set_read_dir(dir, NULL, &r), WH_OK);
	ck_assert_uint_eq(r.n, n + 1);
	for (size_t i = 0; i < n; i++) {
		const struct wh_tensor *f = wh_tensor_set_find(&r, names[i]);
		ck_assert_msg(f != NULL, "'%s' not read back", names[i]);
		ck_assert_float_eq(((float *)f->data)[1], -(float)i);
	}
	const struct wh_tensor *f = wh_tensor_set_find(&r, "my t:0");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(((int64_t *)f->data)[2], 1002);
	ck_assert_ptr_null(wh_tensor_set_find(&r, "nope"));

	/* the stored name wins over the file name: a copy under another file name clashes */
	PATHF(path, "%s/copy.pb", dir);
	ck_assert_int_eq(wh_tensor_write_pb(path, "x y", &t), WH_OK);
	ck_assert_int_eq(wh_tensor_set_read_dir(dir, NULL, &r), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "'x y'"));

	/* unnamed tensors cannot be written by name */
	struct wh_tensor_set u;
	wh_tensor_set_init(&u);
	ck_assert_int_eq(wh_tensor_set_add(&u, NULL, 0, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_set_write_dir(dir, NULL, &u), WH_ERR_USAGE);
	wh_tensor_set_release(&u);
	wh_tensor_set_release(&s);
	wh_tensor_set_release(&r);
	wh_tensor_release(&t);
}
END_TEST

START_TEST(test_set_errors)
{
	struct wh_tensor_set s;
	wh_tensor_set_init(&s);
	char dir[PATH_MAX], path[PATH_MAX + 32];
	tmp_path(dir, sizeof dir, "missing");
	ck_assert_int_eq(wh_tensor_set_read_dir(dir, NULL, &s), WH_ERR_IO);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), dir));
	ck_assert_ptr_null(strchr(wh_error_message(), '\n'));
	tmp_path(dir, sizeof dir, "empty");
	ck_assert_int_eq(mkdir(dir, 0777), 0);
	ck_assert_int_eq(wh_tensor_set_read_dir(dir, NULL, &s), WH_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "no .pb or .npy"));
	ck_assert_int_eq(wh_tensor_set_read_dir(dir, "input", &s), WH_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "input_<k>"));
	/* a broken file names itself */
	PATHF(path, "%s/input_0.pb", dir);
	write_all(path, "\x08\x80", 2);
	ck_assert_int_ne(wh_tensor_set_read_dir(dir, "input", &s), WH_OK);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "input_0.pb"));
	ck_assert_uint_eq(s.n, 0);
	/* a file is in the way of the folder */
	PATHF(path, "%s/input_0.pb/sub", dir);
	struct wh_tensor t;
	wh_tensor_init(&t);
	ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_FLOAT, 0, NULL), WH_OK);
	ck_assert_int_eq(wh_tensor_set_add(&s, "a", -1, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_set_write_dir(path, NULL, &s), WH_ERR_IO);
	/* reading a missing tensor file */
	tmp_path(path, sizeof path, "nothing.pb");
	ck_assert_int_eq(wh_tensor_read_pb(path, &t, NULL), WH_ERR_IO);
	tmp_path(path, sizeof path, "nothing.npy");
	ck_assert_int_eq(wh_tensor_read_npy(path, &t), WH_ERR_IO);
	/* a failed read leaves the tensor as it was */
	ck_assert_int_eq(t.dtype, WH_DT_FLOAT);
	ck_assert_ptr_nonnull(t.data);
	wh_tensor_release(&t);
	wh_tensor_set_release(&s);
}
END_TEST

START_TEST(test_read_file_by_content)
{
	const int64_t dims[1] = {3};
	struct wh_tensor t, u;
	wh_tensor_init(&t);
	wh_tensor_init(&u);
	make_pattern(&t, WH_DT_INT16, 1, dims);
	char path[PATH_MAX];
	/* an unknown extension: .npy is recognised by its magic, anything else read as .pb */
	tmp_path(path, sizeof path, "data.bin");
	ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_file(path, &u, NULL), WH_OK);
	assert_same_tensor(&t, &u);
	tmp_path(path, sizeof path, "data.tensor");
	ck_assert_int_eq(wh_tensor_write_pb(path, "d", &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_file(path, &u, NULL), WH_OK);
	assert_same_tensor(&t, &u);
	/* a .pb whose contents are wrong is named by its path in the error */
	tmp_path(path, sizeof path, "wrong.pb");
	write_all(path, "\x08\x05\x10\x01\x4a\x04\0\0\0\0", 10);
	ck_assert_int_eq(wh_tensor_read_file(path, &u, NULL), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), path));
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "needs 20"));
	wh_tensor_release(&t);
	wh_tensor_release(&u);
}
END_TEST

START_TEST(test_name_to_file)
{
	char buf[WH_TENSOR_STEM_MAX + 1];
	wh_tensor_name_to_file("conv1/weight:0", buf);
	ck_assert_str_eq(buf, "conv1%2Fweight%3A0");
	wh_tensor_name_to_file("A.b-c_9", buf);
	ck_assert_str_eq(buf, "A.b-c_9");
	wh_tensor_name_to_file("..", buf);
	ck_assert_str_eq(buf, "%2E.");
	wh_tensor_name_to_file("\xff", buf);
	ck_assert_str_eq(buf, "%FF");
	wh_tensor_name_to_file("", buf);
	ck_assert_str_eq(buf, "%00");
	wh_tensor_name_to_file("a~b", buf);
	ck_assert_str_eq(buf, "a%7Eb");
}
END_TEST

/* Issue 22 finding 10: a name longer than a file name once escaped (90 '/' escape to 270
 * bytes, 300 letters are 300) gets a readable prefix and a hash, fits NAME_MAX with the
 * extension, differs from its neighbours, and reads back from the name stored in the .pb. */
START_TEST(test_name_to_file_long)
{
	char a[WH_TENSOR_STEM_MAX + 1], b[WH_TENSOR_STEM_MAX + 1], name[400], name2[400];
	memset(name, '/', 90);
	strcpy(name + 90, "w");
	wh_tensor_name_to_file(name, a);
	ck_assert_uint_le(strlen(a), WH_TENSOR_STEM_MAX);
	ck_assert_ptr_nonnull(strstr(a, "%2F%2F%2F"));
	ck_assert_ptr_nonnull(strchr(a, '~'));
	ck_assert(wh_tensor_file_is_hashed(a, strlen(a)));
	/* no %XX cut in two before the '~' */
	char *tilde = strchr(a, '~');
	ck_assert_int_eq((int)((tilde - a) % 3), 0);
	memset(name2, '/', 90);
	strcpy(name2 + 90, "v");
	wh_tensor_name_to_file(name2, b);
	ck_assert_str_ne(a, b);
	/* exactly at the limit: kept whole; one byte more: hashed */
	memset(name, 'L', WH_TENSOR_STEM_MAX);
	name[WH_TENSOR_STEM_MAX] = '\0';
	wh_tensor_name_to_file(name, a);
	ck_assert_str_eq(a, name);
	strcat(name, "L");
	wh_tensor_name_to_file(name, a);
	ck_assert(wh_tensor_file_is_hashed(a, strlen(a)));

	/* written as a set and read back: the exact names */
	char dir[] = "/tmp/wh-tf-long-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct wh_tensor t;
	wh_tensor_init(&t);
	int64_t dims[1] = {2};
	ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_FLOAT, 1, dims), WH_OK);
	struct wh_tensor_set s, r;
	wh_tensor_set_init(&s);
	wh_tensor_set_init(&r);
	memset(name2, '/', 90);
	strcpy(name2 + 90, "w");
	ck_assert_int_eq(wh_tensor_set_add(&s, name, -1, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_set_add(&s, name2, -1, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_set_write_dir(dir, NULL, &s), WH_OK);
	ck_assert_int_eq(wh_tensor_set_read_dir(dir, NULL, &r), WH_OK);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_ptr_nonnull(wh_tensor_set_find(&r, name));
	ck_assert_ptr_nonnull(wh_tensor_set_find(&r, name2));
	char path[PATH_MAX];
	ck_assert_int_eq(wh_tensor_file_path(dir, name, ".pb", path, sizeof path), WH_OK);
	unlink(path);
	ck_assert_int_eq(wh_tensor_file_path(dir, name2, ".pb", path, sizeof path), WH_OK);
	unlink(path);
	rmdir(dir);
	/* a folder too long for the file of a long name is refused up front */
	char longdir[PATH_MAX];
	memset(longdir, 'd', PATH_MAX - 100);
	longdir[PATH_MAX - 100] = '\0';
	ck_assert_int_eq(wh_tensor_dir_fits(longdir, "test"), WH_ERR_INVALID);
	ck_assert_int_eq(wh_tensor_dir_fits("/tmp", "test"), WH_OK);
	ck_assert_int_eq(wh_tensor_file_path(longdir, name, ".pb", path, sizeof path), WH_ERR_INVALID);
	wh_tensor_set_release(&s);
	wh_tensor_set_release(&r);
	wh_tensor_release(&t);
}
END_TEST

/* Issue 22 finding 13: files that say two things are refused, not read one way silently; a
 * per-tensor save that fails part-way leaves none of its files. */
START_TEST(test_strict_files)
{
	char path[PATH_MAX], dir[PATH_MAX];
	const int64_t dims[1] = {1};
	struct wh_tensor t, u;
	wh_tensor_init(&t);
	wh_tensor_init(&u);
	ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_FLOAT, 1, dims), WH_OK);
	/* a .npy with a byte after its data */
	tmp_path(path, sizeof path, "trail.npy");
	ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_read_npy(path, &u), WH_OK);
	FILE *f = fopen(path, "ab");
	ck_assert_ptr_nonnull(f);
	fputc('x', f);
	fclose(f);
	ck_assert_int_eq(wh_tensor_read_npy(path, &u), WH_ERR_PARSE);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "1 bytes after the .npy data"));
	ck_assert_int_eq(wh_tensor_map_npy(path, &u), WH_ERR_PARSE);
	/* a TensorProto float[1] with raw_data and float_data both */
	static const uint8_t both[] = {0x08, 0x01, 0x10, 0x01, 0x22, 0x04, 0, 0, 0x80, 0x3f, 0x4a, 0x04, 0, 0, 0, 0x40};
	tmp_path(path, sizeof path, "both.pb");
	write_all(path, both, sizeof both);
	ck_assert_int_eq(wh_tensor_read_pb(path, &u, NULL), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "both raw_data and typed values"));
	/* each alone reads */
	write_all(path, both, 10);
	ck_assert_int_eq(wh_tensor_read_pb(path, &u, NULL), WH_OK);
	ck_assert(((float *)u.data)[0] == 1.0f);

	/* the second tensor of a set cannot be written: the first file goes again, and so does
	 * the folder this call made */
	struct wh_tensor bad = t;
	bad.dtype = (enum wh_dtype)999;
	struct wh_tensor_set s;
	wh_tensor_set_init(&s);
	ck_assert_int_eq(wh_tensor_set_add(&s, "a", -1, &t), WH_OK);
	ck_assert_int_eq(wh_tensor_set_add(&s, "b", -1, &bad), WH_OK);
	tmp_path(dir, sizeof dir, "half");
	ck_assert_int_ne(wh_tensor_set_write_dir(dir, NULL, &s), WH_OK);
	struct stat sb;
	ck_assert_int_ne(stat(dir, &sb), 0);
	/* into a folder that was there: it stays, without the new file, with the old one */
	ck_assert_int_eq(mkdir(dir, 0777), 0);
	PATHF(path, "%s/other.pb", dir);
	ck_assert_int_eq(wh_tensor_write_pb(path, "other", &t), WH_OK);
	ck_assert_int_ne(wh_tensor_set_write_dir(dir, NULL, &s), WH_OK);
	PATHF(path, "%s/a.pb", dir);
	ck_assert_int_ne(stat(path, &sb), 0);
	PATHF(path, "%s/other.pb", dir);
	ck_assert_int_eq(stat(path, &sb), 0);
	/* a full disk says so, with no hint at anything else: written through a link to
	 * /dev/full, which answers every write with ENOSPC (the failed write removes the path
	 * it wrote: the link, never the device) */
	if (access("/dev/full", W_OK) == 0) {
		tmp_path(path, sizeof path, "full.npy");
		ck_assert_int_eq(symlink("/dev/full", path), 0);
		ck_assert_int_eq(wh_tensor_write_npy(path, &t), WH_ERR_IO);
		ck_assert_msg(strstr(wh_error_message(), "the disk is full") != NULL, "%s", wh_error_message());
		ck_assert_int_eq(access("/dev/full", W_OK), 0);
	}
	wh_tensor_set_release(&s);
	wh_tensor_release(&t);
	wh_tensor_release(&u);
}
END_TEST

/* ---- hostile input ---- */

static void npy_with_header(const char *dict, const void *data, size_t data_len, uint8_t **out, size_t *len_out)
{
	size_t hl = strlen(dict) + 1;
	size_t len = 10 + hl + data_len;
	uint8_t *b = malloc(len);
	memcpy(b, "\x93NUMPY\x01\x00", 8);
	b[8] = (uint8_t)hl;
	b[9] = (uint8_t)(hl >> 8);
	memcpy(b + 10, dict, hl - 1);
	b[10 + hl - 1] = '\n';
	if (data_len)
		memcpy(b + 10 + hl, data, data_len);
	*out = b;
	*len_out = len;
}

static const struct {
	const char *dict;
	enum wh_status st;
} bad_headers[] = {
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", WH_ERR_OVERFLOW},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", WH_ERR_OVERFLOW},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", WH_ERR_OVERFLOW},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }", WH_ERR_INVALID},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }", WH_ERR_PARSE},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2), }", WH_ERR_UNSUPPORTED},
	{"{'descr': '<f4', 'fortran_order': False, }", WH_ERR_PARSE},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", WH_ERR_PARSE},
	{"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", WH_ERR_PARSE},
	{"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", WH_ERR_PARSE},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,", WH_ERR_PARSE},
	{"{'descr': '<f4", WH_ERR_PARSE},
	{"{'descr': '>x9', 'fortran_order': False, 'shape': (2,)}", WH_ERR_UNSUPPORTED},
	{"{'descr': '<f', 'fortran_order': False, 'shape': (2,)}", WH_ERR_UNSUPPORTED},
	{"{'descr': '', 'fortran_order': False, 'shape': (2,)}", WH_ERR_UNSUPPORTED},
	{"{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (2,)}", WH_ERR_UNSUPPORTED},
	{"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}", WH_ERR_UNSUPPORTED},
	{"[1, 2]", WH_ERR_PARSE},
	{"", WH_ERR_PARSE},
};

START_TEST(test_npy_hostile_headers)
{
	uint8_t data[64] = {0};
	uint8_t *b;
	size_t len;
	npy_with_header(bad_headers[_i].dict, data, sizeof data, &b, &len);
	struct wh_tensor t;
	wh_tensor_init(&t);
	enum wh_status st = wh_tensor_read_npy_buffer(b, len, "h", &t);
	ck_assert_msg(st == bad_headers[_i].st, "%s: status %d (%s)", bad_headers[_i].dict, st, wh_error_message());
	ck_assert_ptr_null(t.data);
	ck_assert_ptr_null(strchr(wh_error_message(), '\n'));
	/* the file reader says the same */
	char path[PATH_MAX];
	tmp_path(path, sizeof path, "h.npy");
	write_all(path, b, len);
	ck_assert_int_eq(wh_tensor_read_npy(path, &t), bad_headers[_i].st);
	/* and so does the mapper */
	ck_assert_int_eq(wh_tensor_map_npy(path, &t), bad_headers[_i].st);
	ck_assert_ptr_null(t.data);
	free(b);
}
END_TEST

START_TEST(test_npy_bool_normalised)
{
	/* numpy reads any non-zero byte as True; kernels expect exactly 0 or 1 */
	static const uint8_t v[4] = {0, 1, 2, 255};
	uint8_t *b;
	size_t len;
	npy_with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", v, sizeof v, &b, &len);
	struct wh_tensor t;
	wh_tensor_init(&t);
	ck_assert_int_eq(wh_tensor_read_npy_buffer(b, len, "bool", &t), WH_OK);
	ck_assert_int_eq(t.dtype, WH_DT_BOOL);
	ck_assert_mem_eq(t.data, "\0\1\1\1", 4);
	char path[PATH_MAX];
	tmp_path(path, sizeof path, "b.npy");
	write_all(path, b, len);
	ck_assert_int_eq(wh_tensor_read_npy(path, &t), WH_OK);
	ck_assert_mem_eq(t.data, "\0\1\1\1", 4);
	ck_assert_int_eq(wh_tensor_map_npy(path, &t), WH_OK);
	ck_assert_mem_eq(t.data, "\0\1\1\1", 4);
	/* the same in a .pb */
	static const uint8_t pb[] = {0x08, 4, 0x10, 9, 0x4a, 4, 0, 1, 2, 255};
	ck_assert_int_eq(wh_tensor_read_pb_buffer(pb, sizeof pb, "bool.pb", &t, NULL), WH_OK);
	ck_assert_int_eq(t.dtype, WH_DT_BOOL);
	ck_assert_mem_eq(t.data, "\0\1\1\1", 4);
	wh_tensor_release(&t);
	free(b);
}
END_TEST

START_TEST(test_npy_hostile_preamble)
{
	struct wh_tensor t;
	wh_tensor_init(&t);
	/* version 2 header length of 4 GiB in a 20-byte file */
	static const uint8_t v2[] = "\x93NUMPY\x02\x00\xff\xff\xff\xff{}\n";
	ck_assert_int_eq(wh_tensor_read_npy_buffer(v2, sizeof v2 - 1, "v2", &t), WH_ERR_PARSE);
	static const uint8_t v9[] = "\x93NUMPY\x09\x00\x02\x00{}";
	ck_assert_int_eq(wh_tensor_read_npy_buffer(v9, sizeof v9 - 1, "v9", &t), WH_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "9.0"));
	ck_assert_int_eq(wh_tensor_read_npy_buffer("", 0, "empty", &t), WH_ERR_PARSE);
	ck_assert_int_eq(wh_tensor_read_npy_buffer("PK\x03\x04", 4, "zip", &t), WH_ERR_PARSE);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "numpy.save"));
	/* header length pointing past the end */
	static const uint8_t past[] = "\x93NUMPY\x01\x00\x40\x00{'descr'";
	ck_assert_int_eq(wh_tensor_read_npy_buffer(past, sizeof past - 1, "past", &t), WH_ERR_PARSE);
	ck_assert_ptr_null(t.data);
}
END_TEST

/* Every proper prefix of a valid file is rejected, and nothing crashes. */
START_TEST(test_truncated_everywhere)
{
	const int64_t dims[2] = {3, 7};
	struct wh_tensor t, u;
	wh_tensor_init(&t);
	wh_tensor_init(&u);
	make_pattern(&t, WH_DT_DOUBLE, 2, dims);
	char pb[PATH_MAX], npy[PATH_MAX];
	tmp_path(pb, sizeof pb, "t.pb");
	tmp_path(npy, sizeof npy, "t.npy");
	ck_assert_int_eq(wh_tensor_write_pb(pb, "truncate-me", &t), WH_OK);
	ck_assert_int_eq(wh_tensor_write_npy(npy, &t), WH_OK);
	size_t lp, ln;
	uint8_t *bp = read_all(pb, &lp), *bn = read_all(npy, &ln);
	for (size_t n = 0; n < ln; n++) {
		uint8_t *copy = malloc(n ? n : 1); /* exact size, so ASan sees over-reads */
		memcpy(copy, bn, n);
		ck_assert_int_ne(wh_tensor_read_npy_buffer(copy, n, "cut", &u), WH_OK);
		/* mapped from a file cut there: refused too, one line */
		write_all(npy, copy, n);
		ck_assert_int_ne(wh_tensor_map_npy(npy, &u), WH_OK);
		ck_assert_ptr_null(strchr(wh_error_message(), '\n'));
		free(copy);
	}
	for (size_t n = 0; n < lp; n++) {
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, bp, n);
		ck_assert_int_ne(wh_tensor_read_pb_buffer(copy, n, "cut", &u, NULL), WH_OK);
		free(copy);
	}
	ck_assert_ptr_null(u.data);
	free(bp);
	free(bn);
	wh_tensor_release(&t);
}
END_TEST

START_TEST(test_random_bytes)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t buf[512];
	struct wh_tensor t;
	wh_tensor_init(&t);
	int ok = 0;
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = (size_t)(iter % 97) * 5;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[i] = (uint8_t)x;
		}
		/* half the runs start like a real file so the parsers get past the magic */
		if (iter & 1 && n >= 10)
			memcpy(buf, "\x93NUMPY\x01\x00", 8);
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, buf, n);
		char *name = NULL;
		if (wh_tensor_read_pb_buffer(copy, n, "rnd", &t, &name) == WH_OK)
			ok++;
		free(name);
		if (wh_tensor_read_npy_buffer(copy, n, "rnd", &t) == WH_OK)
			ok++;
		free(copy);
	}
	wh_tensor_release(&t);
	/* random protobuf bytes almost never form a valid tensor */
	ck_assert_int_lt(ok, 200);
}
END_TEST

/* TensorProto fields by hand: field 1 dims (varint), 2 data_type, 8 name, 9 raw_data. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	do {
		p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

START_TEST(test_pb_hostile)
{
	uint8_t b[128];
	size_t n;
	struct wh_tensor t;
	wh_tensor_init(&t);
	/* dims 2^62 x 2^62 of float with 4 bytes of data */
	n = 0;
	b[n++] = 0x08;
	n += put_varint(b + n, (uint64_t)1 << 62);
	b[n++] = 0x08;
	n += put_varint(b + n, (uint64_t)1 << 62);
	b[n++] = 0x10;
	b[n++] = 1;
	b[n++] = 0x4a;
	b[n++] = 4;
	memset(b + n, 0, 4);
	n += 4;
	ck_assert_int_eq(wh_tensor_read_pb_buffer(b, n, "huge", &t, NULL), WH_ERR_OVERFLOW);
	/* dims 2^31 x 2^31 passes the element limit? no: 2^62 elements is beyond it */
	n = 0;
	b[n++] = 0x08;
	n += put_varint(b + n, (uint64_t)1 << 31);
	b[n++] = 0x08;
	n += put_varint(b + n, (uint64_t)1 << 31);
	b[n++] = 0x10;
	b[n++] = 1;
	ck_assert_int_eq(wh_tensor_read_pb_buffer(b, n, "huge2", &t, NULL), WH_ERR_OVERFLOW);
	/* 2^20 x 2^19 floats within the element limit, but no data: refused before allocating */
	n = 0;
	b[n++] = 0x08;
	n += put_varint(b + n, (uint64_t)1 << 20);
	b[n++] = 0x08;
	n += put_varint(b + n, (uint64_t)1 << 19);
	b[n++] = 0x10;
	b[n++] = 1;
	b[n++] = 0x4a;
	b[n++] = 0;
	ck_assert_int_eq(wh_tensor_read_pb_buffer(b, n, "nodata", &t, NULL), WH_ERR_INVALID);
	/* negative dim (varint of -5 as int64) */
	n = 0;
	b[n++] = 0x08;
	n += put_varint(b + n, (uint64_t)-5);
	b[n++] = 0x10;
	b[n++] = 1;
	ck_assert_int_eq(wh_tensor_read_pb_buffer(b, n, "neg", &t, NULL), WH_ERR_INVALID);
	/* 17 dims */
	n = 0;
	for (int i = 0; i < 17; i++) {
		b[n++] = 0x08;
		b[n++] = 1;
	}
	b[n++] = 0x10;
	b[n++] = 1;
	ck_assert_int_eq(wh_tensor_read_pb_buffer(b, n, "rank", &t, NULL), WH_ERR_UNSUPPORTED);
	/* a string tensor of 3 elements holding 1 string */
	n = 0;
	b[n++] = 0x08;
	b[n++] = 3;
	b[n++] = 0x10;
	b[n++] = 8;
	b[n++] = 0x32;
	b[n++] = 1;
	b[n++] = 'z';
	ck_assert_int_eq(wh_tensor_read_pb_buffer(b, n, "str", &t, NULL), WH_ERR_INVALID);
	/* external data in a buffer: no folder to resolve it against */
	n = 0;
	b[n++] = 0x08;
	b[n++] = 1;
	b[n++] = 0x10;
	b[n++] = 1;
	b[n++] = 0x6a; /* external_data (13) */
	b[n++] = 14;
	b[n++] = 0x0a;
	b[n++] = 8;
	memcpy(b + n, "location", 8);
	n += 8;
	b[n++] = 0x12;
	b[n++] = 2;
	b[n++] = 'w';
	b[n++] = 'x';
	b[n++] = 0x70; /* data_location (14) = EXTERNAL */
	b[n++] = 1;
	ck_assert_int_eq(wh_tensor_read_pb_buffer(b, n, "ext", &t, NULL), WH_ERR_INVALID);
	/* ...and a file may not reach outside its folder */
	char path[PATH_MAX];
	tmp_path(path, sizeof path, "ext.pb");
	b[n - 4] = '.';
	b[n - 3] = '.';
	write_all(path, b, n);
	ck_assert_int_eq(wh_tensor_read_pb(path, &t, NULL), WH_ERR_INVALID);
	ck_assert_ptr_null(t.data);
}
END_TEST

START_TEST(test_pb_external_data_beside_file)
{
	/* a tensor file may keep its data in a file next to it, like a model */
	uint8_t b[64];
	size_t n = 0;
	b[n++] = 0x08;
	b[n++] = 2;
	b[n++] = 0x10;
	b[n++] = 6; /* int32 */
	b[n++] = 0x6a;
	b[n++] = 16;
	b[n++] = 0x0a;
	b[n++] = 8;
	memcpy(b + n, "location", 8);
	n += 8;
	b[n++] = 0x12;
	b[n++] = 4;
	memcpy(b + n, "w.da", 4);
	n += 4;
	b[n++] = 0x70;
	b[n++] = 1;
	char path[PATH_MAX];
	tmp_path(path, sizeof path, "ext.pb");
	write_all(path, b, n);
	int32_t w[2] = {-7, 123456};
	char wpath[PATH_MAX];
	tmp_path(wpath, sizeof wpath, "w.da");
	write_all(wpath, w, sizeof w);
	struct wh_tensor t;
	wh_tensor_init(&t);
	ck_assert_msg(wh_tensor_read_pb(path, &t, NULL) == WH_OK, "%s", wh_error_message());
	ck_assert_int_eq(((int32_t *)t.data)[0], -7);
	ck_assert_int_eq(((int32_t *)t.data)[1], 123456);
	wh_tensor_release(&t);
}
END_TEST

static Suite *tensor_file_suite(void)
{
	Suite *s = suite_create("tensor-file");
	TCase *tc = tcase_create("roundtrip");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_pb_roundtrip_every_type, 1, WH_DT_COUNT_);
	tcase_add_loop_test(tc, test_npy_roundtrip_every_type, 1, WH_DT_COUNT_);
	tcase_add_test(tc, test_npy_header_exact);
	suite_add_tcase(s, tc);

	tc = tcase_create("fixtures");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_fixtures_match_expected);
	tcase_add_test(tc, test_fixtures_names_and_special);
	tcase_add_loop_test(tc, test_fixtures_bad, 0, (int)(sizeof bad_fixtures / sizeof bad_fixtures[0]));
	tcase_add_test(tc, test_onnx_test_data);
	suite_add_tcase(s, tc);

	tc = tcase_create("sets");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_set_positional);
	tcase_add_test(tc, test_set_named);
	tcase_add_test(tc, test_set_errors);
	tcase_add_test(tc, test_name_to_file);
	tcase_add_test(tc, test_name_to_file_long);
	tcase_add_test(tc, test_strict_files);
	tcase_add_test(tc, test_read_file_by_content);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_npy_hostile_headers, 0, (int)(sizeof bad_headers / sizeof bad_headers[0]));
	tcase_add_test(tc, test_npy_hostile_preamble);
	tcase_add_test(tc, test_npy_bool_normalised);
	tcase_add_test(tc, test_truncated_everywhere);
	tcase_add_test(tc, test_random_bytes);
	tcase_add_test(tc, test_pb_hostile);
	tcase_add_test(tc, test_sequence_and_optional_files);
	tcase_add_test(tc, test_pb_external_data_beside_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tensor_file_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
