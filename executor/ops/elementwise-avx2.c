/* AVX2 variants of the float32 elementwise row kernels. They perform exactly the
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

AI __m256i tail_mask(size_t r)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

AI __m256 sign_mask(void)
{
	return _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
}

AI __m256 exp8(__m256 x)
{
	x = _mm256_max_ps(_mm256_set1_ps(WH_EW_EXP_LO), x);
	x = _mm256_min_ps(_mm256_set1_ps(WH_EW_EXP_HI), x);
	__m256 t = _mm256_mul_ps(x, _mm256_set1_ps(WH_EW_LOG2E));
	t = _mm256_add_ps(t, _mm256_set1_ps(WH_EW_ROUND_MAGIC));
	__m256 n = _mm256_sub_ps(t, _mm256_set1_ps(WH_EW_ROUND_MAGIC));
	__m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(WH_EW_EXP_C1)));
	r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(WH_EW_EXP_C2)));
	__m256 p = _mm256_set1_ps(WH_EW_EXP_P0);
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(WH_EW_EXP_P1));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(WH_EW_EXP_P2));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(WH_EW_EXP_P3));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(WH_EW_EXP_P4));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(WH_EW_EXP_P5));
	__m256 z = _mm256_mul_ps(r, r);
	__m256 y = _mm256_mul_ps(p, z);
	y = _mm256_add_ps(y, r);
	y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
	__m256i ni = _mm256_cvtps_epi32(n);
	__m256i n1 = _mm256_srai_epi32(ni, 1);
	__m256i n2 = _mm256_sub_epi32(ni, n1);
	__m256i bias = _mm256_set1_epi32(127);
	__m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
	__m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
	y = _mm256_mul_ps(y, s1);
	return _mm256_mul_ps(y, s2);
}

AI __m256 sigmoid8(__m256 x)
{
	__m256 e = exp8(_mm256_or_ps(x, sign_mask()));
	__m256 one = _mm256_set1_ps(1.0f);
	__m256 num = _mm256_blendv_ps(e, one, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
	return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

AI __m256 tanh8(__m256 x)
{
	__m256 a = _mm256_andnot_ps(sign_mask(), x);
	__m256 x2 = _mm256_mul_ps(x, x);
	__m256 p = _mm256_set1_ps(WH_EW_TANH_T15);
	p = _mm256_add_ps(_mm256_mul_ps(p, x2), _mm256_set1_ps(WH_EW_TANH_T13));
	p = _mm256_add_ps(_mm256_mul_ps(p, x2), _mm256_set1_ps(WH_EW_TANH_T11));
	p = _mm256_add_ps(_mm256_mul_ps(p, x2), _mm256_set1_ps(WH_EW_TANH_T9));
	p = _mm256_add_ps(_mm256_mul_ps(p, x2), _mm256_set1_ps(WH_EW_TANH_T7));
	p = _mm256_add_ps(_mm256_mul_ps(p, x2), _mm256_set1_ps(WH_EW_TANH_T5));
	p = _mm256_add_ps(_mm256_mul_ps(p, x2), _mm256_set1_ps(WH_EW_TANH_T3));
	__m256 x3 = _mm256_mul_ps(x, x2);
	__m256 small = _mm256_add_ps(x, _mm256_mul_ps(x3, p));
	__m256 one = _mm256_set1_ps(1.0f);
	__m256 e = exp8(_mm256_mul_ps(_mm256_set1_ps(-2.0f), a));
	__m256 r = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
	__m256 large = _mm256_or_ps(r, _mm256_and_ps(x, sign_mask()));
	return _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(WH_EW_TANH_SMALL), _CMP_LT_OQ));
}

/* erfc(a) for a >= 0.5 given a2 = a^2, as ew_erfc_tail in elementwise.c */
AI __m256 erfc_tail8(__m256 a, __m256 a2)
{
	__m256 one = _mm256_set1_ps(1.0f);
	__m256 t = _mm256_div_ps(one, _mm256_add_ps(one, a));
	__m256 p = _mm256_set1_ps(WH_EW_ERF_B8);
	p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(WH_EW_ERF_B7));
	p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(WH_EW_ERF_B6));
	p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(WH_EW_ERF_B5));
	p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(WH_EW_ERF_B4));
	p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(WH_EW_ERF_B3));
	p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(WH_EW_ERF_B2));
	p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(WH_EW_ERF_B1));
	p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(WH_EW_ERF_B0));
	return _mm256_mul_ps(exp8(_mm256_xor_ps(sign_mask(), a2)), p);
}

