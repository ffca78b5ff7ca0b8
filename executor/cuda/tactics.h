/* Private to the CUDA module (executor/cuda/): its tactics (docs/gpu.md, "Tactics").
 * module.cu's MatMul/Gemm and Conv ask these for the tactic a node names (whcu_node.tactic)
 * and, when whittle asks for the list, for the layer's eligible tactics. g_tac holds what
 * the node being run asks for; api_run sets it and clears it after the run. */
#ifndef WHITTLE_CUDA_TACTICS_H
#define WHITTLE_CUDA_TACTICS_H

#include <cublasLt.h>
#include <cudnn.h>

#include "executor/cuda/whittle-cuda.h"

struct tac_request {
	const char *name;        /* the tactic to run, or NULL */
	struct whcu_tactic *list; /* where to list the eligible ones, or NULL */
	int32_t max, *n;
	int32_t allow_reduced;
	int32_t prec;
};
extern struct tac_request g_tac;
const char *tac_error(void);

/* whether the named tactic accumulates in fp16 (the caller then builds fp16 descriptors) */
bool tac_acc16(const char *name);

/* A GEMM problem as gemm_lt (module.cu) describes it to cuBLASLt. */
struct tac_gemm {
	cublasLtHandle_t lt;
	int64_t m, n, k, batch, sa, sb;
	int ta, tb, beta;
	cudaDataType_t in_t;
	int32_t prec;
	size_t ws_bytes;
};
/* appends the problem's tactics to g_tac.list: FP32 (or TF32) accumulation always, fp16
 * accumulation when the layer is fp16, g_tac.allow_reduced and beta is 0 */
void tac_gemm_list(const struct tac_gemm *p);
/* the algorithm of the named tactic for these descriptors (those of gemm_lt); 0 found */
int tac_gemm_find(const struct tac_gemm *p, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
		  cublasLtMatrixLayout_t lc, int acc16, const char *name, cublasLtMatmulAlgo_t *out);

/* Conv: the forward algorithms with their math types that keep to the precision */
void tac_conv_list(cudnnHandle_t h, cudnnTensorDescriptor_t tx, cudnnFilterDescriptor_t fw, cudnnConvolutionDescriptor_t cv,
		   cudnnTensorDescriptor_t ty, int32_t prec, int dflt_algo, cudnnMathType_t dflt_math);
/* the algorithm and math type of the named tactic, when cuDNN offers it for these
 * descriptors; 0 found */
int tac_conv_find(cudnnHandle_t h, cudnnTensorDescriptor_t tx, cudnnFilterDescriptor_t fw, cudnnConvolutionDescriptor_t cv,
		  cudnnTensorDescriptor_t ty, int32_t prec, const char *name, int *algo, cudnnMathType_t *math);

#endif
