#include "reducer/cli/run-opts.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/shape.h"
#include "reducer/builtin-check.h"
#include "reducer/cli/cli-internal.h"

/* An input larger than this many elements is a typo, not a model whittle can run. */
#define MAX_INPUT_ELEMS (1ull << 40)

void wh_run_opts_init(struct wh_run_opts *o, const char *cmd, enum wh_precision dflt)
{
	memset(o, 0, sizeof *o);
	o->cmd = cmd;
	o->seed = 1;
	o->hi = 1;
	o->precision = dflt;
	wh_compare_options_default(&o->compare);
	wh_calib_opts_init(&o->calib);
	o->calib.cmd = cmd;
	wh_precision_config_init(&o->config);
}

void wh_run_opts_release(struct wh_run_opts *o)
{
	if (!o)
		return;
	wh_precision_config_release(&o->config);
	wh_calib_opts_release(&o->calib);
}

static const char *opt_name(int code)
{
	switch (code) {
	case WH_RUN_OPT_INPUT_SHAPES: return "input-shapes";
	case WH_RUN_OPT_LOAD_INPUTS: return "load-inputs";
	case WH_RUN_OPT_SEED: return "seed";
	case WH_RUN_OPT_VAL_RANGE: return "val-range";
	case WH_RUN_OPT_PRECISION: return "precision";
	case WH_RUN_OPT_LAYER_PRECISIONS: return "layer-precisions";
	case WH_RUN_OPT_ATOL: return "atol";
	case WH_RUN_OPT_RTOL: return "rtol";
	case WH_RUN_OPT_ERROR_STAT: return "check-error-stat";
	case WH_RUN_OPT_THREADS: return "threads";
	case WH_RUN_OPT_VALIDATE: return "validate";
	case WH_RUN_OPT_FILL_MISSING: return "fill-missing";
	case WH_RUN_OPT_DEVICE: return "device";
	case WH_RUN_OPT_ALLOW_REDUCED: return "allow-reduced-precision-reduction";
	case WH_RUN_OPT_REFERENCE_DEVICE: return "reference-device";
	default: return "?";
	}
}

/* The one message shape of a bad value. */
static enum wh_status bad_value(const struct wh_run_opts *o, int code, const char *arg, const char *why)
{
	return wh_cli_usage_error(o->cmd, "--%s '%s': %s", opt_name(code), arg, why);
}

static enum wh_status parse_tolerance(const struct wh_run_opts *o, int code, const char *arg, double *out)
{
	double d;
	if (!wh_cli_parse_double(arg, &d) || !isfinite(d) || d < 0)
		return bad_value(o, code, arg, "not a finite number >= 0 (give a tolerance such as 1e-3)");
	*out = d;
	return WH_OK;
}

static enum wh_status parse_val_range(struct wh_run_opts *o, const char *arg)
{
	const char *comma = strchr(arg, ',');
	char lo_s[64];
	double lo, hi;
	if (!comma || (size_t)(comma - arg) >= sizeof lo_s)
		return bad_value(o, WH_RUN_OPT_VAL_RANGE, arg, "not LO,HI with finite LO <= HI (give a range such as 0,1)");
	memcpy(lo_s, arg, (size_t)(comma - arg));
	lo_s[comma - arg] = '\0';
	if (!wh_cli_parse_double(lo_s, &lo) || !wh_cli_parse_double(comma + 1, &hi) || !isfinite(lo) || !isfinite(hi) || hi < lo)
		return bad_value(o, WH_RUN_OPT_VAL_RANGE, arg, "not LO,HI with finite LO <= HI (give a range such as 0,1)");
	/* the data is float32 for most inputs: a bound past FLT_MAX would be -inf/inf there */
	if (fabs(lo) > FLT_MAX || fabs(hi) > FLT_MAX)
		return bad_value(o, WH_RUN_OPT_VAL_RANGE, arg, "not finite in float32, beyond +-3.4e38 (give a range within it, such as -1e38,1e38)");
	o->lo = lo;
	o->hi = hi;
	return WH_OK;
}

