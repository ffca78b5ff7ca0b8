/* triage's report: what was found in words, the per-layer error plot and the picture of the
 * answer, report.md (and the repro bundle's), the result on stdout (words or JSON). It reads
 * what the flowchart (triage.c) recorded in struct tri and runs nothing but Graphviz. */
#include "reducer/triage-internal.h"

#include "executor/diagnose.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/cpu.h"
#include "graph/os.h"
#include "reducer/builtin-check.h"
#include "reducer/driver-util.h"
#include "reducer/layer-groups.h"
#include "reducer/report-svg.h"

/* How repro/command.sh ended, in words. */
void wh_triage_repro_words(const struct tri *T, char *buf, size_t size)
{
	if (T->repro_fails)
		wh_text_printf(buf, size, "exits %d: it still fails", T->repro_exit);
	else if (T->repro_exit == 0)
		wh_text_printf(buf, size, "exits 0: **it passes, so it does not reproduce the failure**");
	else
		wh_text_printf(buf, size, "exits %d, which is not a failing verdict: **the command is broken** (its output ends: %s)", T->repro_exit,
			wh_name_md(T->repro_out));
}

/* ---- what was found, in words ---- */

static double fmt_max(enum wh_precision p)
{
	switch (p) {
	case WH_PREC_FP16: return 65504.0;
	case WH_PREC_BF16: return 3.3895313892515355e38;
	default: return 0; /* fp32, tf32: as wide as FP32; int8 and fp8 scale per tensor */
	}
}

static const struct lw_layer *lw_of(const struct tri *T, uint32_t node)
{
	for (uint32_t i = 0; i < T->n_lw; i++)
		if (T->lw[i].node == node)
			return &T->lw[i];
	return NULL;
}

/* "its output overflows fp16 ...": why a layer's output differs from FP32, from its stats
 * and the FP32 values of its inputs and output. */
static void explain(const struct tri *T, uint32_t node, const struct wh_compare_stats *s, uint32_t out_value, char *buf, size_t size)
{
	const struct wh_graph *g = T->g;
	const struct wh_node *n = &g->nodes[node];
	enum wh_precision p = T->o->precision;
	double fmax = fmt_max(p);
	buf[0] = '\0';
	uint64_t bad_nonfinite = s->inf_actual + s->nan_actual > s->inf_ref + s->nan_ref ? s->inf_actual + s->nan_actual - s->inf_ref - s->nan_ref : 0;
	double out_amax = out_value != WH_NONE ? wh_builtin_abs_max(wh_triage_ref(T, g->values[out_value].name)) : 0;
	/* at fp16/bf16 only these round their inputs (executor/precision.h) */
	bool rounds_inputs = !strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "Conv") ||
			     !strcmp(n->op_type, "ConvTranspose");
	/* the input with the largest values */
	double in_amax = 0;
	const char *in_name = NULL;
	for (uint32_t j = 0; j < n->n_inputs; j++) {
		uint32_t v = n->inputs[j];
		if (v == WH_NONE)
			continue;
		const struct wh_tensor *t = wh_triage_ref(T, g->values[v].name);
		double a = t ? wh_builtin_abs_max(t) : 0;
		if (!t && (g->values[v].flags & WH_VALUE_INITIALIZER))
			continue; /* weights: not in the reference set */
		if (a > in_amax) {
			in_amax = a;
			in_name = g->values[v].name;
		}
	}
	if (bad_nonfinite) {
		if (fmax > 0 && in_amax > fmax && rounds_inputs) {
			wh_text_printf(buf, size, "its input %s holds values up to %.6g, beyond %s's largest finite value (%g), so they become inf when the layer's inputs are rounded to %s; %llu of %llu output values are inf or NaN",
				wh_name_md(in_name), in_amax, wh_precision_name(p), fmax, wh_precision_name(p), (unsigned long long)bad_nonfinite, (unsigned long long)s->count);
		} else if (fmax > 0 && out_amax > fmax) {
			wh_text_printf(buf, size, "its output overflows %s (max %g): the FP32 values reach %.6g, and at %s %llu of %llu values become inf",
				wh_precision_name(p), fmax, out_amax, wh_precision_name(p), (unsigned long long)bad_nonfinite, (unsigned long long)s->count);
		} else {
			wh_text_printf(buf, size, "it produces %llu inf and %llu NaN values where FP32 has %llu and %llu",
				(unsigned long long)s->inf_actual, (unsigned long long)s->nan_actual, (unsigned long long)s->inf_ref,
				(unsigned long long)s->nan_ref);
		}
		return;
	}
	wh_text_printf(buf, size, "its output differs from FP32 by up to %.4g (relative %.3g; SQNR %.1f dB, cosine %.6f)", s->max_abs, s->max_rel,
		s->sqnr_db, s->cosine);
	if (p == WH_PREC_FP16 || p == WH_PREC_BF16) {
		int mant = p == WH_PREC_FP16 ? 10 : 7;
		/* only MatMul/Gemm/Conv round their inputs; other layers round their output */
		double mag = rounds_inputs ? in_amax : out_amax;
		double spacing = mag >= 1 ? ldexp(1.0, (int)floor(log2(mag)) - mant) : 0;
		if (spacing >= 1.0 / 64 && rounds_inputs)
			wh_text_cat(buf, size, ": its input %s reaches %.6g, where %s values are %g apart, so rounding the inputs loses their fraction",
			     wh_name_md(in_name), in_amax, wh_precision_name(p), spacing);
		else if (spacing >= 1.0 / 64)
			wh_text_cat(buf, size, ": its output reaches %.6g, where %s values are %g apart, so storing it at %s loses its fraction",
			     out_amax, wh_precision_name(p), spacing, wh_precision_name(p));
		else
			wh_text_cat(buf, size, ": %s keeps %d significant bits (unit roundoff %.2g), and the rounding of its inputs and output is more than atol %g / rtol %g allow here",
			     wh_precision_name(p), mant + 1, ldexp(1.0, -(mant + 1)), T->o->compare.atol, T->o->compare.rtol);
	} else if (p == WH_PREC_TF32) {
		wh_text_cat(buf, size, ": tf32 rounds the inputs of MatMul, Gemm and Conv to 11 significant bits");
	} else if (p == WH_PREC_INT8 || p == WH_PREC_FP8 || p == WH_PREC_FP8E5M2) {
		wh_text_cat(buf, size, ": %s quantization (one scale per tensor) is too coarse for the values here", wh_precision_name(p));
	}
}

