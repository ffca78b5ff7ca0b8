#include "graph/inline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/extract.h"
#include "graph/topo.h"

static enum wh_status oom(void)
{
	return wh_error(WH_ERR_NOMEM, "inline: out of memory (free some memory)");
}

bool wh_node_is_if(const struct wh_node *n)
{
	if (n->domain[0] && strcmp(n->domain, "ai.onnx"))
		return false;
	if (strcmp(n->op_type, "If"))
		return false;
	const struct wh_attr *t = wh_node_attr(n, "then_branch"), *e = wh_node_attr(n, "else_branch");
	return t && e && t->type == WH_ATTR_GRAPH && e->type == WH_ATTR_GRAPH && t->g && e->g;
}

/* ---- names defined anywhere in the source: a branch value keeps its name only where no
 * other graph of the model defines it (the checker wants names unique across scopes) ---- */

struct name_count {
	const char *name;
	uint32_t count;
};

struct name_set {
	struct name_count *slots;
	uint32_t cap, n;
};

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static struct name_count *set_slot(const struct name_set *s, const char *name)
{
	uint32_t mask = s->cap - 1, h = hash_name(name) & mask;
	while (s->slots[h].name && strcmp(s->slots[h].name, name))
		h = (h + 1) & mask;
	return &s->slots[h];
}

static bool set_add(struct name_set *s, const char *name)
{
	if ((uint64_t)(s->n + 1) * 2 > s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 256;
		struct name_set ns = {calloc(cap, sizeof *ns.slots), cap, 0};
		if (!ns.slots)
			return false;
		for (uint32_t i = 0; i < s->cap; i++)
			if (s->slots[i].name) {
				*set_slot(&ns, s->slots[i].name) = s->slots[i];
				ns.n++;
			}
		free(s->slots);
		*s = ns;
	}
	struct name_count *c = set_slot(s, name);
	if (!c->name) {
		c->name = name;
		s->n++;
	}
	c->count++;
	return true;
}

static uint32_t set_count(const struct name_set *s, const char *name)
{
	return s->cap ? set_slot(s, name)->count : 0;
}

static bool collect_names(struct name_set *s, const struct wh_graph *g)
{
	for (uint32_t v = 0; v < g->n_values; v++)
		if (!(g->values[v].flags & WH_VALUE_OUTER) && !set_add(s, g->values[v].name))
			return false;
	for (uint32_t n = 0; n < g->n_nodes; n++)
		for (uint32_t a = 0; a < g->nodes[n].n_attrs; a++) {
			const struct wh_attr *at = &g->nodes[n].attrs[a];
			if (at->type == WH_ATTR_GRAPH && at->g && !collect_names(s, at->g))
				return false;
			for (size_t k = 0; at->type == WH_ATTR_GRAPHS && k < at->n; k++)
				if (at->graphs[k] && !collect_names(s, at->graphs[k]))
					return false;
		}
	return true;
}

/* ---- the transform ---- */

/* A source graph whose nodes are being written into the destination's main graph: the
 * main graph, or the branch of an If being inlined (parent: the scope of the If). */
struct scope {
	const struct wh_graph *g;
	uint32_t *map; /* per source value id: the destination value id, WH_NONE until needed */
	const struct scope *parent;
	const char *if_name; /* the If this branch replaces (NULL for the main graph) */
};

struct ictx {
	const struct wh_model *src;
	struct wh_model *dm;
	struct wh_graph *dst;
	wh_inline_choose_fn choose;
	void *state;
	struct name_set names;
	struct wh_inline_stats stats;
};

/* A name for a branch value: its own unless another graph defines it or the destination
 * has it; else the first free "<name>__<k>". */
static enum wh_status branch_name(struct ictx *c, const char *name, char **out)
{
	size_t len = strlen(name);
	char *buf = malloc(len + 16);
	if (!buf)
		return oom();
	memcpy(buf, name, len + 1);
	if (set_count(&c->names, name) <= 1 && wh_graph_find_value(c->dst, name) == WH_NONE) {
		*out = buf;
		return WH_OK;
	}
	for (uint32_t k = 1; k < UINT32_MAX; k++) {
		snprintf(buf + len, 16, "__%u", k);
		if (!set_count(&c->names, buf) && wh_graph_find_value(c->dst, buf) == WH_NONE) {
			c->stats.renamed++;
			*out = buf;
			return WH_OK;
		}
	}
	free(buf);
	return wh_error(WH_ERR_OVERFLOW, "inline: no free name for tensor '%s'", name);
}