static enum wh_status parse_error_stat(struct wh_run_opts *o, const char *arg)
{
	if (!wh_error_stat_parse(arg, &o->compare.stat, &o->compare.quantile) ||
	    (o->compare.stat == WH_STAT_QUANTILE && !(o->compare.quantile >= 0 && o->compare.quantile <= 1)))
		return bad_value(o, WH_RUN_OPT_ERROR_STAT, arg,
				 "not a statistic (give elemwise, max, mean, median or quantile=Q with 0 <= Q <= 1)");
	o->error_stat = arg;
	return WH_OK;
}

/* --device cpu | cuda | cuda:N. A GPU asked for starts here, in the background (executor.h,
 * wh_device_cuda_start): the model's load and the CPU's reference overlap the CUDA
 * libraries' start. A machine without one (or without the CUDA module and libraries) is told
 * in one line when the first layer would go to the GPU: "--device cuda: <what is missing>
 * (<what to do>)", exit 3 (at once when the module is missing). */
static enum wh_status parse_device(struct wh_run_opts *o, const char *arg)
{
	long long v = 0;
	if (!strcmp(arg, "cpu")) {
		o->cuda = false;
		return WH_OK;
	}
	if (strcmp(arg, "cuda") && (strncmp(arg, "cuda:", 5) || !wh_cli_parse_int(arg + 5, 0, 63, &v)))
		return bad_value(o, WH_RUN_OPT_DEVICE, arg, "not a device (give cpu, cuda or cuda:N with N from 0 to 63)");
	o->cuda = true;
	o->cuda_device = (int)v;
	return wh_device_cuda_start(o->cuda_device);
}

/* --reference-device cpu | cuda | cuda:N: where the built-in check's FP32 reference runs
 * (builtin-check.h; the CPU unless given). A GPU starts here, as for --device. */
static enum wh_status parse_reference_device(struct wh_run_opts *o, const char *arg)
{
	long long v = 0;
	if (!strcmp(arg, "cpu")) {
		wh_builtin_reference_device(false, 0);
		return WH_OK;
	}
	if (strcmp(arg, "cuda") && (strncmp(arg, "cuda:", 5) || !wh_cli_parse_int(arg + 5, 0, 63, &v)))
		return bad_value(o, WH_RUN_OPT_REFERENCE_DEVICE, arg, "not a device (give cpu, cuda or cuda:N with N from 0 to 63)");
	enum wh_status st = wh_device_cuda_start((int)v);
	if (st == WH_OK)
		wh_builtin_reference_device(true, (int)v);
	return st;
}

/* Every dimension >= 1 and no input beyond MAX_INPUT_ELEMS elements; the syntax and the
 * names given once are graph/'s rules (wh_input_shapes_parse). */
static enum wh_status parse_input_shapes(struct wh_run_opts *o, const char *arg)
{
	struct wh_input_shape *s = NULL;
	uint32_t n = 0;
	enum wh_status st = wh_input_shapes_parse(arg, &s, &n);
	if (st != WH_OK) {
		const char *msg = wh_error_message();
		const char *why = strncmp(msg, "input shapes", 12) ? NULL : strstr(msg, ": ");
		msg = why ? why + 2 : msg; /* the spec is named once, below */
		size_t len = strlen(msg);
		bool has_todo = len && msg[len - 1] == ')';
		return wh_cli_usage_error(o->cmd, "--input-shapes '%s': %s%s", arg, msg,
					  has_todo ? "" : " (give each input once, as NAME:1x3x224x224[,NAME:...])");
	}
	for (uint32_t i = 0; i < n && st == WH_OK; i++) {
		uint64_t elems = 1;
		for (int32_t d = 0; d < s[i].rank && st == WH_OK; d++) {
			if (s[i].dims[d] < 1)
				st = bad_value(o, WH_RUN_OPT_INPUT_SHAPES, arg,
					       "a dimension is 0 (give every dimension >= 1, e.g. x:1x3x224x224)");
			else if ((uint64_t)s[i].dims[d] > MAX_INPUT_ELEMS / elems)
				st = bad_value(o, WH_RUN_OPT_INPUT_SHAPES, arg,
					       "an input of more than 2^40 elements (give the shape the model runs at)");
			else
				elems *= (uint64_t)s[i].dims[d];
		}
	}
	wh_input_shapes_free(s, n);
	if (st == WH_OK)
		o->input_shapes = arg;
	return st;
}

