/* A tactic plan: the tactic chosen for each layer, by name, as the builder records it and a
 * tactic replay file holds it (whittle's JSON, or Polygraphy's replay when reading). The
 * builder (executor/builder.h) fills one; the runtime pins the tactics of one given in
 * wh_engine_options.tactics. A module of its own so that both use it and neither calls the
 * other for it.
 *
 * struct wh_tactic_plan is caller-owned (_init/_release); it owns its strings. */
#ifndef WH_TACTIC_PLAN_H
#define WH_TACTIC_PLAN_H

#include <stdint.h>

#include "graph/status.h"

/* flags of a GPU tactic (the module's WHCU_TAC_*, executor/cuda/whittle-cuda.h) that
 * commands read from a replay */
#define WH_TACTIC_NONDET 16u /* nondeterministic: bits may change run to run */

struct wh_tactic_choice {
	char *layer;   /* node name */
	char *op;
	char *tactic;  /* tactic name */
	uint32_t id;
	double ms;     /* measured median time, or -1 when pinned without timing */
	char *notes;   /* a GPU tactic's numerics ("split-K 4 ...; nondeterministic"), or NULL */
	uint32_t flags; /* a GPU tactic's WHCU_TAC_* flags (executor/cuda/whittle-cuda.h), or 0 */
};

struct wh_tactic_plan {
	uint32_t n, cap;
	struct wh_tactic_choice *c;
	char precision[16];   /* the build's default precision */
	char model_hash[33];
	uint64_t seed;
	/* the GPU a build ran on (wh_gpu_ident: "<name>;sm_XY;cublasLt V;cudnn V"), "" for
	 * the CPU: a replay of GPU tactics names the device and libraries they belong to */
	char device[256];
};

void wh_tactic_plan_init(struct wh_tactic_plan *p);
void wh_tactic_plan_release(struct wh_tactic_plan *p);
enum wh_status wh_tactic_plan_set(struct wh_tactic_plan *p, const char *layer, const char *op, const char *tactic,
				  uint32_t id, double ms);
const struct wh_tactic_choice *wh_tactic_plan_find(const struct wh_tactic_plan *p, const char *layer);
/* Records a GPU tactic's notes and flags on layer's entry (set first). */
enum wh_status wh_tactic_plan_note(struct wh_tactic_plan *p, const char *layer, const char *notes, uint32_t flags);
/* Reads whittle's replay JSON, or Polygraphy's tactic replay ({"replay": {layer:
 * {"implementation", "tactic", ...}}}), where the tactic name is "implementation:tactic". */
enum wh_status wh_tactic_plan_read(const char *path, struct wh_tactic_plan *p);
enum wh_status wh_tactic_plan_write(const struct wh_tactic_plan *p, const char *path);

#endif
