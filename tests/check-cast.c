/* Cast, CastLike, QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
 * (executor/ops/cast.c): the ONNX backend cases of these ops compared BIT FOR BIT (the
 * conformance runner's tolerance would hide a one-ulp fp16 error), single rounding from
 * double and int64, integer wrapping, string conversions, every float8 saturate mode,
 * e8m0 rounding modes, quantization rounding / clamping / per-axis / blocked layouts, and
 * identical results under every ISA cap and thread count. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/executor.h"
#include "executor/kernel.h"
#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"
#include "executor/ops/cast-internal.h"
#include "graph/onnx-io.h"
#include "graph/tensor-file.h"

struct attr_spec {
	const char *name;
	enum wh_attr_type type;
	int64_t i;
	const char *s;
};

#define A_INT(nm, v) {nm, WH_ATTR_INT, v, NULL}
#define A_STR(nm, v) {nm, WH_ATTR_STRING, 0, v}

static enum wh_status run_kernel_isa(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
				     const struct attr_spec *as, uint32_t n_attrs, enum wh_isa isa,
				     struct wh_threadpool *pool, uint32_t n_out, struct wh_tensor *outs)
{
	const struct wh_op_def *def = wh_op_lookup("", op, opset);
	ck_assert_msg(def != NULL, "no kernel for %s-%lld", op, (long long)opset);
	struct wh_attr attrs[8];
	memset(attrs, 0, sizeof attrs);
	ck_assert_uint_le(n_attrs, 8);
	for (uint32_t i = 0; i < n_attrs; i++) {
		attrs[i].name = as[i].name;
		attrs[i].type = as[i].type;
		attrs[i].i = as[i].i;
		if (as[i].s) {
			attrs[i].s.data = (const uint8_t *)as[i].s;
			attrs[i].s.len = strlen(as[i].s);
		}
	}
	struct wh_node node = {.name = "n", .op_type = op, .domain = "", .n_attrs = n_attrs, .attrs = attrs};
	struct wh_cpu_features cpu = wh_cpu_capped(isa);
	bool wanted[4] = {true, true, true, true};
	for (uint32_t i = 0; i < n_out; i++)
		wh_tensor_init(&outs[i]);
	struct wh_kernel_ctx ctx = {
		.node = &node, .opset = opset, .n_inputs = n_in, .inputs = ins, .n_outputs = n_out,
		.outputs = outs, .output_wanted = wanted, .pool = pool, .cpu = &cpu,
	};
	return def->run(&ctx);
}

static void run1(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
		 const struct attr_spec *as, uint32_t n_attrs, struct wh_tensor *out)
{
	enum wh_status st = run_kernel_isa(op, opset, n_in, ins, as, n_attrs, WH_ISA_SCALAR, NULL, 1, out);
	ck_assert_msg(st == WH_OK, "%s: %s", op, wh_error_message());
}

static void mk(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims, const void *v)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, dt, rank, dims), WH_OK);
	if (v)
		memcpy(t->data, v, wh_tensor_nbytes(t));
}

static void mk_f32(struct wh_tensor *t, int32_t rank, const int64_t *dims, const float *v)
{
	mk(t, WH_DT_FLOAT, rank, dims, v);
}

/* Cast of a 1-D float32 vector to `to` with the given attributes. */
static void cast_f32(const float *v, int64_t n, enum wh_dtype to, const struct attr_spec *extra, uint32_t n_extra,
		     struct wh_tensor *out)
{
	struct wh_tensor x;
	struct attr_spec as[4] = {A_INT("to", to)};
	for (uint32_t i = 0; i < n_extra; i++)
		as[1 + i] = extra[i];
	mk_f32(&x, 1, &n, v);
	const struct wh_tensor *ins[] = {&x};
	run1("Cast", 25, 1, ins, as, 1 + n_extra, out);
	ck_assert_int_eq(out->dtype, to);
	wh_tensor_release(&x);
}

static bool same_bits_elem(const struct wh_tensor *a, const struct wh_tensor *b, uint64_t i)
{
	if (wh_dtype_is_float(a->dtype)) {
		double x = wh_tensor_get_f64(a, i), y = wh_tensor_get_f64(b, i);
		if (x != x && y != y)
			return true; /* NaN payloads are not specified */
	}
	size_t es = wh_dtype_size(a->dtype);
	return !memcmp((const char *)a->data + i * es, (const char *)b->data + i * es, es);
}

/* ---- the ONNX backend cases, bit for bit ---- */

