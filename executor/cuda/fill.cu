/* ConstantOfShape on the GPU (included by module.cu, whose helpers it uses): the shape comes
 * on the host, the value (a one-element tensor attribute, any type of 1 to 8 bytes) through
 * the node's attr_scalar callback, and every element of the output is that value's bytes. */

template <typename T>
__global__ void k_fill(T *y, T v, uint64_t n)
{
	GRID_STRIDE(i, n) y[i] = v;
}

static int op_constant_of_shape(const struct whcu_node *n)
{
	const struct whcu_tensor *s = &n->in[0];
	if (!s->host || s->dtype != WHCU_INT64 || s->rank != 1 || s->dims[0] > WHCU_MAX_RANK || !n->attr_scalar)
		return 1;
	int64_t dims[WHCU_MAX_RANK];
	int32_t rank = (int32_t)s->dims[0];
	for (int32_t d = 0; d < rank; d++) {
		dims[d] = ((const int64_t *)s->host)[d];
		if (dims[d] < 0)
			return 1; /* the CPU says what is wrong */
	}
	uint64_t v = 0; /* the value's bytes (float 0 when the attribute is absent) */
	int32_t dt = n->attr_scalar(n->node, "value", &v);
	if (dt == 0)
		dt = WHCU_FLOAT;
	size_t es = dtype_size(dt);
	if (dt < 0 || !es)
		return 1;
	if (out_alloc(n, 0, dt, rank, dims))
		return -1;
	uint64_t cnt = whcu_count(&n->out[0]);
	if (!cnt)
		return 0;
	void *y = n->out[0].data;
	unsigned g = grid_for(cnt);
	switch (es) {
	case 1: { uint8_t b; memcpy(&b, &v, 1); k_fill<uint8_t><<<g, 256, 0, g_stream>>>((uint8_t *)y, b, cnt); break; }
	case 2: { uint16_t b; memcpy(&b, &v, 2); k_fill<uint16_t><<<g, 256, 0, g_stream>>>((uint16_t *)y, b, cnt); break; }
	case 4: { uint32_t b; memcpy(&b, &v, 4); k_fill<uint32_t><<<g, 256, 0, g_stream>>>((uint32_t *)y, b, cnt); break; }
	default: k_fill<uint64_t><<<g, 256, 0, g_stream>>>((uint64_t *)y, v, cnt); break;
	}
	CKL();
	return 0;
}
