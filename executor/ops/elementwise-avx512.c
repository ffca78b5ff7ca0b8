/* AVX-512 variants of the float32 elementwise row kernels. They perform exactly the
 * operations of the scalar reference in elementwise.c, in the same order and without FMA,
 * so results are bit-identical (see elementwise-internal.h). Tails use masked loads and
 * stores so that the last elements go through the same vector code. */
/* Fusing a multiply and an add would round differently from the scalar reference. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <immintrin.h>
#include <stdint.h>

#include "executor/ops/elementwise-internal.h"

#define AI static inline __attribute__((always_inline))

AI __mmask16 tail_mask(size_t r)
{
	return (__mmask16)((1u << r) - 1u);
}

AI __m512i sign_bits(void)
{
	return _mm512_set1_epi32((int)0x80000000u);
}

AI __m512 or_bits(__m512 a, __m512i b)
{
	return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), b));
}

AI __m512 and_bits(__m512 a, __m512i b)
{
	return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), b));
}

AI __m512 exp16(__m512 x)
{
	x = _mm512_max_ps(_mm512_set1_ps(WH_EW_EXP_LO), x);
	x = _mm512_min_ps(_mm512_set1_ps(WH_EW_EXP_HI), x);
	__m512 t = _mm512_mul_ps(x, _mm512_set1_ps(WH_EW_LOG2E));
	t = _mm512_add_ps(t, _mm512_set1_ps(WH_EW_ROUND_MAGIC));
	__m512 n = _mm512_sub_ps(t, _mm512_set1_ps(WH_EW_ROUND_MAGIC));
	__m512 r = _mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(WH_EW_EXP_C1)));
	r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(WH_EW_EXP_C2)));
	__m512 p = _mm512_set1_ps(WH_EW_EXP_P0);
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(WH_EW_EXP_P1));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(WH_EW_EXP_P2));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(WH_EW_EXP_P3));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(WH_EW_EXP_P4));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(WH_EW_EXP_P5));
	__m512 z = _mm512_mul_ps(r, r);
	__m512 y = _mm512_mul_ps(p, z);
	y = _mm512_add_ps(y, r);
	y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
	__m512i ni = _mm512_cvtps_epi32(n);
	__m512i n1 = _mm512_srai_epi32(ni, 1);
	__m512i n2 = _mm512_sub_epi32(ni, n1);
	__m512i bias = _mm512_set1_epi32(127);
	__m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
	__m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
	y = _mm512_mul_ps(y, s1);
	return _mm512_mul_ps(y, s2);
}

AI __m512 sigmoid16(__m512 x)
{
	__m512 e = exp16(or_bits(x, sign_bits()));
	__m512 one = _mm512_set1_ps(1.0f);
	__mmask16 ge = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
	__m512 num = _mm512_mask_blend_ps(ge, e, one);
	return _mm512_div_ps(num, _mm512_add_ps(one, e));
}

AI __m512 tanh16(__m512 x)
{
	__m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign_bits(), _mm512_castps_si512(x)));
	__m512 x2 = _mm512_mul_ps(x, x);
	__m512 p = _mm512_set1_ps(WH_EW_TANH_T15);
	p = _mm512_add_ps(_mm512_mul_ps(p, x2), _mm512_set1_ps(WH_EW_TANH_T13));
	p = _mm512_add_ps(_mm512_mul_ps(p, x2), _mm512_set1_ps(WH_EW_TANH_T11));
	p = _mm512_add_ps(_mm512_mul_ps(p, x2), _mm512_set1_ps(WH_EW_TANH_T9));
	p = _mm512_add_ps(_mm512_mul_ps(p, x2), _mm512_set1_ps(WH_EW_TANH_T7));
	p = _mm512_add_ps(_mm512_mul_ps(p, x2), _mm512_set1_ps(WH_EW_TANH_T5));
	p = _mm512_add_ps(_mm512_mul_ps(p, x2), _mm512_set1_ps(WH_EW_TANH_T3));
	__m512 x3 = _mm512_mul_ps(x, x2);
	__m512 small = _mm512_add_ps(x, _mm512_mul_ps(x3, p));
	__m512 one = _mm512_set1_ps(1.0f);
	__m512 e = exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f), a));
	__m512 r = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
	__m512 large = or_bits(r, _mm512_castps_si512(and_bits(x, sign_bits())));
	__mmask16 lt = _mm512_cmp_ps_mask(a, _mm512_set1_ps(WH_EW_TANH_SMALL), _CMP_LT_OQ);
	return _mm512_mask_blend_ps(lt, large, small);
}

/* erfc(a) for a >= 0.5 given a2 = a^2, as ew_erfc_tail in elementwise.c */
AI __m512 erfc_tail16(__m512 a, __m512 a2)
{
	__m512 one = _mm512_set1_ps(1.0f);
	__m512 t = _mm512_div_ps(one, _mm512_add_ps(one, a));
	__m512 p = _mm512_set1_ps(WH_EW_ERF_B8);
	p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(WH_EW_ERF_B7));
	p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(WH_EW_ERF_B6));
	p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(WH_EW_ERF_B5));
	p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(WH_EW_ERF_B4));
	p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(WH_EW_ERF_B3));
	p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(WH_EW_ERF_B2));
	p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(WH_EW_ERF_B1));
	p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(WH_EW_ERF_B0));
	return _mm512_mul_ps(exp16(_mm512_castsi512_ps(_mm512_xor_si512(sign_bits(), _mm512_castps_si512(a2)))), p);
}