static bool wanted_case(const char *name)
{
	static const char *const prefixes[] = {"test_cast_", "test_castlike_", "test_quantizelinear",
					       "test_dequantizelinear", "test_dynamicquantizelinear"};
	if (strstr(name, "_expanded"))
		return false;
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

START_TEST(onnx_cases_bit_exact)
{
	const char *root = getenv("WHITTLE_ONNX_TESTS");
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/node", root ? root : "../shared/onnx-tests");
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "check-cast: %s not found, ONNX cases skipped\n", dir);
		return;
	}
	char *names[512];
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < 512)
		if (wanted_case(de->d_name))
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof names[0], cmp_names);
	ck_assert_uint_ge(n, 100); /* the data set has ~130 such cases */
	size_t checked = 0, unsupported = 0;
	for (size_t c = 0; c < n; c++) {
		char path[1400], data[1400];
		struct wh_model *m = NULL;
		struct wh_engine *e = NULL;
		struct wh_tensor_set ins, exp, got;
		wh_tensor_set_init(&ins);
		wh_tensor_set_init(&exp);
		wh_tensor_set_init(&got);
		snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[c]);
		snprintf(data, sizeof data, "%s/%s/test_data_set_0", dir, names[c]);
		ck_assert_msg(wh_model_load(path, &m) == WH_OK, "%s: %s", names[c], wh_error_message());
		struct wh_engine_options eo = {.threads = 1};
		ck_assert_msg(wh_engine_create(m, &eo, &e) == WH_OK, "%s: %s", names[c], wh_error_message());
		enum wh_status st = wh_tensor_set_read_dir(data, "input", &ins);
		if (st != WH_OK) {
			/* a type the tensor reader does not know yet */
			unsupported++;
			goto next;
		}
		for (size_t i = 0; i < ins.n; i++) {
			free(ins.items[i].name);
			ins.items[i].name = NULL;
		}
		ck_assert_int_eq(wh_tensor_set_read_dir(data, "output", &exp), WH_OK);
		ck_assert_msg(wh_engine_run(e, &ins, WH_KEEP_OUTPUTS, &got) == WH_OK, "%s: %s", names[c],
			      wh_error_message());
		ck_assert_uint_ge(got.n, exp.n);
		for (size_t k = 0; k < exp.n; k++) {
			const struct wh_tensor *want = &exp.items[k].t, *have = &got.items[k].t;
			ck_assert_msg(have->dtype == want->dtype, "%s output %zu: %s, want %s", names[c], k,
				      wh_dtype_name(have->dtype), wh_dtype_name(want->dtype));
			ck_assert_msg(wh_tensor_same_shape(have, want), "%s output %zu shape", names[c], k);
			for (uint64_t i = 0; i < want->count; i++) {
				if (want->dtype == WH_DT_STRING) {
					const char *hs = ((const char *const *)have->data)[i];
					const char *ws = ((const char *const *)want->data)[i];
					ck_assert_msg(!strcmp(hs ? hs : "", ws ? ws : ""), "%s[%llu]: '%s', want '%s'",
						      names[c], (unsigned long long)i, hs, ws);
					continue;
				}
				if (!same_bits_elem(have, want, i))
					ck_abort_msg("%s output %zu [%llu]: %.9g, want %.9g", names[c], k,
						     (unsigned long long)i, wh_tensor_get_f64(have, i),
						     wh_tensor_get_f64(want, i));
			}
		}
		checked++;
next:
		wh_tensor_set_release(&ins);
		wh_tensor_set_release(&exp);
		wh_tensor_set_release(&got);
		wh_engine_destroy(e);
		wh_model_destroy(m);
		free(names[c]);
	}
	ck_assert_uint_ge(checked, 100);
	ck_assert_uint_le(unsupported, 10);
}
END_TEST

/* ---- Cast semantics ---- */

START_TEST(double_and_int64_round_once)
{
	/* 1 + 2^-11 + 2^-40: just above the fp16 tie between 1 and 1 + 2^-10. Through a
	 * float32 it would become the tie itself and round down to even. */
	double d = 1.0 + ldexp(1, -11) + ldexp(1, -40);
	int64_t one = 1;
	struct wh_tensor x, y;
	mk(&x, WH_DT_DOUBLE, 1, &one, &d);
	const struct wh_tensor *ins[] = {&x};
	struct attr_spec to16[] = {A_INT("to", WH_DT_FLOAT16)};
	run1("Cast", 13, 1, ins, to16, 1, &y);
	ck_assert_uint_eq(((uint16_t *)y.data)[0], 0x3C01);
	wh_tensor_release(&x);
	wh_tensor_release(&y);

	/* 2^24 + 2^16 + 1 to bf16: above the tie between 2^24 and 2^24 + 2^17 */
	int64_t v = (1 << 24) + (1 << 16) + 1;
	mk(&x, WH_DT_INT64, 1, &one, &v);
	struct attr_spec tobf[] = {A_INT("to", WH_DT_BFLOAT16)};
	run1("Cast", 13, 1, ins, tobf, 1, &y);
	ck_assert_uint_eq(((uint16_t *)y.data)[0], wh_f32_to_bf16(16908288.0f));
	ck_assert_uint_ne(((uint16_t *)y.data)[0], wh_f32_to_bf16(16777216.0f));
	wh_tensor_release(&x);
	wh_tensor_release(&y);

	/* the round-to-odd helpers themselves */
	ck_assert_uint_eq(wh_f32_bits(wh_f64_to_f32_odd(1.0 + ldexp(1, -40))), 0x3F800001);
	ck_assert(wh_f64_to_f32_odd(0.5) == 0.5f);
	ck_assert(wh_f64_to_f32_odd(1e300) == 3.4028234663852886e38f); /* FLT_MAX, odd */
	ck_assert(isinf(wh_f64_to_f32_odd(INFINITY)));
	ck_assert(wh_i64_to_f32_odd(-16777217) == -16777218.0f); /* odd: 2^24 + 2 */
	ck_assert(wh_u64_to_f32_odd(UINT64_MAX) == 18446742974197923840.0f);
}
END_TEST

