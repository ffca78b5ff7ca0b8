/* The int8 emulation's bulk loops: scalar references and the ISA dispatch (see
 * numfmt-quant.h). */
#include "executor/numfmt-quant.h"

#include <math.h>

#include "graph/numfmt.h"

/* a running maximum of finite |x|: the select keeps NaN and infinities out */
static inline float fold_abs(float m, float x)
{
	float a = fabsf(x);
	return (a > m && a <= WH_QUANT_FLT_MAX) ? a : m;
}

float wh_amax_n_scalar(const float *x, size_t n)
{
	/* eight running maxima so that the loop vectorizes where the compiler may */
	float m[8] = {0};
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			m[k] = fold_abs(m[k], x[i + k]);
	for (; i < n; i++)
		m[0] = fold_abs(m[0], x[i]);
	float r = 0;
	for (int k = 0; k < 8; k++)
		r = m[k] > r ? m[k] : r;
	return r;
}

float wh_fake_quant_int8_n_scalar(const float *src, float *dst, size_t n, float inv, float scale)
{
	float m = 0;
	for (size_t i = 0; i < n; i++) {
		dst[i] = wh_quant_int8(src[i], inv) * scale;
		m = fold_abs(m, dst[i]);
	}
	return m;
}

void wh_quant_int8_n_scalar(const float *src, float *dst, size_t n, float inv)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = wh_quant_int8(src[i], inv);
}

float wh_scale_add_n_scalar(float *y, size_t n, float s, float b)
{
	float m = 0;
	for (size_t i = 0; i < n; i++) {
		float p = y[i] * s;
		y[i] = p + b;
		m = fold_abs(m, y[i]);
	}
	return m;
}

/* The reference is the storage format's own conversion and decoding. */
float wh_fake_quant_fp8_n_scalar(const float *src, float *dst, size_t n, float inv, float scale, bool e5m2)
{
	float m = 0;
	for (size_t i = 0; i < n; i++) {
		float y = src[i] * inv;
		float q = e5m2 ? wh_e5m2_to_f32(wh_f32_to_e5m2(y, true)) : wh_e4m3fn_to_f32(wh_f32_to_e4m3fn(y, true));
		dst[i] = q * scale;
		m = fold_abs(m, dst[i]);
	}
	return m;
}

static enum wh_isa isa_of(const struct wh_cpu_features *cpu)
{
	return cpu ? cpu->isa : WH_ISA_SCALAR;
}

float wh_amax_n(const float *x, size_t n, const struct wh_cpu_features *cpu)
{
	switch (isa_of(cpu)) {
	case WH_ISA_AVX512: return wh_amax_n_avx512(x, n);
	case WH_ISA_AVX2: return wh_amax_n_avx2(x, n);
	default: return wh_amax_n_scalar(x, n);
	}
}

float wh_fake_quant_int8_n(const float *src, float *dst, size_t n, float inv, float scale,
			   const struct wh_cpu_features *cpu)
{
	switch (isa_of(cpu)) {
	case WH_ISA_AVX512: return wh_fake_quant_int8_n_avx512(src, dst, n, inv, scale);
	case WH_ISA_AVX2: return wh_fake_quant_int8_n_avx2(src, dst, n, inv, scale);
	default: return wh_fake_quant_int8_n_scalar(src, dst, n, inv, scale);
	}
}

void wh_quant_int8_n(const float *src, float *dst, size_t n, float inv, const struct wh_cpu_features *cpu)
{
	switch (isa_of(cpu)) {
	case WH_ISA_AVX512: wh_quant_int8_n_avx512(src, dst, n, inv); break;
	case WH_ISA_AVX2: wh_quant_int8_n_avx2(src, dst, n, inv); break;
	default: wh_quant_int8_n_scalar(src, dst, n, inv); break;
	}
}

float wh_scale_add_n(float *y, size_t n, float s, float b, const struct wh_cpu_features *cpu)
{
	switch (isa_of(cpu)) {
	case WH_ISA_AVX512: return wh_scale_add_n_avx512(y, n, s, b);
	case WH_ISA_AVX2: return wh_scale_add_n_avx2(y, n, s, b);
	default: return wh_scale_add_n_scalar(y, n, s, b);
	}
}

float wh_fake_quant_fp8_n(const float *src, float *dst, size_t n, float inv, float scale, bool e5m2,
			  const struct wh_cpu_features *cpu)
{
	switch (isa_of(cpu)) {
	case WH_ISA_AVX512: return wh_fake_quant_fp8_n_avx512(src, dst, n, inv, scale, e5m2);
	case WH_ISA_AVX2: return wh_fake_quant_fp8_n_avx2(src, dst, n, inv, scale, e5m2);
	default: return wh_fake_quant_fp8_n_scalar(src, dst, n, inv, scale, e5m2);
	}
}