/* erf(x) for |x| < 1, as ew_erf_small */
AI __m512 erf_small16(__m512 x)
{
	__m512 z = _mm512_mul_ps(x, x);
	__m512 p = _mm512_set1_ps(WH_EW_ERF_A6);
	p = _mm512_add_ps(_mm512_mul_ps(p, z), _mm512_set1_ps(WH_EW_ERF_A5));
	p = _mm512_add_ps(_mm512_mul_ps(p, z), _mm512_set1_ps(WH_EW_ERF_A4));
	p = _mm512_add_ps(_mm512_mul_ps(p, z), _mm512_set1_ps(WH_EW_ERF_A3));
	p = _mm512_add_ps(_mm512_mul_ps(p, z), _mm512_set1_ps(WH_EW_ERF_A2));
	p = _mm512_add_ps(_mm512_mul_ps(p, z), _mm512_set1_ps(WH_EW_ERF_A1));
	p = _mm512_add_ps(_mm512_mul_ps(p, z), _mm512_set1_ps(WH_EW_ERF_A0));
	return _mm512_mul_ps(x, p);
}

AI __m512 erf16(__m512 x)
{
	__m512 one = _mm512_set1_ps(1.0f);
	__m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign_bits(), _mm512_castps_si512(x)));
	__m512 b = _mm512_min_ps(_mm512_set1_ps(WH_EW_ERF_ONE), a);
	__mmask16 lt = _mm512_cmp_ps_mask(a, one, _CMP_LT_OQ);
	/* a branch taken by every lane alone is computed: the blend would pick it anyway */
	if (lt == 0xFFFF)
		return erf_small16(x);
	__m512 large = _mm512_sub_ps(one, erfc_tail16(b, _mm512_mul_ps(b, b)));
	large = or_bits(large, _mm512_castps_si512(and_bits(x, sign_bits())));
	return lt ? _mm512_mask_blend_ps(lt, large, erf_small16(x)) : large;
}