START_TEST(integers_truncate_and_wrap)
{
	const float v[] = {300.7f, -1.9f, -3.0f, 2.0f, 255.5f, -129.0f, 1e30f, NAN};
	struct wh_tensor y;
	cast_f32(v, 8, WH_DT_INT8, NULL, 0, &y);
	const int8_t want8[] = {44, -1, -3, 2, -1, 127, -1, 0};
	for (int i = 0; i < 7; i++)
		ck_assert_int_eq(((int8_t *)y.data)[i], want8[i]);
	wh_tensor_release(&y);
	cast_f32(v, 8, WH_DT_UINT4, NULL, 0, &y);
	const uint8_t want4[] = {12, 15, 13, 2, 15, 15, 15, 0};
	for (int i = 0; i < 6; i++)
		ck_assert_uint_eq(((uint8_t *)y.data)[i], want4[i]);
	wh_tensor_release(&y);
	cast_f32(v, 8, WH_DT_INT2, NULL, 0, &y);
	const int8_t want2[] = {0, -1, 1, -2, -1, -1};
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(((int8_t *)y.data)[i], want2[i]);
	wh_tensor_release(&y);
	cast_f32(v, 8, WH_DT_BOOL, NULL, 0, &y);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(((uint8_t *)y.data)[i], 1); /* NaN is true, as in numpy */
	wh_tensor_release(&y);

	/* int64 -> int32 wraps; uint64 beyond int64 keeps its value into double */
	int64_t n = 2;
	int64_t big[] = {((int64_t)1 << 32) + 5, -((int64_t)1 << 33) - 7};
	struct wh_tensor x;
	mk(&x, WH_DT_INT64, 1, &n, big);
	const struct wh_tensor *ins[] = {&x};
	struct attr_spec to32[] = {A_INT("to", WH_DT_INT32)};
	run1("Cast", 19, 1, ins, to32, 1, &y);
	ck_assert_int_eq(((int32_t *)y.data)[0], 5);
	ck_assert_int_eq(((int32_t *)y.data)[1], -7);
	wh_tensor_release(&x);
	wh_tensor_release(&y);
	uint64_t u[] = {UINT64_MAX, 1};
	mk(&x, WH_DT_UINT64, 1, &n, u);
	struct attr_spec tod[] = {A_INT("to", WH_DT_DOUBLE)};
	run1("Cast", 19, 1, ins, tod, 1, &y);
	ck_assert(((double *)y.data)[0] == 18446744073709551616.0);
	wh_tensor_release(&x);
	wh_tensor_release(&y);
}
END_TEST

START_TEST(float8_saturate_attribute)
{
	const float v[] = {1000.0f, -1000.0f, INFINITY, -INFINITY, NAN, -0.0f, 464.0f, 465.0f};
	struct attr_spec sat0[] = {A_INT("saturate", 0)};
	struct wh_tensor y;
	const struct {
		enum wh_dtype dt;
		uint8_t sat[8], nosat[8];
	} cases[] = {
		{WH_DT_FLOAT8E4M3FN, {0x7E, 0xFE, 0x7E, 0xFE, 0x7F, 0x80, 0x7E, 0x7E},
		 {0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0x80, 0x7E, 0x7F}},
		{WH_DT_FLOAT8E4M3FNUZ, {0x7F, 0xFF, 0x7F, 0xFF, 0x80, 0x00, 0x7F, 0x7F},
		 {0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x80, 0x80}},
		{WH_DT_FLOAT8E5M2, {0x64, 0xE4, 0x7B, 0xFB, 0x7E, 0x80, 0x5F, 0x5F},
		 {0x64, 0xE4, 0x7C, 0xFC, 0x7E, 0x80, 0x5F, 0x5F}},
		{WH_DT_FLOAT8E5M2FNUZ, {0x68, 0xE8, 0x7F, 0xFF, 0x80, 0x00, 0x63, 0x63},
		 {0x68, 0xE8, 0x80, 0x80, 0x80, 0x00, 0x63, 0x63}},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		cast_f32(v, 8, cases[c].dt, NULL, 0, &y);
		for (int i = 0; i < 8; i++)
			ck_assert_msg(((uint8_t *)y.data)[i] == cases[c].sat[i], "%s [%d]: 0x%02x want 0x%02x",
				      wh_dtype_name(cases[c].dt), i, ((uint8_t *)y.data)[i], cases[c].sat[i]);
		wh_tensor_release(&y);
		cast_f32(v, 8, cases[c].dt, sat0, 1, &y);
		for (int i = 0; i < 8; i++)
			ck_assert_msg(((uint8_t *)y.data)[i] == cases[c].nosat[i], "%s nosat [%d]: 0x%02x want 0x%02x",
				      wh_dtype_name(cases[c].dt), i, ((uint8_t *)y.data)[i], cases[c].nosat[i]);
		wh_tensor_release(&y);
	}
}
END_TEST

START_TEST(e8m0_round_modes)
{
	const float v[] = {1.5f, 1.25f, 3.0f, 0.75f, 3e38f, 1.0f};
	struct wh_tensor y;
	const struct {
		const char *mode;
		int saturate;
		uint8_t want[6];
	} cases[] = {
		{"up", 1, {0x80, 0x80, 0x81, 0x7F, 0xFE, 0x7F}},
		{"up", 0, {0x80, 0x80, 0x81, 0x7F, 0xFF, 0x7F}},
		{"down", 1, {0x7F, 0x7F, 0x80, 0x7E, 0xFE, 0x7F}},
		{"nearest", 1, {0x80, 0x7F, 0x81, 0x7F, 0xFE, 0x7F}},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct attr_spec as[] = {A_STR("round_mode", cases[c].mode), A_INT("saturate", cases[c].saturate)};
		cast_f32(v, 6, WH_DT_FLOAT8E8M0, as, 2, &y);
		for (int i = 0; i < 6; i++)
			ck_assert_msg(((uint8_t *)y.data)[i] == cases[c].want[i], "%s sat %d [%d]: 0x%02x want 0x%02x",
				      cases[c].mode, cases[c].saturate, i, ((uint8_t *)y.data)[i], cases[c].want[i]);
		wh_tensor_release(&y);
	}
	/* an unknown mode is an error naming it */
	struct attr_spec bad[] = {A_INT("to", WH_DT_FLOAT8E8M0), A_STR("round_mode", "sideways")};
	struct wh_tensor x;
	int64_t one = 1;
	float f = 1.0f;
	mk_f32(&x, 1, &one, &f);
	const struct wh_tensor *ins[] = {&x};
	ck_assert_int_eq(run_kernel_isa("Cast", 25, 1, ins, bad, 2, WH_ISA_SCALAR, NULL, 1, &y), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "sideways"));
	wh_tensor_release(&x);
	wh_tensor_release(&y);
}
END_TEST

