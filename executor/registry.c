#include <stdio.h>
#include <stdarg.h>
#include <string.h>

#include "executor/executor.h"
#include "executor/kernel.h"
#include "executor/precision.h"

/* One table per source file in executor/ops/. */
extern const struct wh_op_def wh_ops_elementwise[];
extern const size_t wh_ops_elementwise_count;
extern const struct wh_op_def wh_ops_conv[];
extern const size_t wh_ops_conv_count;
extern const struct wh_op_def wh_ops_gemm[];
extern const size_t wh_ops_gemm_count;
extern const struct wh_op_def wh_ops_shape[];
extern const size_t wh_ops_shape_count;
extern const struct wh_op_def wh_ops_data[];
extern const size_t wh_ops_data_count;
extern const struct wh_op_def wh_ops_reduce[];
extern const size_t wh_ops_reduce_count;
extern const struct wh_op_def wh_ops_nn[];
extern const size_t wh_ops_nn_count;
extern const struct wh_op_def wh_ops_cast[];
extern const size_t wh_ops_cast_count;
extern const struct wh_op_def wh_ops_rnn[];
extern const size_t wh_ops_rnn_count;
extern const struct wh_op_def wh_ops_control[];
extern const size_t wh_ops_control_count;
extern const struct wh_op_def wh_ops_misc[];
extern const size_t wh_ops_misc_count;
extern const struct wh_op_def wh_ops_sequence[];
extern const size_t wh_ops_sequence_count;
extern const struct wh_op_def wh_ops_attention[];
extern const size_t wh_ops_attention_count;
extern const struct wh_op_def wh_ops_signal[];
extern const size_t wh_ops_signal_count;
extern const struct wh_op_def wh_ops_vision[];
extern const size_t wh_ops_vision_count;
extern const struct wh_op_def wh_ops_extra[];
extern const size_t wh_ops_extra_count;
extern const struct wh_op_def wh_ops_strings[];
extern const size_t wh_ops_strings_count;
extern const struct wh_op_def wh_ops_ml[];
extern const size_t wh_ops_ml_count;
extern const struct wh_op_def wh_ops_training[];
extern const size_t wh_ops_training_count;
extern const struct wh_op_def wh_ops_qlinear_contrib[];
extern const size_t wh_ops_qlinear_contrib_count;

static const struct wh_op_def *const tables[] = {
	wh_ops_elementwise,
	wh_ops_conv,
	wh_ops_gemm,
	wh_ops_shape,
	wh_ops_data,
	wh_ops_reduce,
	wh_ops_nn,
	wh_ops_cast,
	wh_ops_rnn,
	wh_ops_control,
	wh_ops_misc,
	wh_ops_sequence,
	wh_ops_attention,
	wh_ops_signal,
	wh_ops_vision,
	wh_ops_extra,
	wh_ops_strings,
	wh_ops_ml,
	wh_ops_training,
	wh_ops_qlinear_contrib,
};
static const size_t *const counts[] = {
	&wh_ops_elementwise_count,
	&wh_ops_conv_count,
	&wh_ops_gemm_count,
	&wh_ops_shape_count,
	&wh_ops_data_count,
	&wh_ops_reduce_count,
	&wh_ops_nn_count,
	&wh_ops_cast_count,
	&wh_ops_rnn_count,
	&wh_ops_control_count,
	&wh_ops_misc_count,
	&wh_ops_sequence_count,
	&wh_ops_attention_count,
	&wh_ops_signal_count,
	&wh_ops_vision_count,
	&wh_ops_extra_count,
	&wh_ops_strings_count,
	&wh_ops_ml_count,
	&wh_ops_training_count,
	&wh_ops_qlinear_contrib_count,
};
_Static_assert(sizeof tables / sizeof tables[0] == sizeof counts / sizeof counts[0], "op tables");
enum { N_TABLES = sizeof tables / sizeof tables[0] };

static bool same_domain(const char *a, const char *b)
{
	bool da = !a || !*a || !strcmp(a, "ai.onnx");
	bool db = !b || !*b || !strcmp(b, "ai.onnx");
	if (da || db)
		return da && db;
	return !strcmp(a, b);
}

const struct wh_op_def *wh_op_lookup(const char *domain, const char *op_type, int64_t opset)
{
	const struct wh_op_def *best = NULL;
	for (size_t t = 0; t < N_TABLES; t++) {
		for (size_t i = 0; i < *counts[t]; i++) {
			const struct wh_op_def *d = &tables[t][i];
			if (strcmp(d->op_type, op_type) || !same_domain(d->domain, domain))
				continue;
			/* the newest entry not newer than the model's opset */
			if (d->since_version <= opset && (!best || d->since_version > best->since_version))
				best = d;
		}
	}
	return best;
}

