#include "reducer/report-svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/topo.h"

void wh_svg_escape(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 allows no control characters but tab and newlines, not even
			 * escaped: show them as '?' rather than write an unreadable file */
			if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
				fputc('?', f);
			else
				fputc(*p, f);
		}
	}
}

/* A name shortened for a label (the full name goes into the <title>): at most max bytes,
 * cut on a UTF-8 character boundary, with "..." appended when cut. */
static void short_name(const char *s, size_t max, char *out, size_t size)
{
	s = s ? s : "";
	size_t len = strlen(s);
	if (len <= max && len < size) {
		memcpy(out, s, len + 1);
		return;
	}
	size_t keep = max < size - 4 ? max : size - 4;
	while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80)
		keep--;
	memcpy(out, s, keep);
	memcpy(out + keep, "...", 4);
}

static const char *svg_head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

/* ---- the per-layer error plot ---- */

static double clampd(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

enum wh_status wh_svg_write_error_plot(FILE *f, const struct wh_svg_plot *p)
{
	if (!f || !p || (p->n && !p->layers))
		return wh_error(WH_ERR_USAGE, "error plot: no data (internal)");
	const uint32_t n = p->n;
	/* the decades shown: from the smallest to the largest finite positive error, with the
	 * threshold in view; exact layers sit on the floor, non-finite ones in a band on top */
	double vmin = INFINITY, vmax = 0;
	for (uint32_t i = 0; i < n; i++) {
		double v = p->layers[i].value;
		if (isfinite(v) && v > 0) {
			vmin = v < vmin ? v : vmin;
			vmax = v > vmax ? v : vmax;
		}
	}
	if (p->threshold > 0 && isfinite(p->threshold)) {
		vmin = p->threshold < vmin ? p->threshold : vmin;
		vmax = p->threshold > vmax ? p->threshold : vmax;
	}
	/* one decade below the smallest error, so that its bar shows */
	double lo = isfinite(vmin) ? floor(log10(vmin)) - 1 : -8, hi = vmax > 0 ? ceil(log10(vmax)) : 0;
	lo = clampd(lo, -30, 30);
	hi = clampd(hi, lo + 1, 40);
	if (hi - lo < 2)
		lo = hi - 2;
	const bool names = n <= 40;
	const double left = 86, right = 24, top = 80, band = 26;
	const double bottom = names ? 150 : 62;
	double plot_w = clampd(n * 16.0, 480, 1600);
	const double plot_h = 300;
	if (p->title && 9.0 * (double)strlen(p->title) > plot_w + left + right - 20)
		plot_w = 9.0 * (double)strlen(p->title) - left - right + 20; /* room for the title */
	const double width = left + plot_w + right, height = top + band + plot_h + bottom;
	const double y0 = top + band + plot_h; /* the floor */
	const double step = n ? plot_w / n : plot_w;
	const double bar_w = step * 0.7 > 1 ? step * 0.7 : 1;
#define YPOS(l) (y0 - ((l) - lo) / (hi - lo) * plot_h)

	fputs(svg_head, f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
		width, height, width, height);
	fprintf(f, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height);
	fputs("<text class=\"title\" x=\"", f);
	fprintf(f, "%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">", width / 2);
	wh_svg_escape(f, p->title ? p->title : "per-layer error");
	fputs("</text>\n", f);
	{
		static const char *const keys[][2] = {{"#d62728", "fails"}, {"#1f77b4", "passes"}, {"#2ca02c", "exact"},
						      {"#8b0000", "inf/NaN"}, {"#bbb", "not compared"}};
		double x = left;
		fputs("<g class=\"legend\">\n", f);
		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
			fprintf(f, "<rect x=\"%.1f\" y=\"38\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%.1f\" y=\"47\">%s</text>\n", x,
				keys[k][0], x + 14, keys[k][1]);
			x += 24 + 7.0 * (double)strlen(keys[k][1]);
		}
		fputs("</g>\n", f);
	}

	/* grid and y axis: one line per decade */
	fputs("<g class=\"axis y\">\n", f);
	for (double d = lo; d <= hi + 1e-9; d += 1) {
		double y = YPOS(d);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, left + plot_w, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%+d</text>\n", left - 6, y + 4, (int)d);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#fbb\"/>\n", left, top + band / 2, left + plot_w, top + band / 2);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#8b0000\">inf/NaN</text>\n", left - 6, top + band / 2 + 4);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left, top, left, y0);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left, y0, left + plot_w, y0);
	fputs("</g>\n", f);
	fprintf(f, "<text class=\"axis-label y\" x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">",
		top + band + plot_h / 2, top + band + plot_h / 2);
	wh_svg_escape(f, p->y_label ? p->y_label : "error");
	fputs("</text>\n", f);
	fprintf(f, "<text class=\"axis-label x\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", left + plot_w / 2, height - 10);
	wh_svg_escape(f, p->x_label ? p->x_label : "layer");
	fputs("</text>\n", f);

	/* bars */
	fputs("<g class=\"bars\">\n", f);
	for (uint32_t i = 0; i < n; i++) {
		const struct wh_svg_layer_error *l = &p->layers[i];
		double x = left + i * step + (step - bar_w) / 2, ytop, h;
		const char *kind, *fill;
		if (isnan(l->value)) {
			kind = "skipped";
			fill = "#bbb";
			ytop = y0 - 1;
		} else if (isinf(l->value)) {
			kind = "nonfinite";
			fill = "#8b0000";
			ytop = top + band / 2 - 6;
		} else if (l->value <= 0) {
			kind = "exact";
			fill = "#2ca02c";
			ytop = y0 - 2;
		} else {
			kind = l->fails ? "fails" : "passes";
			fill = l->fails ? "#d62728" : "#1f77b4";
			ytop = YPOS(clampd(log10(l->value), lo, hi));
		}
		h = y0 - ytop;
		if (h < 1) {
			h = 1;
			ytop = y0 - 1;
		}
		bool marked = p->marked >= 0 && (uint64_t)p->marked == i;
		fprintf(f, "<rect class=\"bar %s%s\" data-layer=\"", kind, marked ? " marked" : "");
		wh_svg_escape(f, l->layer);
		fprintf(f, "\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"%s><title>", x, ytop, bar_w, h, fill,
			marked ? " stroke=\"black\" stroke-width=\"2\"" : "");
		fprintf(f, "%u. ", i + 1);
		wh_svg_escape(f, l->layer);
		fputs(" (", f);
		wh_svg_escape(f, l->op);
		if (isnan(l->value))
			fputs("): not compared", f);
		else if (isinf(l->value))
			fputs("): inf or NaN where FP32 is finite", f);
		else
			fprintf(f, "): %.3g%s", l->value, l->fails ? ", fails" : "");
		fputs("</title></rect>\n", f);
	}
	fputs("</g>\n", f);

	if (p->threshold > 0 && isfinite(p->threshold)) {
		double y = YPOS(log10(p->threshold));
		fprintf(f, "<line class=\"threshold\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"6 4\"/>\n",
			left, y, left + plot_w, y);
		fprintf(f, "<text class=\"threshold-label\" x=\"%.1f\" y=\"%.1f\" fill=\"#333\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">", left + 6, y - 5);
		wh_svg_escape(f, p->threshold_label ? p->threshold_label : "threshold");
		fputs("</text>\n", f);
	}

	/* x axis: names when they fit, else every k-th index */
	fputs("<g class=\"axis x\">\n", f);
	uint32_t every = names ? 1 : (n + 19) / 20;
	for (uint32_t i = 0; i < n; i += every) {
		double x = left + i * step + step / 2;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", x, y0, x, y0 + 4);
		if (names) {
			char s[40];
			short_name(p->layers[i].layer, 22, s, sizeof s);
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" transform=\"rotate(-55 %.1f %.1f)\" font-size=\"10\">", x,
				y0 + 12, x, y0 + 12);
			wh_svg_escape(f, s);
			fputs("</text>\n", f);
		} else {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%u</text>\n", x, y0 + 16, i + 1);
		}
	}
	fputs("</g>\n", f);

	if (p->marked >= 0 && (uint64_t)p->marked < n) {
		const struct wh_svg_layer_error *l = &p->layers[p->marked];
		double x = left + (double)p->marked * step + step / 2;
		fprintf(f, "<line class=\"marker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" stroke-dasharray=\"3 3\"/>\n", x,
			top - 14, x, y0);
		bool right_half = x > left + plot_w / 2;
		fprintf(f, "<text class=\"marker-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-weight=\"bold\">first failing: ",
			right_half ? x - 4 : x + 4, top - 6, right_half ? "end" : "start");
		wh_svg_escape(f, l->layer);
		fputs(" (", f);
		wh_svg_escape(f, l->op);
		fputs(")</text>\n", f);
	}
	fputs("</svg>\n", f);
#undef YPOS
	if (ferror(f))
		return wh_error(WH_ERR_IO, "error plot: write failed (check free disk space)");
	return WH_OK;
}

/* ---- the graph picture ---- */

enum pic_kind { PIC_NODE = 0, PIC_INPUT, PIC_OUTPUT };

struct pic_item {
	enum pic_kind kind;
	uint32_t id;       /* node id, or value id for tensors */
	uint32_t rank;
	double x, y, w, h; /* centre and size */
};

struct pic {
	const struct wh_graph *g;
	struct pic_item *items;
	uint32_t n;
	uint32_t *node_item;  /* node id -> item index, WH_NONE */
	uint32_t *value_item; /* value id -> tensor item index, WH_NONE */
	uint32_t *order;      /* topological order */
	uint8_t *drawn;
};

static bool is_const_node(const struct wh_node *n)
{
	return !strcmp(n->op_type, "Constant") && (!n->domain || !*n->domain);
}

/* A tensor is drawn as an input when a drawn node reads it, it is not a weight and nothing
 * drawn computes it. */
static bool is_weight(const struct wh_graph *g, uint32_t v)
{
	if (g->values[v].flags & WH_VALUE_INITIALIZER)
		return true;
	uint32_t pr = g->values[v].producer;
	return pr != WH_NONE && is_const_node(&g->nodes[pr]);
}

static void pic_release(struct pic *P)
{
	free(P->items);
	free(P->node_item);
	free(P->value_item);
	free(P->order);
	free(P->drawn);
}

static double text_w(const char *s, size_t cap)
{
	size_t len = s ? strlen(s) : 0;
	return (double)(len < cap ? len : cap) * 7.0;
}

static enum wh_status pic_layout(struct pic *P, const struct wh_model *m, const struct wh_graph_picture *gp)
{
	const struct wh_graph *g = m->graph;
	P->g = g;
	size_t cap = (size_t)g->n_nodes + g->n_values + 1;
	P->items = calloc(cap, sizeof *P->items);
	P->node_item = malloc(((size_t)g->n_nodes + 1) * sizeof *P->node_item);
	P->value_item = malloc(((size_t)g->n_values + 1) * sizeof *P->value_item);
	P->order = calloc((size_t)g->n_nodes + 1, sizeof *P->order);
	P->drawn = calloc((size_t)g->n_nodes + 1, 1);
	if (!P->items || !P->node_item || !P->value_item || !P->order || !P->drawn)
		return wh_error(WH_ERR_NOMEM, "graph picture: out of memory");
	for (uint32_t i = 0; i < g->n_nodes; i++)
		P->node_item[i] = WH_NONE;
	for (uint32_t i = 0; i < g->n_values; i++)
		P->value_item[i] = WH_NONE;
	enum wh_status st = wh_graph_topo_order(g, P->order);
	if (st != WH_OK)
		return st;
	for (uint32_t i = 0; i < g->n_nodes; i++)
		P->drawn[i] = gp && gp->draw ? gp->draw[i] != 0 : !is_const_node(&g->nodes[i]);
	uint32_t max_rank = 0;
	for (uint32_t k = 0; k < g->n_nodes; k++) {
		uint32_t id = P->order[k];
		if (!P->drawn[id])
			continue;
		const struct wh_node *nd = &g->nodes[id];
		uint32_t rank = 1;
		for (uint32_t j = 0; j < nd->n_inputs; j++) {
			uint32_t v = nd->inputs[j];
			if (v == WH_NONE || is_weight(g, v))
				continue;
			uint32_t pr = g->values[v].producer;
			if (pr != WH_NONE && P->drawn[pr]) {
				uint32_t r = P->items[P->node_item[pr]].rank + 1;
				rank = r > rank ? r : rank;
			} else if (P->value_item[v] == WH_NONE) {
				struct pic_item *t = &P->items[P->n];
				t->kind = PIC_INPUT;
				t->id = v;
				t->rank = UINT32_MAX; /* set below, from its readers */
				P->value_item[v] = P->n++;
			}
		}
		struct pic_item *it = &P->items[P->n];
		it->kind = PIC_NODE;
		it->id = id;
		it->rank = rank;
		P->node_item[id] = P->n++;
		max_rank = rank > max_rank ? rank : max_rank;
	}
	/* an input tensor sits one rank above its first reader, not at the very top, so that
	 * its edge is short */
	for (uint32_t i = 0; i < P->n; i++) {
		struct pic_item *it = &P->items[i];
		if (it->kind != PIC_NODE)
			continue;
		const struct wh_node *nd = &g->nodes[it->id];
		for (uint32_t j = 0; j < nd->n_inputs; j++) {
			uint32_t v = nd->inputs[j];
			if (v == WH_NONE || P->value_item[v] == WH_NONE)
				continue;
			struct pic_item *t = &P->items[P->value_item[v]];
			if (t->kind == PIC_INPUT && t->rank > it->rank - 1)
				t->rank = it->rank - 1;
		}
	}
	/* graph outputs computed by drawn nodes, one rank below their producer */
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		uint32_t v = g->outputs[i];
		uint32_t pr = g->values[v].producer;
		if (pr == WH_NONE || !P->drawn[pr] || P->value_item[v] != WH_NONE)
			continue;
		struct pic_item *t = &P->items[P->n];
		t->kind = PIC_OUTPUT;
		t->id = v;
		t->rank = P->items[P->node_item[pr]].rank + 1;
		P->value_item[v] = P->n++;
		max_rank = t->rank > max_rank ? t->rank : max_rank;
	}
	/* sizes, then rows left to right in the order the items were made (topological) */
	for (uint32_t i = 0; i < P->n; i++) {
		struct pic_item *it = &P->items[i];
		if (it->kind == PIC_NODE) {
			const struct wh_node *nd = &g->nodes[it->id];
			double a = text_w(nd->op_type, 40), b = text_w(nd->name, 48);
			it->w = (a > b ? a : b) + 24;
			it->h = 40;
		} else {
			it->w = text_w(g->values[it->id].name, 40) + 28;
			it->h = 26;
		}
		if (it->w < 70)
			it->w = 70;
	}
	double *row_w = calloc((size_t)max_rank + 1, sizeof *row_w);
	if (!row_w)
		return wh_error(WH_ERR_NOMEM, "graph picture: out of memory");
	const double gap = 24;
	for (uint32_t i = 0; i < P->n; i++) {
		struct pic_item *it = &P->items[i];
		it->x = row_w[it->rank] + it->w / 2;
		row_w[it->rank] += it->w + gap;
	}
	double widest = 0;
	for (uint32_t r = 0; r <= max_rank; r++)
		widest = row_w[r] > widest ? row_w[r] : widest;
	for (uint32_t i = 0; i < P->n; i++) {
		struct pic_item *it = &P->items[i];
		it->x += 20 + (widest - row_w[it->rank]) / 2;
		it->y = 60 + it->rank * 80.0 + 20;
	}
	free(row_w);
	return WH_OK;
}