/* The layers the precision search keeps, in topological order (count returned; out holds
 * n_nodes entries). */
static uint32_t kept_nodes(const struct tri *T, uint32_t *out)
{
	uint32_t n = 0;
	for (uint32_t k = 0; T->keep_mask && k < T->g->n_nodes; k++)
		if (T->keep_mask[T->order[k]])
			out[n++] = T->order[k];
	return n;
}

/* The kept layers in words, never listed: by module scope and op type (reducer/layer-groups.h). */
static void kept_words(const struct tri *T, char *buf, size_t size)
{
	buf[0] = '\0';
	uint32_t *ids = calloc((size_t)T->g->n_nodes + 1, sizeof *ids);
	struct wh_layer_groups lg;
	if (ids && wh_layer_groups_build(T->g, ids, kept_nodes(T, ids), 6, &lg) == WH_OK) {
		for (uint32_t k = 0; k < lg.n_ops && k < 6; k++)
			wh_text_cat(buf, size, "%s%s %u", k ? ", " : "", wh_name_md(lg.ops[k].op), lg.ops[k].n);
		if (lg.n_ops > 6)
			wh_text_cat(buf, size, ", +%u more op types", lg.n_ops - 6);
		if (lg.n > 1 || lg.g[0].scope[0]) {
			char groups[2048];
			wh_layer_groups_md(&lg, groups, sizeof groups);
			wh_text_cat(buf, size, "; by module scope: %s", groups);
		}
		wh_layer_groups_release(&lg);
	}
	wh_error_clear();
	free(ids);
}

/* How to apply the kept layers on TensorRT: 11 has no per-layer precision flags and builds
 * the strongly typed model (whittle convert writes it); 10 takes them as flags. */
static void tensorrt_words(const struct tri *T, char *N, size_t NS)
{
	enum wh_precision p = T->o->precision;
	const char *model = T->o->model_path ? T->o->model_path : "MODEL";
	char inlined[PATH_MAX + 32];
	if (T->o->inlined) {
		wh_text_printf(inlined, sizeof inlined, "%s/model-inlined.onnx", T->dir);
		model = inlined;
	}
	if (p == WH_PREC_FP16 || p == WH_PREC_BF16) {
		char conv[3 * PATH_MAX + 128], t10[PATH_MAX + 128];
		wh_text_printf(conv, sizeof conv, "whittle convert %s --precision %s --layer-precisions %s/layer-precisions.json -o OUT.onnx", model,
			       wh_precision_name(p), T->dir);
		wh_text_printf(t10, sizeof t10, "trtexec --onnx=%s --%s --precisionConstraints=obey --layerPrecisions=...", model, wh_precision_name(p));
		wh_text_cat(N, NS, " On TensorRT 11, build the strongly typed model: %s, then `trtexec --onnx=OUT.onnx --stronglyTyped`. On TensorRT 10: %s with each of those layers `:fp32` (docs/tensorrt.md).",
			    wh_name_md(conv), wh_name_md(t10));
	} else
		wh_text_cat(N, NS, " TensorRT 11 takes precisions from the model's own types only (int8 and fp8 from Q/DQ nodes): keep those layers out of the quantized part of the model; on TensorRT 10, `--layerPrecisions=...` with each of them `:fp32` and `--precisionConstraints=obey` (docs/tensorrt.md).");
}

static void list_layers(const struct tri *T, const uint8_t *mask, char *buf, size_t size)
{
	bool first = true;
	for (uint32_t k = 0; k < T->g->n_nodes; k++) {
		uint32_t id = T->order[k];
		if (!mask[id])
			continue;
		wh_text_cat(buf, size, "%s%s (%s)", first ? "" : ", ", wh_name_md(wh_triage_node_name(&T->g->nodes[id])), wh_name_md(T->g->nodes[id].op_type));
		first = false;
	}
}

