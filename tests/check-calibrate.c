/* Calibration: minmax / percentile / entropy on distributions whose answer is known, the
 * calibration of a small model over several samples (which tensors, which amax), sample
 * checks, and the TensorRT cache format (round trip to the same digits, corrupt caches). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/calibrate.h"
#include "graph/blob.h"

/* Splitmix64 so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static double rng_gauss(uint64_t *s)
{
	double u = rng_unit(s), v = rng_unit(s);
	return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static float amax_of(const float *x, uint64_t n, enum wh_calib_method m, double p)
{
	float a = -1;
	ck_assert_int_eq(wh_calib_amax_of_data(x, n, m, p, &a), WH_OK);
	return a;
}

START_TEST(method_parse)
{
	enum wh_calib_method m;
	double p;
	ck_assert(wh_calib_method_parse("minmax", &m, &p) && m == WH_CALIB_MINMAX);
	ck_assert(wh_calib_method_parse("entropy", &m, &p) && m == WH_CALIB_ENTROPY);
	ck_assert(wh_calib_method_parse("percentile", &m, &p) && m == WH_CALIB_PERCENTILE && p == 99.99);
	ck_assert(wh_calib_method_parse("percentile=99.9", &m, &p) && m == WH_CALIB_PERCENTILE && p == 99.9);
	ck_assert(wh_calib_method_parse("percentile=100", &m, &p) && p == 100);
	const char *bad[] = {"", "percentile=", "percentile=0", "percentile=101", "percentile=9x", "percentiles", "kl", "Entropy"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!wh_calib_method_parse(bad[i], &m, &p), "'%s' accepted", bad[i]);
	ck_assert_str_eq(wh_calib_method_algorithm(WH_CALIB_ENTROPY), "EntropyCalibration2");
	ck_assert_str_eq(wh_calib_method_algorithm(WH_CALIB_MINMAX), "MinMaxCalibration");
}
END_TEST

START_TEST(minmax_skips_nonfinite)
{
	float x[] = {0.5f, -3.25f, NAN, INFINITY, -INFINITY, 2.0f};
	ck_assert_float_eq(amax_of(x, 6, WH_CALIB_MINMAX, 0), 3.25f);
	float z[] = {0, 0, 0};
	ck_assert_float_eq(amax_of(z, 3, WH_CALIB_MINMAX, 0), 0);
	ck_assert_float_eq(amax_of(z, 3, WH_CALIB_ENTROPY, 0), 0);
	ck_assert_float_eq(amax_of(z, 3, WH_CALIB_PERCENTILE, 99), 0);
}
END_TEST

/* Uniform |x| on [0, 1]: every threshold below the maximum clips real mass, so entropy stays
 * at the top; percentiles are where the definition puts them. */
START_TEST(uniform)
{
	enum { N = 200000 };
	float *x = malloc(N * sizeof *x);
	uint64_t s = 7;
	float mx = 0;
	for (int i = 0; i < N; i++) {
		x[i] = (float)(2 * rng_unit(&s) - 1);
		mx = fmaxf(mx, fabsf(x[i]));
	}
	ck_assert_float_eq(amax_of(x, N, WH_CALIB_MINMAX, 0), mx);
	float e = amax_of(x, N, WH_CALIB_ENTROPY, 0);
	ck_assert_msg(e >= 0.97f * mx && e <= mx, "entropy %g, max %g", (double)e, (double)mx);
	float p50 = amax_of(x, N, WH_CALIB_PERCENTILE, 50);
	ck_assert_msg(fabsf(p50 - 0.5f) < 0.01f, "50th percentile %g", (double)p50);
	float p99 = amax_of(x, N, WH_CALIB_PERCENTILE, 99);
	ck_assert_msg(fabsf(p99 - 0.99f) < 0.012f, "99th percentile %g", (double)p99);
	ck_assert_float_eq(amax_of(x, N, WH_CALIB_PERCENTILE, 100), mx);
	free(x);
}
END_TEST

