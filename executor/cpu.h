/* CPU features, detected once at start-up from cpuid and xgetbv. The only global table:
 * written by wh_cpu_init (called by the CLI and test mains before any thread starts) and
 * read-only afterwards. WHITTLE_ISA=scalar|avx2|avx512 caps the ISA that kernels use. */
#ifndef WH_CPU_H
#define WH_CPU_H

#include <stdbool.h>

enum wh_isa { WH_ISA_SCALAR = 0, WH_ISA_AVX2 = 1, WH_ISA_AVX512 = 2 };

struct wh_cpu_features {
	bool sse42, avx, avx2, fma, f16c;
	bool avx512f, avx512bw, avx512dq, avx512vl, avx512bf16, avx512fp16, avx512vnni;
	enum wh_isa isa;       /* best usable ISA after the WHITTLE_ISA cap */
	enum wh_isa detected;  /* best ISA the machine supports */
	char brand[64];
};

void wh_cpu_init(void);
/* Initialises on first use if wh_cpu_init was not called. */
const struct wh_cpu_features *wh_cpu(void);
const char *wh_isa_name(enum wh_isa isa);
/* For tests: a copy of the features with the ISA capped (never raised). */
struct wh_cpu_features wh_cpu_capped(enum wh_isa cap);

#endif
