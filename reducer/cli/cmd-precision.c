#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/tensor-file.h"
#include "graph/topo.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/precision-search.h"

static const char precision_help[] =
	"usage: whittle precision MODEL --precision P [options] [--check CMD ARGS...]\n\n"
	"Finds a small set of layers to keep in --higher precision so that MODEL, run at --precision\n"
	"with those layers at the higher one, passes the check; prints their names (one a line, with\n"
	"their op) and writes them as a --layer-precisions file for whittle run. In ddmin mode the set\n"
	"is 1-minimal: moving any one of its layers back to --precision makes the check fail.\n"
	"Without --check, the built-in check compares the outputs with an FP32 run (--atol/--rtol).\n"
	"--check takes the rest of the command line; in it {model} is MODEL, {inputs} a folder with\n"
	"the input tensors, {precisions} a layer-precisions JSON file for the candidate.\n\n"
	"search:\n"
	"  --precision P            precision of every other float layer: tf32, fp16, bf16, fp8,\n"
	"                           fp8e5m2, int8 (required)\n"
	"  --higher P               precision of the kept layers: fp32 (default), fp16, bf16\n"
	"  --mode M                 ddmin (default: bisection, then divide and conquer over layers\n"
	"                           ordered by their error, then a 1-minimality pass), bisect\n"
	"                           (coarse only, like Polygraphy: a prefix or suffix of the layers)\n"
	"  --direction D            forward (default: prefixes of the topological order) or reverse\n"
	"                           (suffixes)\n"
	"  -o, --output FILE        write the layer precisions (JSON, docs/formats.md)\n"
	"  --json                   machine-readable events and result on stdout (JSON lines)\n"
	"check:\n"
	"  --check CMD ...          the check command (argv; the rest of the line)\n"
	"  --shell                  run the check command through /bin/sh -c\n"
	"  --fail-regex RE          the check fails when RE (PCRE2) matches its output (repeatable)\n"
	"  --fail-code N            with --fail-regex: also require one of these exit codes; alone:\n"
	"                           the check fails on these exit codes only (repeatable)\n"
	"  --ignore-fail-code N     a non-zero exit that does not mean failure (repeatable)\n"
	"  --timeout S              kill the check (and its children) after S seconds\n"
	"  --timeout-is V           skip (default), fail or pass\n"
	WH_CLI_LAUNCHER_HELP
	"built-in check:\n"
	"  --atol X, --rtol X       tolerances (default 1e-5 each); an element fails when both are\n"
	"                           exceeded\n"
	"  --check-error-stat S     elemwise (default), max, mean, median, quantile[=Q]\n"
	"data:\n"
	"  --load-inputs DIR        input tensors (a folder of .pb/.npy files, or one folder per sample:\n"
	"                           the answer must pass on every sample)\n"
	"  --seed N, --val-range LO,HI   generated inputs (default seed 1, range 0,1)\n"
	"  --input-shapes S         bind dynamic input dimensions, e.g. x:1x3x48x320\n"
	"  --threads N              executor threads (default: all cores)\n"
	WH_CALIB_HELP
	"exit status: 0 found, 2 usage, 3 bad input, or the model already passes at --precision, or\n"
	"still fails with every float layer at --higher, 4 the check command is broken\n";

/* Removes the files of a work folder this command created, then the folder. */
static void remove_dir(const char *dir)
{
	DIR *dh = opendir(dir);
	if (dh) {
		struct dirent *de;
		while ((de = readdir(dh))) {
			char p[PATH_MAX];
			if (de->d_name[0] == '.' || (size_t)snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= sizeof p)
				continue;
			unlink(p);
		}
		closedir(dh);
	}
	rmdir(dir);
}