/* Gaussian data and one value 1000: minmax takes the outlier, percentile ignores it, entropy
 * clips at the lowest threshold it may (128.5 of 2048 bins), far below it. */
START_TEST(outlier)
{
	enum { N = 100000 };
	float *x = malloc(N * sizeof *x);
	uint64_t s = 11;
	for (int i = 0; i < N; i++)
		x[i] = (float)rng_gauss(&s);
	x[N / 3] = 1000.0f;
	ck_assert_float_eq(amax_of(x, N, WH_CALIB_MINMAX, 0), 1000.0f);
	float p = amax_of(x, N, WH_CALIB_PERCENTILE, 99.99);
	/* the 99.99th percentile of |N(0,1)| is 3.89 */
	ck_assert_msg(p > 3.5f && p < 4.4f, "percentile %g", (double)p);
	float e = amax_of(x, N, WH_CALIB_ENTROPY, 0);
	ck_assert_msg(e < 100.0f, "entropy %g does not clip the outlier", (double)e);
	ck_assert_msg(fabsf(e - 128.5f * 1000.0f / 2048) < 1e-3f, "entropy %g", (double)e);
	free(x);
}
END_TEST

/* A long-tailed distribution (Laplace): entropy clips the tail, and well above the bulk. */
START_TEST(laplace_tail)
{
	enum { N = 400000 };
	float *x = malloc(N * sizeof *x);
	uint64_t s = 5;
	float mx = 0;
	for (int i = 0; i < N; i++) {
		double u = rng_unit(&s) - 0.5;
		x[i] = (float)(-copysign(1.0, u) * log(1 - 2 * fabs(u) + 1e-300));
		mx = fmaxf(mx, fabsf(x[i]));
	}
	float e = amax_of(x, N, WH_CALIB_ENTROPY, 0);
	ck_assert_msg(e < 0.9f * mx && e > 3.0f, "entropy %g of max %g", (double)e, (double)mx);
	float p = amax_of(x, N, WH_CALIB_PERCENTILE, 99.9);
	/* |Laplace(1)| is Exp(1): the 99.9th percentile is ln 1000 */
	ck_assert_msg(fabs(p - log(1000.0)) < 0.15, "percentile %g", (double)p);
	free(x);
}
END_TEST

/* ---- a model: x -> Relu -> Add(relu, Neg(x)) -> Mul(., Constant) -> z; and Shape(x) ---- */

static struct wh_model *small_model(void)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	m->n_opsets = 1;
	m->opsets = wh_arena_calloc(m->arena, 1, sizeof *m->opsets);
	m->opsets[0].domain = "";
	m->opsets[0].version = 13;
	struct wh_graph *g = m->graph;
	uint32_t x, r, n, y, c, z, sh, id;
	int64_t dims[2] = {2, 8};
	ck_assert_int_eq(wh_graph_add_value(g, "x", &x), WH_OK);
	ck_assert_int_eq(wh_graph_set_shape(g, x, WH_DT_FLOAT, 2, dims), WH_OK);
	g->values[x].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_input(g, x), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "r", &r), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "n", &n), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "y", &y), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "c", &c), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "z", &z), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "sh", &sh), WH_OK);
	/* the types shape inference gives (layer kinds depend on them) */
	uint32_t floats[] = {r, n, y, z};
	for (size_t i = 0; i < 4; i++)
		ck_assert_int_eq(wh_graph_set_shape(g, floats[i], WH_DT_FLOAT, 2, dims), WH_OK);
	ck_assert_int_eq(wh_graph_set_shape(g, c, WH_DT_FLOAT, 0, NULL), WH_OK);
	int64_t two = 2;
	ck_assert_int_eq(wh_graph_set_shape(g, sh, WH_DT_INT64, 1, &two), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, "Relu", "", "relu", 1, &x, 1, &r, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, "Neg", "", "neg", 1, &x, 1, &n, &id), WH_OK);
	uint32_t add_in[2] = {r, n};
	ck_assert_int_eq(wh_graph_add_node(g, "Add", "", "add", 2, add_in, 1, &y, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, "Constant", "", "const", 0, NULL, 1, &c, &id), WH_OK);
	struct wh_node *cn = &g->nodes[id];
	cn->n_attrs = 1;
	cn->attrs = wh_arena_calloc(m->arena, 1, sizeof *cn->attrs);
	cn->attrs[0].name = "value";
	cn->attrs[0].type = WH_ATTR_TENSOR;
	struct wh_const_tensor *ct = wh_arena_calloc(m->arena, 1, sizeof *ct);
	float cval = 3.0f;
	ct->dtype = WH_DT_FLOAT;
	ct->rank = 0;
	ck_assert_int_eq(wh_blob_create_copy(&cval, sizeof cval, &ct->data), WH_OK);
	cn->attrs[0].t = ct;
	uint32_t mul_in[2] = {y, c};
	ck_assert_int_eq(wh_graph_add_node(g, "Mul", "", "mul", 2, mul_in, 1, &z, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, "Shape", "", "shape", 1, &x, 1, &sh, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_output(g, z), WH_OK);
	ck_assert_int_eq(wh_graph_add_output(g, sh), WH_OK);
	return m;
}

