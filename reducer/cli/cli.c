#include "reducer/cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/builder.h"
#include "executor/cpu.h"
#include "executor/executor.h"
#include "graph/tensor.h" /* element setters for generated inputs */
#include "graph/tensor-file.h"
#include <math.h>
#include "graph/names.h"
#include "graph/onnx-io.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/save-opts.h"
#include "reducer/cli/run-opts.h"
#include "reducer/launcher.h"

static const struct wh_cmd commands[] = {
	{"inspect", wh_cmd_inspect, WH_CMD_INSPECT, "show a model's inputs, outputs, layers, shapes and hash"},
	{"extract", wh_cmd_extract, WH_CMD_EXTRACT, "cut a subgraph out of a model by tensor names"},
	{"sanitize", wh_cmd_sanitize, WH_CMD_SANITIZE, "fold constants and remove dead nodes"},
	{"run", wh_cmd_run, WH_CMD_RUN, "run a model on whittle's executor, compare precisions"},
	{"compare", wh_cmd_compare, WH_CMD_COMPARE, "compare two folders of tensors"},
	{"reduce", wh_cmd_reduce, WH_CMD_REDUCE, "find the smallest subgraph that still fails a check"},
	{"build", wh_cmd_build, WH_CMD_BUILD, "rebuild until builds differ, find and prove the flaky tactic"},
	{"diff-tactics", wh_cmd_diff_tactics, WH_CMD_DIFF_TACTICS, "tactics seen only in bad builds, ranked"},
	{"repeat", wh_cmd_repeat, WH_CMD_REPEAT, "rerun a check and count good and bad runs"},
	{"precision", wh_cmd_precision, WH_CMD_PRECISION, "find the layers to keep in higher precision"},
	{"convert", wh_cmd_convert, WH_CMD_CONVERT, "write a strongly typed fp16/bf16 model, chosen layers kept in fp32"},
	{"triage", wh_cmd_triage, WH_CMD_TRIAGE, "walk the accuracy-debugging flowchart, write a report and a repro"},
};

int wh_exit_for(enum wh_status st)
{
	switch (st) {
	case WH_OK: return WH_EXIT_OK;
	case WH_ERR_USAGE: return WH_EXIT_USAGE;
	case WH_ERR_CHECK: return WH_EXIT_CHECK;
	default: return WH_EXIT_INPUT;
	}
}

/* An interrupt ends the process from its own thread with its own line (reducer/launcher.h);
 * what the interrupted command returns meanwhile is neither printed nor the exit code. */
static void wait_for_interrupt_exit(void)
{
	if (wh_interrupted())
		for (;;)
			pause();
}

int wh_cli_fail(enum wh_status st)
{
	wait_for_interrupt_exit();
	const char *msg = wh_error_message();
	if (!msg || !*msg)
		msg = wh_status_name(st);
	char shown[4096];
	wh_name_escape_line(msg, shown, sizeof shown);
	fprintf(stderr, "whittle: %s\n", shown);
	return wh_exit_for(st);
}

uint32_t wh_cli_cmd_bit(const char *name)
{
	for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
		if (!strcmp(name, commands[c].name))
			return commands[c].bit;
	return 0;
}

enum wh_status wh_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (cmd)
		return wh_error(WH_ERR_USAGE, "%s: %s", cmd, buf);
	return wh_error(WH_ERR_USAGE, "%s", buf);
}

static enum wh_status bad_option(const char *cmd, int c, char **argv)
{
	if (c == ':')
		return wh_cli_usage_error(cmd, "option '%s' needs a value (see whittle %s --help)", argv[optind - 1], cmd);
	return wh_cli_usage_error(cmd, "unknown option '%s' (see whittle %s --help)", argv[optind - 1], cmd);
}

