/* ONNX backend conformance runner: runs the cases of ../shared/onnx-tests (read in place
 * through WHITTLE_ONNX_TESTS) on whittle's executor and compares each output with the
 * expected one at ONNX's tolerance (rtol 1e-3, atol 1e-7, or the case's real/data.json).
 *
 *   tool-conformance [--suite S]... [--op OP]... [--case SUBSTR]... [--exact NAME]...
 *                    [--table FILE] [--list FILE] [--device cuda[:N]] [-v] [-q]
 *
 * --device cuda runs the cases on the CUDA backend (docs/gpu.md): a case whose layers of
 * the op it tests did not all run on the GPU says so ("cpu: OP"), and is then not counted as a
 * GPU pass but as unsupported.
 *
 * Prints one line per case (PASS / FAIL / UNSUPPORTED and why) and a closing
 * "conformance: N passed, N failed, N unsupported"; exit 1 when a case fails. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "executor/cpu.h"
#include "executor/executor.h"
#include "executor/kernel.h" /* element accessors */
#include "executor/precision.h"
#include "graph/onnx-io.h"
#include "graph/tensor-file.h"

#define MAX_FILTERS 256

/* node-INDEX.tsv: case name -> op types, to count each case under its op in the table. */
struct index_entry {
	char *name, *ops;
};

struct case_index {
	struct index_entry *e;
	size_t n;
};

struct opts {
	const char *root;
	const char *suites[16];
	int n_suites;
	const char *ops[MAX_FILTERS];
	int n_ops;
	const char *cases[MAX_FILTERS];
	int n_cases;
	const char *exact[MAX_FILTERS];
	int n_exact;
	const char *table, *list;
	struct case_index index;
	int verbose, quiet;
	int threads;
	bool cuda;
	int cuda_device;
};

enum verdict { V_PASS, V_FAIL, V_UNSUPPORTED };

struct op_row {
	char op[64];
	int pass, fail, unsup;
};

