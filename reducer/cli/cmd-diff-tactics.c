#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "reducer/cli/cli-internal.h"
#include "graph/names.h"
#include "reducer/cli/options.h"
#include "reducer/tactic-diff.h"

static const char diff_help[] =
	"usage: whittle diff-tactics --good DIR|FILE --bad DIR|FILE [--json]\n"
	"       whittle diff-tactics --dir DIR [--json]        (DIR/good and DIR/bad)\n\n"
	"Lists, per layer, the tactics seen only in bad builds, ranked by how strongly they\n"
	"separate bad from good builds: the share of bad builds that use the tactic (a suspect is\n"
	"never used by a good build), ties by layer and tactic name. Reads whittle's tactic replays\n"
	"and Polygraphy's (`{\"replay\": {layer: {\"implementation\", \"tactic\", ...}}}`, where a\n"
	"tactic is named implementation:tactic). A folder means every .json file in it.\n"
	"`whittle build` also confirms the suspects by swapping them between builds.\n\n"
	"  --good DIR|FILE   replays of good builds (repeatable)\n"
	"  --bad DIR|FILE    replays of bad builds (repeatable)\n"
	"  --dir DIR         DIR/good and DIR/bad, as `whittle build` and `polygraphy debug build`\n"
	"                    write them\n"
	"  --top N           show the N most likely suspects (default 50; 0: all)\n"
	"  --json            machine-readable output\n"
	"exit status: 0 done (with or without suspects), 2 usage, 3 unreadable replays\n";

struct diff_cmd {
	const char *good[64], *bad[64];
	int n_good, n_bad;
	const char *dir;
	bool json;
	long long top;
	char gdir[PATH_MAX], bdir[PATH_MAX];
};

static enum wh_status diff_option(void *self, int c, const char *arg)
{
	struct diff_cmd *x = self;
	switch (c) {
	case WH_OPT_GOOD:
	case WH_OPT_BAD:
		if ((c == WH_OPT_GOOD ? x->n_good : x->n_bad) == 64)
			return wh_cli_usage_error("diff-tactics", "too many --%s (64 at most; give folders)", c == WH_OPT_GOOD ? "good" : "bad");
		if (c == WH_OPT_GOOD)
			x->good[x->n_good++] = arg;
		else
			x->bad[x->n_bad++] = arg;
		break;
	case WH_OPT_DIR: x->dir = arg; break;
	case WH_OPT_TOP:
		if (!wh_cli_parse_int(arg, 0, INT32_MAX, &x->top))
			return wh_cli_usage_error("diff-tactics", "--top '%s': not an integer >= 0 (give a count such as 20; 0 shows all)", arg);
		break;
	case WH_OPT_JSON: x->json = true; break;
	}
	return WH_OK;
}

/* --dir DIR stands for --good DIR/good --bad DIR/bad. */
static enum wh_status diff_sources(void *self, const struct wh_cli_args *a)
{
	struct diff_cmd *x = self;
	(void)a;
	if (x->dir && (x->n_good || x->n_bad))
		return wh_cli_usage_error("diff-tactics", "--dir replaces --good and --bad (give one or the other)");
	if (x->dir) {
		if ((size_t)snprintf(x->gdir, sizeof x->gdir, "%s/good", x->dir) >= sizeof x->gdir ||
		    (size_t)snprintf(x->bdir, sizeof x->bdir, "%s/bad", x->dir) >= sizeof x->bdir)
			return wh_cli_usage_error("diff-tactics", "--dir: path too long (give a shorter path)");
		x->good[x->n_good++] = x->gdir;
		x->bad[x->n_bad++] = x->bdir;
	}
	if (!x->n_good || !x->n_bad)
		return wh_cli_usage_error("diff-tactics", "needs both good and bad replays (give --good DIR --bad DIR, or --dir DIR)");
	return WH_OK;
}

static enum wh_status diff_tactics(void *self, const struct wh_cli_args *args, struct wh_cmd_ctx *c)
{
	const struct diff_cmd *x = self;
	(void)args;
	(void)c;
	enum wh_status st = WH_OK;
	struct wh_tactic_replays r;
	wh_tactic_replays_init(&r);
	struct wh_tactic_diff d;
	wh_tactic_diff_init(&d);
	const struct wh_tactic_plan **plans = NULL;
	enum wh_verdict *verdicts = NULL;
	for (int i = 0; i < x->n_good && st == WH_OK; i++)
		st = wh_tactic_replays_add(&r, x->good[i]);
	uint32_t first_bad = r.n;
	for (int i = 0; i < x->n_bad && st == WH_OK; i++)
		st = wh_tactic_replays_add(&r, x->bad[i]);
	if (st != WH_OK)
		goto fail;
	plans = calloc(r.n ? r.n : 1, sizeof *plans);
	verdicts = calloc(r.n ? r.n : 1, sizeof *verdicts);
	if (!plans || !verdicts) {
		st = wh_error(WH_ERR_NOMEM, "diff-tactics: out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < r.n; i++) {
		plans[i] = &r.plans[i];
		verdicts[i] = i < first_bad ? WH_VERDICT_PASS : WH_VERDICT_FAIL;
	}
	if ((st = wh_tactic_diff_compute(plans, verdicts, r.n, NULL, &d)) != WH_OK)
		goto fail;
	uint32_t shown = x->top && d.n > (uint32_t)x->top ? (uint32_t)x->top : d.n;
	if (x->json) {
		json_t *root = json_object();
		json_object_set_new(root, "good", json_integer(d.n_good));
		json_object_set_new(root, "bad", json_integer(d.n_bad));
		json_object_set_new(root, "n_suspects", json_integer(d.n));
		json_t *a = json_array();
		for (uint32_t i = 0; i < shown; i++) {
			const struct wh_tactic_suspect *s = &d.s[i];
			json_t *o = json_object();
			json_object_set_new(o, "rank", json_integer(i + 1));
			json_object_set_new(o, "layer", json_string(s->layer));
			json_object_set_new(o, "tactic", json_string(s->tactic));
			json_object_set_new(o, "bad", json_integer(s->n_bad));
			json_object_set_new(o, "good", json_integer(s->n_good));
			json_object_set_new(o, "score", json_real(s->score));
			json_array_append_new(a, o);
		}
		json_object_set_new(root, "suspects", a);
		wh_cli_print_json(root, JSON_INDENT(1));
	} else {
		printf("diff-tactics: %u good, %u bad replays\n", d.n_good, d.n_bad);
		if (!d.n)
			printf("diff-tactics: no suspect: the bad builds use no tactic that the good builds never use\n");
		else
			printf("suspects (tactics used only in bad builds, most likely first):\n");
		for (uint32_t i = 0; i < shown; i++) {
			const struct wh_tactic_suspect *s = &d.s[i];
			printf("  %u. layer '%s' tactic '%s': %u of %u bad builds, %u of %u good; score %.3f\n", i + 1, wh_name_term(s->layer),
			       wh_name_term(s->tactic), s->n_bad, d.n_bad, s->n_good, d.n_good, s->score);
		}
		if (shown < d.n)
			printf("  ... and %u more (--top 0 shows all)\n", d.n - shown);
	}
	goto out;
fail:
out:
	free(plans);
	free(verdicts);
	wh_tactic_diff_release(&d);
	wh_tactic_replays_release(&r);
	return st;
}

int wh_cmd_diff_tactics(int argc, char **argv)
{
	struct diff_cmd x = {.top = 50};
	struct wh_cli_spec spec = {.cmd = "diff-tactics", .help = diff_help, .own = diff_option, .validate = diff_sources,
				   .go = diff_tactics, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
