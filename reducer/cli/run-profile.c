#include "reducer/cli/run-profile.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "graph/os.h"
#include "graph/names.h"

/* One row of a table: a layer, or an op type's layers together. */
struct row {
	const char *name, *op, *tactic;
	uint32_t layers;
	double ms, flops;
	const char *device; /* "cpu", "cuda" (layers) */
	uint64_t h2d, d2h;  /* bytes copied to and from the GPU in the last run */
};

/* Whether any layer ran on the GPU: the tables then say where each ran and what it copied. */
static bool any_gpu(const struct row *layers, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (layers[i].device && !strcmp(layers[i].device, "cuda"))
			return true;
	return false;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorts v). */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cmp_row_ms(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->ms > y->ms ? -1 : x->ms < y->ms;
}

static double gflops(const struct row *r)
{
	return r->flops > 0 && r->ms > 0 ? r->flops / (r->ms * 1e6) : 0;
}

static void print_text(const struct row *layers, uint32_t n, const struct row *ops, uint32_t n_ops, long long runs,
		       double total, double sum, double coverage)
{
	printf("profile: %lld runs, median total %.3f ms, layers %.3f ms (%.1f %% of the total), %.1f %% of each run in layers\n",
	       runs, total, sum, total > 0 ? 100 * sum / total : 0, 100 * coverage);
	int w = 5, wt = 6, wo = 2;
	for (uint32_t i = 0; i < n; i++) {
		int l = (int)strlen(layers[i].name), lt = (int)strlen(layers[i].tactic), lo = (int)strlen(layers[i].op);
		w = l > w ? l : w;
		wt = lt > wt ? lt : wt;
		wo = lo > wo ? lo : wo;
	}
	w = w > 48 ? 48 : w;
	bool gpu = any_gpu(layers, n);
	if (gpu) {
		/* --device cuda: a GPU layer's ms is its time on the GPU (CUDA events) */
		uint32_t on_gpu = 0;
		double h2d = 0, d2h = 0;
		for (uint32_t i = 0; i < n; i++) {
			on_gpu += layers[i].device && !strcmp(layers[i].device, "cuda");
			h2d += (double)layers[i].h2d;
			d2h += (double)layers[i].d2h;
		}
		printf("devices: %u layers on cuda, %u on the cpu; copies in the last run: %.1f KB to the GPU, %.1f KB back\n", on_gpu,
		       n - on_gpu, h2d / 1e3, d2h / 1e3);
		printf("%5s  %-*s  %-*s  %-4s  %-*s  %9s  %6s  %9s  %8s\n", "#", w, "layer", wo, "op", "dev", wt, "tactic", "ms", "share",
		       "copy KB", "GFLOP/s");
	} else {
		printf("%5s  %-*s  %-*s  %-*s  %9s  %6s  %8s\n", "#", w, "layer", wo, "op", wt, "tactic", "ms", "share", "GFLOP/s");
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct row *r = &layers[i];
		int l = (int)strlen(r->name);
		/* a long name keeps its end, where exporters put what tells layers apart */
		const char *name = l > w ? r->name + (l - w) : r->name;
		if (gpu)
			printf("%5u  %-*s  %-*s  %-4s  %-*s  %9.4f  %5.1f%%  %9.1f  ", i + 1, w, wh_name_term(name), wo, wh_name_term(r->op),
			       r->device ? r->device : "cpu", wt, wh_name_term(r->tactic), r->ms, total > 0 ? 100 * r->ms / total : 0,
			       (double)(r->h2d + r->d2h) / 1e3);
		else
			printf("%5u  %-*s  %-*s  %-*s  %9.4f  %5.1f%%  ", i + 1, w, wh_name_term(name), wo, wh_name_term(r->op), wt,
			       wh_name_term(r->tactic), r->ms, total > 0 ? 100 * r->ms / total : 0);
		if (r->flops > 0)
			printf("%8.2f\n", gflops(r));
		else
			printf("%8s\n", "-");
	}
	printf("by op type:\n");
	printf("  %-*s  %6s  %9s  %6s  %8s\n", wo, "op", "layers", "ms", "share", "GFLOP/s");
	for (uint32_t i = 0; i < n_ops; i++) {
		const struct row *r = &ops[i];
		printf("  %-*s  %6u  %9.4f  %5.1f%%  ", wo, wh_name_term(r->op), r->layers, r->ms, total > 0 ? 100 * r->ms / total : 0);
		if (r->flops > 0)
			printf("%8.2f\n", gflops(r));
		else
			printf("%8s\n", "-");
	}
}