/* One option: the check group, the run group, then the command's own. */
static enum wh_status offer_option(const struct wh_cli_spec *spec, int c, char **argv)
{
	if (c == ':' || c == '?')
		return bad_option(spec->cmd, c, argv);
	if (spec->check_opts) {
		int cr = wh_cli_check_option(spec->check_opts, spec->cmd, c, optarg);
		if (cr < 0)
			return WH_ERR_USAGE;
		if (cr > 0)
			return WH_OK;
	}
	if (spec->run_opts) {
		bool consumed;
		enum wh_status st = wh_run_opts_parse(spec->run_opts, c, optarg, &consumed);
		if (consumed)
			return st;
	}
	if (spec->save_opts) {
		enum wh_status st;
		if (wh_cli_save_opts_parse(spec->save_opts, c, optarg, &st))
			return st;
	}
	if (spec->own)
		return spec->own(spec->self, c, optarg);
	return bad_option(spec->cmd, '?', argv);
}

enum wh_status wh_cli_parse(const struct wh_cli_spec *spec, int argc, char **argv, struct wh_cli_args *out)
{
	memset(out, 0, sizeof *out);
	/* --check takes the rest of the line */
	int check_at = spec->check ? wh_cli_check_at(argc, argv) : -1;
	int nargs = check_at >= 0 ? check_at : argc;
	struct option longopts[128];
	char shortopts[32] = ":";
	if (!wh_cli_options_for(wh_cli_cmd_bit(spec->cmd), longopts, 128, shortopts + 1, sizeof shortopts - 1))
		return wh_error(WH_ERR_INTERNAL, "%s: more options than the parser holds (raise the limit in wh_cli_parse)", spec->cmd);
	int c;
	while ((c = getopt_long(nargs, argv, shortopts, longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(spec->help, stdout);
			out->help = true;
			return WH_OK;
		}
		enum wh_status st = offer_option(spec, c, argv);
		if (st != WH_OK)
			return st;
		const struct wh_cli_option *row = wh_cli_option_of(wh_cli_cmd_bit(spec->cmd), c);
		if (row && row->path) {
			if (out->n_paths == (int)(sizeof out->paths / sizeof out->paths[0]))
				return wh_cli_usage_error(spec->cmd, "more than %d path options (give fewer; put files in a folder)",
							  (int)(sizeof out->paths / sizeof out->paths[0]));
			out->paths[out->n_paths++] = (struct wh_cli_path_arg){row, optarg};
		}
	}
	int n = nargs - optind;
	if (!spec->operands && n > 0)
		return wh_cli_usage_error(spec->cmd, "unexpected argument '%s' (see whittle %s --help)", argv[optind], spec->cmd);
	if (spec->operands && n != spec->n_operands)
		return wh_cli_usage_error(spec->cmd, "expects exactly %s%s (see whittle %s --help)", spec->operands,
					  spec->check ? " before --check" : "", spec->cmd);
	out->operands = argv + optind;
	if (check_at >= 0 && check_at + 1 >= argc)
		return wh_cli_usage_error(spec->cmd, "--check needs a command (put the check command and its arguments after it, see whittle %s --help)",
					  spec->cmd);
	if (check_at < 0 && spec->check_opts && wh_cli_check_opts_given(spec->check_opts))
		return wh_cli_usage_error(spec->cmd, "check options given without --check (put --check CMD ... last)");
	if (check_at >= 0) {
		out->check = argv + check_at + 1;
		out->n_check = argc - check_at - 1;
		if (spec->check_opts)
			wh_cli_check_opts_finish(spec->check_opts, out->check, out->n_check);
	}
	return WH_OK;
}

enum wh_status wh_cli_load_model(const char *path, const char *input_shapes, struct wh_model **out)
{
	struct wh_model *m = NULL;
	struct wh_input_shape *shapes = NULL;
	uint32_t n_shapes = 0;
	enum wh_status st = wh_model_load(path, &m);
	if (st != WH_OK)
		return st;
	if (input_shapes && *input_shapes) {
		if ((st = wh_input_shapes_parse(input_shapes, &shapes, &n_shapes)) != WH_OK)
			goto out;
		if ((st = wh_model_bind_inputs(m, shapes, n_shapes)) != WH_OK)
			goto out;
	}
	st = wh_model_infer_shapes_eval(m, wh_executor_fold_eval);
out:
	wh_input_shapes_free(shapes, n_shapes);
	if (st != WH_OK) {
		wh_model_destroy(m);
		return st;
	}
	*out = m;
	return WH_OK;
}

void wh_cli_check_opts_init(struct wh_cli_check_opts *o)
{
	memset(o, 0, sizeof *o);
	o->jobs = 1;
}

int wh_cli_check_option(struct wh_cli_check_opts *o, const char *cmd, int c, const char *arg)
{
	long long v;
	double d;
	switch (c) {
	case 'S':
		o->co.shell = true;
		return 1;
	case 'j':
		if (!wh_cli_parse_int(arg, 1, 64, &v)) {
			wh_cli_usage_error(cmd, "-j '%s': not an integer from 1 to 64 (give a number of checks at once such as 4)", arg);
			return -1;
		}
		o->jobs = (int)v;
		return 1;
	case 'r':
		if (o->n_regex == 64) {
			wh_cli_usage_error(cmd, "too many --fail-regex (64 at most)");
			return -1;
		}
		o->regex[o->n_regex++] = arg;
		return 1;
	case 'f':
	case 'i':
		if (!wh_cli_parse_int(arg, -255, 255, &v)) {
			wh_cli_usage_error(cmd, "--%s '%s': not an exit code (give an integer from -255 to 255)", c == 'f' ? "fail-code" : "ignore-fail-code", arg);
			return -1;
		}
		if ((c == 'f' ? o->n_fail : o->n_ignore) == 64) {
			wh_cli_usage_error(cmd, "too many exit codes (64 at most)");
			return -1;
		}
		if (c == 'f')
			o->fail_codes[o->n_fail++] = (int)v;
		else
			o->ignore_codes[o->n_ignore++] = (int)v;
		return 1;
	case 'T':
		if (!wh_cli_parse_double(arg, &d) || !isfinite(d) || d <= 0) {
			wh_cli_usage_error(cmd, "--timeout '%s': not a finite number of seconds > 0 (give seconds such as 60)", arg);
			return -1;
		}
		o->co.timeout_s = d;
		return 1;
	case 'U':
		if (!strcmp(arg, "skip"))
			o->co.timeout_is = WH_TIMEOUT_SKIP;
		else if (!strcmp(arg, "fail"))
			o->co.timeout_is = WH_TIMEOUT_FAIL;
		else if (!strcmp(arg, "pass"))
			o->co.timeout_is = WH_TIMEOUT_PASS;
		else {
			wh_cli_usage_error(cmd, "--timeout-is '%s': not a verdict (give skip, fail or pass)", arg);
			return -1;
		}
		return 1;
	case WH_CLI_OPT_LAUNCHER:
		if (!strcmp(arg, "local")) {
			o->co.launcher = WH_LAUNCHER_LOCAL;
		} else if (!strcmp(arg, "slurm")) {
			o->co.launcher = WH_LAUNCHER_SLURM;
		} else {
			wh_cli_usage_error(cmd, "--launcher takes local or slurm, not '%s'", arg);
			return -1;
		}
		o->launcher_given = true;
		return 1;
	case WH_CLI_OPT_SLURM_ARGS:
	case WH_CLI_OPT_SHARED_DIR:
	case WH_CLI_OPT_RETRIES:
	case WH_CLI_OPT_QUEUE_TIMEOUT:
		o->launcher_given = true;
		if (c == WH_CLI_OPT_SLURM_ARGS) {
			o->co.slurm_args = arg;
		} else if (c == WH_CLI_OPT_SHARED_DIR) {
			if (!*arg) {
				wh_cli_usage_error(cmd, "--shared-dir takes a folder, not an empty string");
				return -1;
			}
			o->co.shared_dir = arg;
		} else if (c == WH_CLI_OPT_RETRIES) {
			if (!wh_cli_parse_int(arg, 0, 100, &v)) {
				wh_cli_usage_error(cmd, "--retries takes 0..100, not '%s'", arg);
				return -1;
			}
			o->co.retries = (int)v;
			o->retries_given = true;
		} else {
			if (!wh_cli_parse_double(arg, &d) || !(d > 0) || d == INFINITY) {
				wh_cli_usage_error(cmd, "--queue-timeout takes seconds > 0, not '%s'", arg);
				return -1;
			}
			o->co.queue_timeout_s = d;
		}
		return 1;
	default:
		return 0;
	}
}

bool wh_cli_check_opts_given(const struct wh_cli_check_opts *o)
{
	return o->n_regex || o->n_fail || o->n_ignore || o->co.timeout_s > 0 || o->co.shell || o->launcher_given;
}


void wh_cli_check_opts_finish(struct wh_cli_check_opts *o, char **words, int n_words)
{
	o->co.argv = words;
	o->co.argc = n_words;
	o->co.fail_regex = o->regex;
	o->co.n_fail_regex = o->n_regex;
	o->co.fail_codes = o->fail_codes;
	o->co.n_fail_codes = o->n_fail;
	o->co.ignore_codes = o->ignore_codes;
	o->co.n_ignore_codes = o->n_ignore;
	/* the runner refuses retries > 0 for local checks (an option parsed and ignored) */
	if (!o->retries_given && o->co.launcher == WH_LAUNCHER_SLURM)
		o->co.retries = 2;
}

enum wh_status wh_cli_artifact(const char *cmd, const char **files, int *n, const char *arg)
{
	if (*n == 64)
		return wh_cli_usage_error(cmd, "too many --artifacts (64 at most; have the check write them into one folder)");
	files[(*n)++] = arg;
	return WH_OK;
}

enum wh_status wh_cli_artifacts_jobs(const char *cmd, int n_artifacts, int jobs)
{
	if (n_artifacts && jobs > 1)
		return wh_cli_usage_error(cmd, "--artifacts with -j %d: the checks in flight would write the same files, and each would be sorted by another's verdict (give -j 1)",
					  jobs);
	return WH_OK;
}

void wh_cli_print_json(json_t *root, size_t flags)
{
	char *text = json_dumps(root, flags | JSON_PRESERVE_ORDER);
	if (text)
		puts(text);
	free(text);
	json_decref(root);
}

char **wh_cli_split(const char *s, uint32_t *n_out)
{
	uint32_t n = 1;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	char **v = calloc(n + 1, sizeof *v);
	if (!v)
		return NULL;
	uint32_t k = 0;
	const char *start = s;
	for (const char *p = s;; p++) {
		if (*p == ',' || !*p) {
			if (p > start)
				v[k++] = strndup(start, (size_t)(p - start));
			start = p + 1;
			if (!*p)
				break;
		}
	}
	*n_out = k;
	return v;
}

void wh_cli_free_split(char **v, uint32_t n)
{
	if (!v)
		return;
	for (uint32_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

bool wh_cli_parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(s, &end);
	if (errno || end == s || *end)
		return false;
	*out = d;
	return true;
}

bool wh_cli_parse_int(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* splitmix64: a small, well-known generator, so that inputs are reproducible anywhere */
static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Whether set holds the input named name, at position pos among the inputs that are not
 * initializers: by name, or as an unnamed input_<pos>.pb. */
static bool input_given(const struct wh_tensor_set *set, const char *name, int pos)
{
	if (name && wh_tensor_set_find(set, name))
		return true;
	for (size_t i = 0; i < set->n; i++)
		if (!set->items[i].name && set->items[i].index == pos)
			return true;
	return false;
}

enum wh_status wh_cli_random_inputs(const struct wh_model *m, uint64_t seed, double lo, double hi,
					 struct wh_tensor_set *set)
{
	const struct wh_graph *g = m->graph;
	uint64_t state = seed;
	int pos = -1;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		if (input_given(set, v->name, ++pos))
			continue;
		enum wh_value_type vt = wh_value_type_of(v, NULL);
		if (vt != WH_TYPE_TENSOR)
			return wh_error(WH_ERR_INVALID, "input '%s': a %s, for which whittle makes no random data (give it with --load-inputs as a %s file)",
					v->name, vt == WH_TYPE_SEQUENCE ? "sequence" : vt == WH_TYPE_OTHER ? "map or sparse tensor" : "optional",
					vt == WH_TYPE_SEQUENCE ? "SequenceProto" : "OptionalProto");
		if (v->rank < 0 || !v->dtype)
			return wh_error(WH_ERR_INVALID, "input '%s': type or rank unknown (give --input-shapes or --load-inputs)", v->name);
		int64_t dims[WH_MAX_RANK];
		for (int32_t d = 0; d < v->rank; d++) {
			if (v->dims[d].value < 0)
				return wh_error(WH_ERR_INVALID, "input '%s': dimension %d (%s) is dynamic (bind it with --input-shapes %s:...)",
						v->name, d, v->dims[d].param ? v->dims[d].param : "?", v->name);
			dims[d] = v->dims[d].value;
		}
		struct wh_tensor t;
		wh_tensor_init(&t);
		enum wh_status st = wh_tensor_alloc(&t, v->dtype, v->rank, dims);
		if (st == WH_ERR_NOMEM || st == WH_ERR_OVERFLOW) {
			/* say what was too large: the input at this shape, not some weights */
			char shape[160];
			uint64_t count = 0;
			wh_shape_count(dims, v->rank, &count);
			return wh_error(st, "input '%s': %s[%s] is %.3g GB, more than this machine can allocate (give a smaller shape with --input-shapes, or free memory)",
					v->name, wh_dtype_name(v->dtype), wh_shape_str(dims, v->rank, shape, sizeof shape),
					(double)count * (double)wh_dtype_size(v->dtype) / 1e9);
		}
		if (st != WH_OK)
			return st;
		for (uint64_t k = 0; k < t.count; k++) {
			double u = (double)(splitmix(&state) >> 11) * (1.0 / 9007199254740992.0);
			double x = lo + (hi - lo) * u;
			if (v->dtype == WH_DT_BOOL)
				x = u < 0.5 ? 0 : 1;
			else if (wh_dtype_is_int(v->dtype))
				x = floor(x);
			if (v->dtype == WH_DT_STRING) {
				wh_tensor_release(&t);
				return wh_error(WH_ERR_UNSUPPORTED, "input '%s': cannot generate string data (give --load-inputs)", v->name);
			}
			wh_tensor_set_f64(&t, k, x);
		}
		st = wh_tensor_set_add(set, v->name, -1, &t);
		wh_tensor_release(&t);
		if (st != WH_OK)
			return st;
	}
	return WH_OK;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: whittle [-v|-q] <command> [options]\n\n"
		   "whittle shrinks failing neural-network models: the smallest failing subgraph, the\n"
		   "layers that need higher precision, and the tactic that breaks some builds.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nwhittle <command> --help shows a command's options. whittle --version prints the version.\n");
}

int wh_cli_main(int argc, char **argv)
{
	wh_cpu_init();
	/* before any thread: every thread inherits the blocked stop signals, which the interrupt
	 * thread takes (reducer/launcher.h) */
	enum wh_status ist = wh_interrupt_install();
	if (ist != WH_OK)
		return wh_cli_fail(ist);
	/* Tensors are allocated and freed per layer; glibc would mmap each large one afresh and
	 * pay its page faults on every run. Keeping them in the heap lets freed buffers be
	 * reused (process-wide setting, made once here like the CPU table). */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			wh_log_set_level(wh_log_get_level() < WH_LOG_INFO ? WH_LOG_INFO : WH_LOG_DEBUG);
		} else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			wh_log_set_level(WH_LOG_ERROR);
		} else if (!strcmp(argv[i], "--version")) {
			printf("whittle %s\n", WHITTLE_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			return wh_cli_fail(wh_cli_usage_error("options", "unknown option '%s' (see whittle --help)", argv[i]));
		}
	}
	if (i >= argc) {
		usage(stderr);
		return WH_EXIT_USAGE;
	}
	for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
		if (!strcmp(argv[i], commands[c].name)) {
			optind = 1;
			opterr = 0;
			int rc = commands[c].run(argc - i, argv + i);
			wait_for_interrupt_exit();
			return rc;
		}
	return wh_cli_fail(wh_cli_usage_error(argv[i], "unknown command (see whittle --help)"));
}