struct results {
	int pass, fail, unsup;
	struct op_row *rows;
	size_t n_rows, cap_rows;
	FILE *list;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_dir(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool is_file(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Sorted directory listing (malloc'd names). */
static char **list_dir(const char *path, size_t *n_out)
{
	DIR *d = opendir(path);
	*n_out = 0;
	if (!d)
		return NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof *nn);
			if (!nn)
				break;
			names = nn;
		}
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	*n_out = n;
	return names;
}

static void free_list(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static bool model_has_op(const struct wh_graph *g, const char *op)
{
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		if (!strcmp(n->op_type, op))
			return true;
		for (uint32_t a = 0; a < n->n_attrs; a++) {
			if (n->attrs[a].type == WH_ATTR_GRAPH && n->attrs[a].g && model_has_op(n->attrs[a].g, op))
				return true;
			if (n->attrs[a].type == WH_ATTR_GRAPHS)
				for (size_t k = 0; k < n->attrs[a].n; k++)
					if (model_has_op(n->attrs[a].graphs[k], op))
						return true;
		}
	}
	return false;
}

static void index_load(struct case_index *ix, const char *root)
{
	char path[4096], line[8192];
	snprintf(path, sizeof path, "%s/node-INDEX.tsv", root);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t cap = 0;
	while (fgets(line, sizeof line, f)) {
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = '\0';
		char *ops = tab + 1, *end = strchr(ops, '\t');
		if (end)
			*end = '\0';
		if (ix->n == cap) {
			cap = cap ? cap * 2 : 1024;
			struct index_entry *ne = realloc(ix->e, cap * sizeof *ne);
			if (!ne)
				break;
			ix->e = ne;
		}
		ix->e[ix->n].name = strdup(line);
		ix->e[ix->n].ops = strdup(ops);
		ix->n++;
	}
	fclose(f);
}

static const char *index_ops(const struct case_index *ix, const char *name)
{
	for (size_t i = 0; i < ix->n; i++)
		if (!strcmp(ix->e[i].name, name))
			return ix->e[i].ops;
	return NULL;
}

/* The op a case is counted under: for node cases the op of the case (an _expanded case is
 * counted under the op it expands), else "(suite)". */
static void case_op(const struct case_index *ix, const char *suite, const char *name, char *out, size_t size)
{
	snprintf(out, size, "(%s)", suite);
	if (strcmp(suite, "node"))
		return;
	char base[512];
	snprintf(base, sizeof base, "%s", name);
	char *x = strstr(base, "_expanded");
	if (x)
		*x = '\0';
	const char *ops = index_ops(ix, base);
	if (!ops)
		ops = index_ops(ix, name);
	if (!ops)
		return;
	size_t len = strcspn(ops, ",");
	if (len >= size)
		len = size - 1;
	memcpy(out, ops, len);
	out[len] = '\0';
}

static void record(struct results *r, const char *op, enum verdict v)
{
	struct op_row *row = NULL;
	for (size_t i = 0; i < r->n_rows; i++)
		if (!strcmp(r->rows[i].op, op))
			row = &r->rows[i];
	if (!row) {
		if (r->n_rows == r->cap_rows) {
			size_t cap = r->cap_rows ? r->cap_rows * 2 : 64;
			struct op_row *nr = realloc(r->rows, cap * sizeof *nr);
			if (!nr)
				return;
			r->rows = nr;
			r->cap_rows = cap;
		}
		row = &r->rows[r->n_rows++];
		memset(row, 0, sizeof *row);
		snprintf(row->op, sizeof row->op, "%s", op);
	}
	if (v == V_PASS)
		row->pass++;
	else if (v == V_FAIL)
		row->fail++;
	else
		row->unsup++;
}

static bool close_enough(double a, double e, double rtol, double atol)
{
	if (isnan(e))
		return isnan(a);
	if (isinf(e))
		return a == e;
	return fabs(a - e) <= atol + rtol * fabs(e);
}

/* Compares one output; writes a reason on mismatch. */
static bool compare_tensor(const struct wh_tensor *got, const struct wh_tensor *exp, double rtol, double atol,
			   char *why, size_t size)
{
	char a[128], b[128];
	if (got->dtype != exp->dtype) {
		snprintf(why, size, "dtype %s, expected %s", wh_dtype_name(got->dtype), wh_dtype_name(exp->dtype));
		return false;
	}
	if (!wh_tensor_same_shape(got, exp)) {
		snprintf(why, size, "shape %s, expected %s", wh_shape_str(got->dims, got->rank, a, sizeof a),
			 wh_shape_str(exp->dims, exp->rank, b, sizeof b));
		return false;
	}
	if (exp->dtype == WH_DT_STRING) {
		for (uint64_t i = 0; i < exp->count; i++) {
			const char *x = ((const char *const *)got->data)[i], *y = ((const char *const *)exp->data)[i];
			if (strcmp(x ? x : "", y ? y : "")) {
				snprintf(why, size, "element %llu: '%s', expected '%s'", (unsigned long long)i, x ? x : "", y ? y : "");
				return false;
			}
		}
		return true;
	}
	bool fp = wh_dtype_is_float(exp->dtype) || exp->dtype == WH_DT_COMPLEX64 || exp->dtype == WH_DT_COMPLEX128;
	if (exp->dtype == WH_DT_COMPLEX64 || exp->dtype == WH_DT_COMPLEX128) {
		size_t n = wh_tensor_nbytes(exp);
		if (memcmp(got->data, exp->data, n)) {
			snprintf(why, size, "complex values differ");
			return false;
		}
		return true;
	}
	for (uint64_t i = 0; i < exp->count; i++) {
		if (fp) {
			double x = wh_tensor_get_f64(got, i), y = wh_tensor_get_f64(exp, i);
			if (!close_enough(x, y, rtol, atol)) {
				snprintf(why, size, "element %llu: %.9g, expected %.9g", (unsigned long long)i, x, y);
				return false;
			}
		} else {
			int64_t x = wh_tensor_get_i64(got, i), y = wh_tensor_get_i64(exp, i);
			if (x != y) {
				snprintf(why, size, "element %llu: %lld, expected %lld", (unsigned long long)i, (long long)x, (long long)y);
				return false;
			}
		}
	}
	return true;
}

/* Sequences item by item; empty optionals must be empty on both sides. */
static bool compare_value(const struct wh_tensor *got, const struct wh_tensor *exp, double rtol, double atol,
			  char *why, size_t size)
{
	if (got->kind != exp->kind) {
		snprintf(why, size, "a %s, expected a %s", wh_value_kind_name(got), wh_value_kind_name(exp));
		return false;
	}
	if (exp->kind == WH_VALUE_NONE)
		return true;
	if (exp->kind == WH_VALUE_TENSOR)
		return compare_tensor(got, exp, rtol, atol, why, size);
	if (wh_seq_len(got) != wh_seq_len(exp)) {
		snprintf(why, size, "sequence of %u items, expected %u", wh_seq_len(got), wh_seq_len(exp));
		return false;
	}
	for (uint32_t i = 0; i < wh_seq_len(exp); i++) {
		char w[300];
		if (!compare_value(wh_seq_item(got, i), wh_seq_item(exp, i), rtol, atol, w, sizeof w)) {
			snprintf(why, size, "sequence item %u: %s", i, w);
			return false;
		}
	}
	return true;
}

static enum verdict run_dataset(struct wh_engine *e, const struct wh_model *m, const char *dir,
				double rtol, double atol, char *why, size_t size)
{
	struct wh_tensor_set ins, exp, got;
	wh_tensor_set_init(&ins);
	wh_tensor_set_init(&exp);
	wh_tensor_set_init(&got);
	enum verdict v = V_FAIL;
	enum wh_status st = wh_tensor_set_read_dir_for(dir, "input", m->graph, false, &ins);
	if (st != WH_OK && st != WH_ERR_NOT_FOUND) {
		snprintf(why, size, "reading inputs: %s", wh_error_message());
		v = V_UNSUPPORTED;
		goto out;
	}
	/* inputs are matched by position: forget stored names that differ from the model's */
	for (size_t i = 0; i < ins.n; i++) {
		free(ins.items[i].name);
		ins.items[i].name = NULL;
	}
	if ((st = wh_tensor_set_read_dir_for(dir, "output", m->graph, true, &exp)) != WH_OK) {
		snprintf(why, size, "reading expected outputs: %s", wh_error_message());
		v = V_UNSUPPORTED;
		goto out;
	}
	if ((st = wh_engine_run(e, &ins, WH_KEEP_OUTPUTS, &got)) != WH_OK) {
		snprintf(why, size, "run: %s", wh_error_message());
		v = st == WH_ERR_UNSUPPORTED ? V_UNSUPPORTED : V_FAIL;
		goto out;
	}
	if (got.n != m->graph->n_outputs || exp.n > got.n) {
		snprintf(why, size, "%zu outputs, expected %zu", got.n, exp.n);
		goto out;
	}
	for (size_t i = 0; i < exp.n; i++) {
		int k = exp.items[i].index >= 0 ? exp.items[i].index : (int)i;
		if (k >= (int)got.n) {
			snprintf(why, size, "no output %d", k);
			goto out;
		}
		char w[400];
		if (!compare_value(&got.items[k].t, &exp.items[i].t, rtol, atol, w, sizeof w)) {
			snprintf(why, size, "output %d '%s': %s", k, got.items[k].name ? got.items[k].name : "", w);
			goto out;
		}
	}
	v = V_PASS;
out:
	wh_tensor_set_release(&ins);
	wh_tensor_set_release(&exp);
	wh_tensor_set_release(&got);
	return v;
}

static bool matches_filters(const struct opts *o, const char *name, const struct wh_model *m)
{
	if (o->n_exact) {
		bool any = false;
		for (int i = 0; i < o->n_exact; i++)
			if (!strcmp(name, o->exact[i]))
				any = true;
		if (!any)
			return false;
	}
	if (o->n_cases) {
		bool any = false;
		for (int i = 0; i < o->n_cases; i++)
			if (strstr(name, o->cases[i]))
				any = true;
		if (!any)
			return false;
	}
	if (o->n_ops && m) {
		bool any = false;
		for (int i = 0; i < o->n_ops; i++)
			if (model_has_op(m->graph, o->ops[i]))
				any = true;
		if (!any)
			return false;
	}
	return true;
}

static void report(struct results *r, const struct opts *o, const char *suite, const char *name,
		   const char *op, enum verdict v, const char *why)
{
	record(r, op, v);
	if (v == V_PASS)
		r->pass++;
	else if (v == V_FAIL)
		r->fail++;
	else
		r->unsup++;
	static const char *const label[] = {"PASS", "FAIL", "UNSUPPORTED"};
	if (!o->quiet && (v != V_PASS || o->verbose))
		printf("%-11s %s/%s%s%s\n", label[v], suite, name, why && *why ? ": " : "", why ? why : "");
	if (r->list)
		fprintf(r->list, "%s\t%s/%s\t%s\t%s\n", label[v], suite, name, op, why ? why : "");
}

/* Cases whose expected values carry the generator's own rounding noise above ONNX's default
 * absolute tolerance: compared at a stated looser atol (still far below any real error), and
 * listed with the reason in docs/conformance.md. */
static const struct {
	const char *name;
	double atol;
	const char *reason;
} tolerance_overrides[] = {
	{"test_dft_inverse", 1e-6,
	 "atol 1e-6: the expected output holds 1.9e-7 where the exact value is 0 (float32 FFT noise of the generator); whittle transforms in double"},
	{"test_dft_inverse_opset19", 1e-6,
	 "atol 1e-6: the expected output holds 1.9e-7 where the exact value is 0 (float32 FFT noise of the generator); whittle transforms in double"},
};

static void run_case(const struct opts *o, struct results *r, const char *suite, const char *case_dir,
		     const char *name, double rtol, double atol, const char *model_path)
{
	const char *override = NULL;
	for (size_t i = 0; i < sizeof tolerance_overrides / sizeof tolerance_overrides[0]; i++)
		if (!strcmp(suite, "node") && !strcmp(name, tolerance_overrides[i].name) && tolerance_overrides[i].atol > atol) {
			atol = tolerance_overrides[i].atol;
			override = tolerance_overrides[i].reason;
		}
	struct wh_model *m = NULL;
	struct wh_engine *e = NULL;
	char why[1024] = "";
	char op[64] = "(model)";
	enum verdict v = V_FAIL;
	enum wh_status st = wh_model_load(model_path, &m);
	if (st != WH_OK) {
		if (!matches_filters(o, name, NULL) || o->n_ops)
			return;
		snprintf(why, sizeof why, "load: %s", wh_error_message());
		v = st == WH_ERR_UNSUPPORTED ? V_UNSUPPORTED : V_FAIL;
		goto done;
	}
	if (!matches_filters(o, name, m))
		goto quiet;
	case_op(&o->index, suite, name, op, sizeof op);
	struct wh_engine_options eo = {.threads = o->threads, .cuda = o->cuda, .cuda_device = o->cuda_device, .profile = o->cuda};
	if ((st = wh_engine_create(m, &eo, &e)) != WH_OK) {
		snprintf(why, sizeof why, "%s", wh_error_message());
		v = st == WH_ERR_UNSUPPORTED ? V_UNSUPPORTED : V_FAIL;
		goto done;
	}
	size_t n;
	char **entries = list_dir(case_dir, &n);
	int sets = 0;
	v = V_PASS;
	for (size_t i = 0; i < n && v == V_PASS; i++) {
		if (strncmp(entries[i], "test_data_set_", 14))
			continue;
		char dir[8400];
		if (snprintf(dir, sizeof dir, "%s/%s", case_dir, entries[i]) >= (int)sizeof dir)
			continue;
		sets++;
		v = run_dataset(e, m, dir, rtol, atol, why, sizeof why);
	}
	free_list(entries, n);
	if (!sets && v == V_PASS) {
		v = V_UNSUPPORTED;
		snprintf(why, sizeof why, "no test data sets");
	}
	if (o->cuda && v == V_PASS) {
		/* on the GPU only when every layer that is not shape arithmetic ran there */
		uint32_t np = 0, on_cpu = 0;
		const struct wh_layer_profile *lp = wh_engine_profile(e, &np);
		char cpu_ops[256] = "";
		/* shape arithmetic and constants stay on the host by design (docs/gpu.md) */
		const struct wh_graph *g = m->graph;
		uint8_t *kinds = calloc((size_t)g->n_nodes + 1, 1);
		if (kinds && wh_model_layer_kinds(m, kinds) != WH_OK)
			memset(kinds, 0, (size_t)g->n_nodes + 1);
		for (uint32_t i = 0; i < np; i++) {
			uint8_t kind = 0;
			for (uint32_t k = 0; kinds && k < g->n_nodes; k++)
				if (lp[i].name && g->nodes[k].name && !strcmp(g->nodes[k].name, lp[i].name))
					kind = kinds[k];
			if (lp[i].device && strcmp(lp[i].device, "cuda") && kind != WH_LAYER_SHAPE && kind != WH_LAYER_CONST &&
			    strcmp(lp[i].tactic, "constant")) {
				on_cpu++;
				if (!strstr(cpu_ops, lp[i].op_type) && strlen(cpu_ops) + strlen(lp[i].op_type) + 2 < sizeof cpu_ops)
					snprintf(cpu_ops + strlen(cpu_ops), sizeof cpu_ops - strlen(cpu_ops), "%s%s", cpu_ops[0] ? " " : "", lp[i].op_type);
			}
		}
		free(kinds);
		if (on_cpu) {
			v = V_UNSUPPORTED;
			snprintf(why, sizeof why, "cpu: %s", cpu_ops);
		}
	}
	if (v == V_PASS && override)
		snprintf(why, sizeof why, "%s", override);
done:
	report(r, o, suite, name, op, v, why);
quiet:
	wh_engine_destroy(e);
	wh_model_destroy(m);
}

static void run_light(const struct opts *o, struct results *r, const char *dir, const char *file)
{
	char model_path[8400], out_path[8400], why[1024] = "";
	snprintf(model_path, sizeof model_path, "%s/%s", dir, file);
	snprintf(out_path, sizeof out_path, "%s/%.*s_output_0.pb", dir, (int)(strlen(file) - 5), file);
	struct wh_model *m = NULL;
	struct wh_engine *e = NULL;
	struct wh_tensor_set ins, got;
	struct wh_tensor exp;
	wh_tensor_set_init(&ins);
	wh_tensor_set_init(&got);
	wh_tensor_init(&exp);
	enum verdict v = V_FAIL;
	enum wh_status st = wh_model_load(model_path, &m);
	struct wh_engine_options eo = {.threads = o->threads, .cuda = o->cuda, .cuda_device = o->cuda_device};
	if (st == WH_OK)
		st = wh_tensor_read_pb(out_path, &exp, NULL);
	if (st == WH_OK)
		st = wh_engine_create(m, &eo, &e);
	const struct wh_graph *g = m ? m->graph : NULL;
	for (uint32_t i = 0; st == WH_OK && i < g->n_inputs; i++) {
		const struct wh_value *val = &g->values[g->inputs[i]];
		if (val->flags & WH_VALUE_INITIALIZER)
			continue;
		int64_t dims[WH_MAX_RANK];
		for (int32_t d = 0; d < val->rank; d++)
			dims[d] = val->dims[d].value >= 0 ? val->dims[d].value : 1;
		struct wh_tensor t;
		wh_tensor_init(&t);
		if ((st = wh_tensor_alloc(&t, val->dtype ? val->dtype : WH_DT_FLOAT, val->rank < 0 ? 0 : val->rank, dims)) == WH_OK) {
			memset(t.data, 0, wh_tensor_nbytes(&t));
			st = wh_tensor_set_add(&ins, val->name, -1, &t);
		}
		wh_tensor_release(&t);
	}
	if (st == WH_OK)
		st = wh_engine_run(e, &ins, WH_KEEP_OUTPUTS, &got);
	if (st != WH_OK) {
		snprintf(why, sizeof why, "%s", wh_error_message());
		v = st == WH_ERR_UNSUPPORTED ? V_UNSUPPORTED : V_FAIL;
	} else if (!got.n) {
		snprintf(why, sizeof why, "no output");
	} else {
		char w[400];
		if (compare_tensor(&got.items[0].t, &exp, 1e-3, 1e-7, w, sizeof w))
			v = V_PASS;
		else
			snprintf(why, sizeof why, "output 0: %s", w);
	}
	report(r, o, "light", file, "(light)", v, why);
	wh_tensor_release(&exp);
	wh_tensor_set_release(&ins);
	wh_tensor_set_release(&got);
	wh_engine_destroy(e);
	wh_model_destroy(m);
}

static void run_suite(const struct opts *o, struct results *r, const char *suite)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", o->root, suite);
	size_t n;
	char **entries = list_dir(path, &n);
	for (size_t i = 0; i < n; i++) {
		char case_dir[8400], model[8600];
		if (snprintf(case_dir, sizeof case_dir, "%s/%s", path, entries[i]) >= (int)sizeof case_dir)
			continue;
		if (!strcmp(suite, "light")) {
			/* light/<name>.onnx with light/<name>_output_0.pb and no inputs: their weights
			 * are constants, which makes the output independent of the data input (ONNX
			 * generated it with the reference evaluator); zeros are fed */
			size_t len = strlen(entries[i]);
			if (len < 6 || strcmp(entries[i] + len - 5, ".onnx"))
				continue;
			if (!matches_filters(o, entries[i], NULL) || o->n_ops)
				continue;
			run_light(o, r, path, entries[i]);
			continue;
		}
		if (!is_dir(case_dir))
			continue;
		if (snprintf(model, sizeof model, "%s/model.onnx", case_dir) >= (int)sizeof model)
			continue;
		if (!is_file(model))
			continue;
		run_case(o, r, suite, case_dir, entries[i], 1e-3, 1e-7, model);
	}
	free_list(entries, n);
}

static int cmp_row(const void *a, const void *b)
{
	return strcmp(((const struct op_row *)a)->op, ((const struct op_row *)b)->op);
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	o.threads = 1;
	o.root = getenv("WHITTLE_ONNX_TESTS");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--suite") && val && o.n_suites < 16) {
			o.suites[o.n_suites++] = val;
			i++;
		} else if (!strcmp(a, "--op") && val && o.n_ops < MAX_FILTERS) {
			o.ops[o.n_ops++] = val;
			i++;
		} else if (!strcmp(a, "--case") && val && o.n_cases < MAX_FILTERS) {
			o.cases[o.n_cases++] = val;
			i++;
		} else if (!strcmp(a, "--exact") && val && o.n_exact < MAX_FILTERS) {
			o.exact[o.n_exact++] = val;
			i++;
		} else if (!strcmp(a, "--table") && val) {
			o.table = val;
			i++;
		} else if (!strcmp(a, "--list") && val) {
			o.list = val;
			i++;
		} else if (!strcmp(a, "--root") && val) {
			o.root = val;
			i++;
		} else if (!strcmp(a, "--threads") && val) {
			o.threads = atoi(val);
			i++;
		} else if (!strcmp(a, "--device") && val) {
			o.cuda = strncmp(val, "cuda", 4) == 0;
			o.cuda_device = !strncmp(val, "cuda:", 5) ? atoi(val + 5) : 0;
			i++;
		} else if (!strcmp(a, "-v")) {
			o.verbose = 1;
		} else if (!strcmp(a, "-q")) {
			o.quiet = 1;
		} else {
			fprintf(stderr, "usage: tool-conformance [--suite S] [--op OP] [--case SUBSTR] [--exact NAME] [--table FILE] [--list FILE] [--threads N] [--device cuda[:N]] [-v] [-q]\n");
			return 2;
		}
	}
	if (!o.root || !*o.root)
		o.root = "../shared/onnx-tests";
	if (!is_dir(o.root)) {
		fprintf(stderr, "whittle: %s: ONNX test data not found (set WHITTLE_ONNX_TESTS to the onnx-tests folder)\n", o.root);
		return 2;
	}
	wh_cpu_init();
	if (o.cuda) {
		char info[512];
		if (wh_device_cuda_check(o.cuda_device, info, sizeof info) != WH_OK) {
			fprintf(stderr, "whittle: %s\n", wh_error_message());
			return 3;
		}
		printf("device: %s\n", info);
	}
	index_load(&o.index, o.root);
	if (!o.n_suites) {
		static const char *const all[] = {"node", "pytorch-operator", "pytorch-converted", "simple", "light"};
		for (int i = 0; i < 5; i++)
			o.suites[o.n_suites++] = all[i];
	}
	struct results r = {0};
	if (o.list && !(r.list = fopen(o.list, "w"))) {
		fprintf(stderr, "whittle: %s: cannot write\n", o.list);
		return 2;
	}
	for (int s = 0; s < o.n_suites; s++)
		run_suite(&o, &r, o.suites[s]);
	if (o.table) {
		FILE *f = fopen(o.table, "w");
		if (f) {
			qsort(r.rows, r.n_rows, sizeof *r.rows, cmp_row);
			fprintf(f, "| op | passed | failed | unsupported |\n| --- | ---: | ---: | ---: |\n");
			for (size_t i = 0; i < r.n_rows; i++)
				fprintf(f, "| %s | %d | %d | %d |\n", r.rows[i].op, r.rows[i].pass, r.rows[i].fail, r.rows[i].unsup);
			fclose(f);
		}
	}
	if (r.list)
		fclose(r.list);
	int total = r.pass + r.fail + r.unsup;
	printf("conformance: %d cases, %.1f%% passed\n", total, total ? 100.0 * r.pass / total : 0.0);
	printf("%d passed, %d failed, %d unsupported\n", r.pass, r.fail, r.unsup);
	free(r.rows);
	for (size_t i = 0; i < o.index.n; i++) {
		free(o.index.e[i].name);
		free(o.index.e[i].ops);
	}
	free(o.index.e);
	return r.fail ? 1 : 0;
}