void wh_triage_compose_finding(struct tri *T)
{
	const struct wh_graph *g = T->g;
	char *F = T->finding, *N = T->next;
	size_t FS = sizeof T->finding, NS = sizeof T->next;
	F[0] = N[0] = '\0';
	struct wh_triage_report *rep = T->rep;
	const char *prec = wh_precision_name(T->o->precision);
	switch (rep->outcome) {
	case WH_TRIAGE_PASSES:
		wh_text_printf(F, FS, "Nothing fails: every build (%u) passes the check at %s.", T->n_builds, prec);
		wh_text_printf(N, NS, "Nothing to do at this tolerance. If the deployed model still fails, tighten --atol/--rtol, give the inputs that fail with --load-inputs, or give your own --check.");
		return;
	case WH_TRIAGE_FLAKY: {
		char cmd[3 * PATH_MAX + 256], send[PATH_MAX + 16];
		wh_text_printf(send, sizeof send, "%s/repro/", T->dir);
		wh_text_printf(F, FS, "The failure is intermittent: %u of %u builds fail and %u pass, with the same model, inputs and precision (%s). ",
			T->n_bad, T->n_builds, T->n_good, prec);
		if (T->culprit >= 0) {
			const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
			wh_text_cat(F, FS, "It comes from the tactic %s that the builder picks for layer %s (%s) in some builds: %s.", wh_name_md(s->tactic), wh_name_md(s->layer),
			     wh_name_md(rep->op), s->state == WH_SUSPECT_CONFIRMED ? "swapping it into a good build makes that build fail, and swapping it out of a bad build makes it pass (confirmed)"
								: "swapping it into a good build makes that build fail, but the bad build still fails without it, so there is another cause as well");
			if (T->fixed_build >= 0) {
				wh_text_printf(cmd, sizeof cmd, "whittle run %s --load-inputs %s --precision %s --load-tactics %s/fixed.json --compare fp32 --atol %g --rtol %g",
				     T->o->model_path ? T->o->model_path : "MODEL", T->inputs_dir, prec, T->dir, T->o->compare.atol, T->o->compare.rtol);
				wh_text_cat(N, NS, "Pin a good build's tactics: %s passes (fixed.json is the fastest good build). ", wh_name_md(cmd));
			}
			wh_text_cat(N, NS, "In your builder, keep tactic %s away from layer %s (TensorRT 11: pin a good build's tactic for that layer in the editable timing cache, since the algorithm selector is gone; TensorRT 10: an algorithm selector or the editable timing cache; Polygraphy: --load-tactics). Send %s to the owner of that kernel.",
			     wh_name_md(s->tactic), wh_name_md(s->layer), wh_name_md(send));
		} else if (T->diff.n) {
			wh_text_cat(F, FS, "Bad builds use %u tactic%s that good builds never use, but swapping none of them into a good build made it fail.",
			     T->diff.n, T->diff.n == 1 ? "" : "s");
			wh_text_cat(N, NS, "Build more times (--builds 20) so that the diff narrows down, or check whether the check itself is flaky (whittle repeat).");
		} else {
			wh_text_cat(F, FS, "Bad builds use no tactic that good builds never use: the difference is elsewhere (the check itself may be flaky).");
			wh_text_cat(N, NS, "Run the check several times on one build (whittle repeat) to see whether it is deterministic.");
		}
		return;
	}
	default: break;
	}
	const struct lw_layer *L = T->first_fail >= 0 ? &T->lw[T->first_fail] : NULL;
	char why[1024] = "";
	if (rep->outcome == WH_TRIAGE_SINGLE_LAYER && L) {
		const struct wh_node *n = &g->nodes[L->node];
		explain(T, L->node, T->single_s_valid ? &T->single_s : &L->s, L->value, why, sizeof why);
		wh_text_printf(F, FS, "The failure comes from layer %s (%s): %s. The layer fails on its own at %s, fed exact FP32 inputs, so it is a single-layer failure.",
			wh_name_md(wh_triage_node_name(n)), wh_name_md(n->op_type), why, prec);
	} else if (rep->outcome == WH_TRIAGE_SUBGRAPH) {
		char names[2048] = "";
		list_layers(T, T->answer_nodes, names, sizeof names);
		wh_text_printf(F, FS, "The failure needs %u layers together: %s.", T->n_answer, names);
		if (L) {
			const struct wh_node *n = &g->nodes[L->node];
			if (T->start_kind != WH_DIAG_NONE)
				wh_text_cat(F, FS, " The layerwise diagnosis places the start at tensor %s of layer %s (%s), but that layer passes on its own",
				     wh_name_md(g->values[L->value].name), wh_name_md(wh_triage_node_name(n)), wh_name_md(n->op_type));
			else
				wh_text_cat(F, FS, " The first failing tensor %s comes from layer %s (%s), but that layer passes on its own", wh_name_md(g->values[L->value].name),
				     wh_name_md(wh_triage_node_name(n)), wh_name_md(n->op_type));
			if (T->single_s_valid)
				wh_text_cat(F, FS, " (max abs error %.4g when fed exact FP32 inputs, against %.4g in the full model)", T->single_s.max_abs, L->s.max_abs);
			wh_text_cat(F, FS, T->start_kind != WH_DIAG_NONE ? ", so its error fails only together with others." : ", so the error it fails with is made upstream.");
		}
		/* where the error starts: the first layer of the answer with an error of its own */
		uint32_t first = WH_NONE, last = WH_NONE;
		for (uint32_t k = 0; k < g->n_nodes; k++) {
			uint32_t id = T->order[k];
			if (!T->answer_nodes[id])
				continue;
			if (first == WH_NONE) {
				const struct lw_layer *A = lw_of(T, id);
				if (A && A->rel > 0 && !isnan(A->rel))
					first = id;
			}
			last = id;
		}
		if (first != WH_NONE && first != last) {
			const struct lw_layer *A = lw_of(T, first);
			explain(T, first, &A->s, A->value, why, sizeof why);
			wh_text_cat(F, FS, " The error starts at layer %s (%s), %u layers earlier in topological order: %s%s. It is carried to %s (%s), where it exceeds the tolerance.",
			     wh_name_md(wh_triage_node_name(&g->nodes[first])), wh_name_md(g->nodes[first].op_type), T->pos[last] - T->pos[first], why,
			     A->fails ? "" : " (within tolerance there, so a layerwise comparison alone does not point at it)",
			     wh_name_md(wh_triage_node_name(&g->nodes[last])), wh_name_md(g->nodes[last].op_type));
		}
	} else {
		wh_text_printf(F, FS, "The model fails at %s, but no step could narrow the failure down", prec);
		if (T->reduce_run && T->reduce_st != WH_OK)
			wh_text_cat(F, FS, " (the reduction stopped: %s)", wh_name_md(T->reduce_err));
		wh_text_cat(F, FS, ".");
	}
	if (T->prec_run && T->prec_st == WH_OK && T->n_keep) {
		char words[3072];
		kept_words(T, words, sizeof words);
		wh_text_cat(F, FS, " Keeping %u layer%s in fp32 makes the model pass (%s; every one in report.md's table \"Layers to keep in fp32\" and in `layer-precisions.json`).",
			    T->n_keep, T->n_keep == 1 ? "" : "s", words);
		char cmd[3 * PATH_MAX + 256];
		wh_text_printf(cmd, sizeof cmd, "whittle run %s --load-inputs %s --precision %s --layer-precisions %s/layer-precisions.json --compare fp32 --atol %g --rtol %g",
			T->o->model_path ? T->o->model_path : "MODEL", T->inputs_dir, prec, T->dir, T->o->compare.atol, T->o->compare.rtol);
		wh_text_printf(N, NS, "Keep %s %u layer%s in fp32: %s passes.", T->n_keep == 1 ? "this" : "these", T->n_keep, T->n_keep == 1 ? "" : "s",
			wh_name_md(cmd));
		tensorrt_words(T, N, NS);
	} else if (T->prec_run && T->prec_st != WH_OK) {
		wh_text_cat(F, FS, " No set of layers kept in fp32 fixes it (%s), so it is not only a precision problem.", wh_name_md(T->prec_err));
		wh_text_printf(N, NS, "Look at the layers named above in the repro bundle; the failure does not go away with more precision, so suspect the kernel or the check.");
	} else if (L) {
		char cmd[3 * PATH_MAX + 256];
		wh_text_printf(cmd, sizeof cmd, "whittle run %s --load-inputs %s --precision %s --layer-precisions %s:fp32 --compare fp32 --atol %g --rtol %g",
			T->o->model_path ? T->o->model_path : "MODEL", T->inputs_dir, prec, wh_triage_node_name(&g->nodes[L->node]), T->o->compare.atol,
			T->o->compare.rtol);
		wh_text_printf(N, NS, "Try the first failing layer in fp32: %s%s.", wh_name_md(cmd),
			T->prec_run ? "" : ", or let `whittle precision` find every layer that must stay in fp32");
	}
	char bundle[PATH_MAX + 16];
	wh_text_printf(bundle, sizeof bundle, "%s/repro/", T->dir);
	wh_text_cat(N, NS, " The repro bundle %s holds the %s as a standalone model with its inputs and reference outputs; `sh command.sh` reruns the check.",
	     wh_name_md(bundle), rep->outcome == WH_TRIAGE_SINGLE_LAYER ? "failing layer" : rep->outcome == WH_TRIAGE_SUBGRAPH ? "minimal failing subgraph" : "model");
}

