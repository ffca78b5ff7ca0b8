#include "executor/builder.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executor/build-internal.h"
#include "executor/precision.h"
#include "graph/hash.h"
#include "graph/os.h"

void wh_tactic_plan_init(struct wh_tactic_plan *p)
{
	memset(p, 0, sizeof *p);
}

void wh_tactic_plan_release(struct wh_tactic_plan *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->n; i++) {
		free(p->c[i].layer);
		free(p->c[i].op);
		free(p->c[i].tactic);
	}
	free(p->c);
	wh_tactic_plan_init(p);
}

const struct wh_tactic_choice *wh_tactic_plan_find(const struct wh_tactic_plan *p, const char *layer)
{
	for (uint32_t i = 0; p && i < p->n; i++)
		if (!strcmp(p->c[i].layer, layer))
			return &p->c[i];
	return NULL;
}

enum wh_status wh_tactic_plan_set(struct wh_tactic_plan *p, const char *layer, const char *op, const char *tactic,
				  uint32_t id, double ms)
{
	struct wh_tactic_choice *c = (struct wh_tactic_choice *)wh_tactic_plan_find(p, layer);
	if (!c) {
		if (p->n == p->cap) {
			uint32_t cap = p->cap ? p->cap * 2 : 64;
			struct wh_tactic_choice *nc = realloc(p->c, cap * sizeof *nc);
			if (!nc)
				return wh_error(WH_ERR_NOMEM, "tactics: out of memory");
			p->c = nc;
			p->cap = cap;
		}
		c = &p->c[p->n++];
		memset(c, 0, sizeof *c);
		c->layer = strdup(layer);
	}
	free(c->op);
	free(c->tactic);
	c->op = strdup(op ? op : "");
	c->tactic = strdup(tactic);
	c->id = id;
	c->ms = ms;
	if (!c->layer || !c->op || !c->tactic)
		return wh_error(WH_ERR_NOMEM, "tactics: out of memory");
	return WH_OK;
}

enum wh_status wh_tactic_plan_read(const char *path, struct wh_tactic_plan *p)
{
	json_error_t err;
	json_t *root = json_load_file(path, 0, &err);
	if (!root)
		return wh_error(WH_ERR_PARSE, "%s:%d: not a tactic replay: %s (see docs/formats.md)", path, err.line, err.text);
	enum wh_status st = WH_OK;
	json_t *layers = json_object_get(root, "layers");
	json_t *replay = json_object_get(root, "replay");
	const char *name;
	json_t *v;
	if (json_is_object(layers)) {
		const char *prec = json_string_value(json_object_get(root, "precision"));
		const char *hash = json_string_value(json_object_get(root, "model"));
		snprintf(p->precision, sizeof p->precision, "%s", prec ? prec : "");
		snprintf(p->model_hash, sizeof p->model_hash, "%s", hash ? hash : "");
		json_t *seed = json_object_get(root, "seed");
		p->seed = json_is_integer(seed) ? (uint64_t)json_integer_value(seed) : 0;
		json_object_foreach(layers, name, v)
		{
			const char *t = json_string_value(json_object_get(v, "tactic"));
			const char *op = json_string_value(json_object_get(v, "op"));
			json_t *id = json_object_get(v, "id"), *ms = json_object_get(v, "ms");
			if (!t) {
				st = wh_error(WH_ERR_PARSE, "%s: layer '%s' has no \"tactic\" (see docs/formats.md)", path, name);
				break;
			}
			if ((st = wh_tactic_plan_set(p, name, op, t, json_is_integer(id) ? (uint32_t)json_integer_value(id) : 0,
						     json_is_number(ms) ? json_number_value(ms) : -1)) != WH_OK)
				break;
		}
	} else if (json_is_object(replay)) {
		/* Polygraphy: {"replay": {layer: {"implementation": ..., "tactic": ..., ...}}} */
		json_object_foreach(replay, name, v)
		{
			json_t *impl = json_object_get(v, "implementation"), *tac = json_object_get(v, "tactic");
			char buf[256];
			char a[96], b[96];
			if (json_is_string(impl))
				snprintf(a, sizeof a, "%s", json_string_value(impl));
			else
				snprintf(a, sizeof a, "%lld", (long long)json_integer_value(impl));
			if (json_is_string(tac))
				snprintf(b, sizeof b, "%s", json_string_value(tac));
			else
				snprintf(b, sizeof b, "%lld", (long long)json_integer_value(tac));
			snprintf(buf, sizeof buf, "%s:%s", a, b);
			if ((st = wh_tactic_plan_set(p, name, NULL, buf, 0, -1)) != WH_OK)
				break;
		}
	} else {
		st = wh_error(WH_ERR_PARSE, "%s: neither a whittle tactic replay (\"layers\") nor a Polygraphy one (\"replay\")", path);
	}
	json_decref(root);
	return st;
}