/* The kept layers in topological order, so that the list reads like the model. */
static enum wh_status kept_in_order(const struct wh_model *m, const struct wh_precision_config *c, uint32_t **out,
				    uint32_t *n_out)
{
	const struct wh_graph *g = m->graph;
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	uint32_t *kept = calloc((size_t)c->n_layers + 1, sizeof *kept);
	uint32_t n = 0;
	enum wh_status st = WH_OK;
	if (!order || !kept) {
		st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	for (uint32_t i = 0; i < g->n_nodes && n < c->n_layers; i++) {
		const char *name = g->nodes[order[i]].name;
		for (uint32_t k = 0; name && k < c->n_layers; k++)
			if (!strcmp(c->layers[k].layer, name)) {
				kept[n++] = order[i];
				break;
			}
	}
out:
	free(order);
	if (st != WH_OK) {
		free(kept);
		return st;
	}
	*out = kept;
	*n_out = n;
	return WH_OK;
}

static void print_result_json(const struct wh_model *m, const uint32_t *kept, uint32_t n_kept,
			      const struct wh_precision_search_options *so, const struct wh_precision_search_report *rep,
			      const char *output_path)
{
	json_t *root = json_object();
	json_t *layers = json_array();
	for (uint32_t i = 0; i < n_kept; i++) {
		const struct wh_node *nd = &m->graph->nodes[kept[i]];
		json_t *o = json_object();
		json_object_set_new(o, "layer", json_string(nd->name));
		json_object_set_new(o, "op", json_string(nd->op_type));
		json_array_append_new(layers, o);
	}
	json_object_set_new(root, "event", json_string("result"));
	json_object_set_new(root, "precision", json_string(wh_precision_name(so->target)));
	json_object_set_new(root, "higher", json_string(wh_precision_name(so->higher)));
	json_object_set_new(root, "mode", json_string(so->mode == WH_SEARCH_BISECT ? "bisect" : "ddmin"));
	json_object_set_new(root, "direction", json_string(so->reverse ? "reverse" : "forward"));
	json_object_set_new(root, "layers", layers);
	json_object_set_new(root, "candidates", json_integer(rep->candidates));
	json_object_set_new(root, "checks_run", json_integer(rep->checks_run));
	json_object_set_new(root, "checks_cached", json_integer(rep->checks_cached));
	json_object_set_new(root, "one_minimal", json_boolean(rep->one_minimal));
	json_object_set_new(root, "seconds", json_real(rep->seconds));
	json_object_set_new(root, "output", output_path ? json_string(output_path) : json_null());
	if (rep->note[0])
		json_object_set_new(root, "note", json_string(rep->note));
	char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text)
		puts(text);
	free(text);
	json_decref(root);
}

int wh_cmd_precision(int argc, char **argv)
{
	/* --check takes the rest of the line */
	int check_at = wh_cli_check_at(argc, argv);
	int nargs = check_at >= 0 ? check_at : argc;
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"precision", required_argument, NULL, 'p'},
		{"higher", required_argument, NULL, 'H'},
		{"mode", required_argument, NULL, 'm'},
		{"direction", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'J'},
		WH_CLI_CHECK_LONGOPTS,
		{"load-inputs", required_argument, NULL, 'L'},
		{"seed", required_argument, NULL, 'e'},
		{"val-range", required_argument, NULL, 'v'},
		{"input-shapes", required_argument, NULL, 'I'},
		{"atol", required_argument, NULL, 1},
		{"rtol", required_argument, NULL, 2},
		{"check-error-stat", required_argument, NULL, 3},
		{"threads", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		WH_CALIB_LONGOPTS,
		{0, 0, 0, 0},
	};
	struct wh_precision_search_options so = {.target = WH_PREC_FP32, .higher = WH_PREC_FP32, .mode = WH_SEARCH_DDMIN,
						 .log = stderr};
	wh_compare_options_default(&so.compare);
	struct wh_cli_check_opts cko;
	wh_cli_check_opts_init(&cko);
	const char *load = NULL, *shapes = NULL, *output_path = NULL, *stat_arg = NULL, *method_arg = NULL;
	long long seed = 1, v;
	double lo = 0, hi = 1;
	bool target_given = false;
	struct wh_calib_opts cal;
	wh_calib_opts_init(&cal);
	enum wh_status st = WH_OK;
	/* usage errors return before anything is allocated but the calibration table */
	int urc = -1;