/* ---- pictures ---- */

static bool find_in_path(const char *prog, char *out, size_t size)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	const char *p = path;
	while (*p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len && len + strlen(prog) + 2 < size) {
			wh_text_printf(out, size, "%.*s/%s", (int)len, p, prog);
			if (access(out, X_OK) == 0)
				return true;
		}
		p += len + (end ? 1 : 0);
	}
	return false;
}

enum wh_status wh_triage_write_plot(struct tri *T)
{
	if (!T->n_lw)
		return WH_OK;
	struct wh_svg_layer_error *pts = calloc(T->n_lw, sizeof *pts);
	if (!pts)
		return wh_error(WH_ERR_NOMEM, "triage: out of memory");
	for (uint32_t i = 0; i < T->n_lw; i++) {
		const struct wh_node *n = &T->g->nodes[T->lw[i].node];
		pts[i] = (struct wh_svg_layer_error){.layer = wh_triage_node_name(n), .op = n->op_type, .value = T->lw[i].rel, .fails = T->lw[i].fails};
	}
	const char *base = strrchr(T->o->model_path ? T->o->model_path : "model", '/');
	base = base ? base + 1 : T->o->model_path ? T->o->model_path : "model";
	char title[512], thr[64], ylab[128];
	wh_text_printf(title, sizeof title, "%s at %s vs FP32: error per layer%s", base, wh_precision_name(T->o->precision),
		T->rep->outcome == WH_TRIAGE_FLAKY ? " (a bad build)" : "");
	wh_text_printf(thr, sizeof thr, "rtol %g", T->o->compare.rtol);
	wh_text_printf(ylab, sizeof ylab, "relative L2 error vs FP32 (log scale)");
	struct wh_svg_plot plot = {.title = title, .x_label = "layers in topological order", .y_label = ylab, .layers = pts, .n = T->n_lw,
				   .marked = T->first_fail, .threshold = T->o->compare.rtol, .threshold_label = thr};
	wh_text_printf(T->plot_path, sizeof T->plot_path, "%s/layer-errors.svg", T->dir);
	FILE *f = fopen(T->plot_path, "w");
	enum wh_status st;
	if (!f) {
		st = wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", T->plot_path, strerror(errno));
	} else {
		st = wh_svg_write_error_plot(f, &plot);
		if (fclose(f) != 0 && st == WH_OK)
			st = wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", T->plot_path);
	}
	free(pts);
	T->plot_ok = st == WH_OK;
	return st;
}

/* Writes a picture of a model (Graphviz source or SVG) to path. */
static enum wh_status write_graph_file(const char *path,
				       enum wh_status (*writer)(FILE *, const struct wh_model *, const struct wh_graph_picture *),
				       const struct wh_model *m, const struct wh_graph_picture *gp)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", path, strerror(errno));
	enum wh_status st = writer(f, m, gp);
	if (fclose(f) != 0 && st == WH_OK)
		st = wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", path);
	return st;
}

/* The repro model, its alarming layers in red: the culprit, the first failing layer, and
 * the layers to keep in fp32. Large models are drawn around those layers only. */