START_TEST(strings_both_ways)
{
	const char *text[] = {"INF", "+INF", "-inf", "NaN", "1e-5", "3.14", " 7", "-5", "65520", "0x10", "1E8"};
	size_t lens[11];
	int64_t n = 11;
	for (int i = 0; i < 11; i++)
		lens[i] = strlen(text[i]);
	struct wh_tensor x, y;
	wh_tensor_init(&x);
	ck_assert_int_eq(wh_tensor_alloc_strings(&x, 1, &n, text, lens), WH_OK);
	const struct wh_tensor *ins[] = {&x};
	struct attr_spec tof[] = {A_INT("to", WH_DT_FLOAT)};
	run1("Cast", 13, 1, ins, tof, 1, &y);
	const float *f = y.data;
	ck_assert(isinf(f[0]) && f[0] > 0);
	ck_assert(isinf(f[1]) && f[1] > 0);
	ck_assert(isinf(f[2]) && f[2] < 0);
	ck_assert(isnan(f[3]));
	ck_assert(f[4] == 1e-5f);
	ck_assert(f[5] == 3.14f);
	ck_assert(f[6] == 7.0f);
	ck_assert(f[7] == -5.0f);
	ck_assert(f[10] == 1e8f);
	wh_tensor_release(&y);
	struct attr_spec toh[] = {A_INT("to", WH_DT_FLOAT16)};
	run1("Cast", 13, 1, ins, toh, 1, &y);
	ck_assert_uint_eq(((uint16_t *)y.data)[8], 0x7C00); /* 65520 overflows fp16 */
	ck_assert_uint_eq(((uint16_t *)y.data)[7], 0xC500);
	wh_tensor_release(&y);
	struct attr_spec toi[] = {A_INT("to", WH_DT_INT64)};
	run1("Cast", 13, 1, ins, toi, 1, &y);
	ck_assert_int_eq(((int64_t *)y.data)[6], 7);
	ck_assert_int_eq(((int64_t *)y.data)[7], -5);
	ck_assert_int_eq(((int64_t *)y.data)[8], 65520);
	ck_assert_int_eq(((int64_t *)y.data)[10], 100000000);
	wh_tensor_release(&y);
	wh_tensor_release(&x);

	/* numbers to text, as numpy prints them */
	const float v[] = {0.1f, 1e6f, 1e16f, 1.5e-5f, NAN, -INFINITY, -0.0f, 3.0f, 123.456f, 1e-4f};
	const char *want[] = {"0.1", "1000000.0", "1e+16", "1.5e-05", "nan", "-inf", "-0.0", "3.0", "123.456", "0.0001"};
	cast_f32(v, 10, WH_DT_STRING, NULL, 0, &y);
	for (int i = 0; i < 10; i++)
		ck_assert_str_eq(((const char *const *)y.data)[i], want[i]);
	wh_tensor_release(&y);
	double dv[] = {0.1, 1.0 / 3.0};
	int64_t two = 2;
	mk(&x, WH_DT_DOUBLE, 1, &two, dv);
	struct attr_spec tos[] = {A_INT("to", WH_DT_STRING)};
	run1("Cast", 13, 1, ins, tos, 1, &y);
	ck_assert_str_eq(((const char *const *)y.data)[0], "0.1");
	ck_assert_str_eq(((const char *const *)y.data)[1], "0.3333333333333333");
	wh_tensor_release(&x);
	wh_tensor_release(&y);
	int32_t iv[] = {42, -7};
	mk(&x, WH_DT_INT32, 1, &two, iv);
	run1("Cast", 13, 1, ins, tos, 1, &y);
	ck_assert_str_eq(((const char *const *)y.data)[0], "42");
	ck_assert_str_eq(((const char *const *)y.data)[1], "-7");
	wh_tensor_release(&x);
	wh_tensor_release(&y);
}
END_TEST

START_TEST(cast1_type_names_castlike_and_errors)
{
	const float v[] = {1.0f, 0.1f};
	int64_t n = 2;
	struct wh_tensor x, like, y;
	mk_f32(&x, 1, &n, v);
	const struct wh_tensor *ins[] = {&x};
	struct attr_spec to[] = {A_STR("to", "FLOAT16")};
	run1("Cast", 1, 1, ins, to, 1, &y);
	ck_assert_int_eq(y.dtype, WH_DT_FLOAT16);
	ck_assert_uint_eq(((uint16_t *)y.data)[1], 0x2E66);
	wh_tensor_release(&y);

	int64_t one = 1;
	mk(&like, WH_DT_BFLOAT16, 1, &one, NULL);
	const struct wh_tensor *ins2[] = {&x, &like};
	run1("CastLike", 15, 2, ins2, NULL, 0, &y);
	ck_assert_int_eq(y.dtype, WH_DT_BFLOAT16);
	ck_assert_uint_eq(((uint16_t *)y.data)[1], 0x3DCD);
	wh_tensor_release(&y);
	wh_tensor_release(&like);

	/* same type: the data is shared, not copied */
	struct attr_spec tof[] = {A_INT("to", WH_DT_FLOAT)};
	run1("Cast", 13, 1, ins, tof, 1, &y);
	ck_assert_ptr_eq(y.data, x.data);
	wh_tensor_release(&y);

	struct attr_spec toc[] = {A_INT("to", WH_DT_COMPLEX64)};
	ck_assert_int_eq(run_kernel_isa("Cast", 13, 1, ins, toc, 1, WH_ISA_SCALAR, NULL, 1, &y), WH_ERR_UNSUPPORTED);
	struct attr_spec tobad[] = {A_INT("to", 99)};
	ck_assert_int_eq(run_kernel_isa("Cast", 13, 1, ins, tobad, 1, WH_ISA_SCALAR, NULL, 1, &y), WH_ERR_INVALID);
	ck_assert_int_eq(run_kernel_isa("Cast", 13, 1, ins, NULL, 0, WH_ISA_SCALAR, NULL, 1, &y), WH_ERR_INVALID);
	wh_tensor_release(&y);
	wh_tensor_release(&x);
}
END_TEST

