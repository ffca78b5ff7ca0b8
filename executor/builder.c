#include "executor/builder.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/build-internal.h"
#include "executor/precision.h"
#include "graph/hash.h"
#include "graph/os.h"

/* ---- timing cache: "<op>|<input shapes>" -> {tactic: ms} ---- */

struct wh_timing_cache {
	json_t *root;
	bool dirty;
};

/* One build: the state the tactic chooser works on. */
struct wh_build_state {
	const struct wh_build_options *bo;
	struct wh_tactic_plan *plan;
	uint64_t rng;
	struct wh_timing_cache *cache; /* may be NULL */
	FILE *list;                    /* list mode: print eligible tactics instead of timing */
	char device[256];              /* the GPU's identity, once a layer ran there */
	uint32_t plan_first;           /* the plan's entries from this build start here */
};

static void shape_key(const struct wh_kernel_ctx *ctx, char *buf, size_t size)
{
	size_t off = (size_t)snprintf(buf, size, "%s|", ctx->node->op_type);
	for (uint32_t i = 0; i < ctx->n_inputs && off < size; i++) {
		const struct wh_tensor *t = ctx->inputs[i];
		char s[96];
		int w = snprintf(buf + off, size - off, "%s%s:%s", i ? ";" : "", t ? wh_dtype_name(t->dtype) : "-",
				 t ? wh_shape_str(t->dims, t->rank, s, sizeof s) : "");
		if (w < 0)
			break;
		off += (size_t)w;
	}
	/* attributes change the work too */
	for (uint32_t a = 0; a < ctx->node->n_attrs && off < size; a++) {
		const struct wh_attr *at = &ctx->node->attrs[a];
		int w = 0;
		if (at->type == WH_ATTR_INT)
			w = snprintf(buf + off, size - off, "|%s=%lld", at->name, (long long)at->i);
		else if (at->type == WH_ATTR_INTS) {
			w = snprintf(buf + off, size - off, "|%s=", at->name);
			for (size_t k = 0; k < at->n && w >= 0 && off + (size_t)w < size; k++) {
				int x = snprintf(buf + off + (size_t)w, size - off - (size_t)w, "%lld,", (long long)at->ints[k]);
				if (x < 0)
					break;
				w += x;
			}
		}
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

/* Every entry is {key: {tactic: ms}} with ms a finite, non-negative number: a negative time
 * would empty the list of near-fastest tactics. */
static enum wh_status cache_validate(const char *path, json_t *root)
{
	if (!json_is_object(root))
		return wh_error(WH_ERR_PARSE, "%s: not a timing cache: not a JSON object (delete it to start afresh)", path);
	const char *key, *tname;
	json_t *entry, *tv;
	json_object_foreach(root, key, entry)
	{
		if (!json_is_object(entry))
			return wh_error(WH_ERR_PARSE, "%s: entry '%s' is not an object of times (delete the timing cache to start afresh)", path, key);
		json_object_foreach(entry, tname, tv)
		{
			double ms = json_is_number(tv) ? json_number_value(tv) : -1;
			if (!json_is_number(tv) || !isfinite(ms) || ms < 0)
				return wh_error(WH_ERR_PARSE, "%s: entry '%s', tactic '%s': not a time in ms (a finite number >= 0; delete the timing cache to start afresh)",
						path, key, tname);
		}
	}
	return WH_OK;
}

/* Reads and validates the cache at path; *out is NULL when there is none. */
static enum wh_status cache_read(const char *path, json_t **out)
{
	*out = NULL;
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return WH_OK;
		return wh_error(WH_ERR_IO, "%s: cannot read the timing cache: %s (check the path)", path, strerror(errno));
	}
	json_error_t err;
	json_t *root = json_loadf(f, 0, &err);
	fclose(f);
	if (!root)
		return wh_error(WH_ERR_PARSE, "%s: not a timing cache: %s (delete it to start afresh)", path, err.text);
	enum wh_status st = cache_validate(path, root);
	if (st != WH_OK) {
		json_decref(root);
		return st;
	}
	*out = root;
	return WH_OK;
}

/* Merges ours into the cache on disk and replaces it whole: under a lock (path.lock), the
 * file is read again (another build may have written it since), our times are added (ours
 * win for the same tactic), and the result is written to a temporary file renamed over
 * path. Readers never see a half-written cache and no writer loses another's entries. */
static enum wh_status cache_write(const char *path, json_t *ours)
{
	char lock[PATH_MAX], tmp[PATH_MAX];
	if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock ||
	    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
		return wh_error(WH_ERR_IO, "%s: path too long for the timing cache (use a shorter path)", path);
	int lfd;
	enum wh_status st = wh_os_lock(lock, true, "the timing cache", &lfd, NULL);
	if (st != WH_OK)
		return st;
	json_t *disk = NULL;
	if (cache_read(path, &disk) != WH_OK)
		disk = NULL; /* unreadable: ours replaces it */
	json_t *merged = disk ? disk : json_incref(ours);
	const char *key, *tname;
	json_t *entry, *tv;
	if (disk)
		json_object_foreach(ours, key, entry)
		{
			json_t *d = json_object_get(disk, key);
			if (!d) {
				json_object_set(disk, key, entry);
				continue;
			}
			json_object_foreach(entry, tname, tv)
				json_object_set(d, tname, tv);
		}
	int fd = mkstemp(tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		st = wh_error(WH_ERR_IO, "%s: cannot write the timing cache: %s (check the folder)", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	fchmod(fd, 0644);
	bool ok = json_dumpf(merged, f, JSON_INDENT(1)) == 0;
	ok = fflush(f) == 0 && ok;
	ok = fsync(fd) == 0 && ok;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		st = wh_error(WH_ERR_IO, "%s: cannot write the timing cache: %s (check the folder and free space)", path, strerror(errno));
		unlink(tmp);
	}
out:
	json_decref(merged);
	wh_os_unlock(lfd);
	return st;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The tactic a build takes among n timed ones (ms: median times): any within the timing
 * tolerance of the fastest, the build's seed choosing among them (an infinite tolerance: the
 * seed alone), so timing noise and the seed decide near ties as on a real builder. */
static uint32_t pick_timed(struct wh_build_state *b, const double *ms, uint32_t n)
{
	double best = ms[0];
	for (uint32_t i = 1; i < n; i++)
		if (ms[i] < best)
			best = ms[i];
	double tol = b->bo ? b->bo->timing_tolerance : 0.05;
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		k += isinf(tol) || ms[i] <= best * (1 + tol) + 1e-9;
	/* none: unreachable with finite, non-negative times; the first then (never divide by zero) */
	if (!k)
		return 0;
	uint32_t r = (uint32_t)(splitmix(&b->rng) % k);
	for (uint32_t i = 0; i < n; i++)
		if ((isinf(tol) || ms[i] <= best * (1 + tol) + 1e-9) && r-- == 0)
			return i;
	return 0;
}

/* A replay names layers: a layer without a name, or one sharing it, would be pinned to
 * another's tactic, so a build refuses it (as the precision search does). */
static enum wh_status check_layer_name(const struct wh_build_state *b, const struct wh_node *n)
{
	const char *lname = n->name;
	if (!lname || !*lname)
		return wh_error(WH_ERR_INVALID, "model: a %s layer has no name, and a tactic replay names layers (give every node a unique name)",
				n->op_type);
	for (uint32_t i = b->plan_first; i < b->plan->n; i++)
		if (!strcmp(b->plan->c[i].layer, lname))
			return wh_error(WH_ERR_INVALID, "model: two layers are named '%s', and a tactic replay names layers (give every node a unique name)",
					lname);
	return WH_OK;
}

/* The tactic chooser (struct wh_tactic_chooser) the runtime asks at every layer with
 * tactics: times the eligible tactics of the node (ctx holds its actual inputs), records the
 * choice in the plan and returns it (NULL when none is eligible: the op's default runs). */
static enum wh_status choose(void *state, struct wh_kernel_ctx *ctx, const struct wh_op_def *op,
			     const struct wh_tactic **out)
{
	struct wh_build_state *b = state;
	*out = NULL;
	const struct wh_tactic *eligible[64];
	double ms[64];
	uint32_t n = 0;
	for (uint32_t t = 0; t < op->n_tactics && n < 64; t++) {
		const struct wh_tactic *tc = &op->tactics[t];
		ctx->tactic = tc;
		if (tc->eligible && !tc->eligible(ctx))
			continue;
		if (b->bo && wh_tactic_blocked(b->bo->block, ctx->node->name, tc->name))
			continue;
		eligible[n++] = tc;
	}
	ctx->tactic = NULL;
	if (!n)
		return WH_OK;
	if (b->list) {
		fprintf(b->list, "%s (%s):", ctx->node->name, ctx->node->op_type);
		for (uint32_t i = 0; i < n; i++)
			fprintf(b->list, "%s %s (id %u; %s)", i ? "," : "", eligible[i]->name, eligible[i]->id, eligible[i]->numerics ? eligible[i]->numerics : "");
		fprintf(b->list, "\n");
		*out = eligible[0];
		return WH_OK;
	}
	char key[2048];
	shape_key(ctx, key, sizeof key);
	json_t *cached = b->cache ? json_object_get(b->cache->root, key) : NULL;
	if (cached) {
		/* every time read back must be one this op's tactics could have measured */
		const char *tname;
		json_t *tv;
		json_object_foreach(cached, tname, tv)
		{
			uint32_t t = 0;
			while (t < op->n_tactics && strcmp(op->tactics[t].name, tname))
				t++;
			if (t == op->n_tactics)
				return wh_error(WH_ERR_INVALID, "%s: entry '%s' names tactic '%s', which %s does not have (delete the timing cache to start afresh)",
						b->bo->timing_cache, key, tname, ctx->node->op_type);
		}
	}
	int iters = b->bo && b->bo->timing_iterations > 0 ? b->bo->timing_iterations : 3;
	for (uint32_t i = 0; i < n; i++) {
		json_t *c = cached ? json_object_get(cached, eligible[i]->name) : NULL;
		if (json_is_number(c)) {
			ms[i] = json_number_value(c);
			continue;
		}
		double runs[64];
		int it = iters > 64 ? 64 : iters;
		ctx->tactic = eligible[i];
		for (int r = 0; r < it; r++) {
			for (uint32_t k = 0; k < ctx->n_outputs; k++)
				wh_tensor_release(&ctx->outputs[k]);
			double t0 = (wh_os_now_s() * 1e3);
			enum wh_status st = eligible[i]->run(ctx);
			runs[r] = (wh_os_now_s() * 1e3) - t0;
			if (st != WH_OK) {
				ctx->tactic = NULL;
				for (uint32_t k = 0; k < ctx->n_outputs; k++)
					wh_tensor_release(&ctx->outputs[k]);
				return st;
			}
		}
		for (uint32_t k = 0; k < ctx->n_outputs; k++)
			wh_tensor_release(&ctx->outputs[k]);
		qsort(runs, (size_t)it, sizeof *runs, cmp_d);
		ms[i] = runs[it / 2];
		if (b->cache) {
			if (!cached) {
				cached = json_object();
				json_object_set_new(b->cache->root, key, cached);
			}
			json_object_set_new(cached, eligible[i]->name, json_real(ms[i]));
			b->cache->dirty = true;
		}
	}
	ctx->tactic = NULL;
	uint32_t pick = pick_timed(b, ms, n);
	*out = eligible[pick];
	enum wh_status st = check_layer_name(b, ctx->node);
	if (st != WH_OK)
		return st;
	return wh_tactic_plan_set(b->plan, ctx->node->name, ctx->node->op_type, eligible[pick]->name, eligible[pick]->id, ms[pick]);
}

/* The chooser for a layer on the GPU (struct wh_tactic_chooser.choose_gpu): the same rule
 * as choose() over the module's tactics, timed with CUDA events; the timing cache's key
 * names the device and libraries ("cuda|<ident>|<precision>|<op>|<shapes>"). */
static enum wh_status choose_gpu(void *state, const struct wh_kernel_ctx *ctx, int exec, const char *device,
				 const struct whcu_tactic *list, uint32_t n_list, const struct wh_gpu_timer *timer, uint32_t *pick_out)
{
	struct wh_build_state *b = state;
	uint32_t idx[WHCU_MAX_TACTICS], n = 0, dflt = 0;
	double ms[WHCU_MAX_TACTICS];
	for (uint32_t i = 0; i < n_list && n < WHCU_MAX_TACTICS; i++) {
		if (list[i].flags & WHCU_TAC_DEFAULT)
			dflt = i;
		if (b->bo && wh_tactic_blocked(b->bo->block, ctx->node->name, list[i].name))
			continue;
		idx[n++] = i;
	}
	*pick_out = dflt;
	if (b->list) {
		fprintf(b->list, "%s (%s, cuda):", ctx->node->name, ctx->node->op_type);
		for (uint32_t i = 0; i < n_list; i++)
			fprintf(b->list, "%s %s (%s%s%s)", i ? "," : "", list[i].name, list[i].notes,
				list[i].flags & WHCU_TAC_DEFAULT ? "; the default" : "",
				b->bo && wh_tactic_blocked(b->bo->block, ctx->node->name, list[i].name) ? "; blocked" : "");
		fprintf(b->list, "\n");
		return WH_OK;
	}
	if (!n)
		return wh_error(WH_ERR_INVALID, "layer '%s' (%s): the block list keeps out every GPU tactic it has (unblock one)", ctx->node->name,
				ctx->node->op_type);
	snprintf(b->device, sizeof b->device, "%s", device ? device : "");
	char key[2300];
	int o = snprintf(key, sizeof key, "cuda|%s|%s|", device ? device : "", wh_precision_name((enum wh_precision)exec));
	shape_key(ctx, key + o, sizeof key - (size_t)o);
	json_t *cached = b->cache ? json_object_get(b->cache->root, key) : NULL;
	int iters = b->bo && b->bo->timing_iterations > 0 ? b->bo->timing_iterations : 5;
	for (uint32_t i = 0; i < n; i++) {
		const char *name = list[idx[i]].name;
		json_t *c = cached ? json_object_get(cached, name) : NULL;
		if (json_is_number(c)) {
			ms[i] = json_number_value(c);
			continue;
		}
		enum wh_status st = timer->time(timer->state, name, iters, &ms[i]);
		if (st != WH_OK)
			return st;
		if (b->cache) {
			if (!cached) {
				cached = json_object();
				json_object_set_new(b->cache->root, key, cached);
			}
			json_object_set_new(cached, name, json_real(ms[i]));
			b->cache->dirty = true;
		}
	}
	uint32_t pick = pick_timed(b, ms, n);
	*pick_out = idx[pick];
	enum wh_status st = check_layer_name(b, ctx->node);
	if (st != WH_OK)
		return st;
	const char *lname = ctx->node->name;
	const struct whcu_tactic *t = &list[idx[pick]];
	st = wh_tactic_plan_set(b->plan, lname, ctx->node->op_type, t->name, 0, ms[pick]);
	if (st == WH_OK)
		st = wh_tactic_plan_note(b->plan, lname, t->notes, t->flags & ~(uint32_t)WHCU_TAC_DEFAULT);
	return st;
}

static enum wh_status build_or_list(const struct wh_model *m, const struct wh_engine_options *eo,
				    const struct wh_tensor_set *inputs, const struct wh_build_options *bo,
				    struct wh_tactic_plan *plan, FILE *list)
{
	struct wh_build_state b = {.bo = bo, .plan = plan, .rng = bo ? bo->seed * 0x2545f4914f6cdd1dull + 1 : 1, .list = list};
	struct wh_timing_cache tc = {0};
	enum wh_status st = WH_OK;
	b.plan_first = plan ? plan->n : 0;
	if (bo && bo->timing_cache && !list) {
		if ((st = cache_read(bo->timing_cache, &tc.root)) != WH_OK)
			return st;
		if (!tc.root && !(tc.root = json_object()))
			return wh_error(WH_ERR_NOMEM, "timing cache: out of memory");
		b.cache = &tc;
	}
	struct wh_tactic_chooser chooser = {.choose = choose, .choose_gpu = choose_gpu, .state = &b};
	struct wh_engine *e = NULL;
	struct wh_tensor_set out;
	wh_tensor_set_init(&out);
	if ((st = wh_engine_create_for_build(m, eo, &chooser, &e)) == WH_OK)
		st = wh_engine_run(e, inputs, WH_KEEP_OUTPUTS, &out);
	wh_tensor_set_release(&out);
	wh_engine_destroy(e);
	if (st == WH_OK && plan) {
		struct wh_hash h;
		if (wh_model_hash(m, &h) == WH_OK)
			wh_hash_hex(h, plan->model_hash);
		snprintf(plan->precision, sizeof plan->precision, "%s",
			 wh_precision_name(eo && eo->precision ? eo->precision->dflt : WH_PREC_FP32));
		plan->seed = bo ? bo->seed : 0;
		snprintf(plan->device, sizeof plan->device, "%s", b.device);
	}
	if (tc.root) {
		if (st == WH_OK && tc.dirty)
			st = cache_write(bo->timing_cache, tc.root);
		json_decref(tc.root);
	}
	return st;
}

enum wh_status wh_engine_build(const struct wh_model *m, const struct wh_engine_options *eo,
			       const struct wh_tensor_set *inputs, const struct wh_build_options *bo,
			       struct wh_tactic_plan *plan)
{
	return build_or_list(m, eo, inputs, bo, plan, NULL);
}

enum wh_status wh_engine_list_tactics(const struct wh_model *m, const struct wh_engine_options *eo,
				      const struct wh_tensor_set *inputs, FILE *out)
{
	struct wh_tactic_plan tmp;
	wh_tactic_plan_init(&tmp);
	enum wh_status st = build_or_list(m, eo, inputs, NULL, &tmp, out);
	wh_tactic_plan_release(&tmp);
	return st;
}

/* ---- block lists ---- */

void wh_tactic_blocklist_release(struct wh_tactic_blocklist *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; i < l->n; i++) {
		free(l->b[i].layer);
		free(l->b[i].tactic);
		free(l->b[i].why);
	}
	free(l->b);
	memset(l, 0, sizeof *l);
}

bool wh_tactic_blocked(const struct wh_tactic_blocklist *l, const char *layer, const char *tactic)
{
	for (uint32_t i = 0; l && i < l->n; i++)
		if (!strcmp(l->b[i].tactic, tactic) && (!strcmp(l->b[i].layer, "*") || (layer && !strcmp(l->b[i].layer, layer))))
			return true;
	return false;
}

enum wh_status wh_tactic_blocklist_add(struct wh_tactic_blocklist *l, const char *layer, const char *tactic, const char *why)
{
	if (wh_tactic_blocked(l, layer, tactic))
		return WH_OK;
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 8;
		struct wh_tactic_block *nb = realloc(l->b, cap * sizeof *nb);
		if (!nb)
			return wh_error(WH_ERR_NOMEM, "block list: out of memory");
		l->b = nb;
		l->cap = cap;
	}
	struct wh_tactic_block *b = &l->b[l->n];
	b->layer = strdup(layer);
	b->tactic = strdup(tactic);
	b->why = strdup(why ? why : "");
	if (!b->layer || !b->tactic || !b->why) {
		free(b->layer);
		free(b->tactic);
		free(b->why);
		return wh_error(WH_ERR_NOMEM, "block list: out of memory");
	}
	l->n++;
	return WH_OK;
}