size_t wh_op_count(void)
{
	size_t n = 0;
	for (size_t t = 0; t < N_TABLES; t++)
		n += *counts[t];
	return n;
}

const struct wh_op_def *wh_op_at(size_t i)
{
	for (size_t t = 0; t < N_TABLES; t++) {
		if (i < *counts[t])
			return &tables[t][i];
		i -= *counts[t];
	}
	return NULL;
}

enum wh_status wh_kernel_fail(const struct wh_kernel_ctx *ctx, enum wh_status st, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *name = ctx->node->name && *ctx->node->name ? ctx->node->name : "(unnamed)";
	/* every error says what to do: kernels that do not, get the advice for their status */
	size_t len = strlen(msg);
	if (len && msg[len - 1] != ')') {
		const char *todo = st == WH_ERR_UNSUPPORTED ? "not supported by whittle's executor; extract or reduce around it with an external --check"
				   : st == WH_ERR_NOMEM || st == WH_ERR_OVERFLOW ? "the tensors are too large; bind smaller --input-shapes"
				   : "the node does not follow the ONNX operator's specification; fix the attribute or input in the exporter";
		return wh_error(st, "node '%s' (%s): %s (%s)", name, ctx->node->op_type, msg, todo);
	}
	return wh_error(st, "node '%s' (%s): %s", name, ctx->node->op_type, msg);
}

/* Ops whose results are random draws: a folded value would be one draw frozen into the
 * model, where a runtime draws anew on every run. */
static bool random_result(const struct wh_node *n, const struct wh_tensor *const *in)
{
	const char *op = n->op_type;
	if (!strncmp(op, "Random", 6) || !strcmp(op, "Bernoulli") || !strcmp(op, "Multinomial"))
		return true;
	/* Dropout draws its mask in training mode (input 2, default false) */
	const struct wh_tensor *training = n->n_inputs > 2 ? in[2] : NULL;
	return !strcmp(op, "Dropout") && training && training->count && wh_tensor_get_i64(training, 0);
}

enum { FOLD_MAX_OUTPUTS = 16 };

enum wh_status wh_executor_fold_eval(const struct wh_model *m, const struct wh_graph *g, const struct wh_node *n,
				     int64_t opset, const struct wh_tensor *const *in, struct wh_tensor *out,
				     bool *done_out)
{
	*done_out = false;
	const struct wh_op_def *d = wh_op_lookup(n->domain, n->op_type, opset);
	if (!d || n->n_outputs > FOLD_MAX_OUTPUTS || random_result(n, in))
		return WH_OK;
	for (uint32_t k = 0; k < n->n_inputs; k++)
		if (in[k] && !wh_value_is_tensor(in[k]) && !d->any_value)
			return WH_OK;
	/* a kernel may write every output its op defines, even where the model lists fewer */
	struct wh_tensor slots[FOLD_MAX_OUTPUTS];
	bool wanted[FOLD_MAX_OUTPUTS];
	for (uint32_t k = 0; k < FOLD_MAX_OUTPUTS; k++) {
		wh_tensor_init(&slots[k]);
		wanted[k] = k < n->n_outputs && n->outputs[k] != WH_NONE;
	}
	struct wh_cpu_features cpu = wh_cpu_capped(WH_ISA_SCALAR);
	struct wh_kernel_ctx ctx = {
		.model = m,
		.graph = g,
		.node = n,
		.opset = opset,
		.n_inputs = n->n_inputs,
		.inputs = in,
		.n_outputs = n->n_outputs,
		.outputs = slots,
		.output_wanted = wanted,
		.cpu = &cpu,
		.precision = WH_PREC_FP32,
	};
	bool done = d->run(&ctx) == WH_OK;
	if (!done)
		wh_error_clear(); /* a kernel's refusal means "not evaluated" here */
	for (uint32_t k = 0; done && k < n->n_outputs; k++)
		if (wanted[k] && !wh_value_present(&slots[k]))
			done = false;
	for (uint32_t k = 0; done && k < n->n_outputs; k++) {
		out[k] = slots[k];
		wh_tensor_init(&slots[k]);
	}
	for (uint32_t k = 0; k < FOLD_MAX_OUTPUTS; k++)
		wh_tensor_release(&slots[k]);
	*done_out = done;
	return WH_OK;
}