#define USAGE(...)                                                          \
	do {                                                                \
		urc = wh_cli_usage_error("precision", __VA_ARGS__);         \
		goto usage;                                                 \
	} while (0)
	int c;
	while ((c = getopt_long(nargs, argv, ":ho:", longopts, NULL)) != -1) {
		int cr = wh_cli_check_option(&cko, "precision", c, optarg);
		if (cr < 0) {
			urc = WH_EXIT_USAGE;
			goto usage;
		}
		if (cr > 0)
			continue;
		if (c == WH_CALIB_OPT_METHOD)
			method_arg = optarg;
		if (wh_calib_opts_parse(&cal, c, optarg, &st)) {
			if (st != WH_OK) {
				urc = wh_cli_fail(st);
				goto usage;
			}
			continue;
		}
		switch (c) {
		case 'o': output_path = optarg; break;
		case 'p':
			if (!wh_precision_parse(optarg, &so.target))
				USAGE("--precision takes tf32, fp16, bf16, fp8, fp8e5m2 or int8, not '%s' (see whittle precision --help)", optarg);
			target_given = true;
			break;
		case 'H':
			if (!wh_precision_parse(optarg, &so.higher) ||
			    (so.higher != WH_PREC_FP32 && so.higher != WH_PREC_FP16 && so.higher != WH_PREC_BF16))
				USAGE("--higher takes fp32, fp16 or bf16, not '%s' (see whittle precision --help)", optarg);
			break;
		case 'm':
			if (!strcmp(optarg, "ddmin")) so.mode = WH_SEARCH_DDMIN;
			else if (!strcmp(optarg, "bisect")) so.mode = WH_SEARCH_BISECT;
			else USAGE("--mode takes ddmin or bisect, not '%s' (see whittle precision --help)", optarg);
			break;
		case 'd':
			if (!strcmp(optarg, "forward")) so.reverse = false;
			else if (!strcmp(optarg, "reverse")) so.reverse = true;
			else USAGE("--direction takes forward or reverse, not '%s' (see whittle precision --help)", optarg);
			break;
		case 'J': so.json = true; break;
		case 'L': load = optarg; break;
		case 'e':
			if (!wh_cli_parse_int(optarg, 0, INT64_MAX, &seed))
				USAGE("--seed takes a non-negative integer, not '%s' (see whittle precision --help)", optarg);
			break;
		case 'v': {
			char *comma = strchr(optarg, ',');
			if (!comma)
				USAGE("--val-range takes LO,HI, not '%s' (see whittle precision --help)", optarg);
			*comma = '\0';
			if (!wh_cli_parse_double(optarg, &lo) || !wh_cli_parse_double(comma + 1, &hi) || hi < lo)
				USAGE("--val-range takes LO,HI with LO <= HI (see whittle precision --help)");
			break;
		}
		case 'I': shapes = optarg; break;
		case 1:
			if (!wh_cli_parse_double(optarg, &so.compare.atol) || so.compare.atol < 0)
				USAGE("--atol takes a non-negative number, not '%s' (see whittle precision --help)", optarg);
			break;
		case 2:
			if (!wh_cli_parse_double(optarg, &so.compare.rtol) || so.compare.rtol < 0)
				USAGE("--rtol takes a non-negative number, not '%s' (see whittle precision --help)", optarg);
			break;
		case 3:
			if (!wh_error_stat_parse(optarg, &so.compare.stat, &so.compare.quantile))
				USAGE("--check-error-stat takes elemwise, max, mean, median or quantile[=Q], not '%s' (see whittle precision --help)", optarg);
			stat_arg = optarg;
			break;
		case 't':
			if (!wh_cli_parse_int(optarg, 1, 1024, &v))
				USAGE("--threads takes 1..1024, not '%s' (see whittle precision --help)", optarg);
			so.threads = (int)v;
			cal.threads = (int)v;
			break;
		case 'h':
			fputs(precision_help, stdout);
			wh_calib_opts_release(&cal);
			return 0;
		default:
			urc = wh_cli_bad_option("precision", c, argv);
			goto usage;
		}
	}
	if (optind != nargs - 1)
		urc = wh_cli_usage_error("precision", "expects exactly one MODEL before --check (see whittle precision --help)");
	else if (!target_given)
		urc = wh_cli_usage_error("precision", "no target precision (give --precision fp16, bf16, int8, ...)");
	else if (so.target == WH_PREC_FP32)
		urc = wh_cli_usage_error("precision", "--precision fp32 has nothing higher to keep layers in (give fp16, bf16, int8, ...)");
	else if (so.target == so.higher)
		urc = wh_cli_usage_error("precision", "--precision and --higher are both %s (keep layers in a higher precision, e.g. --higher fp32)",
					 wh_precision_name(so.target));
	else if (check_at >= 0 && check_at + 1 >= argc)
		urc = wh_cli_usage_error("precision", "--check needs a command (e.g. --check ./my-check.sh {model} {precisions})");
	else if (check_at < 0 && wh_cli_check_opts_given(&cko))
		urc = wh_cli_usage_error("precision", "check options given without --check (put --check CMD ... last)");
	if (urc >= 0) {
usage:
		wh_calib_opts_release(&cal);
		return urc;
	}
