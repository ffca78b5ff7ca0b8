/* Executor number formats: the rounding the precision emulation applies (TF32) and the
 * bulk conversions with their ISA dispatch. The scalar conversions of the storage formats
 * are graph/numfmt.c. */
#include "executor/numfmt.h"

#include "executor/numfmt-bulk.h"

/* ---- TF32 ---- */

float wh_round_tf32(float f)
{
	uint32_t b = wh_f32_bits(f);

	if ((b & 0x7FFFFFFF) > 0x7F800000) /* NaN: stays NaN (quiet) */
		return wh_bits_f32(b | 0x400000);
	uint32_t r = b + 0xFFF + ((b >> 13) & 1);
	return wh_bits_f32(r & 0xFFFFE000u);
}

/* ---- bulk conversions ---- */

static enum wh_isa isa_of(const struct wh_cpu_features *cpu)
{
	return cpu ? cpu->isa : WH_ISA_SCALAR;
}

/* The AVX2 variants need F16C besides AVX2; every AVX2 CPU has it, but cpuid is the
 * authority. */
static bool use_avx2_f16(const struct wh_cpu_features *cpu)
{
	return isa_of(cpu) >= WH_ISA_AVX2 && cpu->f16c;
}

void wh_f32_to_f16_n(const float *src, uint16_t *dst, size_t n, const struct wh_cpu_features *cpu)
{
	if (isa_of(cpu) == WH_ISA_AVX512) {
		wh_f32_to_f16_n_avx512(src, dst, n);
		return;
	}
	if (use_avx2_f16(cpu)) {
		wh_f32_to_f16_n_avx2(src, dst, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		dst[i] = wh_f32_to_f16(src[i]);
}

void wh_f16_to_f32_n(const uint16_t *src, float *dst, size_t n, const struct wh_cpu_features *cpu)
{
	if (isa_of(cpu) == WH_ISA_AVX512) {
		wh_f16_to_f32_n_avx512(src, dst, n);
		return;
	}
	if (use_avx2_f16(cpu)) {
		wh_f16_to_f32_n_avx2(src, dst, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		dst[i] = wh_f16_to_f32(src[i]);
}

void wh_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n, const struct wh_cpu_features *cpu)
{
	if (isa_of(cpu) == WH_ISA_AVX512) {
		wh_f32_to_bf16_n_avx512(src, dst, n);
		return;
	}
	if (isa_of(cpu) == WH_ISA_AVX2) {
		wh_f32_to_bf16_n_avx2(src, dst, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		dst[i] = wh_f32_to_bf16(src[i]);
}

void wh_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = wh_bf16_to_f32(src[i]);
}

void wh_round_f16_n(const float *src, float *dst, size_t n, const struct wh_cpu_features *cpu)
{
	if (isa_of(cpu) == WH_ISA_AVX512) {
		wh_round_f16_n_avx512(src, dst, n);
		return;
	}
	if (use_avx2_f16(cpu)) {
		wh_round_f16_n_avx2(src, dst, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		dst[i] = wh_round_f16(src[i]);
}

void wh_round_bf16_n(const float *src, float *dst, size_t n, const struct wh_cpu_features *cpu)
{
	if (isa_of(cpu) == WH_ISA_AVX512) {
		wh_round_bf16_n_avx512(src, dst, n);
		return;
	}
	if (isa_of(cpu) == WH_ISA_AVX2) {
		wh_round_bf16_n_avx2(src, dst, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		dst[i] = wh_round_bf16(src[i]);
}