static json_t *row_json(const struct row *r, double total, bool layer)
{
	json_t *o = json_object();
	if (layer) {
		json_object_set_new(o, "layer", json_string(r->name));
		json_object_set_new(o, "op", json_string(r->op));
		json_object_set_new(o, "tactic", json_string(r->tactic));
		if (r->device) {
			json_object_set_new(o, "device", json_string(r->device));
			json_object_set_new(o, "h2d_bytes", json_integer((json_int_t)r->h2d));
			json_object_set_new(o, "d2h_bytes", json_integer((json_int_t)r->d2h));
		}
	} else {
		json_object_set_new(o, "op", json_string(r->op));
		json_object_set_new(o, "layers", json_integer(r->layers));
	}
	json_object_set_new(o, "ms", json_real(r->ms));
	json_object_set_new(o, "share", json_real(total > 0 ? r->ms / total : 0));
	json_object_set_new(o, "gflops", r->flops > 0 ? json_real(gflops(r)) : json_null());
	return o;
}

static void print_json(const char *model_path, const struct row *layers, uint32_t n, const struct row *ops, uint32_t n_ops,
		       long long runs, double total, double sum, double coverage)
{
	json_t *root = json_object(), *prof = json_object(), *la = json_array(), *oa = json_array();
	json_object_set_new(root, "model", json_string(model_path));
	json_object_set_new(prof, "runs", json_integer(runs));
	json_object_set_new(prof, "total_ms", json_real(total));
	json_object_set_new(prof, "layers_ms", json_real(sum));
	json_object_set_new(prof, "coverage", json_real(coverage));
	for (uint32_t i = 0; i < n; i++)
		json_array_append_new(la, row_json(&layers[i], total, true));
	for (uint32_t i = 0; i < n_ops; i++)
		json_array_append_new(oa, row_json(&ops[i], total, false));
	json_object_set_new(prof, "layers", la);
	json_object_set_new(prof, "ops", oa);
	json_object_set_new(root, "profile", prof);
	char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	if (text)
		puts(text);
	free(text);
	json_decref(root);
}