#undef USAGE
	so.model_path = argv[optind];

	struct wh_model *m = NULL;
	struct wh_check *check = NULL;
	struct wh_tensor_set *samples = NULL;
	uint32_t n_samples = 0;
	size_t n_generated = 0;
	char **dirs = NULL;
	struct wh_precision_config calib_cfg, result;
	wh_precision_config_init(&calib_cfg);
	wh_precision_config_init(&result);
	char *display = NULL;
	uint32_t *kept = NULL, n_kept = 0;
	char inputs_tmp[PATH_MAX] = "";
	int rc = 0;
	if (check_at >= 0) {
		wh_cli_check_opts_finish(&cko, argv + check_at + 1, argc - check_at - 1);
		if ((st = wh_check_create(&cko.co, &check)) != WH_OK)
			goto fail;
		display = wh_check_command_line(check, NULL);
		so.check = check;
		so.check_display = display;
	}
	if ((st = wh_cli_load_model(so.model_path, shapes, &m)) != WH_OK)
		goto fail;
	if ((st = wh_cli_load_samples(m, load, (uint64_t)seed, lo, hi, &samples, &n_samples, &n_generated)) != WH_OK)
		goto fail;
	if (check) {
		/* an external check reads {inputs}: the user's folder when it is one sample used as it
		 * is, else a folder per sample written here */
		if (!(dirs = calloc(n_samples, sizeof *dirs))) {
			st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
			goto fail;
		}
		if (load && n_samples == 1 && !n_generated) {
			dirs[0] = strdup(load);
		} else {
			const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
			if ((size_t)snprintf(inputs_tmp, sizeof inputs_tmp, "%s/whittle-precision-inputs-XXXXXX", tmp) >= sizeof inputs_tmp ||
			    !mkdtemp(inputs_tmp)) {
				st = wh_error(WH_ERR_IO, "%s: cannot create a folder for the inputs (set TMPDIR)", tmp);
				inputs_tmp[0] = '\0';
				goto fail;
			}
			for (uint32_t k = 0; k < n_samples; k++) {
				char d[PATH_MAX + 32];
				snprintf(d, sizeof d, "%s/sample-%u", inputs_tmp, k);
				if ((st = wh_tensor_set_write_dir_for(d, NULL, m->graph, false, &samples[k])) != WH_OK)
					goto fail;
				dirs[k] = strdup(d);
			}
		}
		for (uint32_t k = 0; k < n_samples; k++)
			if (!dirs[k]) {
				st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
				goto fail;
			}
		so.inputs_dirs = (const char *const *)dirs;
	}
	calib_cfg.dflt = so.target;
	if ((st = wh_calib_opts_apply(&cal, m, &calib_cfg, &samples[0])) != WH_OK)
		goto fail;
	so.calib = calib_cfg.calib;
	if (!so.json)
		fprintf(stderr, "precision: %s at %s, searching layers to keep at %s (%s, %s); check: %s\n", so.model_path,
			wh_precision_name(so.target), wh_precision_name(so.higher), so.mode == WH_SEARCH_BISECT ? "bisect" : "ddmin",
			so.reverse ? "reverse" : "forward", display ? display : "built-in comparison with fp32");
	struct wh_precision_search_report rep;
	if ((st = wh_precision_search(m, samples, n_samples, &so, &result, &rep)) != WH_OK)
		goto fail;
	if ((st = kept_in_order(m, &result, &kept, &n_kept)) != WH_OK)
		goto fail;
	if (output_path && (st = wh_precision_config_write(&result, output_path)) != WH_OK)
		goto fail;
	if (so.json) {
		print_result_json(m, kept, n_kept, &so, &rep, output_path);
	} else {
		for (uint32_t i = 0; i < n_kept; i++)
			printf("%s\t%s\n", m->graph->nodes[kept[i]].name, m->graph->nodes[kept[i]].op_type);
		fflush(stdout);
		fprintf(stderr, "precision: keep %u of %u float layers at %s; %u checks run (%u from the cache), %.1f s; %s\n", n_kept,
			rep.candidates, wh_precision_name(so.higher), rep.checks_run, rep.checks_cached, rep.seconds,
			rep.one_minimal ? "1-minimal" : (so.mode == WH_SEARCH_BISECT ? "not verified 1-minimal (bisect mode)" : "not verified 1-minimal"));
		if (rep.note[0])
			fprintf(stderr, "precision: warning: the check contradicted itself: %s\n", rep.note);
		if (output_path) {
			/* the run that verifies the answer, with this search's data and tolerances */
			fprintf(stderr, "precision: wrote %s; verify with: whittle run %s", output_path, so.model_path);
			if (shapes)
				fprintf(stderr, " --input-shapes %s", shapes);
			if (load)
				fprintf(stderr, " --load-inputs %s%s", load, n_samples > 1 ? "/<each sample folder>" : "");
			if (!load || n_generated) {
				if (seed != 1)
					fprintf(stderr, " --seed %lld", seed);
				if (lo != 0 || hi != 1)
					fprintf(stderr, " --val-range %g,%g", lo, hi);
			}
			fprintf(stderr, " --precision %s --layer-precisions %s", wh_precision_name(so.target), output_path);
			if (method_arg)
				fprintf(stderr, " --calib-method %s", method_arg);
			if (cal.data_dir)
				fprintf(stderr, " --calib-data %s", cal.data_dir);
			if (cal.cache_path)
				fprintf(stderr, " --calibration-cache %s", cal.cache_path);
			if (!check) {
				fprintf(stderr, " --compare fp32 --atol %g --rtol %g", so.compare.atol, so.compare.rtol);
				if (stat_arg)
					fprintf(stderr, " --check-error-stat %s", stat_arg);
			}
			fputc('\n', stderr);
		}
	}
	goto out;
fail:
	rc = wh_cli_fail(st);
out:
	if (inputs_tmp[0])
		remove_dir(inputs_tmp);
	free(kept);
	free(display);
	wh_check_destroy(check);
	wh_cli_samples_free(samples, n_samples);
	for (uint32_t k = 0; dirs && k < n_samples; k++)
		free(dirs[k]);
	free(dirs);
	wh_precision_config_release(&result);
	wh_precision_config_release(&calib_cfg);
	wh_calib_opts_release(&cal);
	wh_model_destroy(m);
	return rc;
}