/* erf(x) for |x| < 1, as ew_erf_small */
AI __m256 erf_small8(__m256 x)
{
	__m256 z = _mm256_mul_ps(x, x);
	__m256 p = _mm256_set1_ps(WH_EW_ERF_A6);
	p = _mm256_add_ps(_mm256_mul_ps(p, z), _mm256_set1_ps(WH_EW_ERF_A5));
	p = _mm256_add_ps(_mm256_mul_ps(p, z), _mm256_set1_ps(WH_EW_ERF_A4));
	p = _mm256_add_ps(_mm256_mul_ps(p, z), _mm256_set1_ps(WH_EW_ERF_A3));
	p = _mm256_add_ps(_mm256_mul_ps(p, z), _mm256_set1_ps(WH_EW_ERF_A2));
	p = _mm256_add_ps(_mm256_mul_ps(p, z), _mm256_set1_ps(WH_EW_ERF_A1));
	p = _mm256_add_ps(_mm256_mul_ps(p, z), _mm256_set1_ps(WH_EW_ERF_A0));
	return _mm256_mul_ps(x, p);
}

AI __m256 erf8(__m256 x)
{
	__m256 one = _mm256_set1_ps(1.0f);
	__m256 a = _mm256_andnot_ps(sign_mask(), x);
	__m256 b = _mm256_min_ps(_mm256_set1_ps(WH_EW_ERF_ONE), a);
	__m256 lt = _mm256_cmp_ps(a, one, _CMP_LT_OQ);
	int m = _mm256_movemask_ps(lt);
	/* a branch taken by every lane alone is computed: the blend would pick it anyway */
	if (m == 0xFF)
		return erf_small8(x);
	__m256 large = _mm256_sub_ps(one, erfc_tail8(b, _mm256_mul_ps(b, b)));
	large = _mm256_or_ps(large, _mm256_and_ps(x, sign_mask()));
	return m ? _mm256_blendv_ps(large, erf_small8(x), lt) : large;
}

AI __m256 gelu8(__m256 x)
{
	__m256 one = _mm256_set1_ps(1.0f);
	__m256 z = _mm256_mul_ps(x, _mm256_set1_ps(WH_EW_SQRT1_2));
	__m256 h = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
	__m256 a = _mm256_andnot_ps(sign_mask(), z);
	__m256 in = _mm256_and_ps(_mm256_cmp_ps(z, _mm256_set1_ps(-0.5f), _CMP_GT_OQ), _mm256_cmp_ps(z, one, _CMP_LT_OQ));
	int m = _mm256_movemask_ps(in);
	/* a branch taken by every lane alone is computed: the blend would pick it anyway */
	if (m == 0xFF)
		return _mm256_mul_ps(h, _mm256_add_ps(one, erf_small8(z)));
	__m256 c = erfc_tail8(a, _mm256_mul_ps(h, x));
	__m256 large = _mm256_blendv_ps(c, _mm256_sub_ps(_mm256_set1_ps(2.0f), c), _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_GT_OQ));
	if (!m)
		return _mm256_mul_ps(h, large);
	__m256 small = _mm256_add_ps(one, erf_small8(z));
	return _mm256_mul_ps(h, _mm256_blendv_ps(large, small, in));
}

AI __m256 gelu_tanh8(__m256 x)
{
	__m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
	__m256 u = _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(WH_EW_GELU_C), x3));
	u = _mm256_mul_ps(_mm256_set1_ps(WH_EW_GELU_K2), u);
	return _mm256_mul_ps(x, sigmoid8(u));
}

AI __m256 clip8(__m256 x, __m256 lo, __m256 hi)
{
	return _mm256_min_ps(hi, _mm256_max_ps(lo, x));
}

AI __m256 hsig8(__m256 x, __m256 alpha, __m256 beta)
{
	__m256 t = _mm256_add_ps(_mm256_mul_ps(x, alpha), beta);
	return clip8(t, _mm256_setzero_ps(), _mm256_set1_ps(1.0f));
}