/* Every ISA cap and a thread pool give the same bits as the scalar single-thread run. */
START_TEST(isa_and_threads_identical)
{
	enum { N = 100003 };
	float *v = malloc(N * sizeof *v);
	uint64_t s = 99;
	for (int i = 0; i < N; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = wh_bits_f32((uint32_t)(s >> 32));
	}
	int64_t n = N;
	struct wh_tensor x, ref16, refbf, y;
	mk_f32(&x, 1, &n, v);
	const struct wh_tensor *ins[] = {&x};
	struct attr_spec to16[] = {A_INT("to", WH_DT_FLOAT16)}, tobf[] = {A_INT("to", WH_DT_BFLOAT16)};
	run1("Cast", 13, 1, ins, to16, 1, &ref16);
	run1("Cast", 13, 1, ins, tobf, 1, &refbf);
	for (int i = 0; i < N; i++) {
		ck_assert_uint_eq(((uint16_t *)ref16.data)[i], wh_f32_to_f16(v[i]));
		ck_assert_uint_eq(((uint16_t *)refbf.data)[i], wh_f32_to_bf16(v[i]));
	}
	struct wh_threadpool *pool = NULL;
	ck_assert_int_eq(wh_threadpool_create(3, &pool), WH_OK);
	for (int isa = WH_ISA_SCALAR; isa <= WH_ISA_AVX512; isa++) {
		for (int p = 0; p < 2; p++) {
			ck_assert_int_eq(run_kernel_isa("Cast", 13, 1, ins, to16, 1, (enum wh_isa)isa, p ? pool : NULL, 1, &y),
					 WH_OK);
			ck_assert_int_eq(memcmp(y.data, ref16.data, N * 2), 0);
			wh_tensor_release(&y);
			ck_assert_int_eq(run_kernel_isa("Cast", 13, 1, ins, tobf, 1, (enum wh_isa)isa, p ? pool : NULL, 1, &y),
					 WH_OK);
			ck_assert_int_eq(memcmp(y.data, refbf.data, N * 2), 0);
			/* and back */
			const struct wh_tensor *back_in[] = {&y};
			struct wh_tensor back;
			struct attr_spec tof[] = {A_INT("to", WH_DT_FLOAT)};
			ck_assert_int_eq(run_kernel_isa("Cast", 13, 1, back_in, tof, 1, (enum wh_isa)isa, p ? pool : NULL, 1,
							&back), WH_OK);
			for (int i = 0; i < N; i += 97)
				ck_assert_uint_eq(wh_f32_bits(((float *)back.data)[i]),
						  wh_f32_bits(wh_bf16_to_f32(((uint16_t *)refbf.data)[i])));
			wh_tensor_release(&back);
			wh_tensor_release(&y);
		}
	}
	wh_threadpool_destroy(pool);
	wh_tensor_release(&ref16);
	wh_tensor_release(&refbf);
	wh_tensor_release(&x);
	free(v);
}
END_TEST

/* ---- quantization ---- */

START_TEST(quantize_rounding_and_clamping)
{
	const float v[] = {2.5f, 3.5f, -2.5f, -3.5f, 0.5f, 1000.0f, -1000.0f, 1.49f};
	int64_t n = 8;
	float scale = 1.0f;
	int8_t zp8 = 0;
	uint8_t zpu = 10;
	struct wh_tensor x, s, z, y;
	mk_f32(&x, 1, &n, v);
	mk_f32(&s, 0, NULL, &scale);
	mk(&z, WH_DT_INT8, 0, NULL, &zp8);
	const struct wh_tensor *ins[] = {&x, &s, &z};
	run1("QuantizeLinear", 13, 3, ins, NULL, 0, &y);
	const int8_t want[] = {2, 4, -2, -4, 0, 127, -128, 1};
	ck_assert_int_eq(y.dtype, WH_DT_INT8);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(((int8_t *)y.data)[i], want[i]);
	wh_tensor_release(&y);
	wh_tensor_release(&z);
	mk(&z, WH_DT_UINT8, 1, (int64_t[]){1}, &zpu); /* a 1-element zero point with a scalar scale */
	run1("QuantizeLinear", 13, 3, ins, NULL, 0, &y);
	const uint8_t wantu[] = {12, 14, 8, 6, 10, 255, 0, 11};
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(((uint8_t *)y.data)[i], wantu[i]);
	wh_tensor_release(&y);
	wh_tensor_release(&z);
	/* no zero point: uint8 (or output_dtype from opset 21) */
	run1("QuantizeLinear", 13, 2, ins, NULL, 0, &y);
	ck_assert_int_eq(y.dtype, WH_DT_UINT8);
	ck_assert_uint_eq(((uint8_t *)y.data)[2], 0);
	wh_tensor_release(&y);
	struct attr_spec od[] = {A_INT("output_dtype", WH_DT_INT4)};
	run1("QuantizeLinear", 21, 2, ins, od, 1, &y);
	ck_assert_int_eq(y.dtype, WH_DT_INT4);
	const int8_t want4[] = {2, 4, -2, -4, 0, 7, -8, 1};
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(((int8_t *)y.data)[i], want4[i]);
	wh_tensor_release(&y);
	/* float8 output: saturate attribute */
	uint8_t zf = 0;
	mk(&z, WH_DT_FLOAT8E4M3FN, 0, NULL, &zf);
	run1("QuantizeLinear", 19, 3, ins, NULL, 0, &y);
	ck_assert_uint_eq(((uint8_t *)y.data)[5], 0x7E);
	wh_tensor_release(&y);
	struct attr_spec sat0[] = {A_INT("saturate", 0)};
	run1("QuantizeLinear", 19, 3, ins, sat0, 1, &y);
	ck_assert_uint_eq(((uint8_t *)y.data)[5], 0x7F);
	ck_assert_uint_eq(((uint8_t *)y.data)[6], 0xFF);
	ck_assert(wh_e4m3fn_to_f32(((uint8_t *)y.data)[1]) == 3.5f);
	wh_tensor_release(&y);
	wh_tensor_release(&z);
	wh_tensor_release(&s);
	wh_tensor_release(&x);
}
END_TEST