static enum wh_status parse_one(struct wh_run_opts *o, int c, const char *arg)
{
	long long v;
	switch (c) {
	case WH_RUN_OPT_INPUT_SHAPES: return parse_input_shapes(o, arg);
	case WH_RUN_OPT_LOAD_INPUTS:
		if (!*arg)
			return bad_value(o, c, "", "an empty path (give the folder of input tensors)");
		o->load_inputs = arg;
		return WH_OK;
	case WH_RUN_OPT_SEED:
		if (!wh_cli_parse_int(arg, 0, WH_RUN_SEED_MAX, &v))
			return bad_value(o, c, arg, "not an integer from 0 to 4611686018427387903 (give a seed such as 1)");
		o->seed = (uint64_t)v;
		return WH_OK;
	case WH_RUN_OPT_VAL_RANGE: return parse_val_range(o, arg);
	case WH_RUN_OPT_PRECISION:
		if (!wh_precision_parse(arg, &o->precision))
			return bad_value(o, c, arg, "not a precision (give fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8)");
		return WH_OK;
	case WH_RUN_OPT_LAYER_PRECISIONS:
		if (!*arg)
			return bad_value(o, c, "", "empty (give NAME:P,... or a JSON file, docs/formats.md)");
		o->layer_precisions = arg;
		return WH_OK;
	case WH_RUN_OPT_ATOL: return parse_tolerance(o, c, arg, &o->compare.atol);
	case WH_RUN_OPT_RTOL: return parse_tolerance(o, c, arg, &o->compare.rtol);
	case WH_RUN_OPT_ERROR_STAT: return parse_error_stat(o, arg);
	case WH_RUN_OPT_VALIDATE: o->compare.validate = true; return WH_OK;
	case WH_RUN_OPT_FILL_MISSING: o->fill_missing = true; return WH_OK;
	case WH_RUN_OPT_DEVICE:
		return parse_device(o, arg);
	case WH_RUN_OPT_REFERENCE_DEVICE:
		return parse_reference_device(o, arg);
	case WH_RUN_OPT_ALLOW_REDUCED: o->allow_reduced = true; return WH_OK;
	case WH_RUN_OPT_THREADS:
		if (!wh_cli_parse_int(arg, 1, 1024, &v))
			return bad_value(o, c, arg, "not an integer from 1 to 1024 (give a thread count such as 4)");
		o->threads = (int)v;
		o->calib.threads = (int)v;
		return WH_OK;
	default: return WH_OK;
	}
}

enum wh_status wh_run_opts_parse(struct wh_run_opts *o, int c, const char *arg, bool *consumed)
{
	enum wh_status st = WH_OK;
	*consumed = false;
	if (wh_calib_opts_parse(&o->calib, c, arg, &st)) {
		*consumed = true;
		return st;
	}
	if (c < WH_RUN_OPT_INPUT_SHAPES || c >= WH_RUN_OPT_END)
		return WH_OK;
	*consumed = true;
	uint32_t bit = 1u << (c - WH_RUN_OPT_INPUT_SHAPES);
	/* a second value would silently replace the first */
	if (o->given & bit)
		return wh_cli_usage_error(o->cmd, "--%s given twice (give it once%s)", opt_name(c),
					  c == WH_RUN_OPT_INPUT_SHAPES ? ", listing every input: NAME:DIMS,NAME:DIMS" : "");
	o->given |= bit;
	return parse_one(o, c, arg);
}

bool wh_run_opts_given(const struct wh_run_opts *o, enum wh_run_opt code)
{
	return code >= WH_RUN_OPT_INPUT_SHAPES && code < WH_RUN_OPT_END && (o->given & (1u << (code - WH_RUN_OPT_INPUT_SHAPES)));
}