static bool is_dir(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum wh_status read_samples(const struct wh_model *m, const char *dir, struct wh_tensor_set **out, uint32_t *n_out)
{
	DIR *dh = opendir(dir);
	if (!dh)
		return wh_error(WH_ERR_IO, "%s: cannot open the inputs folder (check the path)", dir);
	char *subs[1024];
	uint32_t ns = 0;
	struct dirent *de;
	while ((de = readdir(dh)) && ns < 1024) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= sizeof p)
			continue;
		if (is_dir(p))
			subs[ns++] = strdup(de->d_name);
	}
	closedir(dh);
	qsort(subs, ns, sizeof *subs, cmp_str);
	uint32_t n = ns ? ns : 1;
	struct wh_tensor_set *sets = calloc(n, sizeof *sets);
	enum wh_status st = sets ? WH_OK : wh_error(WH_ERR_NOMEM, "samples: out of memory");
	for (uint32_t i = 0; i < n && st == WH_OK; i++) {
		wh_tensor_set_init(&sets[i]);
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/%s", dir, ns ? subs[i] : "");
		st = wh_tensor_set_read_dir_for(ns ? p : dir, NULL, m ? m->graph : NULL, false, &sets[i]);
	}
	for (uint32_t i = 0; i < ns; i++)
		free(subs[i]);
	if (st != WH_OK) {
		for (uint32_t i = 0; sets && i < n; i++)
			wh_tensor_set_release(&sets[i]);
		free(sets);
		return st;
	}
	*out = sets;
	*n_out = n;
	return WH_OK;
}

