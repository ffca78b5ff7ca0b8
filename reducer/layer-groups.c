#include "reducer/layer-groups.h"

#include <stdlib.h>
#include <string.h>

#include "graph/names.h"
#include "reducer/driver-util.h"

/* Length of the scope of a name: up to its last '/' (0 for none). */
static size_t scope_len(const char *name)
{
	const char *s = name ? strrchr(name, '/') : NULL;
	return s ? (size_t)(s - name) : 0;
}

/* Length of the first d '/'-separated parts of a scope of length len. */
static size_t cut_len(const char *name, size_t len, uint32_t d)
{
	uint32_t seen = 0;
	if (!d)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (name[i] == '/' && ++seen == d)
			return i;
	return len;
}

static uint32_t parts(const char *name, size_t len)
{
	uint32_t n = 1;
	for (size_t i = 0; i < len; i++)
		n += name[i] == '/';
	return n;
}

/* Group index of each layer at cut d (keys compared as byte strings); returns the number of
 * groups, first[k] the layer that opens group k. */
static uint32_t group_at(const struct wh_graph *g, const uint32_t *nodes, uint32_t n, uint32_t d, uint32_t *gid, uint32_t *first)
{
	uint32_t ng = 0;
	for (uint32_t i = 0; i < n; i++) {
		const char *a = g->nodes[nodes[i]].name;
		size_t la = cut_len(a, scope_len(a), d);
		uint32_t k = 0;
		for (; k < ng; k++) {
			const char *b = g->nodes[nodes[first[k]]].name;
			size_t lb = cut_len(b, scope_len(b), d);
			if (la == lb && (!la || !memcmp(a, b, la)))
				break;
		}
		if (k == ng)
			first[ng++] = i;
		gid[i] = k;
	}
	return ng;
}

static int cmp_ops(const void *x, const void *y)
{
	const struct wh_op_count *a = x, *b = y;
	if (a->n != b->n)
		return a->n < b->n ? 1 : -1;
	return strcmp(a->op, b->op);
}

/* Adds one layer of op to a count array (cap entries). */
static void count_op(struct wh_op_count *ops, uint32_t *n_ops, const char *op)
{
	for (uint32_t k = 0; k < *n_ops; k++)
		if (!strcmp(ops[k].op, op)) {
			ops[k].n++;
			return;
		}
	ops[(*n_ops)++] = (struct wh_op_count){.op = op, .n = 1};
}

enum wh_status wh_layer_groups_build(const struct wh_graph *g, const uint32_t *nodes, uint32_t n, uint32_t max_groups,
				     struct wh_layer_groups *out)
{
	memset(out, 0, sizeof *out);
	out->n_layers = n;
	if (max_groups < 2)
		max_groups = 2;
	uint32_t *gid = calloc((size_t)n + 1, sizeof *gid), *first = calloc((size_t)n + 1, sizeof *first);
	enum wh_status st = WH_OK;
	if (!gid || !first) {
		st = wh_error(WH_ERR_NOMEM, "layer groups: out of memory");
		goto out;
	}
	uint32_t depth = 0;
	for (uint32_t i = 0; i < n; i++) {
		const char *a = g->nodes[nodes[i]].name;
		uint32_t p = parts(a, scope_len(a));
		depth = p > depth ? p : depth;
	}
	/* the deepest cut with at most max_groups groups; one group says nothing: then one deeper */
	uint32_t d = depth, ng = group_at(g, nodes, n, d, gid, first);
	while (d > 0 && ng > max_groups)
		ng = group_at(g, nodes, n, --d, gid, first);
	if (ng == 1 && d < depth) {
		uint32_t e = d + 1;
		while (e < depth && group_at(g, nodes, n, e, gid, first) == 1)
			e++;
		ng = group_at(g, nodes, n, e, gid, first);
		d = e;
	}
	out->g = calloc((size_t)ng + 1, sizeof *out->g);
	out->ops = calloc((size_t)n + 1, sizeof *out->ops);
	if (!out->g || !out->ops) {
		st = wh_error(WH_ERR_NOMEM, "layer groups: out of memory");
		goto out;
	}
	out->n = ng;
	for (uint32_t k = 0; k < ng && st == WH_OK; k++) {
		struct wh_layer_group *G = &out->g[k];
		const char *a = g->nodes[nodes[first[k]]].name;
		size_t la = cut_len(a, scope_len(a), d);
		G->scope = malloc(la + 1);
		G->ops = calloc((size_t)n + 1, sizeof *G->ops);
		if (!G->scope || !G->ops) {
			st = wh_error(WH_ERR_NOMEM, "layer groups: out of memory");
			break;
		}
		memcpy(G->scope, a ? a : "", la);
		G->scope[la] = '\0';
	}
	for (uint32_t i = 0; i < n && st == WH_OK; i++) {
		const char *op = g->nodes[nodes[i]].op_type ? g->nodes[nodes[i]].op_type : "?";
		struct wh_layer_group *G = &out->g[gid[i]];
		G->n++;
		count_op(G->ops, &G->n_ops, op);
		count_op(out->ops, &out->n_ops, op);
	}
	for (uint32_t k = 0; k < ng && st == WH_OK; k++)
		qsort(out->g[k].ops, out->g[k].n_ops, sizeof *out->g[k].ops, cmp_ops);
	if (st == WH_OK)
		qsort(out->ops, out->n_ops, sizeof *out->ops, cmp_ops);
	out->shown = ng <= max_groups ? ng : max_groups - 1;
out:
	free(gid);
	free(first);
	if (st != WH_OK)
		wh_layer_groups_release(out);
	return st;
}