static void make_sample(struct wh_tensor_set *s, const char *name, const float *v, int32_t rank, const int64_t *dims)
{
	struct wh_tensor t;
	wh_tensor_init(&t);
	ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_FLOAT, rank, dims), WH_OK);
	memcpy(t.data, v, t.count * sizeof(float));
	wh_tensor_set_init(s);
	ck_assert_int_eq(wh_tensor_set_add(s, name, -1, &t), WH_OK);
	wh_tensor_release(&t);
}

START_TEST(model_minmax)
{
	struct wh_model *m = small_model();
	int64_t dims[2] = {2, 8};
	float a[16], b[16];
	for (int i = 0; i < 16; i++) {
		a[i] = (float)(i - 8) * 0.25f;  /* -2 .. 1.75 */
		b[i] = (float)(i % 5) * 0.75f; /* 0 .. 3 */
	}
	struct wh_tensor_set s[2];
	make_sample(&s[0], "x", a, 2, dims);
	make_sample(&s[1], NULL, b, 2, dims); /* bound by position */
	s[1].items[0].index = 0;
	struct wh_calib c;
	wh_calib_init(&c);
	ck_assert_int_eq(wh_calibrate(m, s, 2, WH_CALIB_MINMAX, 99.99, 1, &c), WH_OK);
	ck_assert_float_eq(wh_calib_get(&c, "x"), 3.0f);
	ck_assert_float_eq(wh_calib_get(&c, "r"), 3.0f);
	ck_assert_float_eq(wh_calib_get(&c, "n"), 3.0f);
	/* y = relu(x) - x = max(-x, 0): 2 from the first sample, 0 from the second */
	ck_assert_float_eq(wh_calib_get(&c, "y"), 2.0f);
	ck_assert_float_eq(wh_calib_get(&c, "z"), 6.0f);
	ck_assert_msg(wh_calib_get(&c, "c") < 0, "the Constant output is calibrated");
	ck_assert_msg(wh_calib_get(&c, "sh") < 0, "the shape tensor is calibrated");
	ck_assert_uint_eq(c.n, 5);
	ck_assert_str_eq(c.names[0], "x"); /* graph inputs first, then topological order */
	ck_assert_str_eq(c.algorithm, "MinMaxCalibration");
	wh_calib_release(&c);

	/* entropy over the same samples: thresholds within the ranges, algorithm recorded */
	wh_calib_init(&c);
	ck_assert_int_eq(wh_calibrate(m, s, 2, WH_CALIB_ENTROPY, 99.99, 1, &c), WH_OK);
	ck_assert_uint_eq(c.n, 5);
	ck_assert(wh_calib_get(&c, "x") > 0 && wh_calib_get(&c, "x") <= 3.0f);
	ck_assert_str_eq(c.algorithm, "EntropyCalibration2");
	wh_calib_release(&c);
	wh_tensor_set_release(&s[0]);
	wh_tensor_set_release(&s[1]);
	wh_model_destroy(m);
}
END_TEST

