/* libFuzzer target for the replay and timing-cache readers: the same bytes are read as a
 * tactic replay (wh_tactic_plan_read: whittle's or Polygraphy's JSON), as a reduce replay
 * (wh_verdict_cache_load: JSON lines) and, when they are a JSON object, as the timing cache
 * of a build of a one-Conv model (every entry validated before the chooser uses it). A
 * tactic replay that reads is written back and must read back the same. Any status is fine;
 * a crash, sanitizer report (a negative time once divided by zero), hang or leak is not. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/builder.h"
#include "executor/executor.h"
#include "executor/tactic-plan.h"
#include "graph/onnx-io.h"
#include "graph/tensor-file.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/driver-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* y = Conv(x[1,1,3,3], w[1,1,1,1]): a layer with tactics whose timing-cache key is
 * "Conv|float32:1x1x3x3;float32:1x1x1x1" (scripts/fuzz.sh seeds a cache of it). */
static const uint8_t tiny_conv[] = {0x08,0x07,0x3a,0x66,0x0a,0x12,0x0a,0x01,0x78,0x0a,0x01,0x77,0x12,0x01,0x79,0x1a,0x01,0x63,0x22,0x04,0x43,0x6f,0x6e,0x76,0x12,0x01,0x66,0x2a,0x13,0x08,0x01,0x08,0x01,0x08,0x01,0x08,0x01,0x10,0x01,0x42,0x01,0x77,0x4a,0x04,0x00,0x00,0x00,0x40,0x5a,0x1b,0x0a,0x01,0x78,0x12,0x16,0x0a,0x14,0x08,0x01,0x12,0x10,0x0a,0x02,0x08,0x01,0x0a,0x02,0x08,0x01,0x0a,0x02,0x08,0x03,0x0a,0x02,0x08,0x03,0x62,0x1b,0x0a,0x01,0x79,0x12,0x16,0x0a,0x14,0x08,0x01,0x12,0x10,0x0a,0x02,0x08,0x01,0x0a,0x02,0x08,0x01,0x0a,0x02,0x08,0x03,0x0a,0x02,0x08,0x03,0x42,0x04,0x0a,0x00,0x10,0x0d};

static const char *scratch(const char *what, char *buf, size_t size)
{
	const char *dir = getenv("TMPDIR");
	snprintf(buf, size, "%s/whittle-fuzz-replay-%ld-%s", dir && *dir ? dir : "/tmp", (long)getpid(), what);
	return buf;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	if (fclose(f) != 0)
		abort();
}

static void same_plan_or_abort(const struct wh_tactic_plan *a, const struct wh_tactic_plan *b)
{
	if (a->n != b->n || strcmp(a->model_hash, b->model_hash) || a->seed != b->seed)
		abort();
	for (uint32_t i = 0; i < a->n; i++) {
		const struct wh_tactic_choice *c = wh_tactic_plan_find(b, a->c[i].layer);
		if (!c || strcmp(c->tactic, a->c[i].tactic) || strcmp(c->op, a->c[i].op ? a->c[i].op : "") || c->id != a->c[i].id)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wh_model *m;
	static struct wh_tensor_set ins;
	if (!m) {
		if (wh_model_load_buffer(tiny_conv, sizeof tiny_conv, NULL, "tiny", &m) != WH_OK)
			abort();
		wh_tensor_set_init(&ins);
		if (wh_cli_random_inputs(m, 1, -2, 2, &ins) != WH_OK)
			abort();
	}
	char path[256], back[256], lock[300];
	scratch("replay.json", path, sizeof path);
	scratch("back.json", back, sizeof back);
	write_file(path, data, size);

	/* a tactic replay; one that reads writes back and reads back the same */
	struct wh_tactic_plan p, q;
	wh_tactic_plan_init(&p);
	wh_tactic_plan_init(&q);
	if (wh_tactic_plan_read(path, &p) == WH_OK) {
		if (wh_tactic_plan_write(&p, back) != WH_OK || wh_tactic_plan_read(back, &q) != WH_OK)
			abort();
		same_plan_or_abort(&p, &q);
	}
	wh_tactic_plan_release(&p);
	wh_tactic_plan_release(&q);

	/* a reduce replay */
	struct wh_verdict_cache vc;
	wh_verdict_cache_init(&vc);
	unsigned loaded = 0;
	if (wh_verdict_cache_load(&vc, path, NULL, &loaded) == WH_OK && vc.n > loaded)
		abort(); /* every verdict in the cache came from a line it counted */
	wh_verdict_cache_release(&vc);

	/* a timing cache: a build reads it, validates it, uses it and writes it back merged */
	json_t *j = json_loadb((const char *)data, size, 0, NULL);
	bool object = json_is_object(j);
	json_decref(j);
	if (object) {
		struct wh_build_options bo = {.timing_iterations = 1, .timing_tolerance = 0.05, .timing_cache = path};
		struct wh_engine_options eo = {.threads = 1};
		struct wh_tactic_plan plan;
		wh_tactic_plan_init(&plan);
		if (wh_engine_build(m, &eo, &ins, &bo, &plan) == WH_OK && plan.n != 1)
			abort();
		wh_tactic_plan_release(&plan);
	}
	unlink(path);
	unlink(back);
	snprintf(lock, sizeof lock, "%s.lock", path);
	unlink(lock);
	return 0;
}
