#include "executor/cpu.h"

#include <cpuid.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct wh_cpu_features features;
static bool initialised;

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

void wh_cpu_init(void)
{
	struct wh_cpu_features f;
	memset(&f, 0, sizeof f);
	unsigned a, b, c, d;
	if (__get_cpuid(1, &a, &b, &c, &d)) {
		f.sse42 = c & bit_SSE4_2;
		bool osxsave = c & bit_OSXSAVE;
		bool avx_hw = c & bit_AVX;
		f.fma = c & bit_FMA;
		f.f16c = c & bit_F16C;
		uint64_t xcr0 = osxsave ? xgetbv0() : 0;
		bool ymm = (xcr0 & 0x6) == 0x6;
		bool zmm = (xcr0 & 0xe6) == 0xe6;
		f.avx = avx_hw && ymm;
		if (!f.avx)
			f.fma = f.f16c = false;
		if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
			f.avx2 = f.avx && (b & bit_AVX2);
			f.avx512f = zmm && (b & bit_AVX512F);
			f.avx512bw = f.avx512f && (b & bit_AVX512BW);
			f.avx512dq = f.avx512f && (b & bit_AVX512DQ);
			f.avx512vl = f.avx512f && (b & bit_AVX512VL);
			f.avx512vnni = f.avx512f && (c & (1u << 11));
			f.avx512fp16 = f.avx512f && (d & (1u << 23));
			if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
				f.avx512bf16 = f.avx512f && (a & (1u << 5));
		}
	}
	unsigned brand[12];
	if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000004) {
		for (unsigned i = 0; i < 3; i++)
			__get_cpuid(0x80000002 + i, &brand[i * 4], &brand[i * 4 + 1], &brand[i * 4 + 2], &brand[i * 4 + 3]);
		memcpy(f.brand, brand, 48);
		f.brand[48] = '\0';
		/* trim leading spaces */
		char *p = f.brand;
		while (*p == ' ')
			p++;
		memmove(f.brand, p, strlen(p) + 1);
	}
	f.detected = WH_ISA_SCALAR;
	if (f.avx2 && f.fma && f.f16c)
		f.detected = WH_ISA_AVX2;
	if (f.detected == WH_ISA_AVX2 && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl)
		f.detected = WH_ISA_AVX512;
	f.isa = f.detected;
	const char *cap = getenv("WHITTLE_ISA");
	if (cap) {
		enum wh_isa c_isa = f.isa;
		if (!strcmp(cap, "scalar"))
			c_isa = WH_ISA_SCALAR;
		else if (!strcmp(cap, "avx2"))
			c_isa = WH_ISA_AVX2;
		else if (!strcmp(cap, "avx512"))
			c_isa = WH_ISA_AVX512;
		if (c_isa < f.isa)
			f.isa = c_isa;
	}
	features = f;
	initialised = true;
}

const struct wh_cpu_features *wh_cpu(void)
{
	if (!initialised)
		wh_cpu_init();
	return &features;
}

const char *wh_isa_name(enum wh_isa isa)
{
	switch (isa) {
	case WH_ISA_AVX2: return "avx2";
	case WH_ISA_AVX512: return "avx512";
	default: return "scalar";
	}
}

struct wh_cpu_features wh_cpu_capped(enum wh_isa cap)
{
	struct wh_cpu_features f = *wh_cpu();
	if (cap < f.isa)
		f.isa = cap;
	return f;
}