enum wh_status wh_tactic_plan_write(const struct wh_tactic_plan *p, const char *path)
{
	json_t *root = json_object();
	json_object_set_new(root, "format", json_string("whittle-tactics"));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "model", json_string(p->model_hash));
	json_object_set_new(root, "precision", json_string(p->precision[0] ? p->precision : "fp32"));
	json_object_set_new(root, "seed", json_integer((json_int_t)p->seed));
	json_t *layers = json_object();
	for (uint32_t i = 0; i < p->n; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "op", json_string(p->c[i].op ? p->c[i].op : ""));
		json_object_set_new(o, "tactic", json_string(p->c[i].tactic));
		json_object_set_new(o, "id", json_integer(p->c[i].id));
		if (p->c[i].ms >= 0)
			json_object_set_new(o, "ms", json_real(round(p->c[i].ms * 1e4) / 1e4));
		json_object_set_new(layers, p->c[i].layer, o);
	}
	json_object_set_new(root, "layers", layers);
	int r = json_dump_file(root, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (r)
		return wh_error(WH_ERR_IO, "%s: cannot write the tactic replay (check the folder)", path);
	return WH_OK;
}

/* ---- timing cache: "<op>|<input shapes>" -> {tactic: ms} ---- */

struct wh_timing_cache {
	json_t *root;
	bool dirty;
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

enum wh_status wh_build_choose(struct wh_build_state *b, struct wh_kernel_ctx *ctx, const struct wh_op_def *op,
			       const struct wh_tactic **out)
{
	*out = NULL;
	const struct wh_tactic *eligible[64];
	double ms[64];
	uint32_t n = 0;
	for (uint32_t t = 0; t < op->n_tactics && n < 64; t++) {
		const struct wh_tactic *tc = &op->tactics[t];
		ctx->tactic = tc;
		if (tc->eligible && !tc->eligible(ctx))
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
	double best = ms[0];
	for (uint32_t i = 1; i < n; i++)
		if (ms[i] < best)
			best = ms[i];
	double tol = b->bo ? b->bo->timing_tolerance : 0.05;
	uint32_t near[64], k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (isinf(tol) || ms[i] <= best * (1 + tol) + 1e-9) /* inf: the seed alone picks */
			near[k++] = i;
	uint32_t pick = near[splitmix(&b->rng) % k];
	*out = eligible[pick];
	return wh_tactic_plan_set(b->plan, ctx->node->name, ctx->node->op_type, eligible[pick]->name, eligible[pick]->id, ms[pick]);
}

void wh_corrupt_outputs(struct wh_kernel_ctx *ctx)
{
	for (uint32_t k = 0; k < ctx->n_outputs; k++) {
		struct wh_tensor *y = &ctx->outputs[k];
		if (y->dtype != WH_DT_FLOAT)
			continue;
		float *d = y->data;
		/* every 16th element pushed off by 10 % of its magnitude plus 0.05: wrong
		 * enough for any accuracy check, yet finite */
		for (uint64_t i = 0; i < y->count; i += 16)
			d[i] += 0.05f + 0.1f * fabsf(d[i]);
	}
}

static enum wh_status build_or_list(const struct wh_model *m, const struct wh_engine_options *eo,
				    const struct wh_tensor_set *inputs, const struct wh_build_options *bo,
				    struct wh_tactic_plan *plan, FILE *list)
{
	struct wh_build_state b = {.bo = bo, .plan = plan, .rng = bo ? bo->seed * 0x2545f4914f6cdd1dull + 1 : 1, .list = list};
	struct wh_timing_cache tc = {0};
	enum wh_status st = WH_OK;
	if (bo && bo->timing_cache && !list) {
		json_error_t err;
		FILE *f = fopen(bo->timing_cache, "r");
		if (f) {
			tc.root = json_loadf(f, 0, &err);
			fclose(f);
			if (!tc.root)
				return wh_error(WH_ERR_PARSE, "%s: not a timing cache: %s (delete it to start afresh)", bo->timing_cache, err.text);
		} else {
			tc.root = json_object();
		}
		b.cache = &tc;
	}
	struct wh_engine_options o = eo ? *eo : (struct wh_engine_options){0};
	o.tactics = NULL;
	o.build = &b;
	struct wh_engine *e = NULL;
	struct wh_tensor_set out;
	wh_tensor_set_init(&out);
	if ((st = wh_engine_create(m, &o, &e)) == WH_OK)
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
	}
	if (tc.root) {
		if (st == WH_OK && tc.dirty && json_dump_file(tc.root, bo->timing_cache, JSON_INDENT(1)) != 0)
			st = wh_error(WH_ERR_IO, "%s: cannot write the timing cache (check the folder)", bo->timing_cache);
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
