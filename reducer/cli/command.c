/* The frame of every subcommand: parse, validate, go, release what it held, exit code. */
#include <stdlib.h>

#include "reducer/cli/cli-internal.h"
#include "reducer/cli/run-opts.h"
#include "reducer/cli/save-opts.h"

enum wh_status wh_cmd_ctx_check(struct wh_cmd_ctx *c, const struct wh_cli_args *a, const struct wh_cli_check_opts *o)
{
	if (!a->check)
		return WH_OK;
	enum wh_status st = wh_check_create(&o->co, &c->check);
	if (st == WH_OK)
		c->check_display = wh_check_command_line(c->check, NULL);
	return st;
}

enum wh_status wh_cmd_ctx_load(struct wh_cmd_ctx *c, const struct wh_run_opts *o, const char *path, enum wh_cmd_samples want)
{
	enum wh_status st = wh_run_opts_load_model(o, path, &c->model);
	if (st != WH_OK || want == WH_SAMPLES_NONE)
		return st;
	if (want == WH_SAMPLES_ALL)
		return wh_run_opts_load_inputs(o, c->model, &c->samples, &c->n_samples, &c->n_generated);
	if (!(c->samples = calloc(1, sizeof *c->samples)))
		return wh_error(WH_ERR_NOMEM, "%s: out of memory", o->cmd);
	c->n_samples = 1;
	wh_tensor_set_init(&c->samples[0]);
	return wh_run_opts_load_sample(o, c->model, &c->samples[0]);
}

void wh_cmd_ctx_release(struct wh_cmd_ctx *c)
{
	wh_cli_samples_free(c->samples, c->n_samples);
	free(c->check_display);
	wh_check_destroy(c->check);
	wh_model_destroy(c->model);
}

int wh_cli_command(const struct wh_cli_spec *spec, int argc, char **argv)
{
	if (spec->run_opts)
		wh_run_opts_init(spec->run_opts, spec->cmd, spec->precision);
	if (spec->check_opts)
		wh_cli_check_opts_init(spec->check_opts);
	if (spec->save_opts)
		wh_cli_save_opts_init(spec->save_opts);
	struct wh_cli_args a;
	struct wh_cmd_ctx c = {0};
	enum wh_status st = wh_cli_parse(spec, argc, argv, &a);
	if (st == WH_OK && !a.help && spec->validate)
		st = spec->validate(spec->self, &a);
	if (st == WH_OK && !a.help)
		st = wh_cli_check_paths(spec, &a);
	if (st == WH_OK && !a.help)
		st = spec->go(spec->self, &a, &c);
	wh_cmd_ctx_release(&c);
	wh_run_opts_release(spec->run_opts);
	wh_cli_save_opts_release(spec->save_opts);
	return st != WH_OK ? wh_cli_fail(st) : c.fails ? WH_EXIT_FAILS : WH_EXIT_OK;
}
