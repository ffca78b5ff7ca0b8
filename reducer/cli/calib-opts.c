#include "reducer/cli/calib-opts.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reducer/cli/cli-internal.h"

void wh_calib_opts_init(struct wh_calib_opts *o)
{
	memset(o, 0, sizeof *o);
	o->method = WH_CALIB_ENTROPY;
	o->percentile = WH_CALIB_DEFAULT_PERCENTILE;
	wh_calib_init(&o->table);
}

void wh_calib_opts_release(struct wh_calib_opts *o)
{
	if (!o)
		return;
	wh_calib_release(&o->table);
	wh_calib_opts_init(o);
}

bool wh_calib_opts_parse(struct wh_calib_opts *o, int c, const char *arg, enum wh_status *st_out)
{
	*st_out = WH_OK;
	switch (c) {
	case WH_CALIB_OPT_METHOD:
		if (o->method_given)
			*st_out = wh_cli_usage_error(o->cmd, "--calib-method given twice (give it once)");
		else if (!wh_calib_method_parse(arg, &o->method, &o->percentile))
			*st_out = wh_cli_usage_error(o->cmd, "--calib-method '%s': not a method (give entropy, minmax or percentile[=P] with 0 < P <= 100)", arg);
		o->method_given = true;
		o->method_arg = arg;
		return true;
	case WH_CALIB_OPT_DATA:
		if (o->data_dir)
			*st_out = wh_cli_usage_error(o->cmd, "--calib-data given twice (give one folder; put several samples in it as sample folders)");
		o->data_dir = arg;
		return true;
	case WH_CALIB_OPT_CACHE:
		if (o->cache_path)
			*st_out = wh_cli_usage_error(o->cmd, "--calibration-cache given twice (give it once)");
		o->cache_path = arg;
		return true;
	default:
		return false;
	}
}

bool wh_calib_opts_given(const struct wh_calib_opts *o)
{
	return o->method_given || o->data_dir || o->cache_path;
}

const char *wh_calib_opts_first_given(const struct wh_calib_opts *o)
{
	return o->method_given ? "calib-method" : o->data_dir ? "calib-data" : o->cache_path ? "calibration-cache" : NULL;
}

static bool quantizes(enum wh_precision p)
{
	return p == WH_PREC_INT8 || p == WH_PREC_FP8 || p == WH_PREC_FP8E5M2;
}

static bool config_quantizes(const struct wh_precision_config *c)
{
	if (quantizes(c->dflt))
		return true;
	for (uint32_t i = 0; i < c->n_layers; i++)
		if (quantizes(c->layers[i].exec) || (c->layers[i].output >= 0 && quantizes((enum wh_precision)c->layers[i].output)))
			return true;
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && !strcmp(s + n - k, suf);
}

struct samples {
	uint32_t n;
	struct wh_tensor_set *sets;
	char **labels;
};

static void samples_release(struct samples *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		wh_tensor_set_release(&s->sets[i]);
		free(s->labels[i]);
	}
	free(s->sets);
	free(s->labels);
	memset(s, 0, sizeof *s);
}

/* DIR holding tensor files is one sample; DIR holding folders is one sample per folder
 * (in name order). */