enum wh_status wh_tactic_blocklist_read(const char *path, struct wh_tactic_blocklist *l)
{
	json_error_t err;
	json_t *root = json_load_file(path, 0, &err);
	if (!root)
		return wh_error(WH_ERR_PARSE, "%s:%d: not a block list: %s (see docs/formats.md)", path, err.line, err.text);
	enum wh_status st = WH_OK;
	const char *fmt = json_string_value(json_object_get(root, "format"));
	json_t *arr = json_object_get(root, "blocked");
	if (!fmt || strcmp(fmt, "whittle-blocklist") || !json_is_array(arr)) {
		st = wh_error(WH_ERR_PARSE, "%s: not a block list: no \"format\": \"whittle-blocklist\" or no \"blocked\" array (see docs/formats.md)", path);
		goto out;
	}
	const char *dev = json_string_value(json_object_get(root, "device"));
	snprintf(l->device, sizeof l->device, "%s", dev ? dev : "");
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
	{
		const char *layer = json_string_value(json_object_get(v, "layer"));
		const char *tactic = json_string_value(json_object_get(v, "tactic"));
		const char *why = json_string_value(json_object_get(v, "why"));
		if (!layer || !*layer || !tactic || !*tactic) {
			st = wh_error(WH_ERR_PARSE, "%s: entry %zu has no \"layer\" or \"tactic\" string (see docs/formats.md)", path, i);
			goto out;
		}
		if ((st = wh_tactic_blocklist_add(l, layer, tactic, why)) != WH_OK)
			goto out;
	}
out:
	json_decref(root);
	return st;
}

enum wh_status wh_tactic_blocklist_write(const struct wh_tactic_blocklist *l, const char *path)
{
	json_t *root = json_object();
	json_object_set_new(root, "format", json_string("whittle-blocklist"));
	json_object_set_new(root, "version", json_integer(1));
	if (l->device[0])
		json_object_set_new(root, "device", json_string(l->device));
	json_t *arr = json_array();
	for (uint32_t i = 0; i < l->n; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "layer", json_string(l->b[i].layer));
		json_object_set_new(o, "tactic", json_string(l->b[i].tactic));
		json_object_set_new(o, "why", json_string(l->b[i].why));
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "blocked", arr);
	int r = json_dump_file(root, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (r)
		return wh_error(WH_ERR_IO, "%s: cannot write the block list (check the folder)", path);
	return WH_OK;
}