static enum wh_status map_value(struct ictx *c, const struct scope *s, uint32_t v, uint32_t *id_out)
{
	if (s->map[v] != WH_NONE) {
		*id_out = s->map[v];
		return WH_OK;
	}
	const struct wh_value *sv = &s->g->values[v];
	enum wh_status st;
	uint32_t id;
	bool local = sv->producer != WH_NONE || (sv->flags & (WH_VALUE_INPUT | WH_VALUE_INITIALIZER));
	if (!local && s->parent) {
		/* captured: the nearest enclosing graph that has the name */
		const struct scope *p = s->parent;
		uint32_t pv = WH_NONE;
		for (; p; p = p->parent)
			if ((pv = wh_graph_find_value(p->g, sv->name)) != WH_NONE)
				break;
		if (!p)
			return wh_error(WH_ERR_INVALID, "If '%s': its branch reads '%s', which no enclosing graph has (fix the model)",
					s->if_name, sv->name);
		if ((st = map_value(c, p, pv, &id)) != WH_OK)
			return st;
	} else if (!s->parent) {
		if ((st = wh_graph_copy_value(c->dm, c->dst, s->g, v, &id)) != WH_OK)
			return st;
	} else {
		char *name = NULL;
		if ((st = branch_name(c, sv->name, &name)) != WH_OK)
			return st;
		if (wh_graph_find_value(c->dst, name) != WH_NONE)
			st = wh_error(WH_ERR_INTERNAL, "inline: name '%s' taken", name);
		else
			st = wh_graph_copy_value_as(c->dm, c->dst, s->g, v, name, &id);
		free(name);
		if (st != WH_OK)
			return st;
	}
	s->map[v] = id;
	*id_out = id;
	return WH_OK;
}

/* A subgraph kept inside a branch captures names; each must resolve, in the destination,
 * to the value it resolved to in the source: a branch value that was renamed breaks that. */
static enum wh_status check_captures(struct ictx *c, const struct scope *s, const struct wh_graph *sg)
{
	enum wh_status st;
	for (uint32_t v = 0; v < sg->n_values; v++) {
		if (!(sg->values[v].flags & WH_VALUE_OUTER))
			continue;
		const char *name = sg->values[v].name;
		bool inner = false;
		for (const struct wh_graph *q = sg->parent; q && q != s->g && !inner; q = q->parent) {
			uint32_t id = wh_graph_find_value(q, name);
			inner = id != WH_NONE && !(q->values[id].flags & WH_VALUE_OUTER);
		}
		if (inner)
			continue;
		for (const struct scope *p = s; p; p = p->parent) {
			uint32_t pv = wh_graph_find_value(p->g, name);
			if (pv == WH_NONE)
				continue;
			uint32_t id;
			if ((st = map_value(c, p, pv, &id)) != WH_OK)
				return st;
			if (strcmp(c->dst->values[id].name, name))
				return wh_error(WH_ERR_UNSUPPORTED,
						"If '%s': a subgraph in its branch reads '%s', a name used outside the branch too, so it cannot be inlined",
						s->if_name, name);
			break;
		}
	}
	for (uint32_t n = 0; n < sg->n_nodes; n++)
		for (uint32_t a = 0; a < sg->nodes[n].n_attrs; a++) {
			const struct wh_attr *at = &sg->nodes[n].attrs[a];
			if (at->type == WH_ATTR_GRAPH && at->g && (st = check_captures(c, s, at->g)) != WH_OK)
				return st;
			for (size_t k = 0; at->type == WH_ATTR_GRAPHS && k < at->n; k++)
				if (at->graphs[k] && (st = check_captures(c, s, at->graphs[k])) != WH_OK)
					return st;
		}
	return WH_OK;
}

static enum wh_status emit_nodes(struct ictx *c, const struct scope *s);

static enum wh_status emit_copy(struct ictx *c, const struct scope *s, uint32_t nid)
{
	const struct wh_node *sn = &s->g->nodes[nid];
	enum wh_status st = WH_OK;
	uint32_t *ins = calloc((size_t)sn->n_inputs + 1, sizeof *ins), *outs = calloc((size_t)sn->n_outputs + 1, sizeof *outs);
	if (!ins || !outs) {
		st = oom();
		goto out;
	}
	for (uint32_t i = 0; i < sn->n_inputs && st == WH_OK; i++) {
		ins[i] = WH_NONE;
		if (sn->inputs[i] != WH_NONE)
			st = map_value(c, s, sn->inputs[i], &ins[i]);
	}
	for (uint32_t i = 0; i < sn->n_outputs && st == WH_OK; i++) {
		outs[i] = WH_NONE;
		if (sn->outputs[i] != WH_NONE)
			st = map_value(c, s, sn->outputs[i], &outs[i]);
	}
	for (uint32_t a = 0; s->parent && st == WH_OK && a < sn->n_attrs; a++) {
		const struct wh_attr *at = &sn->attrs[a];
		if (at->type == WH_ATTR_GRAPH && at->g)
			st = check_captures(c, s, at->g);
		for (size_t k = 0; at->type == WH_ATTR_GRAPHS && st == WH_OK && k < at->n; k++)
			if (at->graphs[k])
				st = check_captures(c, s, at->graphs[k]);
	}
	uint32_t id;
	if (st == WH_OK &&
	    (st = wh_graph_add_node(c->dst, sn->op_type, sn->domain, sn->name, sn->n_inputs, ins, sn->n_outputs, outs, &id)) == WH_OK)
		st = wh_graph_copy_node_attrs(c->dm, c->dst, id, sn);
out:
	free(ins);
	free(outs);
	return st;
}