static enum wh_status load_samples(const char *dir, struct samples *out)
{
	DIR *dh = opendir(dir);
	if (!dh)
		return wh_error(WH_ERR_IO, "%s: cannot open the calibration folder: %s (check the path)", dir, strerror(errno));
	char **subs = NULL;
	uint32_t ns = 0, cap = 0, files = 0;
	enum wh_status st = WH_OK;
	struct dirent *de;
	while ((de = readdir(dh)) && st == WH_OK) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= sizeof p)
			continue;
		struct stat sb;
		if (stat(p, &sb) != 0)
			continue;
		if (S_ISREG(sb.st_mode) && (has_suffix(de->d_name, ".pb") || has_suffix(de->d_name, ".npy"))) {
			files++;
			continue;
		}
		if (!S_ISDIR(sb.st_mode))
			continue;
		if (ns == cap) {
			uint32_t ncap = cap ? cap * 2 : 16;
			char **n = realloc(subs, ncap * sizeof *n);
			if (!n) {
				st = wh_error(WH_ERR_NOMEM, "calibration: out of memory");
				break;
			}
			subs = n;
			cap = ncap;
		}
		if (!(subs[ns] = strdup(p))) {
			st = wh_error(WH_ERR_NOMEM, "calibration: out of memory");
			break;
		}
		ns++;
	}
	closedir(dh);
	if (st == WH_OK && !ns && !files)
		st = wh_error(WH_ERR_INVALID, "%s: the calibration folder holds no samples (put the input tensors of one sample in it, or one folder of them per sample)", dir);
	if (st == WH_OK && ns && files)
		wh_warn("%s: holds sample folders and %u tensor file%s; the files are ignored (move them into a sample folder)", dir,
			files, files == 1 ? "" : "s");
	uint32_t n = ns ? ns : 1;
	if (st == WH_OK) {
		if (ns > 1)
			qsort(subs, ns, sizeof *subs, cmp_str);
		out->sets = calloc(n, sizeof *out->sets);
		out->labels = calloc(n, sizeof *out->labels);
		if (!out->sets || !out->labels)
			st = wh_error(WH_ERR_NOMEM, "calibration: out of memory");
	}
	for (uint32_t i = 0; i < n && st == WH_OK; i++) {
		wh_tensor_set_init(&out->sets[i]);
		out->n = i + 1;
		const char *p = ns ? subs[i] : dir;
		if (!(out->labels[i] = strdup(p))) {
			st = wh_error(WH_ERR_NOMEM, "calibration: out of memory");
			break;
		}
		if (ns) {
			/* an empty sample folder would otherwise read as "missing input" */
			bool any = false;
			DIR *sd = opendir(p);
			struct dirent *e;
			while (sd && (e = readdir(sd)) && !any)
				any = has_suffix(e->d_name, ".pb") || has_suffix(e->d_name, ".npy");
			if (sd)
				closedir(sd);
			if (!any) {
				st = wh_error(WH_ERR_INVALID, "%s: calibration sample folder holds no .pb or .npy tensors (remove it, or save the sample's inputs there)", p);
				break;
			}
		}
		st = wh_tensor_set_read_dir(p, NULL, &out->sets[i]);
	}
	for (uint32_t i = 0; i < ns; i++)
		free(subs[i]);
	free(subs);
	if (st != WH_OK)
		samples_release(out);
	return st;
}

static bool file_exists(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

enum wh_status wh_calib_opts_apply(struct wh_calib_opts *o, const struct wh_model *m,
				   struct wh_precision_config *config, const struct wh_tensor_set *inputs)
{
	if (!wh_calib_opts_given(o))
		return WH_OK;
	struct samples smp = {0};
	struct wh_calib ref;
	wh_calib_init(&ref);
	enum wh_status st = WH_OK;
	if (!config_quantizes(config))
		return wh_cli_usage_error(o->cmd, "--%s: no layer runs in int8 or fp8, so there is nothing to calibrate (give --precision int8 or fp8, or drop the calibration options)",
					  wh_calib_opts_first_given(o));
	wh_calib_release(&o->table);
	if (o->cache_path && !o->data_dir && file_exists(o->cache_path)) {
		if ((st = wh_calib_cache_read(o->cache_path, &o->table)) != WH_OK)
			goto out;
		wh_calib_warn_names(&o->table, m, o->cache_path);
		if (o->method_given)
			wh_calib_warn_algorithm(&o->table, o->method, o->cache_path);
		enum wh_calib_method cm = WH_CALIB_ENTROPY;
		if (inputs && wh_calib_algorithm_method(o->table.algorithm, &cm))
			wh_calib_warn_inputs(m, &o->table, cm, WH_CALIB_DEFAULT_PERCENTILE, inputs, o->cache_path);
		wh_info("calibration: read %u scales from %s (%s)", o->table.n, o->cache_path, o->table.algorithm);
	} else {
		if (o->data_dir) {
			if ((st = load_samples(o->data_dir, &smp)) != WH_OK)
				goto out;
			if ((st = wh_calib_check_samples(m, smp.sets, smp.n, (const char *const *)smp.labels)) != WH_OK)
				goto out;
			if (inputs) {
				if ((st = wh_calib_input_amax(m, smp.sets, smp.n, &ref)) != WH_OK)
					goto out;
				wh_calib_warn_inputs(m, &ref, WH_CALIB_MINMAX, 0, inputs, o->data_dir);
			}
			st = wh_calibrate(m, smp.sets, smp.n, o->method, o->percentile, o->threads, &o->table);
		} else if (inputs) {
			const char *label = "the run's inputs";
			st = wh_calib_check_samples(m, inputs, 1, &label);
			if (st == WH_OK)
				st = wh_calibrate(m, inputs, 1, o->method, o->percentile, o->threads, &o->table);
		} else {
			st = wh_error(WH_ERR_USAGE, "calibration: no data (give --calib-data DIR or an existing --calibration-cache)");
		}
		if (st != WH_OK)
			goto out;
		if (o->cache_path) {
			if ((st = wh_calib_cache_write(&o->table, o->cache_path)) != WH_OK)
				goto out;
			wh_info("calibration: wrote %u scales to %s", o->table.n, o->cache_path);
		}
	}
	config->calib = &o->table;
out:
	samples_release(&smp);
	wh_calib_release(&ref);
	return st;
}