AI __m512 gelu16(__m512 x)
{
	__m512 one = _mm512_set1_ps(1.0f);
	__m512 z = _mm512_mul_ps(x, _mm512_set1_ps(WH_EW_SQRT1_2));
	__m512 h = _mm512_mul_ps(_mm512_set1_ps(0.5f), x);
	__m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign_bits(), _mm512_castps_si512(z)));
	__mmask16 in = _mm512_cmp_ps_mask(z, _mm512_set1_ps(-0.5f), _CMP_GT_OQ) & _mm512_cmp_ps_mask(z, one, _CMP_LT_OQ);
	/* a branch taken by every lane alone is computed: the blend would pick it anyway */
	if (in == 0xFFFF)
		return _mm512_mul_ps(h, _mm512_add_ps(one, erf_small16(z)));
	__m512 c = erfc_tail16(a, _mm512_mul_ps(h, x));
	__m512 large = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_GT_OQ), c, _mm512_sub_ps(_mm512_set1_ps(2.0f), c));
	if (!in)
		return _mm512_mul_ps(h, large);
	__m512 small = _mm512_add_ps(one, erf_small16(z));
	return _mm512_mul_ps(h, _mm512_mask_blend_ps(in, large, small));
}

AI __m512 gelu_tanh16(__m512 x)
{
	__m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
	__m512 u = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(WH_EW_GELU_C), x3));
	u = _mm512_mul_ps(_mm512_set1_ps(WH_EW_GELU_K2), u);
	return _mm512_mul_ps(x, sigmoid16(u));
}

AI __m512 clip16(__m512 x, __m512 lo, __m512 hi)
{
	return _mm512_min_ps(hi, _mm512_max_ps(lo, x));
}

AI __m512 hsig16(__m512 x, __m512 alpha, __m512 beta)
{
	__m512 t = _mm512_add_ps(_mm512_mul_ps(x, alpha), beta);
	return clip16(t, _mm512_setzero_ps(), _mm512_set1_ps(1.0f));
}

AI __m512 bin_op(enum wh_ew_bin op, __m512 x, __m512 y)
{
	switch (op) {
	case WH_EW_ADD: return _mm512_add_ps(x, y);
	case WH_EW_SUB: return _mm512_sub_ps(x, y);
	case WH_EW_MUL: return _mm512_mul_ps(x, y);
	case WH_EW_DIV: return _mm512_div_ps(x, y);
	case WH_EW_MAX:
		return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_max_ps(x, y), x);
	case WH_EW_MIN:
		return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_min_ps(x, y), x);
	case WH_EW_PRELU:
		return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x,
					    _mm512_mul_ps(x, y));
	default: return x;
	}
}

AI void bin_loop(enum wh_ew_bin op, const float *a, int sa, const float *b, int sb, float *o, size_t n)
{
	__m512 xa = _mm512_set1_ps(a[0]), xb = _mm512_set1_ps(b[0]);
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 x0 = sa ? _mm512_loadu_ps(a + i) : xa, x1 = sa ? _mm512_loadu_ps(a + i + 16) : xa;
		__m512 y0 = sb ? _mm512_loadu_ps(b + i) : xb, y1 = sb ? _mm512_loadu_ps(b + i + 16) : xb;
		_mm512_storeu_ps(o + i, bin_op(op, x0, y0));
		_mm512_storeu_ps(o + i + 16, bin_op(op, x1, y1));
	}
	for (; i + 16 <= n; i += 16) {
		__m512 x = sa ? _mm512_loadu_ps(a + i) : xa;
		__m512 y = sb ? _mm512_loadu_ps(b + i) : xb;
		_mm512_storeu_ps(o + i, bin_op(op, x, y));
	}
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		__m512 x = sa ? _mm512_maskz_loadu_ps(m, a + i) : xa;
		__m512 y = sb ? _mm512_maskz_loadu_ps(m, b + i) : xb;
		_mm512_mask_storeu_ps(o + i, m, bin_op(op, x, y));
	}
}

#define BIN_CASE(OP)                                            \
	case OP:                                                \
		if (sa && sb)                                   \
			bin_loop(OP, a, 1, b, 1, o, n);         \
		else if (sa)                                    \
			bin_loop(OP, a, 1, b, 0, o, n);         \
		else if (sb)                                    \
			bin_loop(OP, a, 0, b, 1, o, n);         \
		else                                            \
			bin_loop(OP, a, 0, b, 0, o, n);         \
		break