enum wh_status wh_run_profile(struct wh_engine *e, const char *model_path, const struct wh_tensor_set *inputs,
			      long long iterations, bool json)
{
	size_t runs = (size_t)iterations;
	uint32_t n = 0, n_ops = 0;
	double *totals = calloc(runs, sizeof *totals), *cover = calloc(runs, sizeof *cover), *times = NULL;
	struct row *layers = NULL, *ops = NULL;
	enum wh_status st = WH_OK;
	if (!totals || !cover) {
		st = wh_error(WH_ERR_NOMEM, "run: out of memory for the profile");
		goto out;
	}
	for (size_t i = 0; i < runs && st == WH_OK; i++) {
		struct wh_tensor_set tmp;
		wh_tensor_set_init(&tmp);
		double t0 = wh_os_now_s();
		st = wh_engine_run(e, inputs, WH_KEEP_OUTPUTS, &tmp);
		totals[i] = (wh_os_now_s() - t0) * 1e3;
		wh_tensor_set_release(&tmp);
		if (st != WH_OK)
			break;
		uint32_t k;
		const struct wh_layer_profile *lp = wh_engine_profile(e, &k);
		if (i == 0) {
			n = k;
			times = calloc(runs * ((size_t)n + 1), sizeof *times);
			layers = calloc((size_t)n + 1, sizeof *layers);
			ops = calloc((size_t)n + 1, sizeof *ops);
			if (!times || !layers || !ops) {
				st = wh_error(WH_ERR_NOMEM, "run: out of memory for the profile");
				break;
			}
			for (uint32_t l = 0; l < n; l++)
				layers[l] = (struct row){lp[l].name ? lp[l].name : "", lp[l].op_type, lp[l].tactic, 1, 0, lp[l].flops, lp[l].device, 0, 0};
		} else if (k != n) {
			st = wh_error(WH_ERR_INTERNAL, "run: the profile of run %zu has %u layers, the first had %u", i + 1, k, n);
			break;
		}
		double in_layers = 0;
		for (uint32_t l = 0; l < n; l++) {
			/* the label of the last run: a large constant layer runs twice before the plan keeps
			 * it (executor/runtime.c, CONST_LATER) */
			layers[l].tactic = lp[l].tactic;
			times[(size_t)l * runs + i] = lp[l].ms;
			in_layers += lp[l].ms;
			layers[l].h2d = lp[l].h2d_bytes;
			layers[l].d2h = lp[l].d2h_bytes;
			layers[l].device = lp[l].device;
		}
		cover[i] = totals[i] > 0 ? in_layers / totals[i] : 1;
	}
	if (st != WH_OK)
		goto out;
	/* The total is the median run and a layer's time the median of its own times: on a
	 * machine busy with other processes a run's time holds slices given to them, which the
	 * layer medians mostly leave out, so the layers can add up to less than the total. The
	 * coverage (the share of each run spent inside layers, median over runs) does not
	 * depend on that: it says how much of a run the table accounts for. */
	double total = median(totals, runs), coverage = median(cover, runs), sum = 0;
	for (uint32_t l = 0; l < n; l++) {
		layers[l].ms = median(times + (size_t)l * runs, runs);
		sum += layers[l].ms;
		uint32_t o = 0;
		while (o < n_ops && strcmp(ops[o].op, layers[l].op))
			o++;
		if (o == n_ops)
			ops[n_ops++] = (struct row){"", layers[l].op, "", 0, 0, 0, NULL, 0, 0};
		ops[o].layers++;
		ops[o].ms += layers[l].ms;
		ops[o].flops += layers[l].flops;
	}
	qsort(ops, n_ops, sizeof *ops, cmp_row_ms);
	if (json) {
		print_json(model_path, layers, n, ops, n_ops, iterations, total, sum, coverage);
	} else {
		print_text(layers, n, ops, n_ops, iterations, total, sum, coverage);
		printf("median_ms %.3f\n", total);
		struct rusage ru;
		if (getrusage(RUSAGE_SELF, &ru) == 0)
			printf("peak_rss_mb %.1f\n", (double)ru.ru_maxrss / 1024.0);
		/* --device cuda: what the weights cost to read against what the GPU can move */
		struct wh_engine_gpu_stats gs;
		if (wh_engine_gpu_stats(e, &gs)) {
			printf("gpu_start %s\n", gs.start);
			printf("gpu_weights_mb %.3f (at the layers' formats; %.3f on the device)\n", (double)gs.weights_fmt_bytes / 1e6,
			       (double)gs.weights_device_bytes / 1e6);
			if (gs.copy_gbps > 0)
				printf("gpu_copy_gbps %.1f (device to device, bytes read plus written)\ngpu_weights_read_ms %.3f (the weights read once at that rate)\n",
				       gs.copy_gbps, (double)gs.weights_fmt_bytes / (gs.copy_gbps * 1e9) * 1e3);
		}
	}
out:
	free(totals);
	free(cover);
	free(times);
	free(layers);
	free(ops);
	return st;
}