/* The inputs --fill-missing generates: each named once, whatever the samples. */
struct missing {
	const char **names; /* the graph's strings */
	size_t n;
};

static enum wh_status missing_add(struct missing *ms, const char *name)
{
	for (size_t i = 0; i < ms->n; i++)
		if (!strcmp(ms->names[i], name))
			return WH_OK;
	const char **nn = realloc(ms->names, (ms->n + 1) * sizeof *nn);
	if (!nn)
		return wh_error(WH_ERR_NOMEM, "samples: out of memory");
	ms->names = nn;
	ms->names[ms->n++] = name;
	return WH_OK;
}

/* "'a', 'b'" of as many as fit one log line, and how many more (malloc'd; NULL when out of
 * memory): every generated input is named or counted. */
static char *missing_text(const struct missing *ms)
{
	enum { BUDGET = 1400 };
	char *buf = malloc(BUDGET + 96);
	if (!buf)
		return NULL;
	size_t o = 0, shown = 0;
	buf[0] = '\0';
	for (; shown < ms->n; shown++) {
		size_t l = strlen(ms->names[shown]);
		if (o + l + 4 > BUDGET)
			break;
		o += (size_t)snprintf(buf + o, BUDGET + 96 - o, "%s'%s'", shown ? ", " : "", ms->names[shown]);
	}
	if (shown < ms->n)
		snprintf(buf + o, BUDGET + 96 - o, "%s%zu more (of %zu)", shown ? " and " : "", ms->n - shown, ms->n);
	return buf;
}

