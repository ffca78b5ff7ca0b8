#include "executor/control-flow.h"

#include <stdio.h>
#include <string.h>

#include "graph/inline.h"
#include "graph/names.h"

static bool is_op(const struct wh_node *n, const char *op)
{
	return (!n->domain[0] || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op);
}

bool wh_model_has_control_flow(const struct wh_model *m)
{
	for (uint32_t i = 0; i < m->graph->n_nodes; i++) {
		const struct wh_node *n = &m->graph->nodes[i];
		if (wh_node_is_if(n) || is_op(n, "Loop") || is_op(n, "Scan"))
			return true;
	}
	return false;
}

struct choose_state {
	const struct wh_engine *e;
	wh_cf_note_fn note;
	void *state;
	uint32_t n_samples;
};

static void notef(const struct choose_state *cs, const char *fmt, const char *name, const char *extra)
{
	char line[2048];
	if (!cs->note)
		return;
	snprintf(line, sizeof line, fmt, wh_name_term(name), extra);
	cs->note(cs->state, line);
}

static int choose(void *state, const struct wh_graph *g, uint32_t node)
{
	const struct choose_state *cs = state;
	unsigned seen = wh_engine_if_branches(cs->e, g, node);
	const char *name = g->nodes[node].name;
	if (seen == 1 || seen == 2) {
		char why[64];
		snprintf(why, sizeof why, "%s took %s", cs->n_samples == 1 ? "the sample" : "every sample",
			 seen == 1 ? "then_branch" : "else_branch");
		notef(cs, "If '%s' inlined: %s, so its layers are looked at one by one", name, why);
		return seen == 1;
	}
	if (seen == 3)
		notef(cs, "If '%s' stays one layer: the samples took both of its branches%s", name, "");
	return -1;
}

enum wh_status wh_model_inline_taken(const struct wh_model *m, const struct wh_engine_options *eo,
				     const struct wh_tensor_set *samples, uint32_t n_samples, struct wh_model **out,
				     wh_cf_note_fn note, void *state)
{
	*out = NULL;
	bool any_if = false;
	for (uint32_t i = 0; i < m->graph->n_nodes && !any_if; i++)
		any_if = wh_node_is_if(&m->graph->nodes[i]);
	struct choose_state cs = {.note = note, .state = state, .n_samples = n_samples};
	struct wh_engine *e = NULL;
	struct wh_model *inl = NULL;
	enum wh_status st = WH_OK;
	if (any_if) {
		struct wh_engine_options fo = {.threads = eo ? eo->threads : 0, .weight_cache_bytes = eo ? eo->weight_cache_bytes : 0};
		if ((st = wh_engine_create(m, &fo, &e)) != WH_OK)
			goto out;
		for (uint32_t k = 0; k < n_samples && st == WH_OK; k++) {
			struct wh_tensor_set res;
			wh_tensor_set_init(&res);
			st = wh_engine_run(e, &samples[k], WH_KEEP_OUTPUTS, &res);
			wh_tensor_set_release(&res);
		}
		if (st != WH_OK)
			goto out;
		cs.e = e;
		struct wh_inline_stats stats = {0};
		if ((st = wh_model_inline_ifs(m, choose, &cs, &inl, &stats)) != WH_OK) {
			if (note) {
				char line[2048];
				snprintf(line, sizeof line, "the If layers stay whole: %s", wh_error_message());
				note(state, line);
			}
			st = WH_OK;
			goto out;
		}
		if (!stats.inlined) {
			wh_model_destroy(inl);
			inl = NULL;
		}
	}
	const struct wh_graph *g = inl ? inl->graph : m->graph;
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		if (note && (is_op(n, "Loop") || is_op(n, "Scan"))) {
			char line[2048];
			snprintf(line, sizeof line, "%s '%s' stays one layer: whittle does not look inside Loop and Scan bodies", n->op_type,
				 wh_name_term(n->name));
			note(state, line);
		}
	}
	*out = inl;
	inl = NULL;
out:
	wh_model_destroy(inl);
	wh_engine_destroy(e);
	return st;
}