enum wh_status wh_run_opts_refuse(const struct wh_run_opts *o, const int *codes, const char *why)
{
	for (const int *c = codes; *c != WH_RUN_OPT_END; c++) {
		if (*c == WH_CALIB_OPT_METHOD) {
			const char *name = wh_calib_opts_first_given(&o->calib);
			if (name)
				return wh_cli_usage_error(o->cmd, "--%s: %s", name, why);
		} else if (wh_run_opts_given(o, (enum wh_run_opt)*c)) {
			return wh_cli_usage_error(o->cmd, "--%s: %s", opt_name(*c), why);
		}
	}
	return WH_OK;
}

enum wh_status wh_run_opts_load_model(const struct wh_run_opts *o, const char *path, struct wh_model **out)
{
	return wh_cli_load_model(path, o->input_shapes, out);
}

enum wh_status wh_run_opts_load_inputs(const struct wh_run_opts *o, const struct wh_model *m, struct wh_tensor_set **out,
				       uint32_t *n_out, size_t *n_generated_out)
{
	if (o->fill_missing && !o->load_inputs)
		return wh_cli_usage_error(o->cmd, "--fill-missing: without --load-inputs every input is generated anyway (drop it, or give --load-inputs DIR)");
	return wh_cli_load_samples(m, o->load_inputs, o->fill_missing ? WH_SAMPLES_FILL_MISSING : 0, o->seed, o->lo, o->hi, out, n_out,
				   n_generated_out);
}

enum wh_status wh_run_opts_load_sample(const struct wh_run_opts *o, const struct wh_model *m, struct wh_tensor_set *out)
{
	struct wh_tensor_set *sets = NULL;
	uint32_t n = 0;
	enum wh_status st = wh_run_opts_load_inputs(o, m, &sets, &n, NULL);
	if (st != WH_OK)
		return st;
	if (n != 1) {
		st = wh_cli_usage_error(o->cmd, "--load-inputs '%s': holds %u sample folders, and whittle %s runs one sample (give one of them)",
					o->load_inputs, n, o->cmd);
	} else {
		wh_tensor_set_release(out);
		*out = sets[0];
		wh_tensor_set_init(&sets[0]);
	}
	wh_cli_samples_free(sets, n);
	return st;
}

enum wh_status wh_run_opts_precision(struct wh_run_opts *o, const struct wh_model *m, const struct wh_tensor_set *inputs,
				     bool *reduced_out)
{
	enum wh_status st;
	/* --validate decides by NaN/Inf alone: a tolerance given with it would be ignored */
	static const int tolerances[] = {WH_RUN_OPT_ATOL, WH_RUN_OPT_RTOL, WH_RUN_OPT_ERROR_STAT, WH_RUN_OPT_END};
	if (o->compare.validate &&
	    (st = wh_run_opts_refuse(o, tolerances, "--validate fails only on NaN/Inf where FP32 is finite, so no tolerance applies (drop one of them)")) != WH_OK)
		return st;
	o->config.dflt = o->precision;
	if (o->layer_precisions && (st = wh_precision_config_parse(&o->config, o->layer_precisions)) != WH_OK)
		return st;
	if ((st = wh_calib_opts_apply(&o->calib, m, &o->config, inputs)) != WH_OK)
		return st;
	if (reduced_out)
		*reduced_out = o->config.dflt != WH_PREC_FP32 || o->layer_precisions || o->config.fp16_accumulate;
	return WH_OK;
}

struct wh_engine_options wh_run_opts_engine(const struct wh_run_opts *o, bool reduced)
{
	struct wh_engine_options eo = {.threads = o->threads, .precision = reduced ? &o->config : NULL,
				       .cuda = o->cuda, .cuda_device = o->cuda_device, .allow_reduced_reduction = o->allow_reduced};
	return eo;
}

const char *wh_run_opts_faulty_tactic(void)
{
	const char *faulty = getenv("WHITTLE_FAULTY_TACTIC");
	return faulty && *faulty ? faulty : NULL;
}
