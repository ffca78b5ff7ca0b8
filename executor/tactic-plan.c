/* Tactic plans and their replay files (see executor/tactic-plan.h). */
#include "executor/tactic-plan.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		free(p->c[i].notes);
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
	free(c->notes);
	c->notes = NULL;
	c->flags = 0;
	c->op = strdup(op ? op : "");
	c->tactic = strdup(tactic);
	c->id = id;
	c->ms = ms;
	if (!c->layer || !c->op || !c->tactic)
		return wh_error(WH_ERR_NOMEM, "tactics: out of memory");
	return WH_OK;
}

enum wh_status wh_tactic_plan_note(struct wh_tactic_plan *p, const char *layer, const char *notes, uint32_t flags)
{
	struct wh_tactic_choice *c = (struct wh_tactic_choice *)wh_tactic_plan_find(p, layer);
	if (!c)
		return WH_OK;
	free(c->notes);
	c->notes = notes && *notes ? strdup(notes) : NULL;
	c->flags = flags;
	if (notes && *notes && !c->notes)
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
		const char *dev = json_string_value(json_object_get(root, "device"));
		snprintf(p->device, sizeof p->device, "%s", dev ? dev : "");
		json_t *seed = json_object_get(root, "seed");
		p->seed = json_is_integer(seed) ? (uint64_t)json_integer_value(seed) : 0;
		json_object_foreach(layers, name, v)
		{
			const char *t = json_string_value(json_object_get(v, "tactic"));
			const char *op = json_string_value(json_object_get(v, "op"));
			json_t *id = json_object_get(v, "id"), *ms = json_object_get(v, "ms");
			if (!t || !*t) {
				st = wh_error(WH_ERR_PARSE, "%s: layer '%s' has no \"tactic\" (see docs/formats.md)", path, name);
				break;
			}
			/* what is there must make sense: a time is a finite number >= 0, an id a uint32 */
			if ((ms && (!json_is_number(ms) || !isfinite(json_number_value(ms)) || json_number_value(ms) < 0)) ||
			    (id && (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > UINT32_MAX)) ||
			    (json_object_get(v, "op") && !op)) {
				st = wh_error(WH_ERR_PARSE, "%s: layer '%s': \"ms\", \"id\" or \"op\" is not a number >= 0, a uint32 or a string (see docs/formats.md)",
					      path, name);
				break;
			}
			if ((st = wh_tactic_plan_set(p, name, op, t, id ? (uint32_t)json_integer_value(id) : 0,
						     ms ? json_number_value(ms) : -1)) != WH_OK)
				break;
			json_t *nt = json_object_get(v, "notes"), *fl = json_object_get(v, "flags");
			if ((nt && !json_is_string(nt)) || (fl && (!json_is_integer(fl) || json_integer_value(fl) < 0 || json_integer_value(fl) > UINT32_MAX))) {
				st = wh_error(WH_ERR_PARSE, "%s: layer '%s': \"notes\" or \"flags\" is not a string or a uint32 (see docs/formats.md)", path, name);
				break;
			}
			if ((nt || fl) && (st = wh_tactic_plan_note(p, name, json_string_value(nt), fl ? (uint32_t)json_integer_value(fl) : 0)) != WH_OK)
				break;
		}
	} else if (json_is_object(replay)) {
		/* Polygraphy: {"replay": {layer: {"implementation": ..., "tactic": ..., ...}}} */
		json_object_foreach(replay, name, v)
		{
			json_t *impl = json_object_get(v, "implementation"), *tac = json_object_get(v, "tactic");
			if (!(json_is_string(impl) || json_is_integer(impl)) || !(json_is_string(tac) || json_is_integer(tac))) {
				st = wh_error(WH_ERR_PARSE, "%s: layer '%s': \"implementation\" and \"tactic\" must be strings or integers (a Polygraphy tactic replay; see docs/formats.md)",
					      path, name);
				break;
			}
			/* the whole name, however long (Polygraphy's names run past 100 characters) */
			char a[32], b[32];
			const char *as = json_is_string(impl) ? json_string_value(impl) : a;
			const char *bs = json_is_string(tac) ? json_string_value(tac) : b;
			snprintf(a, sizeof a, "%lld", (long long)json_integer_value(impl));
			snprintf(b, sizeof b, "%lld", (long long)json_integer_value(tac));
			size_t len = strlen(as) + strlen(bs) + 2;
			char *buf = malloc(len);
			if (!buf) {
				st = wh_error(WH_ERR_NOMEM, "tactics: out of memory");
				break;
			}
			snprintf(buf, len, "%s:%s", as, bs);
			st = wh_tactic_plan_set(p, name, NULL, buf, 0, -1);
			free(buf);
			if (st != WH_OK)
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
	if (p->device[0])
		json_object_set_new(root, "device", json_string(p->device));
	json_t *layers = json_object();
	for (uint32_t i = 0; i < p->n; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "op", json_string(p->c[i].op ? p->c[i].op : ""));
		json_object_set_new(o, "tactic", json_string(p->c[i].tactic));
		json_object_set_new(o, "id", json_integer(p->c[i].id));
		if (p->c[i].ms >= 0)
			json_object_set_new(o, "ms", json_real(round(p->c[i].ms * 1e4) / 1e4));
		if (p->c[i].notes)
			json_object_set_new(o, "notes", json_string(p->c[i].notes));
		if (p->c[i].flags)
			json_object_set_new(o, "flags", json_integer(p->c[i].flags));
		json_object_set_new(layers, p->c[i].layer, o);
	}
	json_object_set_new(root, "layers", layers);
	int r = json_dump_file(root, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (r)
		return wh_error(WH_ERR_IO, "%s: cannot write the tactic replay (check the folder)", path);
	return WH_OK;
}
