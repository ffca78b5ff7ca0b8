/* Private to executor/ops/shape.c (Transpose), its AVX2 variant (transpose-avx2.c) and
 * tests/check-shapeops.c: the 8 x 8 block of a 4-byte 2-D transpose. A pure copy, so every
 * variant writes the same bytes. */
#ifndef WH_TRANSPOSE_INTERNAL_H
#define WH_TRANSPOSE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* dst[r * dld + c] = src[c * sld + r] for r, c < 8 (strides in elements). */
void wh_tr8x8_u32_avx2(const uint32_t *src, size_t sld, uint32_t *dst, size_t dld);

#endif