/* Calls fn for every edge of the picture: from the drawn producer of each input of a drawn
 * item (or from the tensor item standing for it) to that item; weights are not drawn. */
static void pic_each_edge(const struct pic *P, const struct wh_graph *g, FILE *f,
			  void (*fn)(FILE *, const struct wh_graph *, const struct pic_item *, const struct pic_item *, uint32_t))
{
	for (uint32_t i = 0; i < P->n; i++) {
		const struct pic_item *dst = &P->items[i];
		if (dst->kind == PIC_INPUT)
			continue;
		const struct wh_node *nd = dst->kind == PIC_NODE ? &g->nodes[dst->id] : NULL;
		uint32_t n_in = nd ? nd->n_inputs : 1;
		for (uint32_t j = 0; j < n_in; j++) {
			uint32_t v = nd ? nd->inputs[j] : dst->id;
			if (v == WH_NONE || (nd && is_weight(g, v)))
				continue;
			uint32_t pr = g->values[v].producer;
			const struct pic_item *src = NULL;
			if (pr != WH_NONE && P->drawn[pr])
				src = &P->items[P->node_item[pr]];
			else if (nd && P->value_item[v] != WH_NONE)
				src = &P->items[P->value_item[v]];
			if (src)
				fn(f, g, src, dst, v);
		}
	}
}

