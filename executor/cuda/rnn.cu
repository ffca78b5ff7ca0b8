/* GRU on the GPU (included by module.cu, whose helpers it uses): the default activations
 * (sigmoid, tanh), clip, linear_before_reset, every direction, layout 0 and 1,
 * sequence_lens, initial_h. One block per (batch entry, direction) runs the whole sequence,
 * as the CPU's units do: per step its threads compute the z and r gates of their hidden units
 * (dot products over the weight rows, in the CPU reference's order), meet, compute the
 * candidate and the new state, meet again. The state lives in shared memory; the sums are in
 * a fixed order, so the same inputs give the same bits. Declined (the CPU runs it): other
 * activations, hidden sizes over 2048, types other than float. */

struct gru_params {
	int64_t S, B, I, H;
	int32_t D, layout, reverse, lbr, has_clip;
	float clip;
};

__device__ __forceinline__ float gru_clip(const struct gru_params &p, float v)
{
	return p.has_clip ? fminf(fmaxf(v, -p.clip), p.clip) : v;
}

__device__ __forceinline__ float gru_dot(const float *u, const float *v, int64_t n)
{
	float s = 0.0f;
	for (int64_t i = 0; i < n; i++)
		s = fmaf(u[i], v[i], s);
	return s;
}

__device__ __forceinline__ float gru_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

__global__ void k_gru(float *y, float *yh, const float *x, const float *W, const float *R, const float *bias, const int32_t *lens,
		      const float *h0, struct gru_params p)
{
	extern __shared__ float sh[];
	int64_t H = p.H, I = p.I, GH = 3 * H;
	float *h = sh, *hn = sh + H, *zs = sh + 2 * H, *rs = sh + 3 * H;
	int64_t b = blockIdx.x, d = blockIdx.y;
	size_t so = (size_t)(p.layout ? b * p.D + d : d * p.B + b) * (size_t)H;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
		h[k] = h0 ? h0[so + (size_t)k] : 0.0f;
	__syncthreads();
	bool rev = p.reverse || d == 1;
	const float *Wd = W + (size_t)d * (size_t)GH * (size_t)I;
	const float *Rd = R + (size_t)d * (size_t)GH * (size_t)H;
	const float *bd = bias ? bias + (size_t)d * 2 * (size_t)GH : NULL;
	int64_t len = lens ? lens[b] : p.S;
	for (int64_t step = 0; step < len; step++) {
		int64_t t = rev ? len - 1 - step : step;
		const float *xt = x + (size_t)(p.layout ? b * p.S + t : t * p.B + b) * (size_t)I;
		for (int64_t k = threadIdx.x; k < H; k += blockDim.x) {
			float g[2];
			for (int q = 0; q < 2; q++) {
				int64_t j = q * H + k;
				float v = gru_dot(xt, Wd + (size_t)j * (size_t)I, I) + gru_dot(h, Rd + (size_t)j * (size_t)H, H);
				if (bd)
					v += bd[j] + bd[GH + j];
				g[q] = gru_sigmoid(gru_clip(p, v));
			}
			zs[k] = g[0];
			rs[k] = p.lbr ? g[1] : g[1] * h[k];
		}
		__syncthreads();
		for (int64_t k = threadIdx.x; k < H; k += blockDim.x) {
			int64_t j = 2 * H + k;
			float v;
			if (p.lbr) {
				float rec = gru_dot(h, Rd + (size_t)j * (size_t)H, H) + (bd ? bd[GH + j] : 0.0f);
				v = gru_dot(xt, Wd + (size_t)j * (size_t)I, I) + (bd ? bd[j] : 0.0f) + rs[k] * rec;
			} else {
				v = gru_dot(xt, Wd + (size_t)j * (size_t)I, I) + gru_dot(rs, Rd + (size_t)j * (size_t)H, H);
				if (bd)
					v += bd[GH + j] + bd[j];
			}
			float hh = tanhf(gru_clip(p, v));
			hn[k] = (1.0f - zs[k]) * hh + zs[k] * h[k];
		}
		__syncthreads();
		for (int64_t k = threadIdx.x; k < H; k += blockDim.x) {
			h[k] = hn[k];
			if (y)
				y[(size_t)(p.layout ? (b * p.S + t) * p.D + d : (t * p.D + d) * p.B + b) * (size_t)H + (size_t)k] = hn[k];
		}
		__syncthreads();
	}
	for (int64_t t = len; y && t < p.S; t++)
		for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
			y[(size_t)(p.layout ? (b * p.S + t) * p.D + d : (t * p.D + d) * p.B + b) * (size_t)H + (size_t)k] = 0.0f;
	if (yh)
		for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
			yh[so + (size_t)k] = h[k];
}

static bool gru_shape(const struct whcu_tensor *t, int32_t rank, const int64_t *dims)
{
	if (!t || !t->dtype)
		return true;
	if (t->rank != rank)
		return false;
	for (int32_t d = 0; d < rank; d++)
		if (t->dims[d] != dims[d])
			return false;
	return true;
}