static enum wh_status emit_if(struct ictx *c, const struct scope *s, uint32_t nid, bool then)
{
	const struct wh_node *n = &s->g->nodes[nid];
	const struct wh_graph *bg = wh_node_attr(n, then ? "then_branch" : "else_branch")->g;
	if (bg->n_outputs < n->n_outputs)
		return wh_error(WH_ERR_INVALID, "If '%s': %s gives %u outputs, the node has %u (fix the model)", n->name,
				then ? "then_branch" : "else_branch", bg->n_outputs, n->n_outputs);
	struct scope b = {bg, malloc(((size_t)bg->n_values + 1) * sizeof *b.map), s, n->name};
	if (!b.map)
		return oom();
	for (uint32_t v = 0; v <= bg->n_values; v++)
		b.map[v] = WH_NONE;
	enum wh_status st = WH_OK;
	bool *via_identity = calloc((size_t)n->n_outputs + 1, sizeof *via_identity);
	if (!via_identity) {
		st = oom();
		goto out;
	}
	/* the If's outputs keep their names: the branch values that give them take them */
	for (uint32_t k = 0; k < n->n_outputs && st == WH_OK; k++) {
		if (n->outputs[k] == WH_NONE)
			continue;
		uint32_t bo = bg->outputs[k];
		const struct wh_value *bv = &bg->values[bo];
		if (bv->producer == WH_NONE || b.map[bo] != WH_NONE) {
			via_identity[k] = true;
			continue;
		}
		st = map_value(c, s, n->outputs[k], &b.map[bo]);
	}
	if (st == WH_OK)
		st = emit_nodes(c, &b);
	for (uint32_t k = 0; k < n->n_outputs && st == WH_OK; k++) {
		if (!via_identity[k])
			continue;
		uint32_t in, outv, id;
		char name[64];
		if ((st = map_value(c, &b, bg->outputs[k], &in)) != WH_OK || (st = map_value(c, s, n->outputs[k], &outv)) != WH_OK)
			break;
		size_t len = strlen(n->name) + sizeof name;
		char *nm = malloc(len);
		if (!nm) {
			st = oom();
			break;
		}
		snprintf(name, sizeof name, "/output_%u", k);
		snprintf(nm, len, "%s%s", n->name, name);
		st = wh_graph_add_node(c->dst, "Identity", "", nm, 1, &in, 1, &outv, &id);
		free(nm);
	}
	if (st == WH_OK)
		c->stats.inlined++;
out:
	free(via_identity);
	free(b.map);
	return st;
}

static enum wh_status emit_nodes(struct ictx *c, const struct scope *s)
{
	const struct wh_graph *g = s->g;
	uint32_t *order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
	if (!order)
		return oom();
	enum wh_status st = wh_graph_topo_order(g, order);
	for (uint32_t i = 0; i < g->n_nodes && st == WH_OK; i++) {
		uint32_t nid = order[i];
		int pick = wh_node_is_if(&g->nodes[nid]) ? c->choose(c->state, g, nid) : -1;
		st = pick < 0 ? emit_copy(c, s, nid) : emit_if(c, s, nid, pick > 0);
	}
	free(order);
	return st;
}

enum wh_status wh_model_inline_ifs(const struct wh_model *m, wh_inline_choose_fn choose, void *state,
				   struct wh_model **out, struct wh_inline_stats *stats_out)
{
	struct ictx c = {.src = m, .choose = choose, .state = state};
	const struct wh_graph *g = m->graph;
	struct scope top = {g, malloc(((size_t)g->n_values + 1) * sizeof *top.map), NULL, NULL};
	enum wh_status st;
	if (!top.map || !collect_names(&c.names, g)) {
		st = oom();
		goto out;
	}
	for (uint32_t v = 0; v <= g->n_values; v++)
		top.map[v] = WH_NONE;
	if ((st = wh_model_create_like(m, &c.dm)) != WH_OK)
		goto out;
	c.dst = c.dm->graph;
	uint32_t id;
	for (uint32_t i = 0; i < g->n_inputs && st == WH_OK; i++)
		if ((st = map_value(&c, &top, g->inputs[i], &id)) == WH_OK)
			st = wh_graph_add_input(c.dst, id);
	for (uint32_t i = 0; i < g->n_inits && st == WH_OK; i++)
		st = map_value(&c, &top, g->inits[i], &id);
	if (st == WH_OK)
		st = emit_nodes(&c, &top);
	for (uint32_t v = 0; v < g->n_values && st == WH_OK; v++)
		if (g->values[v].flags & WH_VALUE_HAS_INFO)
			st = map_value(&c, &top, v, &id);
	for (uint32_t i = 0; i < g->n_outputs && st == WH_OK; i++)
		if ((st = map_value(&c, &top, g->outputs[i], &id)) == WH_OK)
			st = wh_graph_add_output(c.dst, id);
	if (st == WH_OK) {
		*out = c.dm;
		c.dm = NULL;
		if (stats_out)
			*stats_out = c.stats;
	}
out:
	wh_model_destroy(c.dm);
	free(c.names.slots);
	free(top.map);
	return st;
}