void wh_ew_bin_f32_avx512(enum wh_ew_bin op, const float *a, size_t sa, const float *b, size_t sb,
			  float *o, size_t n)
{
	if (n == 0)
		return;
	switch (op) {
	BIN_CASE(WH_EW_ADD);
	BIN_CASE(WH_EW_SUB);
	BIN_CASE(WH_EW_MUL);
	BIN_CASE(WH_EW_DIV);
	BIN_CASE(WH_EW_MAX);
	BIN_CASE(WH_EW_MIN);
	BIN_CASE(WH_EW_PRELU);
	default: break;
	}
}

AI __m512 un_op(enum wh_ew_un op, __m512 x, __m512 p1, __m512 p2)
{
	switch (op) {
	case WH_EW_RELU: return _mm512_max_ps(_mm512_setzero_ps(), x);
	case WH_EW_LEAKY_RELU:
		return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x,
					    _mm512_mul_ps(x, p1));
	case WH_EW_CLIP: return clip16(x, p1, p2);
	case WH_EW_HARD_SIGMOID: return hsig16(x, p1, p2);
	case WH_EW_HARD_SWISH: return _mm512_mul_ps(x, hsig16(x, p1, p2));
	case WH_EW_SIGMOID: return sigmoid16(x);
	case WH_EW_TANH: return tanh16(x);
	case WH_EW_EXP: return exp16(x);
	case WH_EW_ERF: return erf16(x);
	case WH_EW_GELU: return gelu16(x);
	case WH_EW_GELU_TANH: return gelu_tanh16(x);
	case WH_EW_ABS: return _mm512_castsi512_ps(_mm512_andnot_si512(sign_bits(), _mm512_castps_si512(x)));
	case WH_EW_NEG: return _mm512_castsi512_ps(_mm512_xor_si512(sign_bits(), _mm512_castps_si512(x)));
	case WH_EW_SQRT: return _mm512_sqrt_ps(x);
	case WH_EW_RECIPROCAL: return _mm512_div_ps(_mm512_set1_ps(1.0f), x);
	case WH_EW_FLOOR: return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
	case WH_EW_CEIL: return _mm512_roundscale_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
	case WH_EW_ROUND: return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	default: return x;
	}
}

AI void un_loop(enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2)
{
	__m512 v1 = _mm512_set1_ps(p1), v2 = _mm512_set1_ps(p2);
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
		_mm512_storeu_ps(y + i, un_op(op, a, v1, v2));
		_mm512_storeu_ps(y + i + 16, un_op(op, b, v1, v2));
	}
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, un_op(op, _mm512_loadu_ps(x + i), v1, v2));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		_mm512_mask_storeu_ps(y + i, m, un_op(op, _mm512_maskz_loadu_ps(m, x + i), v1, v2));
	}
}

#define UN_CASE(OP)                                     \
	case OP:                                        \
		un_loop(OP, x, y, n, p1, p2);           \
		break

void wh_ew_un_f32_avx512(enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2)
{
	switch (op) {
	UN_CASE(WH_EW_RELU);
	UN_CASE(WH_EW_LEAKY_RELU);
	UN_CASE(WH_EW_CLIP);
	UN_CASE(WH_EW_HARD_SIGMOID);
	UN_CASE(WH_EW_HARD_SWISH);
	UN_CASE(WH_EW_SIGMOID);
	UN_CASE(WH_EW_TANH);
	UN_CASE(WH_EW_EXP);
	UN_CASE(WH_EW_ERF);
	UN_CASE(WH_EW_GELU);
	UN_CASE(WH_EW_GELU_TANH);
	UN_CASE(WH_EW_ABS);
	UN_CASE(WH_EW_NEG);
	UN_CASE(WH_EW_SQRT);
	UN_CASE(WH_EW_RECIPROCAL);
	UN_CASE(WH_EW_FLOOR);
	UN_CASE(WH_EW_CEIL);
	UN_CASE(WH_EW_ROUND);
	default: break;
	}
}