/* fp16 x and scale divide in fp16 (numpy's arithmetic on fp16 arrays): find an x whose
 * float32 quotient lies just above the tie 2.5 while the fp16 quotient is the tie itself;
 * dividing in fp16 rounds that to 2, dividing in float32 would give 3. */
START_TEST(quantize_divides_in_scale_precision)
{
	uint16_t xv = 0, sv = 0;
	bool found = false;
	for (uint32_t sb = 0x2E66; sb < 0x3C00 && !found; sb++) {
		float sf = wh_f16_to_f32((uint16_t)sb);
		uint16_t x0 = wh_f32_to_f16(2.5f * sf);
		for (int d = -2; d <= 2 && !found; d++) {
			uint16_t xb = (uint16_t)(x0 + d);
			float q = wh_f16_to_f32(xb) / sf;
			if (q > 2.5f && wh_round_f16(q) == 2.5f) {
				xv = xb;
				sv = (uint16_t)sb;
				found = true;
			}
		}
	}
	ck_assert(found);
	int64_t one = 1;
	int16_t zp = 0;
	struct wh_tensor x, s, z, y;
	mk(&x, WH_DT_FLOAT16, 1, &one, &xv);
	mk(&s, WH_DT_FLOAT16, 0, NULL, &sv);
	mk(&z, WH_DT_INT16, 0, NULL, &zp);
	const struct wh_tensor *ins[] = {&x, &s, &z};
	run1("QuantizeLinear", 21, 3, ins, NULL, 0, &y);
	ck_assert_int_eq(((int16_t *)y.data)[0], 2);
	wh_tensor_release(&y);
	/* the precision attribute (opset 23) asks for float32 division instead */
	struct attr_spec p32[] = {A_INT("precision", WH_DT_FLOAT)};
	run1("QuantizeLinear", 23, 3, ins, p32, 1, &y);
	ck_assert_int_eq(((int16_t *)y.data)[0], 3);
	wh_tensor_release(&y);
	wh_tensor_release(&x);
	wh_tensor_release(&s);
	wh_tensor_release(&z);
}
END_TEST

START_TEST(quantize_per_axis_and_blocked)
{
	/* x is 2x5; per-axis along axis 1 with 5 scales, blocked along axis 1 with blocks of 2
	 * (3 blocks, the last one short) */
	const float v[] = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
	int64_t dx[] = {2, 5};
	struct wh_tensor x, s, z, y, back;
	mk_f32(&x, 2, dx, v);
	const float sc_axis[] = {1, 2, 4, 8, 0.5f};
	int64_t five = 5;
	mk_f32(&s, 1, &five, sc_axis);
	const struct wh_tensor *ins[] = {&x, &s};
	struct attr_spec od[] = {A_INT("output_dtype", WH_DT_INT8)};
	run1("QuantizeLinear", 21, 2, ins, od, 1, &y);
	const int8_t want_axis[] = {1, 1, 1, 0, 10, -1, -1, -1, -0, -10};
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(((int8_t *)y.data)[i], want_axis[i]);
	/* dequantize back with the same layout */
	const struct wh_tensor *dins[] = {&y, &s};
	run1("DequantizeLinear", 21, 2, dins, NULL, 0, &back);
	const float want_back[] = {1, 2, 4, 0, 5, -1, -2, -4, 0, -5};
	for (int i = 0; i < 10; i++)
		ck_assert(((float *)back.data)[i] == want_back[i]);
	wh_tensor_release(&back);
	wh_tensor_release(&y);
	wh_tensor_release(&s);

	const float sc_block[] = {1, 2, 0.25f, 1, 2, 0.25f};
	int64_t ds[] = {2, 3};
	mk_f32(&s, 2, ds, sc_block);
	const uint8_t zpv[] = {0, 10, 20, 30, 40, 50};
	mk(&z, WH_DT_UINT8, 2, ds, zpv);
	const struct wh_tensor *bins[] = {&x, &s, &z};
	struct attr_spec blk[] = {A_INT("axis", 1), A_INT("block_size", 2)};
	run1("QuantizeLinear", 21, 3, bins, blk, 2, &y);
	const uint8_t want_blk[] = {1, 2, 12, 12, 40, 29, 28, 38, 38, 30};
	for (int i = 0; i < 10; i++)
		ck_assert_msg(((uint8_t *)y.data)[i] == want_blk[i], "[%d] %u want %u", i, ((uint8_t *)y.data)[i],
			      want_blk[i]);
	const struct wh_tensor *dbins[] = {&y, &s, &z};
	run1("DequantizeLinear", 21, 3, dbins, blk, 2, &back);
	const float want_bback[] = {1, 2, 4, 4, 5, -1, -2, -4, -4, -5};
	for (int i = 0; i < 10; i++)
		ck_assert_msg(((float *)back.data)[i] == want_bback[i], "[%d] %g", i, (double)((float *)back.data)[i]);
	wh_tensor_release(&back);
	wh_tensor_release(&y);

	/* a scale of the wrong shape is a shape error naming both */
	struct attr_spec blk3[] = {A_INT("axis", 1), A_INT("block_size", 3)};
	ck_assert_int_eq(run_kernel_isa("QuantizeLinear", 21, 3, bins, blk3, 2, WH_ISA_SCALAR, NULL, 1, &y), WH_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "2x3"));
	struct attr_spec ax0[] = {A_INT("axis", 0)};
	ck_assert_int_eq(run_kernel_isa("QuantizeLinear", 13, 2, bins, ax0, 1, WH_ISA_SCALAR, NULL, 1, &y), WH_ERR_SHAPE);
	wh_tensor_release(&y);
	wh_tensor_release(&z);
	wh_tensor_release(&s);
	wh_tensor_release(&x);
}
END_TEST