void wh_layer_groups_release(struct wh_layer_groups *lg)
{
	for (uint32_t k = 0; lg->g && k < lg->n; k++) {
		free(lg->g[k].scope);
		free(lg->g[k].ops);
	}
	free(lg->g);
	free(lg->ops);
	memset(lg, 0, sizeof *lg);
}

/* The groups to show, largest first when some are left out (else in model order). */
static void shown_order(const struct wh_layer_groups *lg, uint32_t *idx)
{
	for (uint32_t k = 0; k < lg->n; k++)
		idx[k] = k;
	if (lg->shown == lg->n)
		return;
	for (uint32_t a = 0; a < lg->n; a++)
		for (uint32_t b = a + 1; b < lg->n; b++)
			if (lg->g[idx[b]].n > lg->g[idx[a]].n) {
				uint32_t t = idx[a];
				idx[a] = idx[b];
				idx[b] = t;
			}
	/* the ones shown back in model order */
	for (uint32_t a = 0; a < lg->shown; a++)
		for (uint32_t b = a + 1; b < lg->shown; b++)
			if (idx[b] < idx[a]) {
				uint32_t t = idx[a];
				idx[a] = idx[b];
				idx[b] = t;
			}
}

static void ops_list(const struct wh_op_count *ops, uint32_t n_ops, uint32_t max_ops, char *buf, size_t size)
{
	buf[0] = '\0';
	for (uint32_t k = 0; k < n_ops && k < max_ops; k++)
		wh_text_cat(buf, size, "%s%s %u", k ? ", " : "", wh_name_term(ops[k].op), ops[k].n);
	if (n_ops > max_ops)
		wh_text_cat(buf, size, ", +%u more op type%s", n_ops - max_ops, n_ops - max_ops == 1 ? "" : "s");
}

void wh_layer_groups_print(FILE *f, const struct wh_layer_groups *lg, const char *indent)
{
	uint32_t *idx = calloc((size_t)lg->n + 1, sizeof *idx);
	if (!idx)
		return;
	shown_order(lg, idx);
	size_t w = 0;
	for (uint32_t k = 0; k < lg->shown; k++) {
		const char *s = lg->g[idx[k]].scope;
		size_t l = *s ? strlen(wh_name_term(s)) : strlen("(no module scope)");
		w = l > w ? l : w;
	}
	w = w > 60 ? 60 : w;
	for (uint32_t k = 0; k < lg->shown; k++) {
		const struct wh_layer_group *G = &lg->g[idx[k]];
		char ops[512];
		ops_list(G->ops, G->n_ops, 5, ops, sizeof ops);
		fprintf(f, "%s%-*s %4u  %s\n", indent, (int)w, *G->scope ? wh_name_term(G->scope) : "(no module scope)", G->n, ops);
	}
	if (lg->shown < lg->n) {
		uint32_t rest = 0;
		for (uint32_t k = lg->shown; k < lg->n; k++)
			rest += lg->g[idx[k]].n;
		fprintf(f, "%s... and %u more scope%s (%u layer%s)\n", indent, lg->n - lg->shown, lg->n - lg->shown == 1 ? "" : "s", rest,
			rest == 1 ? "" : "s");
	}
	free(idx);
}

void wh_layer_groups_ops_text(const struct wh_layer_groups *lg, uint32_t max_ops, char *buf, size_t size)
{
	ops_list(lg->ops, lg->n_ops, max_ops, buf, size);
}

void wh_layer_groups_md(const struct wh_layer_groups *lg, char *buf, size_t size)
{
	buf[0] = '\0';
	uint32_t *idx = calloc((size_t)lg->n + 1, sizeof *idx);
	if (!idx)
		return;
	shown_order(lg, idx);
	for (uint32_t k = 0; k < lg->shown; k++) {
		const struct wh_layer_group *G = &lg->g[idx[k]];
		wh_text_cat(buf, size, "%s%s %u (", k ? ", " : "", *G->scope ? wh_name_md(G->scope) : "no module scope", G->n);
		for (uint32_t o = 0; o < G->n_ops && o < 4; o++)
			wh_text_cat(buf, size, "%s%s %u", o ? ", " : "", wh_name_md(G->ops[o].op), G->ops[o].n);
		if (G->n_ops > 4)
			wh_text_cat(buf, size, ", ...");
		wh_text_cat(buf, size, ")");
	}
	if (lg->shown < lg->n)
		wh_text_cat(buf, size, " and %u more scope%s", lg->n - lg->shown, lg->n - lg->shown == 1 ? "" : "s");
	free(idx);
}

void wh_layer_table_md(FILE *f, const struct wh_graph *g, const uint32_t *nodes, uint32_t n)
{
	fprintf(f, "| # | layer | op |\n| ---: | --- | --- |\n");
	for (uint32_t i = 0; i < n; i++) {
		const struct wh_node *nd = &g->nodes[nodes[i]];
		fprintf(f, "| %u | ", i + 1);
		wh_name_write(f, WH_NAME_MD_CELL, nd->name);
		fprintf(f, " | ");
		wh_name_write(f, WH_NAME_MD_CELL, nd->op_type);
		fprintf(f, " |\n");
	}
}
