/* The report pictures (reducer/report-svg.h): the per-layer error plot and the graph
 * picture are well-formed XML (checked by a small parser here), have one element per layer
 * in the documented classes, escape names, and scale bars with the error; the DOT text has
 * one node per layer and one edge per drawn edge. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ir.h"
#include "reducer/report-svg.h"

/* ---- a small XML well-formedness checker: elements nest, attributes are quoted, every
 * '&' starts a known entity, no '<' in attribute values or text, one root ---- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == ':' || c == '.';
}

static bool entity_ok(const char *p)
{
	static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
	for (size_t i = 0; i < sizeof ents / sizeof ents[0]; i++)
		if (!strncmp(p, ents[i], strlen(ents[i])))
			return true;
	if (p[1] == '#') {
		const char *q = p + 2;
		while (*q && *q != ';' && q - p < 12)
			q++;
		return *q == ';';
	}
	return false;
}

/* Returns NULL when well-formed, else what is wrong. */
static const char *xml_check(const char *s)
{
	static char err[256];
	const char *stack[256];
	size_t len[256];
	int depth = 0, roots = 0;
	const char *p = s;
	if (!strncmp(p, "<?xml", 5)) {
		p = strstr(p, "?>");
		if (!p)
			return "unterminated prolog";
		p += 2;
	}
	while (*p) {
		if (*p != '<') {
			if (*p == '&' && !entity_ok(p)) {
				snprintf(err, sizeof err, "bad entity in text at %.20s", p);
				return err;
			}
			if (depth == 0 && *p != '\n' && *p != ' ')
				return "text outside the root";
			p++;
			continue;
		}
		if (p[1] == '/') {
			const char *n = p + 2, *e = n;
			while (name_char(*e))
				e++;
			if (*e != '>')
				return "bad end tag";
			if (depth == 0 || len[depth - 1] != (size_t)(e - n) || strncmp(stack[depth - 1], n, (size_t)(e - n))) {
				snprintf(err, sizeof err, "end tag </%.*s> does not match", (int)(e - n), n);
				return err;
			}
			depth--;
			p = e + 1;
			continue;
		}
		const char *n = p + 1, *e = n;
		while (name_char(*e))
			e++;
		if (e == n)
			return "empty tag name";
		const char *q = e;
		bool self = false;
		for (;;) {
			while (*q == ' ' || *q == '\n' || *q == '\t')
				q++;
			if (*q == '>')
				break;
			if (q[0] == '/' && q[1] == '>') {
				self = true;
				break;
			}
			const char *an = q;
			while (name_char(*q))
				q++;
			if (q == an || *q != '=' || (q[1] != '"' && q[1] != '\'')) {
				snprintf(err, sizeof err, "bad attribute at %.30s", an);
				return err;
			}
			char quote = q[1];
			q += 2;
			while (*q && *q != quote) {
				if (*q == '<')
					return "'<' in an attribute value";
				if (*q == '&' && !entity_ok(q))
					return "bad entity in an attribute";
				q++;
			}
			if (!*q)
				return "unterminated attribute";
			q++;
		}
		if (depth == 0)
			roots++;
		if (!self) {
			if (depth == 256)
				return "too deep";
			stack[depth] = n;
			len[depth] = (size_t)(e - n);
			depth++;
		}
		p = q + (self ? 2 : 1);
	}
	if (depth)
		return "unclosed element";
	if (roots != 1)
		return "not exactly one root element";
	return NULL;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

static char *plot_text(const struct wh_svg_plot *p)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(wh_svg_write_error_plot(f, p), WH_OK);
	fclose(f);
	return buf;
}

/* The height attribute of the k-th bar. */
static double bar_height(const char *s, int k)
{
	const char *p = s;
	for (int i = 0; i <= k; i++) {
		p = strstr(p, "<rect class=\"bar");
		ck_assert_ptr_nonnull(p);
		p++;
	}
	const char *h = strstr(p, " height=\"");
	ck_assert_ptr_nonnull(h);
	return atof(h + 9);
}

START_TEST(test_xml_checker)
{
	/* the checker itself must reject what it is there to catch */
	ck_assert_ptr_null(xml_check("<a x=\"1\"><b/>t &amp; u</a>"));
	ck_assert_ptr_nonnull(xml_check("<a><b></a></b>"));
	ck_assert_ptr_nonnull(xml_check("<a x=1></a>"));
	ck_assert_ptr_nonnull(xml_check("<a>x & y</a>"));
	ck_assert_ptr_nonnull(xml_check("<a x=\"<\"></a>"));
	ck_assert_ptr_nonnull(xml_check("<a></a><b></b>"));
	ck_assert_ptr_nonnull(xml_check("<a>"));
}
END_TEST