/* Every input of m that is not an initializer has a file in sample k, or with fill (the
 * user asked for random data) none need. Those without one go to `missing`. */
static enum wh_status check_missing(const struct wh_model *m, const struct wh_tensor_set *set, const char *dir, bool fill,
				    struct missing *missing)
{
	const struct wh_graph *g = m->graph;
	int pos = -1;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER || input_given(set, v->name, ++pos))
			continue;
		if (!fill)
			return wh_error(WH_ERR_INVALID, "%s: no file for input '%s' (save it there as %s.pb or .npy, or give --fill-missing to generate it from --seed)",
					dir, v->name ? v->name : "?", v->name ? v->name : "?");
		enum wh_status st = missing_add(missing, v->name ? v->name : "?");
		if (st != WH_OK)
			return st;
	}
	return WH_OK;
}

enum wh_status wh_cli_load_samples(const struct wh_model *m, const char *dir, unsigned flags, uint64_t seed, double lo, double hi,
				   struct wh_tensor_set **out, uint32_t *n_out, size_t *n_generated_out)
{
	struct wh_tensor_set *sets = NULL;
	uint32_t n = 0;
	enum wh_status st = WH_OK;
	struct missing missing = {0};
	if (dir) {
		st = read_samples(m, dir, &sets, &n);
		/* strictly by name: a file for no input is an error, and so is an input without a
		 * file unless the user asked for random data */
		for (uint32_t k = 0; st == WH_OK && m && k < n; k++)
			st = wh_tensor_set_match_names(&sets[k], m->graph, flags & WH_SAMPLES_REFERENCE ? WH_NAMES_VALUES : WH_NAMES_INPUTS,
						       dir);
		for (uint32_t k = 0; st == WH_OK && m && !(flags & WH_SAMPLES_REFERENCE) && k < n; k++)
			st = check_missing(m, &sets[k], dir, flags & WH_SAMPLES_FILL_MISSING, &missing);
		if (flags & WH_SAMPLES_REFERENCE)
			m = NULL; /* reference values: nothing is generated */
	} else {
		sets = calloc(1, sizeof *sets);
		n = 1;
		if (!sets)
			st = wh_error(WH_ERR_NOMEM, "samples: out of memory");
		else
			wh_tensor_set_init(&sets[0]);
	}
	size_t generated = 0;
	for (uint32_t k = 0; st == WH_OK && m && k < n; k++) {
		size_t before = sets[k].n;
		st = wh_cli_random_inputs(m, seed + k, lo, hi, &sets[k]);
		generated += sets[k].n - before;
	}
	/* data the user did not give is never used silently: a data folder that lacks inputs
	 * is an error above, and --fill-missing names what it generates (without a folder,
	 * generated data is what the user asked for, and a warning line would come before
	 * every one-line error) */
	if (st == WH_OK && generated && dir) {
		char *text = missing_text(&missing);
		wh_warn("generated random data for input%s %s (--seed %llu, --val-range %g,%g)", missing.n > 1 ? "s" : "",
			text ? text : "?", (unsigned long long)seed, lo, hi);
		free(text);
	}
	free(missing.names);
	if (n_generated_out)
		*n_generated_out = generated;
	if (st != WH_OK) {
		wh_cli_samples_free(sets, n);
		return st;
	}
	*out = sets;
	*n_out = n;
	return WH_OK;
}

void wh_cli_samples_free(struct wh_tensor_set *sets, uint32_t n)
{
	for (uint32_t k = 0; sets && k < n; k++)
		wh_tensor_set_release(&sets[k]);
	free(sets);
}

int wh_cli_check_at(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--check"))
			return i;
	return -1;
}

enum wh_status wh_cli_timing_option(const char *cmd, const char *name, const char *arg, struct wh_build_options *bo)
{
	long long v;
	double d;
	if (!strcmp(name, "timing-iterations")) {
		if (!wh_cli_parse_int(arg, 1, 64, &v))
			return wh_cli_usage_error(cmd, "--timing-iterations '%s': not an integer from 1 to 64 (give a number of runs such as 3)", arg);
		bo->timing_iterations = (int)v;
		return WH_OK;
	}
	/* NaN fails too; inf is allowed */
	if (!wh_cli_parse_double(arg, &d) || !(d >= 0))
		return wh_cli_usage_error(cmd, "--timing-tolerance '%s': not a fraction >= 0 or inf (give 0.05: within 5 %% of the fastest)", arg);
	bo->timing_tolerance = d;
	return WH_OK;
}