static void svg_edge(FILE *f, const struct wh_graph *g, const struct pic_item *src, const struct pic_item *dst, uint32_t v)
{
	fputs("<g class=\"edge\"><title>", f);
	wh_svg_escape(f, g->values[v].name);
	fprintf(f, "</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" marker-end=\"url(#arrow)\"/></g>\n",
		src->x, src->y + src->h / 2, dst->x, dst->y - dst->h / 2);
}

static void dot_edge(FILE *f, const struct wh_graph *g, const struct pic_item *src, const struct pic_item *dst, uint32_t v)
{
	(void)g;
	(void)v;
	fprintf(f, "  %s%u -> %s%u;\n", src->kind == PIC_NODE ? "layer" : "tensor", src->id, dst->kind == PIC_NODE ? "layer" : "tensor",
		dst->id);
}

enum wh_status wh_svg_write_graph(FILE *f, const struct wh_model *m, const struct wh_graph_picture *gp)
{
	struct pic P = {0};
	enum wh_status st = pic_layout(&P, m, gp);
	if (st != WH_OK)
		goto out;
	const struct wh_graph *g = m->graph;
	const char *title = gp && gp->title ? gp->title : "graph";
	double width = 40 + 8.5 * (double)strlen(title), height = 120, content = 0;
	for (uint32_t i = 0; i < P.n; i++) {
		double r = P.items[i].x + P.items[i].w / 2 + 20, b = P.items[i].y + P.items[i].h / 2 + 30;
		content = r > content ? r : content;
		height = b > height ? b : height;
	}
	if (content < width) {
		/* a title wider than the drawing: centre the drawing under it */
		for (uint32_t i = 0; i < P.n; i++)
			P.items[i].x += (width - content) / 2;
	} else {
		width = content;
	}
	fputs(svg_head, f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
		width, height, width, height);
	fputs("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
	      "<path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#444\"/></marker></defs>\n", f);
	fprintf(f, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height);
	fprintf(f, "<text class=\"title\" x=\"%.1f\" y=\"26\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">", width / 2);
	wh_svg_escape(f, title);
	fputs("</text>\n", f);
	/* edges first, so that boxes cover their ends */
	pic_each_edge(&P, g, f, svg_edge);
	for (uint32_t i = 0; i < P.n; i++) {
		const struct pic_item *it = &P.items[i];
		if (it->kind != PIC_NODE) {
			const char *name = g->values[it->id].name;
			char s[48];
			short_name(name, 40, s, sizeof s);
			fprintf(f, "<g class=\"tensor %s\" data-tensor=\"", it->kind == PIC_INPUT ? "input" : "output");
			wh_svg_escape(f, name);
			fputs("\"><title>", f);
			wh_svg_escape(f, name);
			fprintf(f, "</title><ellipse cx=\"%.1f\" cy=\"%.1f\" rx=\"%.1f\" ry=\"%.1f\" fill=\"#f4f4f4\" stroke=\"#888\"/>", it->x, it->y,
				it->w / 2, it->h / 2);
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">", it->x, it->y + 4);
			wh_svg_escape(f, s);
			fputs("</text></g>\n", f);
			continue;
		}
		const struct wh_node *nd = &g->nodes[it->id];
		bool hl = gp && gp->highlight && gp->highlight[it->id];
		char s[64];
		short_name(nd->name, 48, s, sizeof s);
		fprintf(f, "<g class=\"node%s\" data-layer=\"", hl ? " highlight" : "");
		wh_svg_escape(f, nd->name);
		fputs("\"><title>", f);
		wh_svg_escape(f, nd->name);
		fputs(" (", f);
		wh_svg_escape(f, nd->op_type);
		fprintf(f, ")</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"5\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\"/>",
			it->x - it->w / 2, it->y - it->h / 2, it->w, it->h, hl ? "#fdd" : "#e8f0fb", hl ? "#c00" : "#4a6fa5", hl ? "2" : "1");
		fprintf(f, "<text class=\"op\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"bold\">", it->x, it->y - 3);
		wh_svg_escape(f, nd->op_type);
		fprintf(f, "</text><text class=\"name\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">", it->x, it->y + 13);
		wh_svg_escape(f, s);
		fputs("</text></g>\n", f);
	}
	fputs("</svg>\n", f);
	if (ferror(f))
		st = wh_error(WH_ERR_IO, "graph picture: write failed (check free disk space)");
out:
	pic_release(&P);
	return st;
}

static void dot_escape(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		if (*p < 0x20)
			fputc('?', f);
		else
			fputc(*p, f);
	}
}

