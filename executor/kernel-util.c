/* Kernel output helpers. The element accessors and broadcasting that kernels use live in
 * graph/tensor.c: the reducer reads tensors with them too. */
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"

enum wh_status wh_kernel_out_alloc(struct wh_kernel_ctx *ctx, uint32_t k, enum wh_dtype dt, int32_t rank,
				   const int64_t *dims)
{
	const struct wh_tensor *p = k == 0 ? ctx->place_out : NULL;
	bool same = p && p->dtype == dt && p->rank == rank && dt != WH_DT_STRING;
	for (int32_t d = 0; same && d < rank; d++)
		same = p->dims[d] == dims[d];
	if (!same)
		return wh_tensor_alloc(&ctx->outputs[k], dt, rank, dims);
	wh_tensor_ref(&ctx->outputs[k], p);
	return WH_OK;
}

/* Allocates dst and returns where to write its elements: the tensor's own data, or for
 * strings a temporary pointer array that wh_kernel_out_finish turns into the tensor. */
enum wh_status wh_kernel_out_begin(struct wh_tensor *dst, enum wh_dtype dt, int32_t rank, const int64_t *dims,
				uint8_t **raw_out)
{
	*raw_out = NULL;
	if (dt != WH_DT_STRING) {
		enum wh_status st = wh_tensor_alloc(dst, dt, rank, dims);
		if (st == WH_OK)
			*raw_out = dst->data;
		return st;
	}
	uint64_t cnt;
	if (!wh_shape_count(dims, rank, &cnt))
		return wh_error(WH_ERR_OVERFLOW, "string tensor: too many elements (use smaller inputs)");
	*raw_out = calloc((size_t)cnt + 1, sizeof(char *));
	if (!*raw_out)
		return wh_error(WH_ERR_NOMEM, "string tensor: out of memory (free some memory)");
	return WH_OK;
}

enum wh_status wh_kernel_out_finish(struct wh_tensor *dst, enum wh_dtype dt, int32_t rank, const int64_t *dims,
				 uint8_t *raw)
{
	if (dt != WH_DT_STRING)
		return WH_OK;
	uint64_t cnt;
	const char **ptrs = (const char **)(void *)raw;
	if (!wh_shape_count(dims, rank, &cnt)) {
		free(raw);
		return wh_error(WH_ERR_OVERFLOW, "string tensor: too many elements (use smaller inputs)");
	}
	size_t *lens = malloc(((size_t)cnt + 1) * sizeof *lens);
	if (!lens) {
		free(raw);
		return wh_error(WH_ERR_NOMEM, "string tensor: out of memory (free some memory)");
	}
	for (uint64_t i = 0; i < cnt; i++) {
		if (!ptrs[i])
			ptrs[i] = "";
		lens[i] = strlen(ptrs[i]);
	}
	enum wh_status st = wh_tensor_alloc_strings(dst, rank, dims, ptrs, lens);
	free(lens);
	free(raw);
	return st;
}
