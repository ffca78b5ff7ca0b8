/* Benchmark of the graph layer on a real model: extract a subgraph (half the nodes, in
 * topological order) and save it to memory, and hash it; prints medians in ms.
 *   tool-bench-graph MODEL [REPEATS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "graph/extract.h"
#include "graph/hash.h"
#include "graph/onnx-io.h"
#include "graph/topo.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: tool-bench-graph MODEL [REPEATS]\n");
		return 2;
	}
	int reps = argc > 2 ? atoi(argv[2]) : 50;
	if (reps < 1)
		reps = 1;
	struct wh_model *m;
	if (wh_model_load(argv[1], &m) != WH_OK) {
		fprintf(stderr, "whittle: %s\n", wh_error_message());
		return 3;
	}
	const struct wh_graph *g = m->graph;
	for (uint32_t v = 0; v < g->n_values; v++)
		if (!g->values[v].dtype)
			g->values[v].dtype = WH_DT_FLOAT; /* cut tensors need a type; shapes don't matter here */
	uint32_t *order = calloc(g->n_nodes + 1, sizeof *order);
	wh_graph_topo_order(g, order);
	/* WHITTLE_BENCH_ALL=1: the whole graph as the subgraph (all weights saved) */
	uint32_t half = getenv("WHITTLE_BENCH_ALL") ? g->n_nodes : g->n_nodes / 2;
	double *ex = calloc((size_t)reps, sizeof *ex), *sv = calloc((size_t)reps, sizeof *sv), *hs = calloc((size_t)reps, sizeof *hs);
	size_t bytes = 0;
	for (int r = 0; r < reps; r++) {
		struct wh_model *s;
		double t0 = now_ms();
		if (wh_model_extract_nodes(m, order + (g->n_nodes - half) / 2, half, &s) != WH_OK) {
			fprintf(stderr, "whittle: %s\n", wh_error_message());
			return 3;
		}
		double t1 = now_ms();
		uint8_t *buf;
		size_t len;
		wh_model_save_buffer(s, &buf, &len);
		double t2 = now_ms();
		struct wh_hash h;
		wh_model_hash(s, &h);
		double t3 = now_ms();
		ex[r] = t1 - t0;
		sv[r] = t2 - t1;
		hs[r] = t3 - t2;
		bytes = len;
		free(buf);
		wh_model_destroy(s);
	}
	qsort(ex, (size_t)reps, sizeof *ex, cmp_d);
	qsort(sv, (size_t)reps, sizeof *sv, cmp_d);
	qsort(hs, (size_t)reps, sizeof *hs, cmp_d);
	printf("model %s: %u nodes; subgraph of %u nodes, %zu bytes saved\n", argv[1], g->n_nodes, half, bytes);
	printf("extract_ms %.3f\nsave_ms %.3f\nextract_save_ms %.3f\nhash_ms %.3f\n", ex[reps / 2], sv[reps / 2],
	       ex[reps / 2] + sv[reps / 2], hs[reps / 2]);
	free(ex);
	free(sv);
	free(hs);
	free(order);
	wh_model_destroy(m);
	return 0;
}
