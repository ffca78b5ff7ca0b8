/* Pictures for reports: a per-layer error plot and a picture of a (sub)graph as SVG, and the
 * same graph as Graphviz DOT text (for `dot -Tsvg` where Graphviz is installed).
 *
 * The SVG is self-contained (no scripts, no external references) so that a Markdown viewer
 * or a browser shows it as an <img>. Its elements carry classes that tests and tools can
 * rely on:
 *  - error plot: one `rect.bar` per layer (in the order given) with a `data-layer` attribute
 *    and a <title> naming the layer; the marked layer's bar also has class `marked`, and a
 *    `line.marker` and a `text.marker-label` point at it; `text.title`, `text.axis-label`;
 *  - graph: one `g.node` per drawn node with `data-layer`, a `rect` and two `text`s (op and
 *    name); highlighted nodes also have class `highlight`; `g.tensor` ellipses for the
 *    graph's inputs and outputs; one `g.edge` per drawn edge.
 *
 * The writers only read their arguments; names are XML- (or DOT-) escaped. */
#ifndef WH_REPORT_SVG_H
#define WH_REPORT_SVG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/ir.h"

struct wh_svg_layer_error {
	const char *layer; /* node name */
	const char *op;
	/* relative L2 error against the reference: 0 when exact, INFINITY when the layer
	 * produced inf or NaN where the reference is finite, NAN when not compared */
	double value;
	bool fails;        /* fails the tolerance */
};

struct wh_svg_plot {
	const char *title;
	const char *x_label, *y_label;
	const struct wh_svg_layer_error *layers;
	uint32_t n;
	int64_t marked;          /* index of the layer to point at (the first failing), -1: none */
	double threshold;        /* a dashed horizontal line at this value; <= 0: none */
	const char *threshold_label;
};

enum wh_status wh_svg_write_error_plot(FILE *f, const struct wh_svg_plot *p);

struct wh_graph_picture {
	const char *title;
	/* per main-graph node (n_nodes entries each), may be NULL: */
	const uint8_t *draw;      /* nodes to draw; NULL: every node but Constant */
	const uint8_t *highlight; /* nodes drawn in the alarm colour */
};

/* Layered top-down layout: each node one rank below the deepest of its drawn producers. */
enum wh_status wh_svg_write_graph(FILE *f, const struct wh_model *m, const struct wh_graph_picture *p);
enum wh_status wh_dot_write_graph(FILE *f, const struct wh_model *m, const struct wh_graph_picture *p);

/* XML-escapes s into f (&, <, >, ", ' and control characters). */
void wh_svg_escape(FILE *f, const char *s);

#endif
