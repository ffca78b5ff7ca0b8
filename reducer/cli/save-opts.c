#include "reducer/cli/save-opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void wh_cli_save_opts_init(struct wh_cli_save_opts *o)
{
	memset(o, 0, sizeof *o);
	wh_save_opts_init(&o->save);
}

void wh_cli_save_opts_release(struct wh_cli_save_opts *o)
{
	if (!o)
		return;
	wh_model_files_free(o->keep, o->n_keep);
	o->keep = NULL;
	o->n_keep = 0;
	o->save.keep = NULL;
	o->save.n_keep = 0;
}

bool wh_cli_parse_size(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return false;
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

/* A path next to the model: what the loader accepts back (relative, no "..") */
static bool relative_name(const char *p)
{
	return p && *p && p[0] != '/' && !strstr(p, "..");
}

bool wh_cli_save_opts_parse(struct wh_cli_save_opts *o, int c, const char *arg, enum wh_status *st_out)
{
	*st_out = WH_OK;
	switch (c) {
	case WH_SAVE_OPT_EXTERNAL:
	case WH_SAVE_OPT_EXTERNAL_PATH:
		o->save.external = true;
		if (arg) {
			if (!relative_name(arg))
				*st_out = wh_error(WH_ERR_USAGE, "--%s: '%s' must be a file name relative to the model's folder, without '..'",
						   c == WH_SAVE_OPT_EXTERNAL ? "save-external-data" : "external-data-path", arg);
			o->save.external_data_path = arg;
		}
		break;
	case WH_SAVE_OPT_THRESHOLD:
		if (!wh_cli_parse_size(arg, &o->save.size_threshold))
			*st_out = wh_error(WH_ERR_USAGE, "--external-data-size-threshold: '%s' is not a size (bytes, or with K, M or G)", arg);
		break;
	case WH_SAVE_OPT_NOT_ONE_FILE:
		o->save.one_file = false;
		break;
	case WH_SAVE_OPT_INLINE_LIMIT:
		if (!wh_cli_parse_size(arg, &o->save.inline_limit))
			*st_out = wh_error(WH_ERR_USAGE, "--max-inline-size: '%s' is not a size (bytes, or with K, M or G)", arg);
		else if (o->save.inline_limit > WH_SAVE_DEFAULT_INLINE_LIMIT)
			*st_out = wh_error(WH_ERR_USAGE, "--max-inline-size: '%s' is above protobuf's limit of 2G", arg);
		break;
	case WH_SAVE_OPT_SELF_CONTAINED:
		o->save.self_contained = true;
		break;
	default:
		return false;
	}
	o->given = true;
	return true;
}