static int op_gru(const struct whcu_node *n)
{
	const struct whcu_tensor *in[6] = {NULL};
	for (uint32_t k = 0; k < 6 && k < n->n_in; k++)
		in[k] = n->in[k].dtype ? &n->in[k] : NULL;
	const struct whcu_tensor *X = in[0], *W = in[1], *R = in[2], *B = in[3], *SL = in[4], *H0 = in[5];
	if (!X || !W || !R || X->rank != 3 || W->rank != 3 || R->rank != 3)
		return 1;
	for (int k = 0; k < 6; k++)
		if (k != 4 && in[k] && in[k]->dtype != WHCU_FLOAT)
			return 1;
	/* other activations, their parameters: the CPU (attr_float gives NaN only when absent) */
	if (!isnan(n->attr_float(n->node, "activations", NAN)) || !isnan(n->attr_float(n->node, "activation_alpha", NAN)) ||
	    !isnan(n->attr_float(n->node, "activation_beta", NAN)))
		return 1;
	struct gru_params p;
	memset(&p, 0, sizeof p);
	p.layout = n->opset >= 14 ? (int32_t)n->attr_int(n->node, "layout", 0) : 0;
	const char *dir = n->attr_str(n->node, "direction", "forward");
	if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) {
		p.D = 1;
		p.reverse = dir[0] == 'r';
	} else if (!strcmp(dir, "bidirectional")) {
		p.D = 2;
	} else {
		return 1;
	}
	if (p.layout != 0 && p.layout != 1)
		return 1;
	p.S = p.layout ? X->dims[1] : X->dims[0];
	p.B = p.layout ? X->dims[0] : X->dims[1];
	p.I = X->dims[2];
	p.H = R->dims[2];
	p.lbr = n->attr_int(n->node, "linear_before_reset", 0) != 0;
	double clip = n->attr_float(n->node, "clip", NAN);
	p.has_clip = !isnan(clip);
	p.clip = (float)clip;
	if (n->attr_int(n->node, "hidden_size", p.H) != p.H || p.H <= 0 || p.H > 2048)
		return 1;
	int64_t dw[3] = {p.D, 3 * p.H, p.I}, dr[3] = {p.D, 3 * p.H, p.H}, db[2] = {p.D, 6 * p.H}, dsl[1] = {p.B};
	int64_t dh[3] = {p.D, p.B, p.H};
	if (p.layout) {
		dh[0] = p.B;
		dh[1] = p.D;
	}
	if (!gru_shape(W, 3, dw) || !gru_shape(R, 3, dr) || !gru_shape(B, 2, db) || !gru_shape(SL, 1, dsl) || !gru_shape(H0, 3, dh))
		return 1;
	if (SL && (!SL->host || (SL->dtype != WHCU_INT32 && SL->dtype != WHCU_INT64)))
		return 1;
	scratch lens;
	if (SL) {
		int32_t *l = (int32_t *)malloc((size_t)p.B * sizeof *l + 1);
		if (!l)
			return fail("GRU: out of host memory");
		for (int64_t b = 0; b < p.B; b++) {
			int64_t v = host_i64(SL, (uint64_t)b);
			if (v < 0 || v > p.S) {
				free(l);
				return 1; /* the CPU says what is wrong */
			}
			l[b] = (int32_t)v;
		}
		if (!lens.get((size_t)p.B * sizeof *l)) {
			free(l);
			return -1;
		}
		cudaError_t e = cudaMemcpyAsync(lens.p, l, (size_t)p.B * sizeof *l, cudaMemcpyHostToDevice, g_stream);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(g_stream); /* l is freed next */
		free(l);
		CK(e);
	}
	int64_t dy[4] = {p.S, p.D, p.B, p.H};
	if (p.layout) {
		dy[0] = p.B;
		dy[1] = p.S;
		dy[2] = p.D;
	}
	bool want_y = n->n_out > 0 && n->out_wanted[0], want_h = n->n_out > 1 && n->out_wanted[1];
	if (n->n_out > 2)
		return 1;
	if ((want_y && out_alloc(n, 0, WHCU_FLOAT, 4, dy)) || (want_h && out_alloc(n, 1, WHCU_FLOAT, 3, dh)))
		return -1;
	if (!p.B || (!want_y && !want_h))
		return 0;
	if (p.B > 0x7fffffff)
		return fail("GRU: batch of %lld (at most 2^31 on the GPU)", (long long)p.B);
	size_t shm = 4 * (size_t)p.H * sizeof(float);
	if (shm > 48 * 1024)
		CK(cudaFuncSetAttribute(k_gru, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
	int threads = p.H >= 256 ? 256 : (int)((p.H + 31) / 32 * 32);
	k_gru<<<dim3((unsigned)p.B, (unsigned)p.D), threads, shm, g_stream>>>(
		want_y ? (float *)n->out[0].data : NULL, want_h ? (float *)n->out[1].data : NULL, (const float *)X->data,
		(const float *)W->data, (const float *)R->data, B ? (const float *)B->data : NULL, (const int32_t *)lens.p,
		H0 ? (const float *)H0->data : NULL, p);
	CKL();
	return 0;
}