START_TEST(bad_samples)
{
	struct wh_model *m = small_model();
	struct wh_calib c;
	wh_calib_init(&c);
	ck_assert_int_eq(wh_calibrate(m, NULL, 0, WH_CALIB_MINMAX, 99.99, 1, &c), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "no samples"));
	float v[12] = {0};
	int64_t wrong[2] = {3, 4};
	struct wh_tensor_set s;
	make_sample(&s, "x", v, 2, wrong);
	const char *label = "calib/s07";
	ck_assert_int_eq(wh_calib_check_samples(m, &s, 1, &label), WH_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "calib/s07"));
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "3x4"));
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "2x8"));
	wh_tensor_set_release(&s);
	int64_t ok[2] = {2, 8};
	float w[16] = {0};
	make_sample(&s, "not_x", w, 2, ok);
	ck_assert_int_eq(wh_calibrate(m, &s, 1, WH_CALIB_MINMAX, 99.99, 1, &c), WH_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "'x'"));
	ck_assert_uint_eq(c.n, 0);
	wh_tensor_set_release(&s);
	wh_model_destroy(m);
}
END_TEST

/* ---- the cache ---- */

static char *print_cache(const struct wh_calib *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(wh_calib_cache_print(c, f), WH_OK);
	fclose(f);
	return buf;
}

START_TEST(scale_round_trip)
{
	/* every amax maps to a scale that reads back to an amax giving the same scale */
	uint64_t s = 3;
	for (int i = 0; i < 2000000; i++) {
		uint32_t bits = (uint32_t)rng_next(&s) & 0x7fffffffu;
		float a;
		memcpy(&a, &bits, sizeof a);
		if (!isfinite(a))
			continue;
		float sc = wh_calib_scale_of_amax(a);
		float back = wh_calib_scale_of_amax(wh_calib_amax_of_scale(sc));
		if (memcmp(&sc, &back, sizeof sc) != 0)
			ck_abort_msg("amax %a: scale %a reads back as %a", (double)a, (double)sc, (double)back);
	}
}
END_TEST

START_TEST(cache_round_trip)
{
	struct wh_calib c, r;
	wh_calib_init(&c);
	wh_calib_init(&r);
	snprintf(c.algorithm, sizeof c.algorithm, "EntropyCalibration2");
	uint64_t s = 99;
	char name[64];
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof name, "t%d/conv:%d", i, i % 7); /* names with ':' */
		ck_assert_int_eq(wh_calib_set(&c, name, (float)(rng_unit(&s) * pow(10, (int)(rng_next(&s) % 20) - 10))), WH_OK);
	}
	ck_assert_int_eq(wh_calib_set(&c, "zero", 0), WH_OK);
	ck_assert_int_eq(wh_calib_set(&c, "one: two", 127.0f), WH_OK); /* holds ": " */
	char *text = print_cache(&c);
	ck_assert_int_eq(strncmp(text, "TRT-8601-EntropyCalibration2\n", 29), 0);
	ck_assert_ptr_nonnull(strstr(text, "\none: two: 3f800000\n")); /* scale 1.0 */
	ck_assert_ptr_nonnull(strstr(text, "\nzero: 00000000\n"));
	ck_assert_int_eq(wh_calib_cache_parse(text, strlen(text), "mem", &r), WH_OK);
	ck_assert_uint_eq(r.n, c.n);
	ck_assert_str_eq(r.algorithm, "EntropyCalibration2");
	for (uint32_t i = 0; i < c.n; i++) {
		float a = wh_calib_scale_of_amax(c.amax[i]), b = wh_calib_scale_of_amax(wh_calib_get(&r, c.names[i]));
		ck_assert_msg(!memcmp(&a, &b, sizeof a), "%s: %a != %a", c.names[i], (double)a, (double)b);
	}
	char *again = print_cache(&r);
	ck_assert_str_eq(text, again);
	free(again);
	free(text);
	wh_calib_release(&r);

	/* a file written to disk reads back the same, CRLF and a missing last newline too */
	char path[] = "/tmp/check-calibrate-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(wh_calib_cache_write(&c, path), WH_OK);
	wh_calib_init(&r);
	ck_assert_int_eq(wh_calib_cache_read(path, &r), WH_OK);
	ck_assert_uint_eq(r.n, c.n);
	wh_calib_release(&r);
	unlink(path);
	const char *crlf = "TRT-8001-MinMaxCalibration\r\ninput: 3c010a14\r\nout: 3d000000";
	wh_calib_init(&r);
	ck_assert_int_eq(wh_calib_cache_parse(crlf, strlen(crlf), "crlf", &r), WH_OK);
	ck_assert_str_eq(r.algorithm, "MinMaxCalibration");
	ck_assert_uint_eq(r.n, 2);
	ck_assert_float_eq_tol(wh_calib_get(&r, "input"), 1.0f, 1e-3f); /* 0x3c010a14 = 1/127 */
	ck_assert_float_eq(wh_calib_get(&r, "out"), 127.0f / 32);
	wh_calib_release(&r);
	wh_calib_release(&c);
}
END_TEST

