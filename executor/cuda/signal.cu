/* STFT on the GPU (included by module.cu, whose helpers it uses): a direct DFT per frame in
 * double precision, as the CPU's FFT computes in double, so both round the same exact sums
 * to float within an ulp or two. One block per frame: the windowed frame goes to shared
 * memory, each thread sums its bins in a fixed order (the same bits run after run); the
 * twiddles come from a table of frame_len cos/sin pairs made once per call. */

__global__ void k_twiddles(double2 *tw, int64_t n)
{
	GRID_STRIDE(i, (uint64_t)n)
	{
		double s, c;
		sincospi(-2.0 * (double)i / (double)n, &s, &c);
		tw[i] = make_double2(c, s);
	}
}

/* x: [batch, len, cin] floats; w: frame_len floats or NULL; y: [batch, frames, bins, 2] */
__global__ void k_stft(float *y, const float *x, const float *w, const double2 *tw, int64_t len, int32_t cin, int64_t frames,
		       int64_t step, int64_t flen, int64_t bins)
{
	extern __shared__ double2 frame[];
	int64_t l = blockIdx.x, b = l / frames, f = l % frames;
	int64_t base = b * len + f * step;
	for (int64_t t = threadIdx.x; t < flen; t += blockDim.x) {
		uint64_t e = (uint64_t)(base + t) * (uint64_t)cin;
		double wv = w ? (double)w[t] : 1.0;
		frame[t] = make_double2((double)x[e] * wv, cin == 2 ? (double)x[e + 1] * wv : 0.0);
	}
	__syncthreads();
	for (int64_t k = threadIdx.x; k < bins; k += blockDim.x) {
		double re = 0, im = 0;
		int64_t idx = 0; /* k t mod flen */
		for (int64_t t = 0; t < flen; t++) {
			double2 a = frame[t], c = tw[idx];
			re += a.x * c.x - a.y * c.y;
			im += a.x * c.y + a.y * c.x;
			idx += k;
			if (idx >= flen)
				idx -= flen;
		}
		uint64_t o = ((uint64_t)l * (uint64_t)bins + (uint64_t)k) * 2;
		y[o] = (float)re;
		y[o + 1] = (float)im;
	}
}

static int op_stft(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0];
	const struct whcu_tensor *st = n->n_in > 1 ? &n->in[1] : NULL;
	const struct whcu_tensor *w = n->n_in > 2 && n->in[2].dtype ? &n->in[2] : NULL;
	const struct whcu_tensor *lt = n->n_in > 3 && n->in[3].dtype ? &n->in[3] : NULL;
	if (x->dtype != WHCU_FLOAT || (x->rank != 2 && x->rank != 3) || (x->rank == 3 && x->dims[2] != 1 && x->dims[2] != 2))
		return 1;
	if (!st || !st->dtype || !st->host || whcu_count(st) != 1 || (st->dtype != WHCU_INT64 && st->dtype != WHCU_INT32))
		return 1;
	if (w && (w->dtype != WHCU_FLOAT || w->rank != 1))
		return 1;
	if (lt && (!lt->host || whcu_count(lt) != 1 || (lt->dtype != WHCU_INT64 && lt->dtype != WHCU_INT32)))
		return 1;
	int64_t step = host_i64(st, 0);
	int64_t flen = lt ? host_i64(lt, 0) : w ? w->dims[0] : x->dims[1];
	int64_t onesided = n->attr_int(n->node, "onesided", 1);
	/* what is wrong with the arguments the CPU says; frames up to 4096 points fit in 64 KB */
	if (step <= 0 || flen <= 0 || flen > 4096 || flen > x->dims[1] || (w && w->dims[0] != flen) || (onesided != 0 && onesided != 1))
		return 1;
	int64_t frames = 1 + (x->dims[1] - flen) / step;
	int64_t bins = onesided ? flen / 2 + 1 : flen;
	int64_t dims[4] = {x->dims[0], frames, bins, 2};
	if (out_alloc(n, 0, WHCU_FLOAT, 4, dims))
		return -1;
	uint64_t blocks = (uint64_t)x->dims[0] * (uint64_t)frames;
	if (!blocks || !bins)
		return 0;
	if (blocks > 0x7fffffffu)
		return fail("STFT: %llu frames (at most 2^31 on the GPU)", (unsigned long long)blocks);
	scratch tw;
	if (!tw.get((size_t)flen * sizeof(double2)))
		return -1;
	k_twiddles<<<grid_for((uint64_t)flen), 256, 0, g_stream>>>((double2 *)tw.p, flen);
	CKL();
	size_t shm = (size_t)flen * sizeof(double2);
	if (shm > 48 * 1024)
		CK(cudaFuncSetAttribute(k_stft, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
	int threads = bins >= 256 ? 256 : (int)((bins + 31) / 32 * 32);
	k_stft<<<(unsigned)blocks, threads, shm, g_stream>>>((float *)n->out[0].data, (const float *)x->data,
							     w ? (const float *)w->data : NULL, (const double2 *)tw.p, x->dims[1],
							     x->rank == 3 ? (int32_t)x->dims[2] : 1, frames, step, flen, bins);
	CKL();
	return 0;
}