START_TEST(test_error_plot)
{
	const struct wh_svg_layer_error L[] = {
		{"conv<1>", "Conv", 0, false},
		{"a&b \"q\" 'r'", "Add", 1e-3, false},
		{"p2o.Pow.0", "Pow", 0.5, true},
		{"p2o.Div.0", "Div", INFINITY, true},
		{"p2o.Shape.0", "Shape", NAN, false},
	};
	struct wh_svg_plot p = {.title = "model <x> at fp16", .x_label = "layers", .y_label = "relative L2 error", .layers = L, .n = 5,
				.marked = 2, .threshold = 0.01, .threshold_label = "rtol 0.01"};
	char *s = plot_text(&p);
	const char *why = xml_check(s);
	ck_assert_msg(why == NULL, "plot is not well-formed XML: %s", why);
	ck_assert_ptr_nonnull(strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	ck_assert_uint_eq(count(s, "<rect class=\"bar "), 5);
	ck_assert_uint_eq(count(s, " marked\""), 1);
	ck_assert_ptr_nonnull(strstr(s, "<rect class=\"bar fails marked\" data-layer=\"p2o.Pow.0\""));
	ck_assert_ptr_nonnull(strstr(s, "<rect class=\"bar exact\" data-layer=\"conv&lt;1&gt;\""));
	ck_assert_ptr_nonnull(strstr(s, "data-layer=\"a&amp;b &quot;q&quot; &apos;r&apos;\""));
	ck_assert_ptr_nonnull(strstr(s, "<rect class=\"bar nonfinite\" data-layer=\"p2o.Div.0\""));
	ck_assert_ptr_nonnull(strstr(s, "<rect class=\"bar skipped\" data-layer=\"p2o.Shape.0\""));
	ck_assert_uint_eq(count(s, "<line class=\"marker\""), 1);
	ck_assert_ptr_nonnull(strstr(s, "first failing: p2o.Pow.0 (Pow)</text>"));
	ck_assert_ptr_nonnull(strstr(s, ">model &lt;x&gt; at fp16</text>"));
	ck_assert_uint_eq(count(s, "class=\"axis-label"), 2);
	ck_assert_uint_eq(count(s, "<line class=\"threshold\""), 1);
	/* names on the x axis, in order */
	const char *a = strstr(s, ">conv&lt;1&gt;</text>"), *b = strstr(s, ">p2o.Pow.0</text>");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert(a < b);
	/* bars grow with the error, on a log scale; non-finite is the tallest */
	double h_exact = bar_height(s, 0), h_small = bar_height(s, 1), h_big = bar_height(s, 2), h_inf = bar_height(s, 3);
	ck_assert(h_exact < h_small);
	ck_assert(h_small < h_big);
	ck_assert(h_big < h_inf);
	/* 1e-3 to 0.5 is 2.7 decades: the difference must be far from linear (which would make
	 * the small bar about 0.2 % of the big one) */
	ck_assert(h_small > 0.2 * h_big);
	free(s);

	/* no marked layer, no threshold, many layers: indices instead of names */
	struct wh_svg_layer_error many[100];
	char names[100][16];
	for (int i = 0; i < 100; i++) {
		snprintf(names[i], sizeof names[i], "L%d", i);
		many[i] = (struct wh_svg_layer_error){names[i], "Relu", pow(10, -6 + i * 0.05), i >= 90};
	}
	struct wh_svg_plot q = {.layers = many, .n = 100, .marked = -1};
	s = plot_text(&q);
	why = xml_check(s);
	ck_assert_msg(why == NULL, "plot is not well-formed XML: %s", why);
	ck_assert_uint_eq(count(s, "<rect class=\"bar "), 100);
	ck_assert_uint_eq(count(s, "<rect class=\"bar fails"), 10);
	ck_assert_uint_eq(count(s, " marked\""), 0);
	ck_assert_uint_eq(count(s, "class=\"marker"), 0);
	ck_assert_ptr_null(strstr(s, ">L5</text>"));
	free(s);

	struct wh_svg_plot e = {.n = 0, .marked = -1};
	s = plot_text(&e);
	ck_assert_ptr_null(xml_check(s));
	ck_assert_uint_eq(count(s, "<rect class=\"bar "), 0);
	free(s);
}
END_TEST

/* x -> Relu "n.A" -> a; Constant "k" -> c; Add "n<B>"(a, c) -> y; Sigmoid "side"(x) -> z */
static struct wh_model *small_model(void)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	struct wh_graph *g = m->graph;
	uint32_t x, a, c, y, z, id;
	ck_assert_int_eq(wh_graph_intern_value(g, "x", &x), WH_OK);
	ck_assert_int_eq(wh_graph_intern_value(g, "a", &a), WH_OK);
	ck_assert_int_eq(wh_graph_intern_value(g, "c", &c), WH_OK);
	ck_assert_int_eq(wh_graph_intern_value(g, "y\"out", &y), WH_OK);
	ck_assert_int_eq(wh_graph_intern_value(g, "z", &z), WH_OK);
	ck_assert_int_eq(wh_graph_add_input(g, x), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, "Relu", "", "n.A", 1, &x, 1, &a, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, "Constant", "", "k", 0, NULL, 1, &c, &id), WH_OK);
	uint32_t ins[2] = {a, c};
	ck_assert_int_eq(wh_graph_add_node(g, "Add", "", "n<B>", 2, ins, 1, &y, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, "Sigmoid", "", "side", 1, &x, 1, &z, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_output(g, y), WH_OK);
	ck_assert_int_eq(wh_graph_add_output(g, z), WH_OK);
	return m;
}

