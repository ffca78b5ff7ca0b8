/* AVX2 variants of the float32 row primitives in nn-internal.h. Called only when
 * ctx->cpu->isa >= WH_ISA_AVX2. */
#include <immintrin.h>

#include "executor/ops/nn-internal.h"

/* Fixed combination order of the lanes, so a result depends only on the data. */
static double hsum4(__m256d v)
{
	double l[4];
	_mm256_storeu_pd(l, v);
	return (l[0] + l[1]) + (l[2] + l[3]);
}

double wh_nn_sum_f32_avx2(const float *x, size_t n)
{
	__m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
		a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(v0)));
		a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1)));
		a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm256_castps256_ps128(v1)));
		a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1)));
	}
	for (; i + 4 <= n; i += 4)
		a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
	double s = hsum4(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
	for (; i < n; i++)
		s += x[i];
	return s;
}

double wh_nn_sqdev_f32_avx2(const float *x, size_t n, double mean)
{
	__m256d m = _mm256_set1_pd(mean);
	__m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
		__m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v0)), m);
		__m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1)), m);
		__m256d d2 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v1)), m);
		__m256d d3 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1)), m);
		a0 = _mm256_add_pd(a0, _mm256_mul_pd(d0, d0));
		a1 = _mm256_add_pd(a1, _mm256_mul_pd(d1, d1));
		a2 = _mm256_add_pd(a2, _mm256_mul_pd(d2, d2));
		a3 = _mm256_add_pd(a3, _mm256_mul_pd(d3, d3));
	}
	for (; i + 4 <= n; i += 4) {
		__m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), m);
		a0 = _mm256_add_pd(a0, _mm256_mul_pd(d, d));
	}
	double s = hsum4(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
	for (; i < n; i++) {
		double d = (double)x[i] - mean;
		s += d * d;
	}
	return s;
}

void wh_nn_affine_f32_avx2(const float *x, float *y, size_t n, float a, float b)
{
	__m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), va), vb));
	for (; i < n; i++) {
		float t = x[i] * a;
		y[i] = t + b;
	}
}