/* The 8-bit float32 paths (per tensor and per channel, with a pool) against the
 * definition, on values with ties, NaN, infinities and out-of-range magnitudes. */
START_TEST(quantize_8bit_paths_match_definition)
{
	enum { C = 7, W = 1531 };
	int64_t dx[] = {2, C, W}, dc = C;
	float *v = malloc(sizeof(float) * 2 * C * W);
	float sc[C];
	uint8_t zu[C];
	int8_t zs[C];
	uint64_t r = 5;
	for (int c = 0; c < C; c++) {
		sc[c] = 0.25f * (float)(c + 1);
		zu[c] = (uint8_t)(c * 37);
		zs[c] = (int8_t)(c * 19 - 60);
	}
	for (int i = 0; i < 2 * C * W; i++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		int k = (int)(r >> 59);
		v[i] = k == 0 ? NAN : k == 1 ? INFINITY : k == 2 ? -1e30f : k < 8 ? 0.125f * (float)((int)(r >> 40 & 0x3FF) - 512)
										  : (float)((int64_t)(r >> 32) % 20000) / 37.0f;
	}
	struct wh_tensor x, s, z, y, back;
	struct wh_threadpool *pool = NULL;
	ck_assert_int_eq(wh_threadpool_create(2, &pool), WH_OK);
	mk_f32(&x, 3, dx, v);
	for (int per_axis = 0; per_axis < 2; per_axis++) {
		for (int sgn = 0; sgn < 2; sgn++) {
			if (per_axis)
				mk_f32(&s, 1, &dc, sc);
			else
				mk_f32(&s, 0, NULL, &sc[2]);
			if (sgn)
				mk(&z, WH_DT_INT8, per_axis, &dc, per_axis ? (const void *)zs : (const void *)&zs[2]);
			else
				mk(&z, WH_DT_UINT8, per_axis, &dc, per_axis ? (const void *)zu : (const void *)&zu[2]);
			const struct wh_tensor *ins[] = {&x, &s, &z};
			ck_assert_int_eq(run_kernel_isa("QuantizeLinear", 13, 3, ins, NULL, 0, WH_ISA_SCALAR, pool, 1, &y), WH_OK);
			const struct wh_tensor *dins[] = {&y, &s, &z};
			ck_assert_int_eq(run_kernel_isa("DequantizeLinear", 13, 3, dins, NULL, 0, WH_ISA_SCALAR, pool, 1, &back),
					 WH_OK);
			for (int i = 0; i < 2 * C * W; i++) {
				int c = per_axis ? (i / W) % C : 2;
				float zp = sgn ? zs[c] : zu[c];
				double q = nearbyint((double)(v[i] / sc[c])) + zp;
				double lo = sgn ? -128 : 0, hi = sgn ? 127 : 255;
				q = q != q ? 0 : q < lo ? lo : q > hi ? hi : q;
				int got = sgn ? ((int8_t *)y.data)[i] : ((uint8_t *)y.data)[i];
				if (got != (int)q)
					ck_abort_msg("quantize %g (scale %g zp %g): %d, want %d", (double)v[i], (double)sc[c],
						     (double)zp, got, (int)q);
				float want_back = (float)(got - (int)zp) * sc[c];
				if (((float *)back.data)[i] != want_back)
					ck_abort_msg("dequantize %d: %g, want %g", got, (double)((float *)back.data)[i],
						     (double)want_back);
			}
			wh_tensor_release(&back);
			wh_tensor_release(&y);
			wh_tensor_release(&z);
			wh_tensor_release(&s);
		}
	}
	wh_threadpool_destroy(pool);
	wh_tensor_release(&x);
	free(v);
}
END_TEST