enum wh_status wh_dot_write_graph(FILE *f, const struct wh_model *m, const struct wh_graph_picture *gp)
{
	struct pic P = {0};
	enum wh_status st = pic_layout(&P, m, gp);
	if (st != WH_OK)
		goto out;
	const struct wh_graph *g = m->graph;
	fputs("digraph whittle {\n  rankdir=TB;\n  label=\"", f);
	dot_escape(f, gp && gp->title ? gp->title : "graph");
	fputs("\";\n  labelloc=t;\n  node [fontname=\"sans-serif\", fontsize=11];\n", f);
	for (uint32_t i = 0; i < P.n; i++) {
		const struct pic_item *it = &P.items[i];
		if (it->kind == PIC_NODE) {
			const struct wh_node *nd = &g->nodes[it->id];
			bool hl = gp && gp->highlight && gp->highlight[it->id];
			fprintf(f, "  layer%u [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", color=\"%s\", label=\"", it->id,
				hl ? "#ffdddd" : "#e8f0fb", hl ? "#cc0000" : "#4a6fa5");
			dot_escape(f, nd->op_type);
			fputs("\\n", f);
			dot_escape(f, nd->name);
			fputs("\"];\n", f);
		} else {
			fprintf(f, "  tensor%u [shape=ellipse, style=filled, fillcolor=\"#f4f4f4\", label=\"", it->id);
			dot_escape(f, g->values[it->id].name);
			fputs("\"];\n", f);
		}
	}
	pic_each_edge(&P, g, f, dot_edge);
	fputs("}\n", f);
	if (ferror(f))
		st = wh_error(WH_ERR_IO, "graph picture: write failed (check free disk space)");
out:
	pic_release(&P);
	return st;
}