START_TEST(cache_corrupt)
{
	static const struct {
		const char *text, *expect;
	} cases[] = {
		{"", "empty"},
		{"TRT-8601\nx: 3c010a14\n", ":1:"},
		{"TensorRT cache\nx: 3c010a14\n", ":1:"},
		{"TRT--EntropyCalibration2\n", ":1:"},
		{"TRT-8601-EntropyCalibration2\nx 3c010a14\n", ":2:"},
		{"TRT-8601-EntropyCalibration2\nx: 3c010a1\n", ":2:"},
		{"TRT-8601-EntropyCalibration2\nx: 3c010a1g\n", ":2:"},
		{"TRT-8601-EntropyCalibration2\nx: 3c010a144\n", ":2:"},
		{"TRT-8601-EntropyCalibration2\na: 3c010a14\nx: bf800000\n", ":3:"}, /* negative */
		{"TRT-8601-EntropyCalibration2\nx: 7fc00000\n", ":2:"},              /* NaN */
		{"TRT-8601-EntropyCalibration2\nx: 7f800000\n", ":2:"},              /* inf */
		{"TRT-8601-EntropyCalibration2\n: 3c010a14\n", ":2:"},               /* no name */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct wh_calib r;
		wh_calib_init(&r);
		enum wh_status st = wh_calib_cache_parse(cases[i].text, strlen(cases[i].text), "bad.cache", &r);
		ck_assert_msg(st == WH_ERR_PARSE, "case %zu: status %d", i, st);
		ck_assert_msg(strstr(wh_error_message(), cases[i].expect) && strstr(wh_error_message(), "bad.cache"),
			      "case %zu: message '%s'", i, wh_error_message());
		wh_calib_release(&r);
	}
	const char nul[] = "TRT-8601-EntropyCalibration2\nx\0: 3c010a14\n";
	struct wh_calib r;
	wh_calib_init(&r);
	ck_assert_int_eq(wh_calib_cache_parse(nul, sizeof nul - 1, "nul", &r), WH_ERR_PARSE);
	wh_calib_release(&r);
	wh_calib_init(&r);
	ck_assert_int_eq(wh_calib_cache_read("/nonexistent/whittle.cache", &r), WH_ERR_IO);
	wh_calib_release(&r);
}
END_TEST