START_TEST(dequantize_types)
{
	/* int32 input (zero point 0), int4 with zero point, float8 and fp16 scale */
	int64_t n = 3;
	const int32_t xi[] = {2147483647, -2147483647 - 1, 5};
	float scale = 0.5f;
	struct wh_tensor x, s, z, y;
	mk(&x, WH_DT_INT32, 1, &n, xi);
	mk_f32(&s, 0, NULL, &scale);
	const struct wh_tensor *ins[] = {&x, &s};
	run1("DequantizeLinear", 13, 2, ins, NULL, 0, &y);
	ck_assert(((float *)y.data)[0] == 1073741824.0f);
	ck_assert(((float *)y.data)[1] == -1073741824.0f);
	ck_assert(((float *)y.data)[2] == 2.5f);
	wh_tensor_release(&y);
	wh_tensor_release(&x);

	const int8_t x4[] = {-8, 7, 0};
	int8_t z4 = -1;
	mk(&x, WH_DT_INT4, 1, &n, x4);
	mk(&z, WH_DT_INT4, 0, NULL, &z4);
	const struct wh_tensor *ins4[] = {&x, &s, &z};
	run1("DequantizeLinear", 21, 3, ins4, NULL, 0, &y);
	ck_assert(((float *)y.data)[0] == -3.5f);
	ck_assert(((float *)y.data)[1] == 4.0f);
	ck_assert(((float *)y.data)[2] == 0.5f);
	wh_tensor_release(&y);
	/* output_dtype (opset 23) */
	struct attr_spec od[] = {A_INT("output_dtype", WH_DT_FLOAT16)};
	run1("DequantizeLinear", 23, 3, ins4, od, 1, &y);
	ck_assert_int_eq(y.dtype, WH_DT_FLOAT16);
	ck_assert_uint_eq(((uint16_t *)y.data)[0], wh_f32_to_f16(-3.5f));
	wh_tensor_release(&y);
	/* a zero point of another type is invalid */
	wh_tensor_release(&z);
	uint8_t zu = 1;
	mk(&z, WH_DT_UINT8, 0, NULL, &zu);
	ck_assert_int_eq(run_kernel_isa("DequantizeLinear", 21, 3, ins4, NULL, 0, WH_ISA_SCALAR, NULL, 1, &y),
			 WH_ERR_INVALID);
	wh_tensor_release(&y);
	wh_tensor_release(&z);
	wh_tensor_release(&x);
	wh_tensor_release(&s);

	const uint8_t x8[] = {0x7E, 0x01, 0xFF};
	uint16_t s16 = wh_f32_to_f16(2.0f);
	mk(&x, WH_DT_FLOAT8E4M3FN, 1, &n, x8);
	mk(&s, WH_DT_FLOAT16, 0, NULL, &s16);
	run1("DequantizeLinear", 19, 2, ins, NULL, 0, &y);
	ck_assert_int_eq(y.dtype, WH_DT_FLOAT16);
	ck_assert_uint_eq(((uint16_t *)y.data)[0], wh_f32_to_f16(896.0f));
	ck_assert_uint_eq(((uint16_t *)y.data)[1], wh_f32_to_f16(ldexpf(1, -8)));
	ck_assert(isnan(wh_f16_to_f32(((uint16_t *)y.data)[2])));
	wh_tensor_release(&y);
	wh_tensor_release(&x);
	wh_tensor_release(&s);
}
END_TEST

START_TEST(dynamic_quantize)
{
	/* the example of the ONNX operator documentation */
	const float v[] = {0, 2, -3, -2.5f, 1.34f, 0.5f};
	int64_t n = 6;
	struct wh_tensor x, outs[3];
	mk_f32(&x, 1, &n, v);
	const struct wh_tensor *ins[] = {&x};
	ck_assert_int_eq(run_kernel_isa("DynamicQuantizeLinear", 11, 1, ins, NULL, 0, WH_ISA_SCALAR, NULL, 3, outs), WH_OK);
	const uint8_t want[] = {153, 255, 0, 26, 221, 179};
	for (int i = 0; i < 6; i++)
		ck_assert_uint_eq(((uint8_t *)outs[0].data)[i], want[i]);
	ck_assert_float_eq(((float *)outs[1].data)[0], 5.0f / 255.0f);
	ck_assert_uint_eq(((uint8_t *)outs[2].data)[0], 153);
	for (int i = 0; i < 3; i++)
		wh_tensor_release(&outs[i]);
	wh_tensor_release(&x);
	/* all zeros: scale 1/255, zero point 0, no division by zero */
	const float zeros[] = {0, 0, 0};
	n = 3;
	mk_f32(&x, 1, &n, zeros);
	ck_assert_int_eq(run_kernel_isa("DynamicQuantizeLinear", 11, 1, ins, NULL, 0, WH_ISA_SCALAR, NULL, 3, outs), WH_OK);
	ck_assert_uint_eq(((uint8_t *)outs[0].data)[1], 0);
	ck_assert_float_eq(((float *)outs[1].data)[0], 1.0f / 255.0f);
	ck_assert_uint_eq(((uint8_t *)outs[2].data)[0], 0);
	for (int i = 0; i < 3; i++)
		wh_tensor_release(&outs[i]);
	wh_tensor_release(&x);
}
END_TEST

static Suite *cast_suite(void)
{
	Suite *s = suite_create("cast");
	TCase *tc = tcase_create("cast");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, onnx_cases_bit_exact);
	tcase_add_test(tc, double_and_int64_round_once);
	tcase_add_test(tc, integers_truncate_and_wrap);
	tcase_add_test(tc, float8_saturate_attribute);
	tcase_add_test(tc, e8m0_round_modes);
	tcase_add_test(tc, strings_both_ways);
	tcase_add_test(tc, cast1_type_names_castlike_and_errors);
	tcase_add_test(tc, isa_and_threads_identical);
	suite_add_tcase(s, tc);
	TCase *q = tcase_create("quantize");
	tcase_add_test(q, quantize_rounding_and_clamping);
	tcase_add_test(q, quantize_divides_in_scale_precision);
	tcase_add_test(q, quantize_per_axis_and_blocked);
	tcase_add_test(q, quantize_8bit_paths_match_definition);
	tcase_add_test(q, dequantize_types);
	tcase_add_test(q, dynamic_quantize);
	suite_add_tcase(s, q);
	return s;
}

int main(void)
{
	wh_cpu_init();
	SRunner *sr = srunner_create(cast_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