enum wh_status wh_triage_write_picture(struct tri *T)
{
	const struct wh_model *am = T->answer;
	if (!am)
		return WH_OK;
	const struct wh_graph *ag = am->graph, *g = T->g;
	uint8_t *hl = calloc((size_t)ag->n_nodes + 1, 1), *draw = calloc((size_t)ag->n_nodes + 1, 1);
	uint32_t *uses = NULL;
	enum wh_status st = WH_OK;
	if (!hl || !draw) {
		st = wh_error(WH_ERR_NOMEM, "triage: out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < ag->n_nodes; i++) {
		const struct wh_node *an = &ag->nodes[i];
		if (!an->name)
			continue;
		if (T->rep->outcome == WH_TRIAGE_FLAKY && T->culprit >= 0 && !strcmp(an->name, T->diff.s[T->culprit].layer))
			hl[i] = 1;
		if (T->rep->outcome != WH_TRIAGE_FLAKY && T->first_fail >= 0 && !strcmp(an->name, wh_triage_node_name(&g->nodes[T->lw[T->first_fail].node])))
			hl[i] = 1;
		for (uint32_t k = 0; T->keep_mask && k < T->keep.n_layers; k++)
			if (!strcmp(an->name, T->keep.layers[k].layer))
				hl[i] = 1;
		draw[i] = !wh_node_is_constant(an);
	}
	if (ag->n_nodes > 150) {
		/* the highlighted layers and their neighbours */
		memset(draw, 0, ag->n_nodes);
		for (uint32_t i = 0; i < ag->n_nodes; i++) {
			if (!hl[i])
				continue;
			draw[i] = 1;
			const struct wh_node *an = &ag->nodes[i];
			for (uint32_t j = 0; j < an->n_inputs; j++)
				if (an->inputs[j] != WH_NONE && ag->values[an->inputs[j]].producer != WH_NONE)
					draw[ag->values[an->inputs[j]].producer] = 1;
			for (uint32_t c = 0; c < ag->n_nodes; c++)
				for (uint32_t j = 0; j < ag->nodes[c].n_inputs; j++)
					for (uint32_t o = 0; o < an->n_outputs; o++)
						if (an->outputs[o] != WH_NONE && ag->nodes[c].inputs[j] == an->outputs[o])
							draw[c] = 1;
		}
		uint32_t drawn = 0;
		for (uint32_t i = 0; i < ag->n_nodes; i++) {
			if (wh_node_is_constant(&ag->nodes[i]))
				draw[i] = 0;
			drawn += draw[i];
		}
		if (!drawn) /* nothing to centre on: the whole model, however large */
			for (uint32_t i = 0; i < ag->n_nodes; i++)
				draw[i] = !wh_node_is_constant(&ag->nodes[i]);
	}
	char title[512];
	const char *what = T->rep->outcome == WH_TRIAGE_SINGLE_LAYER ? "the failing layer" :
			   T->rep->outcome == WH_TRIAGE_SUBGRAPH ? "the minimal failing subgraph" :
			   T->rep->outcome == WH_TRIAGE_FLAKY ? "the layer with the flaky tactic" : "the repro model";
	wh_text_printf(title, sizeof title, "%s, %u layer%s (red: %s)", what, T->n_answer, T->n_answer == 1 ? "" : "s",
		T->rep->outcome == WH_TRIAGE_FLAKY ? "the culprit" : T->n_keep ? "first failing, keep in fp32" : "first failing");
	struct wh_graph_picture gp = {.title = title, .draw = draw, .highlight = hl};
	wh_text_printf(T->dot_path, sizeof T->dot_path, "%s/subgraph.dot", T->dir);
	wh_text_printf(T->pic_path, sizeof T->pic_path, "%s/subgraph.svg", T->dir);
	if ((st = write_graph_file(T->dot_path, wh_dot_write_graph, am, &gp)) != WH_OK)
		goto out;
	char dot[PATH_MAX];
	if (T->o->graphviz && find_in_path("dot", dot, sizeof dot)) {
		char *argv[] = {dot, "-Tsvg", "-o", T->pic_path, T->dot_path, NULL};
		struct wh_check_options co = {.argv = argv, .argc = 5, .timeout_s = 120};
		struct wh_check *c = NULL;
		struct wh_check_result r = {0};
		if (wh_check_create(&co, &c) == WH_OK && wh_check_run(c, NULL, &r) == WH_OK && r.verdict == WH_VERDICT_PASS &&
		    access(T->pic_path, R_OK) == 0)
			T->pic_graphviz = true;
		else
			wh_triage_say(T, "graphviz: `dot` failed (%s); drawing the picture without it", r.why ? r.why : "could not run");
		wh_check_result_release(&r);
		wh_check_destroy(c);
	}
	if (!T->pic_graphviz)
		st = write_graph_file(T->pic_path, wh_svg_write_graph, am, &gp);
	T->pic_ok = st == WH_OK;
out:
	free(uses);
	free(hl);
	free(draw);
	return st;
}

/* ---- report.md ---- */

const char *wh_triage_outcome_words(enum wh_triage_outcome o)
{
	switch (o) {
	case WH_TRIAGE_PASSES: return "nothing fails";
	case WH_TRIAGE_FLAKY: return "intermittent: a flaky tactic";
	case WH_TRIAGE_SINGLE_LAYER: return "a single-layer failure";
	case WH_TRIAGE_SUBGRAPH: return "a failure that needs several layers";
	default: return "fails, not localized";
	}
}

static void write_layer_table(const struct tri *T, FILE *f)
{
	const struct wh_graph *g = T->g;
	fprintf(f, "| # | layer | op | tensor | max abs | max rel | rel. L2 | SQNR dB | inf/NaN | verdict |\n");
	fprintf(f, "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
	uint32_t shown = 0;
	for (uint32_t i = 0; i < T->n_lw && shown < 12; i++) {
		const struct lw_layer *L = &T->lw[i];
		/* the failing layers first of all, and the layers of the answer */
		bool in_answer = T->answer_nodes && T->answer_nodes[L->node];
		if (!L->fails && !in_answer)
			continue;
		const struct wh_node *n = &g->nodes[L->node];
		char sq[32];
		if (isinf(L->rel))
			wh_text_printf(sq, sizeof sq, "-");
		else
			wh_text_printf(sq, sizeof sq, "%.1f", L->s.sqnr_db);
		fprintf(f, "| %u | %s | %s | %s | %.4g | %.4g | %.3g | %s | %llu | %s%s |\n", i + 1, wh_name_md_cell(wh_triage_node_name(n)), wh_name_md_cell(n->op_type),
			wh_name_md_cell(g->values[L->value].name), L->s.max_abs, L->s.max_rel, L->rel, sq,
			(unsigned long long)(L->s.inf_actual + L->s.nan_actual), L->fails ? "fails" : "passes",
			(int32_t)i == T->first_fail ? " (first)" : "");
		shown++;
	}
	if (!shown)
		fprintf(f, "| | (no layer fails) | | | | | | | | |\n");
}

void wh_triage_write_report(struct tri *T)
{
	char p[PATH_MAX + 32];
	FILE *f = wh_report_open(T->dir, "report.md");
	if (!f)
		return;
	const struct wh_triage_options *o = T->o;
	const struct wh_triage_report *r = T->rep;
	const struct wh_graph *g = T->g;
	const struct wh_cpu_features *cpu = wh_cpu();
	uint32_t layers = 0;
	for (uint32_t i = 0; i < g->n_nodes; i++)
		layers += !wh_node_is_constant(&g->nodes[i]);
	fprintf(f, "# whittle triage: %s\n\n**Outcome: %s.**\n\n", wh_name_md(o->model_path ? o->model_path : "model"), wh_triage_outcome_words(r->outcome));
	fprintf(f, "## What was found\n\n%s\n\n## What to do next\n\n%s\n\n", T->finding, T->next);

	fprintf(f, "## Key numbers\n\n| | |\n| --- | --- |\n");
	fprintf(f, "| model | %s: %u layers |\n", wh_name_md_cell(o->model_path ? o->model_path : "?"), layers);
	fprintf(f, "| precision | %s against FP32; atol %g, rtol %g |\n", wh_precision_name(o->precision), o->compare.atol, o->compare.rtol);
	fprintf(f, "| check | %s |\n", T->check_display ? wh_name_md_cell(T->check_display) : "built-in: outputs compared with FP32");
	if (o->faulty_tactic && *o->faulty_tactic) {
		char fault[512];
		wh_text_printf(fault, sizeof fault, "WHITTLE_FAULTY_TACTIC=%s", o->faulty_tactic);
		fprintf(f, "| fault injection | %s (a test setting: that tactic corrupts its output) |\n", wh_name_md_cell(fault));
	}
	fprintf(f, "| builds | %u (seeds 0..%u): %u good, %u bad%s |\n", T->n_builds, T->n_builds ? T->n_builds - 1 : 0, T->n_good, T->n_bad,
		T->no_tactics ? " (no layer has a choice of tactics)" : "");
	if (r->outcome == WH_TRIAGE_FLAKY && T->culprit >= 0) {
		const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
		fprintf(f, "| culprit | layer %s (%s), tactic %s: %s; in %u of %u bad builds, %u of %u good |\n", wh_name_md_cell(s->layer), wh_name_md_cell(r->op), wh_name_md_cell(s->tactic),
			wh_suspect_state_name(s->state), s->n_bad, T->diff.n_bad, s->n_good, T->diff.n_good);
	}
	if (T->first_fail >= 0) {
		const struct lw_layer *L = &T->lw[T->first_fail];
		fprintf(f, "| first failing tensor | %s (layer %s, %s): max abs error %.4g, max rel %.4g, %llu inf/NaN of %llu |\n",
			wh_name_md_cell(g->values[L->value].name), wh_name_md_cell(wh_triage_node_name(&g->nodes[L->node])), wh_name_md_cell(g->nodes[L->node].op_type), L->s.max_abs, L->s.max_rel,
			(unsigned long long)(L->s.inf_actual + L->s.nan_actual), (unsigned long long)L->s.count);
	}
	if (T->n_lw)
		fprintf(f, "| failing layers (layerwise) | %u of %u compared |\n", T->lw_failing, T->n_lw);
	if (T->answer && r->outcome != WH_TRIAGE_FLAKY)
		fprintf(f, "| %s | %u of %u layers |\n", r->outcome == WH_TRIAGE_SINGLE_LAYER ? "failing layer" : "minimal failing subgraph", T->n_answer,
			layers);
	if (T->prec_run) {
		fprintf(f, "| layers to keep in fp32 | ");
		if (T->prec_st != WH_OK)
			fprintf(f, "none found |\n");
		else
			fprintf(f, "%u (listed under \"Layers to keep in fp32\") |\n", T->n_keep);
	}
	fprintf(f, "| checks run | %u: builds %u, swaps %u, layer alone %u, reduce %u, precision %u, repro %u |\n", T->checks, T->n_builds,
		T->swaps, T->alone_checks, T->reduce_run ? T->rr.checks_run : 0u, T->prec_run ? T->pr.checks_run : 0u,
		T->repro_checked ? 1u : 0u);
	fprintf(f, "| time | %.2f s |\n", wh_os_now_s() - T->t0);
	if (T->repro_checked) {
		char w[768];
		wh_triage_repro_words(T, w, sizeof w);
		fprintf(f, "| repro command | `sh repro/command.sh` %s |\n", w);
	}
	fprintf(f, "| whittle | %s on %s (ISA %s) |\n\n", WHITTLE_VERSION, cpu->brand[0] ? cpu->brand : "unknown CPU", wh_isa_name(cpu->isa));

	fprintf(f, "## What was tried\n\n");
	for (uint32_t i = 0; i < T->n_steps; i++)
		fprintf(f, "%u. **%s** %s\n", i + 1, T->steps[i].name, T->steps[i].text);
	fprintf(f, "\n");

	if (r->outcome == WH_TRIAGE_FLAKY) {
		fprintf(f, "## Tactic suspects\n\nTactics that layers use only in bad builds, most likely first (score: the share of bad builds using\nit); each was swapped into a good build (forward) and, when that turned it bad, out of a bad build\n(reverse).\n\n");
		if (!T->diff.n)
			fprintf(f, "None.\n\n");
		else {
			fprintf(f, "| # | layer | tactic | bad builds | good builds | score | forward | reverse | state |\n");
			fprintf(f, "| ---: | --- | --- | ---: | ---: | ---: | --- | --- | --- |\n");
			for (uint32_t i = 0; i < T->diff.n && i < 20; i++) {
				const struct wh_tactic_suspect *s = &T->diff.s[i];
				fprintf(f, "| %u | %s | %s | %u of %u | %u of %u | %.3f | %s | %s | %s |\n", i + 1, wh_name_md_cell(s->layer), wh_name_md_cell(s->tactic), s->n_bad,
					T->diff.n_bad, s->n_good, T->diff.n_good, s->score,
					s->forward_run ? (s->forward == WH_VERDICT_FAIL ? "turns bad" : s->forward == WH_VERDICT_PASS ? "stays good" : "?") : "-",
					s->reverse_run ? (s->reverse == WH_VERDICT_PASS ? "turns good" : s->reverse == WH_VERDICT_FAIL ? "stays bad" : "?") : "-",
					wh_suspect_state_name(s->state));
			}
			fprintf(f, "\n");
		}
		fprintf(f, "Builds:\n\n| build | seed | verdict | why |\n| ---: | ---: | --- | --- |\n");
		for (uint32_t k = 0; k < T->n_builds; k++)
			fprintf(f, "| %u | %llu | %s | %s |\n", k, (unsigned long long)T->plans[k].seed,
				T->verdicts[k] == WH_VERDICT_PASS ? "good" : T->verdicts[k] == WH_VERDICT_FAIL ? "bad" : "cannot tell", wh_name_md_cell(T->why[k]));
		fprintf(f, "\n");
	}
	if (T->prec_run && T->prec_st == WH_OK && T->n_keep) {
		uint32_t *ids = calloc((size_t)g->n_nodes + 1, sizeof *ids);
		if (ids) {
			fprintf(f, "## Layers to keep in fp32\n\nThe precision search's answer (`layer-precisions.json`), in topological order:\n\n");
			wh_layer_table_md(f, g, ids, kept_nodes(T, ids));
			fprintf(f, "\n");
			free(ids);
		}
	}
	if (T->plot_ok) {
		fprintf(f, "## Per-layer error\n\n![relative L2 error per layer](layer-errors.svg)\n\n");
		fprintf(f, "Relative L2 error of each layer's output against FP32 (%s), in topological order; red bars fail the tolerance%s. ",
			r->outcome == WH_TRIAGE_FLAKY ? "a bad build, pinned" : "the failing run", T->first_fail >= 0 ? ", the dashed line marks the first failing layer" : "");
		fprintf(f, "Failing layers%s:\n\n", T->answer && r->outcome != WH_TRIAGE_FLAKY ? " and the layers of the answer" : "");
		write_layer_table(T, f);
		fprintf(f, "\n");
	}
	if (T->pic_ok) {
		fprintf(f, "## The layers of the answer\n\n![the repro model](subgraph.svg)\n\n");
		fprintf(f, "Drawn %s; the Graphviz source is `subgraph.dot`.\n\n",
			T->pic_graphviz ? "with Graphviz" : "by whittle (Graphviz's `dot` is not installed, or --no-graphviz)");
	}
	fprintf(f, "## Files\n\n");
	if (T->answer)
		fprintf(f, "- `repro/`: `model.onnx`, `inputs/`, `golden/` (FP32 reference outputs), `command.sh`%s, `report.md`\n",
			T->repro_tactics ? ", `tactics.json` (the bad build's tactic replay)" : "");
	fprintf(f, "- `builds/`: the tactic replay of every build (`build_<k>.json`)%s\n", T->swaps ? " and of every confirmation swap" : "");
	if (T->fixed_build >= 0)
		fprintf(f, "- `fixed.json`: the fastest good build (build %d)\n", T->fixed_build);
	if (T->prec_run && T->prec_st == WH_OK)
		fprintf(f, "- `layer-precisions.json`: the layers to keep in fp32 (`--layer-precisions`)\n");
	if (T->reduce_run)
		fprintf(f, "- `reduce/`: the reduction's artifacts (`reduced.onnx`, `replay.jsonl`)\n");
	fprintf(f, "- `inputs/`, `golden/`: the model's inputs and FP32 outputs; `triage.log`: every step's progress\n");
	fclose(f);

	/* the bundle's own report: what it is and how to run it */
	wh_text_printf(p, sizeof p, "%s/repro/report.md", T->dir);
	if (!(f = fopen(p, "w")))
		return;
	fprintf(f, "# whittle triage repro\n\n%s\n\n", T->finding);
	fprintf(f, "- from: %s, at %s against FP32 (atol %g, rtol %g)\n", wh_name_md(o->model_path ? o->model_path : "?"), wh_precision_name(o->precision),
		o->compare.atol, o->compare.rtol);
	fprintf(f, "- model.onnx: %u layer%s:", T->n_answer, T->n_answer == 1 ? "" : "s");
	if (T->answer) {
		const struct wh_graph *ag = T->answer->graph;
		uint32_t shown = 0;
		for (uint32_t i = 0; i < ag->n_nodes && shown < 40; i++)
			if (!wh_node_is_constant(&ag->nodes[i])) {
				fprintf(f, "%s %s (%s)", shown ? "," : "", wh_name_md(wh_triage_node_name(&ag->nodes[i])), wh_name_md(ag->nodes[i].op_type));
				shown++;
			}
		if (shown == 40)
			fprintf(f, ", ...");
	}
	fprintf(f, "\n- inputs/: its inputs (FP32 reference values); golden/: its FP32 reference outputs\n");
	if (T->repro_tactics)
		fprintf(f, "- tactics.json: the tactic replay of a bad build\n");
	if (o->faulty_tactic && *o->faulty_tactic) {
		char fault[512];
		wh_text_printf(fault, sizeof fault, "WHITTLE_FAULTY_TACTIC=%s", o->faulty_tactic);
		fprintf(f, "- fault injection: %s (set by command.sh)\n", wh_name_md(fault));
	}
	fprintf(f, "- whittle %s, CPU %s (ISA %s)\n\n## Rerun\n\n    sh command.sh\n\nruns\n\n    ",
		WHITTLE_VERSION, cpu->brand[0] ? cpu->brand : "unknown", wh_isa_name(cpu->isa));
	/* an indented code block: literal, but one line and no control character */
	wh_name_write(f, WH_NAME_TERM, T->repro_cmd);
	fprintf(f, "\n\nwhich exits non-zero while the failure is there");
	if (T->repro_checked)
		fprintf(f, " (triage ran it: exit %d%s)", T->repro_exit, T->repro_fails ? ", fails" : ", which is not a failure");
	fprintf(f, ".\n");
	fclose(f);
}

/* ---- the result on stdout ---- */

void wh_triage_print_json(struct tri *T)
{
	const struct wh_triage_report *r = T->rep;
	const struct wh_graph *g = T->g;
	json_t *o = json_object();
	json_object_set_new(o, "outcome", json_string(wh_triage_outcome_name(r->outcome)));
	json_object_set_new(o, "model", json_string(T->o->model_path ? T->o->model_path : ""));
	json_object_set_new(o, "precision", json_string(wh_precision_name(T->o->precision)));
	json_object_set_new(o, "builds", json_integer(T->n_builds));
	json_object_set_new(o, "good", json_integer(T->n_good));
	json_object_set_new(o, "bad", json_integer(T->n_bad));
	if (r->outcome == WH_TRIAGE_FLAKY && T->culprit >= 0) {
		json_t *c = json_object();
		const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
		json_object_set_new(c, "layer", json_string(s->layer));
		json_object_set_new(c, "op", json_string(r->op));
		json_object_set_new(c, "tactic", json_string(s->tactic));
		json_object_set_new(c, "state", json_string(wh_suspect_state_name(s->state)));
		json_object_set_new(o, "culprit", c);
	}
	if (T->fixed_build >= 0) {
		char p[PATH_MAX + 32];
		wh_text_printf(p, sizeof p, "%s/fixed.json", T->dir);
		json_object_set_new(o, "fixed", json_string(p));
	}
	if (T->first_fail >= 0 && T->start_kind != WH_DIAG_NONE) {
		const struct lw_layer *L = &T->lw[T->first_fail];
		json_t *w = json_object();
		json_object_set_new(w, "tensor", json_string(g->values[L->value].name));
		json_object_set_new(w, "layer", json_string(wh_triage_node_name(&g->nodes[L->node])));
		json_object_set_new(w, "op", json_string(g->nodes[L->node].op_type));
		json_object_set_new(w, "kind", json_string(T->start_kind == WH_DIAG_OVERFLOW ? "overflow" : "error"));
		json_object_set_new(o, "where_it_starts", w);
	}
	/* the first tensor over the tolerance in topological order */
	if (T->tol_first >= 0) {
		const struct lw_layer *L = &T->lw[T->tol_first];
		json_t *ff = json_object();
		json_object_set_new(ff, "tensor", json_string(g->values[L->value].name));
		json_object_set_new(ff, "layer", json_string(wh_triage_node_name(&g->nodes[L->node])));
		json_object_set_new(ff, "op", json_string(g->nodes[L->node].op_type));
		json_object_set_new(ff, "max_abs", isfinite(L->s.max_abs) ? json_real(L->s.max_abs) : json_null());
		json_object_set_new(ff, "max_rel", isfinite(L->s.max_rel) ? json_real(L->s.max_rel) : json_null());
		json_object_set_new(o, "first_failing", ff);
	}
	if (T->single_run)
		json_object_set_new(o, "layer_alone", json_string(wh_verdict_name(T->single_v)));
	if (T->answer_nodes) {
		json_t *a = json_array();
		for (uint32_t k = 0; k < g->n_nodes; k++)
			if (T->answer_nodes[T->order[k]])
				json_array_append_new(a, json_string(wh_triage_node_name(&g->nodes[T->order[k]])));
		json_object_set_new(o, "layers", a);
	}
	if (T->prec_run && T->prec_st == WH_OK) {
		json_t *a = json_array();
		for (uint32_t k = 0; k < g->n_nodes; k++)
			if (T->keep_mask[T->order[k]])
				json_array_append_new(a, json_string(wh_triage_node_name(&g->nodes[T->order[k]])));
		json_object_set_new(o, "keep_fp32", a);
		char p[PATH_MAX + 32];
		wh_text_printf(p, sizeof p, "%s/layer-precisions.json", T->dir);
		json_object_set_new(o, "layer_precisions", json_string(p));
	}
	char p[PATH_MAX + 32];
	wh_text_printf(p, sizeof p, "%s/repro", T->dir);
	if (T->answer)
		json_object_set_new(o, "repro", json_string(p));
	if (T->repro_checked) {
		json_object_set_new(o, "repro_exit", json_integer(T->repro_exit));
		json_object_set_new(o, "repro_fails", json_boolean(T->repro_fails));
	}
	wh_text_printf(p, sizeof p, "%s/report.md", T->dir);
	json_object_set_new(o, "report", json_string(p));
	json_object_set_new(o, "finding", json_string(T->finding));
	json_object_set_new(o, "next", json_string(T->next));
	json_object_set_new(o, "checks", json_integer(T->checks));
	json_object_set_new(o, "seconds", json_real(wh_os_now_s() - T->t0));
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (s) {
		puts(s);
		fflush(stdout);
	}
	free(s);
	json_decref(o);
}

void wh_triage_print_summary(struct tri *T, FILE *f)
{
	/* the texts are the report's Markdown, names in code spans (already free of control
	 * characters); escaped once more as every terminal line is */
	fprintf(f, "triage: %s\n", wh_triage_outcome_words(T->rep->outcome));
	wh_name_write(f, WH_NAME_TERM, T->finding);
	fprintf(f, "\nnext: ");
	wh_name_write(f, WH_NAME_TERM, T->next);
	fputc('\n', f);
	if (T->repro_checked) {
		char w[768];
		wh_triage_repro_words(T, w, sizeof w);
		fprintf(f, "repro: %s/repro/command.sh %s\n", wh_name_term(T->dir), wh_name_term(w));
	}
	fprintf(f, "report: %s/report.md (%u checks, %.1f s)\n", wh_name_term(T->dir), T->checks, wh_os_now_s() - T->t0);
	fflush(f);
}