START_TEST(cache_warnings)
{
	struct wh_model *m = small_model();
	struct wh_calib c;
	wh_calib_init(&c);
	const char *text = "TRT-8601-MinMaxCalibration\nx: 3c010a14\nr_renamed: 3c010a14\nn: 3c010a14\ny: 3c010a14\nz: 3c010a14\n";
	ck_assert_int_eq(wh_calib_cache_parse(text, strlen(text), "w.cache", &c), WH_OK);
	ck_assert_uint_eq(wh_calib_warn_names(&c, m, "w.cache"), 1);
	ck_assert(wh_calib_warn_algorithm(&c, WH_CALIB_ENTROPY, "w.cache"));
	ck_assert(!wh_calib_warn_algorithm(&c, WH_CALIB_MINMAX, "w.cache"));
	/* the cache says |x| <= 1: inputs reaching 3 are warned about, inputs reaching 0.8 not */
	int64_t dims[2] = {2, 8};
	float v[16] = {0};
	v[3] = 3.0f;
	struct wh_tensor_set s;
	make_sample(&s, "x", v, 2, dims);
	ck_assert_uint_eq(wh_calib_warn_inputs(m, &c, WH_CALIB_MINMAX, 0, &s, "w.cache"), 1);
	wh_tensor_set_release(&s);
	v[3] = 0.8f;
	make_sample(&s, "x", v, 2, dims);
	ck_assert_uint_eq(wh_calib_warn_inputs(m, &c, WH_CALIB_MINMAX, 0, &s, "w.cache"), 0);
	wh_tensor_set_release(&s);
	v[3] = 0.2f;
	make_sample(&s, "x", v, 2, dims);
	ck_assert_uint_eq(wh_calib_warn_inputs(m, &c, WH_CALIB_MINMAX, 0, &s, "w.cache"), 1);
	wh_tensor_set_release(&s);
	/* a clipping method's cache is compared with the same method's amax of the run's inputs:
	 * one outlier beyond the clipped range is what the method expects */
	enum wh_calib_method em;
	ck_assert(wh_calib_algorithm_method("EntropyCalibration2", &em) && em == WH_CALIB_ENTROPY);
	ck_assert(wh_calib_algorithm_method("MinMaxCalibration", &em) && em == WH_CALIB_MINMAX);
	ck_assert(!wh_calib_algorithm_method("LegacyCalibration", &em));
	float big[16];
	for (int i = 0; i < 16; i++)
		big[i] = (float)(i % 8) / 8;
	big[5] = 50.0f;
	make_sample(&s, "x", big, 2, dims);
	ck_assert_uint_eq(wh_calib_warn_inputs(m, &c, WH_CALIB_MINMAX, 0, &s, "w.cache"), 1);
	float e;
	ck_assert_int_eq(wh_calib_amax_of_data(big, 16, WH_CALIB_PERCENTILE, 90, &e), WH_OK);
	wh_calib_release(&c);
	wh_calib_init(&c);
	ck_assert_int_eq(wh_calib_set(&c, "x", e), WH_OK);
	ck_assert_msg(e < 1, "90th percentile %g does not clip the outlier", (double)e);
	ck_assert_uint_eq(wh_calib_warn_inputs(m, &c, WH_CALIB_PERCENTILE, 90, &s, "w.cache"), 0);
	ck_assert_uint_eq(wh_calib_warn_inputs(m, &c, WH_CALIB_MINMAX, 0, &s, "w.cache"), 1);
	wh_tensor_set_release(&s);
	wh_calib_release(&c);
	wh_model_destroy(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("calibrate");
	TCase *tc = tcase_create("calibrate");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, method_parse);
	tcase_add_test(tc, minmax_skips_nonfinite);
	tcase_add_test(tc, uniform);
	tcase_add_test(tc, outlier);
	tcase_add_test(tc, laplace_tail);
	tcase_add_test(tc, model_minmax);
	tcase_add_test(tc, bad_samples);
	tcase_add_test(tc, scale_round_trip);
	tcase_add_test(tc, cache_round_trip);
	tcase_add_test(tc, cache_corrupt);
	tcase_add_test(tc, cache_warnings);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