static char *graph_text(const struct wh_model *m, const struct wh_graph_picture *gp, bool dot)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(dot ? wh_dot_write_graph(f, m, gp) : wh_svg_write_graph(f, m, gp), WH_OK);
	fclose(f);
	return buf;
}

START_TEST(test_graph_picture)
{
	struct wh_model *m = small_model();
	uint8_t hl[4] = {0, 0, 1, 0};
	struct wh_graph_picture gp = {.title = "minimal <subgraph>", .highlight = hl};
	char *s = graph_text(m, &gp, false);
	const char *why = xml_check(s);
	ck_assert_msg(why == NULL, "picture is not well-formed XML: %s", why);
	/* three layers (the Constant is a weight, not drawn), one highlighted */
	ck_assert_uint_eq(count(s, "<g class=\"node"), 3);
	ck_assert_uint_eq(count(s, "<g class=\"node highlight\""), 1);
	ck_assert_ptr_nonnull(strstr(s, "<g class=\"node highlight\" data-layer=\"n&lt;B&gt;\""));
	ck_assert_ptr_nonnull(strstr(s, "data-layer=\"n.A\""));
	ck_assert_ptr_nonnull(strstr(s, "data-layer=\"side\""));
	ck_assert_ptr_null(strstr(s, "data-layer=\"k\""));
	ck_assert_ptr_nonnull(strstr(s, "<text class=\"op\""));
	ck_assert_ptr_nonnull(strstr(s, ">Add</text>"));
	ck_assert_ptr_nonnull(strstr(s, "<text class=\"name\""));
	ck_assert_ptr_nonnull(strstr(s, ">n&lt;B&gt;</text>"));
	/* x once (two readers), y and z as outputs */
	ck_assert_uint_eq(count(s, "<g class=\"tensor input\""), 1);
	ck_assert_uint_eq(count(s, "<g class=\"tensor output\""), 2);
	ck_assert_ptr_nonnull(strstr(s, "data-tensor=\"y&quot;out\""));
	/* x->A, x->side, A->B, B->y, side->z; none from the Constant */
	ck_assert_uint_eq(count(s, "<g class=\"edge\""), 5);
	ck_assert_uint_eq(count(s, "<rect x="), 3);
	free(s);

	s = graph_text(m, &gp, true);
	ck_assert_uint_eq(count(s, "shape=box"), 3);
	ck_assert_uint_eq(count(s, " -> "), 5);
	ck_assert_uint_eq(count(s, "fillcolor=\"#ffdddd\""), 1);
	ck_assert_ptr_nonnull(strstr(s, "label=\"Add\\nn<B>\""));
	ck_assert_ptr_nonnull(strstr(s, "label=\"y\\\"out\""));
	ck_assert_ptr_nonnull(strstr(s, "digraph"));
	free(s);

	/* a part: only the Add is drawn; what feeds it becomes an input tensor */
	uint8_t draw[4] = {0, 0, 1, 0};
	struct wh_graph_picture part = {.draw = draw};
	s = graph_text(m, &part, false);
	ck_assert_ptr_null(xml_check(s));
	ck_assert_uint_eq(count(s, "<g class=\"node"), 1);
	ck_assert_uint_eq(count(s, "<g class=\"tensor input\" data-tensor=\"a\""), 1);
	ck_assert_uint_eq(count(s, "<g class=\"tensor output\""), 1);
	ck_assert_uint_eq(count(s, "<g class=\"edge\""), 2);
	ck_assert_uint_eq(count(s, "highlight"), 0);
	free(s);
	wh_model_destroy(m);
}
END_TEST

START_TEST(test_layout_ranks)
{
	/* the Add sits below the Relu that feeds it: its box's y is larger */
	struct wh_model *m = small_model();
	char *s = graph_text(m, NULL, false);
	const char *a = strstr(s, "data-layer=\"n.A\""), *b = strstr(s, "data-layer=\"n&lt;B&gt;\"");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	const char *ya = strstr(a, " y=\""), *yb = strstr(b, " y=\"");
	ck_assert(atof(ya + 4) < atof(yb + 4));
	free(s);
	wh_model_destroy(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("report-svg");
	TCase *t = tcase_create("svg");
	tcase_add_test(t, test_xml_checker);
	tcase_add_test(t, test_error_plot);
	tcase_add_test(t, test_graph_picture);
	tcase_add_test(t, test_layout_ranks);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