AI __m256 bin_op(enum wh_ew_bin op, __m256 x, __m256 y)
{
	switch (op) {
	case WH_EW_ADD: return _mm256_add_ps(x, y);
	case WH_EW_SUB: return _mm256_sub_ps(x, y);
	case WH_EW_MUL: return _mm256_mul_ps(x, y);
	case WH_EW_DIV: return _mm256_div_ps(x, y);
	case WH_EW_MAX:
		return _mm256_blendv_ps(_mm256_max_ps(x, y), x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
	case WH_EW_MIN:
		return _mm256_blendv_ps(_mm256_min_ps(x, y), x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
	case WH_EW_PRELU:
		return _mm256_blendv_ps(x, _mm256_mul_ps(x, y), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
	default: return x;
	}
}

AI void bin_loop(enum wh_ew_bin op, const float *a, int sa, const float *b, int sb, float *o, size_t n)
{
	__m256 xa = _mm256_set1_ps(a[0]), xb = _mm256_set1_ps(b[0]);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 x0 = sa ? _mm256_loadu_ps(a + i) : xa, x1 = sa ? _mm256_loadu_ps(a + i + 8) : xa;
		__m256 y0 = sb ? _mm256_loadu_ps(b + i) : xb, y1 = sb ? _mm256_loadu_ps(b + i + 8) : xb;
		_mm256_storeu_ps(o + i, bin_op(op, x0, y0));
		_mm256_storeu_ps(o + i + 8, bin_op(op, x1, y1));
	}
	for (; i + 8 <= n; i += 8) {
		__m256 x = sa ? _mm256_loadu_ps(a + i) : xa;
		__m256 y = sb ? _mm256_loadu_ps(b + i) : xb;
		_mm256_storeu_ps(o + i, bin_op(op, x, y));
	}
	if (i < n) {
		__m256i m = tail_mask(n - i);
		__m256 x = sa ? _mm256_maskload_ps(a + i, m) : xa;
		__m256 y = sb ? _mm256_maskload_ps(b + i, m) : xb;
		_mm256_maskstore_ps(o + i, m, bin_op(op, x, y));
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

void wh_ew_bin_f32_avx2(enum wh_ew_bin op, const float *a, size_t sa, const float *b, size_t sb,
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

AI __m256 un_op(enum wh_ew_un op, __m256 x, __m256 p1, __m256 p2)
{
	switch (op) {
	case WH_EW_RELU: return _mm256_max_ps(_mm256_setzero_ps(), x);
	case WH_EW_LEAKY_RELU:
		return _mm256_blendv_ps(x, _mm256_mul_ps(x, p1), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
	case WH_EW_CLIP: return clip8(x, p1, p2);
	case WH_EW_HARD_SIGMOID: return hsig8(x, p1, p2);
	case WH_EW_HARD_SWISH: return _mm256_mul_ps(x, hsig8(x, p1, p2));
	case WH_EW_SIGMOID: return sigmoid8(x);
	case WH_EW_TANH: return tanh8(x);
	case WH_EW_EXP: return exp8(x);
	case WH_EW_ERF: return erf8(x);
	case WH_EW_GELU: return gelu8(x);
	case WH_EW_GELU_TANH: return gelu_tanh8(x);
	case WH_EW_ABS: return _mm256_andnot_ps(sign_mask(), x);
	case WH_EW_NEG: return _mm256_xor_ps(sign_mask(), x);
	case WH_EW_SQRT: return _mm256_sqrt_ps(x);
	case WH_EW_RECIPROCAL: return _mm256_div_ps(_mm256_set1_ps(1.0f), x);
	case WH_EW_FLOOR: return _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
	case WH_EW_CEIL: return _mm256_round_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
	case WH_EW_ROUND: return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	default: return x;
	}
}

AI void un_loop(enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2)
{
	__m256 v1 = _mm256_set1_ps(p1), v2 = _mm256_set1_ps(p2);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
		_mm256_storeu_ps(y + i, un_op(op, a, v1, v2));
		_mm256_storeu_ps(y + i + 8, un_op(op, b, v1, v2));
	}
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, un_op(op, _mm256_loadu_ps(x + i), v1, v2));
	if (i < n) {
		__m256i m = tail_mask(n - i);
		_mm256_maskstore_ps(y + i, m, un_op(op, _mm256_maskload_ps(x + i, m), v1, v2));
	}
}

#define UN_CASE(OP)                                     \
	case OP:                                        \
		un_loop(OP, x, y, n, p1, p2);           \
		break

void wh_ew_un_f32_avx2(enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2)
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
