/* The CUDA backend's host side: loading the module, device copies, placement of a layer. */
#include "executor/gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "executor/cuda/whittle-cuda.h"
#include "executor/emulate.h"
#include "executor/precision.h"
#include "executor/tactic-plan.h"
#include "graph/blob.h"
#include "graph/os.h"

#define MAX_DEVICES 64

_Static_assert(WH_TACTIC_NONDET == WHCU_TAC_NONDET, "tactic-plan.h mirrors the module's flag");

struct wh_gpu {
	const struct whcu_api *api;
	void *dl;
	int device;
	double load_ms, init_ms; /* dlopen of the module (and the CUDA libraries it links), init */
	char info[512];
	char ident[256];
};

static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;
/* The module runs on one stream and is called from one thread at a time: a run on the GPU
 * (a frame's struct wh_gpu_vals) holds this from its start to its end, so engines of several
 * threads (reduce --jobs) take turns; recursive for a run started inside another's callback. */
static pthread_mutex_t run_lock;
static pthread_once_t run_lock_once = PTHREAD_ONCE_INIT;

static void run_lock_init(void)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&run_lock, &a);
	pthread_mutexattr_destroy(&a);
}

static void run_lock_take(void)
{
	pthread_once(&run_lock_once, run_lock_init);
	pthread_mutex_lock(&run_lock);
}
static struct wh_gpu *gpus[MAX_DEVICES];

/* ---- WHITTLE_CUDA_TRACE=1: where a GPU process's time goes (docs/gpu.md) ----
 * One line on stderr per event, stamped with the process's age (ms since exec, from
 * /proc/self/stat; 10 ms resolution at the start, exact differences after): loading the
 * module, init, each engine's creation and destruction, each run's time and what it spent
 * (module calls, uploads, downloads, 16-bit copies), the exit handlers. */
static int trace_on = -1;
static double trace_t0 = -1; /* CLOCK_BOOTTIME of the process's start (s) */

static double boot_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the process's start in CLOCK_BOOTTIME seconds (its start time in /proc/self/stat, in
 * clock ticks since boot); < 0 when unknown */
static double proc_start_s(void)
{
	double r = -1;
	FILE *f = fopen("/proc/self/stat", "r");
	char st[1024];
	if (f && fgets(st, sizeof st, f)) {
		const char *p = strrchr(st, ')');
		unsigned long long start = 0;
		int field = 2;
		for (; p && *p && field < 22; p++)
			if (*p == ' ')
				field++;
		if (p && sscanf(p, "%llu", &start) == 1)
			r = (double)start / (double)sysconf(_SC_CLK_TCK);
	}
	if (f)
		fclose(f);
	return r;
}

static bool tracing(void)
{
	if (trace_on < 0) {
		const char *e = getenv("WHITTLE_CUDA_TRACE");
		trace_on = e && *e && strcmp(e, "0");
		if (trace_on)
			trace_t0 = proc_start_s();
	}
	return trace_on;
}

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
	if (!tracing())
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "whittle: cuda-trace %9.1f ms: %s\n", (boot_now() - trace_t0) * 1e3, buf);
}

static double ms_since(double t0)
{
	return (wh_os_now_s() - t0) * 1e3;
}

static void trace_exit_done(void)
{
	trace("exit handlers done (what follows is the CUDA libraries' own teardown and the kernel's)");
}
/* a failed start is reported the same way every time (per device: cuda:1 may be missing
 * where cuda:0 is not) */
static char dev_error[MAX_DEVICES][512];

/* where libwhittle-cuda.so is (WHITTLE_CUDA_LIB, or next to the binary), and that it is */
static enum wh_status module_path(char *path, size_t size)
{
	const char *env = getenv("WHITTLE_CUDA_LIB");
	if (env && *env) {
		snprintf(path, size, "%s", env);
	} else {
		ssize_t len = readlink("/proc/self/exe", path, size - 64);
		if (len <= 0)
			return wh_error(WH_ERR_UNSUPPORTED, "--device cuda: cannot find the folder of the whittle binary (set WHITTLE_CUDA_LIB to libwhittle-cuda.so)");
		path[len] = '\0';
		char *slash = strrchr(path, '/');
		snprintf(slash ? slash + 1 : path, size - (size_t)(slash ? slash + 1 - path : 0), "libwhittle-cuda.so");
	}
	struct stat sb;
	if (stat(path, &sb) != 0)
		return wh_error(WH_ERR_UNSUPPORTED, "--device cuda: %s not found (build whittle where the CUDA 13 toolkit is installed, or set WHITTLE_CUDA_LIB to the module)", path);
	return WH_OK;
}

/* the loaded module (under gpu_lock): one per process, loaded at the first start */
static void *mod_dl;
static const struct whcu_api *mod_api;
static double mod_load_ms;

static enum wh_status gpu_load(void)
{
	if (mod_api)
		return WH_OK;
	char path[4096];
	enum wh_status pst = module_path(path, sizeof path);
	if (pst != WH_OK)
		return pst;
	if (tracing()) {
		atexit(trace_exit_done);
		trace("loading %s", path);
	}
	double t0 = wh_os_now_s();
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	double t1 = wh_os_now_s();
	trace("dlopen %.1f ms", (t1 - t0) * 1e3);
	if (!dl) {
		const char *why = dlerror();
		return wh_error(WH_ERR_UNSUPPORTED, "--device cuda: cannot load %s: %s (install the CUDA 13 runtime, cuBLASLt 13 and cuDNN 9, or add their folder to LD_LIBRARY_PATH)",
				path, why ? why : "unknown error");
	}
	whcu_api_fn fn;
	*(void **)&fn = dlsym(dl, "whittle_cuda_api");
	const struct whcu_api *api = fn ? fn(WHCU_ABI) : NULL;
	if (!api || api->size < sizeof *api) {
		dlclose(dl);
		return wh_error(WH_ERR_UNSUPPORTED, "--device cuda: %s was built for another version of whittle (rebuild whittle and libwhittle-cuda.so together)", path);
	}
	mod_dl = dl;
	mod_api = api;
	mod_load_ms = (t1 - t0) * 1e3;
	return WH_OK;
}

/* whether the driver and GPU `device` are there (the module loaded) */
static enum wh_status gpu_probe(int device)
{
	char err[512] = "";
	double t0 = wh_os_now_s();
	int r = mod_api->probe(device, err, sizeof err);
	trace("probe %.1f ms", ms_since(t0));
	return r ? wh_error(WH_ERR_UNSUPPORTED, "--device cuda: %s", err) : WH_OK;
}

static enum wh_status gpu_open(int device, struct wh_gpu **out)
{
	enum wh_status lst = gpu_load();
	if (lst != WH_OK)
		return lst;
	const struct whcu_api *api = mod_api;
	char err[512] = "";
	double t2 = wh_os_now_s();
	if (api->init(device, err, sizeof err) != 0) {
		/* the driver or the device is missing: the module stays loaded (CUDA does not
		 * like being unloaded after a failed start) */
		return wh_error(WH_ERR_UNSUPPORTED, "--device cuda: %s", err);
	}
	struct wh_gpu *g = calloc(1, sizeof *g);
	if (!g) {
		api->shutdown();
		return wh_error(WH_ERR_NOMEM, "--device cuda: out of memory (free some memory)");
	}
	g->api = api;
	g->dl = mod_dl;
	g->device = device;
	g->load_ms = mod_load_ms;
	g->init_ms = (wh_os_now_s() - t2) * 1e3;
	api->info(g->info, sizeof g->info);
	api->ident(g->ident, sizeof g->ident);
	if (tracing()) {
		char mod[640];
		api->start_times(mod, sizeof mod);
		trace("init %.1f ms (%s)", g->init_ms, mod);
	}
	*out = g;
	return WH_OK;
}

/* the background start's thread (wh_gpu_start); in_start: this thread is it */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t start_tid;
static bool start_running;
static int start_device;
static _Thread_local bool in_start;
/* a thread other than the start's asked for the GPU: the warm-up, not begun yet, is skipped
 * (the first layers pay those costs instead of waiting for it; docs/gpu.md) */
static atomic_bool gpu_wanted;
/* the "--device cuda:N: <GPU>" line is written once, by the first engine's thread */
static bool announced[MAX_DEVICES];

static enum wh_status gpu_get(int device, struct wh_gpu **out, bool announce_it)
{
	if (device < 0 || device >= MAX_DEVICES)
		return wh_error(WH_ERR_UNSUPPORTED, "--device cuda:%d: no such GPU (give cuda:0 to cuda:%d)", device, MAX_DEVICES - 1);
	if (!in_start)
		atomic_store(&gpu_wanted, true);
	pthread_mutex_lock(&gpu_lock);
	enum wh_status st = WH_OK;
	if (!gpus[device]) {
		/* the module drives one device per process (one stream, one set of handles) */
		int other = -1;
		for (int d = 0; d < MAX_DEVICES && other < 0; d++)
			if (gpus[d])
				other = d;
		if (other >= 0) {
			st = wh_error(WH_ERR_UNSUPPORTED, "--device cuda:%d: this process runs on cuda:%d already (give one GPU per process)", device, other);
		} else if (dev_error[device][0]) {
			st = wh_error(WH_ERR_UNSUPPORTED, "%s", dev_error[device]);
		} else if ((st = gpu_open(device, &gpus[device])) != WH_OK && st != WH_ERR_NOMEM) {
			snprintf(dev_error[device], sizeof dev_error[device], "%s", wh_error_message());
		}
	}
	*out = gpus[device];
	bool announce = st == WH_OK && !in_start && !announced[device];
	if (announce)
		announced[device] = true;
	pthread_mutex_unlock(&gpu_lock);
	if (announce && announce_it)
		wh_info("--device cuda:%d: %s", device, gpus[device]->info);
	return st;
}

enum wh_status wh_gpu_get(int device, struct wh_gpu **out)
{
	return gpu_get(device, out, true);
}

/* the background start: the module loaded and the device started (wh_gpu_get, which
 * records a failure for the caller that needs the GPU), then the libraries warmed up */
static void *start_main(void *arg)
{
	in_start = true;
	struct wh_gpu *g = NULL;
	int device = (int)(intptr_t)arg;
	if (wh_gpu_get(device, &g) != WH_OK || !g->api->warm)
		return NULL;
	if (atomic_load(&gpu_wanted)) {
		/* the command got to its first GPU layer before the device was up (a small model):
		 * the warm-up would only make it wait longer */
		trace("warm-up skipped (the command is waiting for the GPU already)");
		return NULL;
	}
	run_lock_take();
	double t0 = wh_os_now_s();
	int r = g->api->warm();
	trace("warm-up %.1f ms%s%s", ms_since(t0), r ? ": " : "", r ? g->api->last_error() : "");
	pthread_mutex_unlock(&run_lock);
	return NULL;
}

enum wh_status wh_gpu_start(int device)
{
	if (device < 0 || device >= MAX_DEVICES)
		return wh_error(WH_ERR_UNSUPPORTED, "--device cuda:%d: no such GPU (give cuda:0 to cuda:%d)", device, MAX_DEVICES - 1);
	/* started already (--device cuda and --reference-device cuda): not waiting for it here */
	pthread_mutex_lock(&start_lock);
	bool same = start_running && start_device == device;
	pthread_mutex_unlock(&start_lock);
	if (same)
		return WH_OK;
	/* the module loaded and the driver and device probed here, so that a machine without
	 * them is told at once, in one line; the device's context (the most of the start) and
	 * the warm-up in the thread */
	pthread_mutex_lock(&gpu_lock);
	enum wh_status pst = WH_OK;
	if (dev_error[device][0]) {
		pst = wh_error(WH_ERR_UNSUPPORTED, "%s", dev_error[device]);
	} else if (!gpus[device] && (pst = gpu_load()) == WH_OK) {
		pst = gpu_probe(device);
		if (pst != WH_OK)
			snprintf(dev_error[device], sizeof dev_error[device], "%s", wh_error_message());
	}
	pthread_mutex_unlock(&gpu_lock);
	if (pst != WH_OK)
		return pst;
	const char *bg = getenv("WHITTLE_CUDA_START");
	bool sync = bg && !strcmp(bg, "sync");
	pthread_mutex_lock(&start_lock);
	bool started = start_running;
	if (!started && !sync && pthread_create(&start_tid, NULL, start_main, (void *)(intptr_t)device) == 0) {
		start_running = started = true;
		start_device = device;
	}
	pthread_mutex_unlock(&start_lock);
	if (started)
		return WH_OK;
	/* no thread (WHITTLE_CUDA_START=sync, or none could be made): started here */
	struct wh_gpu *g;
	return wh_gpu_get(device, &g);
}

void wh_gpu_start_join(void)
{
	pthread_mutex_lock(&start_lock);
	if (start_running) {
		pthread_join(start_tid, NULL);
		start_running = false;
	}
	pthread_mutex_unlock(&start_lock);
}

static void start_log(void);

void wh_gpu_finish(int code)
{
	wh_gpu_start_join();
	const char *full = getenv("WHITTLE_CUDA_FULL_EXIT");
	if (full && !strcmp(full, "1"))
		return;
	pthread_mutex_lock(&gpu_lock);
	bool quick = false;
	for (int d = 0; d < MAX_DEVICES; d++)
		if (gpus[d])
			quick = gpus[d]->api->quick_exit != 0;
	pthread_mutex_unlock(&gpu_lock);
	if (!quick)
		return;
	/* what the exit handlers would have said; the device's memory goes with the process */
	start_log();
	trace("exit: quick (_exit after flushing; the driver reclaims the device)");
	fflush(NULL);
	_exit(code);
}

const char *wh_gpu_info(const struct wh_gpu *g)
{
	return g->info;
}

const char *wh_gpu_ident(const struct wh_gpu *g)
{
	return g->ident;
}

double wh_gpu_copy_gbps(const struct wh_gpu *g, size_t bytes)
{
	run_lock_take();
	double r = g->api->copy_gbps(bytes);
	pthread_mutex_unlock(&run_lock);
	return r;
}

void wh_gpu_start_times(const struct wh_gpu *g, char *buf, size_t len)
{
	char mod[640];
	g->api->start_times(mod, sizeof mod);
	snprintf(buf, len, "loading the module and the CUDA libraries %.1f ms, init %.1f ms (%s)", g->load_ms, g->init_ms, mod);
}

bool wh_gpu_tactic_name(const char *name)
{
	return name && (!strncmp(name, "lt-", 3) || !strncmp(name, "cudnn-", 6));
}

/* ---- device buffers (shared by views and by the weights cache) ---- */

struct dbuf {
	void *p;
	size_t bytes;
	uint32_t refs;
	int grid; /* the format whose grid its floats are known to lie on (FP32: any value) */
	/* a weight's values in the 16-bit format of grid (fp16, bf16), made at the first GEMM
	 * or Conv that reads it (whcu_tensor.half), or NULL */
	void *half;
};

static struct dbuf *dbuf_wrap(void *p, size_t bytes)
{
	struct dbuf *b = malloc(sizeof *b);
	if (b) {
		b->p = p;
		b->bytes = bytes;
		b->refs = 1;
		b->grid = WH_PREC_FP32;
		b->half = NULL;
	}
	return b;
}

static struct dbuf *dbuf_ref(struct dbuf *b)
{
	if (b)
		b->refs++;
	return b;
}

static void dbuf_unref(const struct wh_gpu *g, struct dbuf *b)
{
	if (!b || --b->refs)
		return;
	g->api->free(b->p);
	g->api->free(b->half);
	free(b);
}

/* Uploads bytes from src, UPLOAD_CHUNK at a time. A weight mapped from its external-data
 * file (wh_blob_is_mapped) leaves the process's memory as it goes: the pages of each chunk
 * are dropped once on the device (they come back from the file if the host reads them
 * again), so that uploading a model larger than the host's memory keeps one chunk resident,
 * not the model (docs/gpu.md, "A large decoder"). The CUDA runtime stages a pageable copy
 * through its own pinned buffers. */
#define UPLOAD_CHUNK ((size_t)64 << 20)
static int upload_chunked(const struct wh_gpu *g, void *dst, const struct wh_tensor *t, size_t bytes)
{
	bool mapped = t->blob && wh_blob_is_mapped(t->blob);
	uintptr_t from = (uintptr_t)t->data;
	for (size_t off = 0; off < bytes; off += UPLOAD_CHUNK) {
		size_t n = bytes - off < UPLOAD_CHUNK ? bytes - off : UPLOAD_CHUNK;
		if (g->api->upload((char *)dst + off, (const char *)t->data + off, n) != 0)
			return -1;
		if (mapped)
			wh_blob_drop_pages(&from, (uintptr_t)t->data + off + n);
	}
	return 0;
}

/* a new device buffer holding a host copy of src, rounded to prec when it is not FP32 */
static struct dbuf *dbuf_upload(const struct wh_gpu *g, const struct wh_tensor *t, int prec)
{
	size_t bytes = wh_tensor_nbytes(t);
	void *p = g->api->alloc(bytes);
	if (!p)
		return NULL;
	if (upload_chunked(g, p, t, bytes) != 0 ||
	    (prec != WH_PREC_FP32 && g->api->round(p, p, t->count, prec) != 0)) {
		g->api->free(p);
		return NULL;
	}
	struct dbuf *b = dbuf_wrap(p, bytes);
	if (!b)
		g->api->free(p);
	else
		b->grid = prec;
	return b;
}

/* a rounded device copy of device buffer src (count floats) */
static struct dbuf *dbuf_rounded(const struct wh_gpu *g, const struct dbuf *src, uint64_t count, int prec)
{
	void *p = g->api->alloc(count * sizeof(float));
	if (!p)
		return NULL;
	if (g->api->round(p, src->p, count, prec) != 0) {
		g->api->free(p);
		return NULL;
	}
	struct dbuf *b = dbuf_wrap(p, count * sizeof(float));
	if (!b)
		g->api->free(p);
	else
		b->grid = prec;
	return b;
}

/* ---- the weights store: one per device and process, shared by every engine ----
 *
 * Open addressing on (host data, format, size). An entry holds a reference to the host
 * tensor's blob, so that its address cannot be reused by other data while the entry lives
 * (the key stays true), and the blob's contents cannot change (a blob is writable only by
 * its one holder). Engines of the same model (reduce's candidates, precision's and
 * triage's configurations) share the blobs of the weights they keep, so the second engine
 * finds them on the GPU. When an engine goes, the entries whose blob nobody else holds any
 * more are dropped: the device keeps the weights of the models still alive. */

struct wentry {
	const void *data; /* NULL: empty */
	int prec;
	size_t bytes; /* of the host tensor: views of one blob may start at the same byte */
	struct dbuf *b;
	struct wh_blob *blob; /* held */
};

struct wstore {
	struct wentry *e;
	size_t cap, n, bytes;
};

static struct wstore stores[MAX_DEVICES];

struct wh_gpu_weights {
	struct wh_gpu *g;
	struct wstore *s;
	size_t bytes;     /* on the device for this engine (uploads and 16-bit copies) */
	size_t fmt_bytes; /* the same weights at their layers' formats (2 bytes per fp16/bf16 value) */
	uint32_t id, runs; /* WHITTLE_CUDA_TRACE */
};

static size_t whash(const void *data, int prec, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)data * 0x9E3779B97F4A7C15ull ^ (uint64_t)prec * 0xC2B2AE3D27D4EB4Full;
	return (size_t)(h >> 17) & (cap - 1);
}

/* rebuilds s with the entries keep() says (the others released); cap at least 2 n */
static bool wrehash(struct wstore *s, size_t cap, const struct wh_gpu *g, bool drop_unshared)
{
	struct wentry *ne = calloc(cap, sizeof *ne);
	if (!ne)
		return false;
	size_t n = 0, bytes = 0;
	for (size_t i = 0; i < s->cap; i++) {
		struct wentry *e = &s->e[i];
		if (!e->data)
			continue;
		if (drop_unshared && !wh_blob_shared(e->blob)) {
			dbuf_unref(g, e->b);
			wh_blob_release(e->blob);
			continue;
		}
		size_t j = whash(e->data, e->prec, cap);
		while (ne[j].data)
			j = (j + 1) & (cap - 1);
		ne[j] = *e;
		n++;
		bytes += e->b->bytes + (e->b->half ? e->b->bytes / 2 : 0);
	}
	free(s->e);
	s->e = ne;
	s->cap = cap;
	s->n = n;
	s->bytes = bytes;
	return true;
}

/* at exit: every device copy freed (tests/fake-cuda.c counts them) */
static void stores_free(void)
{
	trace("exit: freeing the weights store");
	for (int d = 0; d < MAX_DEVICES; d++) {
		struct wstore *s = &stores[d];
		for (size_t i = 0; gpus[d] && i < s->cap; i++)
			if (s->e[i].data) {
				dbuf_unref(gpus[d], s->e[i].b);
				wh_blob_release(s->e[i].blob);
			}
		free(s->e);
		memset(s, 0, sizeof *s);
	}
}

/* at exit, with -vv: what starting the GPU cost in this process (docs/gpu.md) */
static void start_log(void)
{
	for (int d = 0; d < MAX_DEVICES; d++)
		if (gpus[d] && tracing()) {
			char buf[1024];
			gpus[d]->api->start_times(buf, sizeof buf);
			trace("exit: cuda:%d: %s", d, buf);
		}
	for (int d = 0; d < MAX_DEVICES; d++)
		if (gpus[d] && wh_log_get_level() >= WH_LOG_DEBUG) {
			char buf[1024];
			wh_gpu_start_times(gpus[d], buf, sizeof buf);
			/* the process's age now: what the exit costs is the wall time less this */
			double t0 = proc_start_s(), age = t0 < 0 ? -1 : (boot_now() - t0) * 1e3;
			wh_debug("cuda:%d start: %s; the process is %.0f ms old at exit", d, buf, age);
		}
}

static void stores_atexit(void)
{
	atexit(stores_free);
	atexit(start_log);
}

enum wh_status wh_gpu_weights_create(struct wh_gpu *g, struct wh_gpu_weights **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, stores_atexit);
	struct wh_gpu_weights *w = calloc(1, sizeof *w);
	if (!w)
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	w->g = g;
	w->s = &stores[g->device];
	static atomic_uint n_engines;
	w->id = atomic_fetch_add(&n_engines, 1) + 1;
	trace("engine %u created (the store holds %zu weights, %.1f MB)", w->id, w->s->n, (double)w->s->bytes / 1e6);
	*out = w;
	return WH_OK;
}

void wh_gpu_weights_destroy(struct wh_gpu_weights *w)
{
	if (!w)
		return;
	run_lock_take();
	double t0 = wh_os_now_s();
	size_t n0 = w->s->n;
	/* the weights of models no one holds any more leave the device */
	if (w->s->n)
		wrehash(w->s, w->s->cap, w->g, true);
	trace("engine %u destroyed: %u runs, uploaded %.1f MB; store %zu -> %zu weights in %.2f ms", w->id, w->runs,
	      (double)w->bytes / 1e6, n0, w->s->n, ms_since(t0));
	pthread_mutex_unlock(&run_lock);
	free(w);
}

size_t wh_gpu_weights_bytes(const struct wh_gpu_weights *w)
{
	return w ? w->bytes : 0;
}

size_t wh_gpu_weights_fmt_bytes(const struct wh_gpu_weights *w)
{
	return w ? w->fmt_bytes : 0;
}

static struct wentry *wfind(struct wstore *s, const void *data, int prec, size_t bytes)
{
	if (!s->cap)
		return NULL;
	for (size_t i = whash(data, prec, s->cap);; i = (i + 1) & (s->cap - 1)) {
		if (!s->e[i].data)
			return NULL;
		if (s->e[i].data == data && s->e[i].prec == prec && s->e[i].bytes == bytes)
			return &s->e[i];
	}
}

static bool wput(struct wh_gpu_weights *w, const struct wh_tensor *t, int prec, size_t bytes, struct dbuf *b)
{
	struct wstore *s = w->s;
	if (!t->blob)
		return false;
	if ((s->n + 1) * 2 > s->cap && !wrehash(s, s->cap ? s->cap * 2 : 64, w->g, false))
		return false;
	size_t j = whash(t->data, prec, s->cap);
	while (s->e[j].data)
		j = (j + 1) & (s->cap - 1);
	s->e[j] = (struct wentry){t->data, prec, bytes, b, wh_blob_retain(t->blob)};
	s->n++;
	s->bytes += b->bytes;
	w->bytes += b->bytes;
	w->fmt_bytes += t->dtype == WH_DT_FLOAT && (prec == WH_PREC_FP16 || prec == WH_PREC_BF16) ? (size_t)t->count * 2 : bytes;
	return true;
}

/* the engine's device copy of constant t in format prec (uploaded at the first use) */
static struct dbuf *weight_get(struct wh_gpu_weights *w, const struct wh_tensor *t, int prec, uint64_t *h2d)
{
	size_t bytes = wh_tensor_nbytes(t);
	struct wentry *e = wfind(w->s, t->data, prec, bytes);
	if (e)
		return dbuf_ref(e->b);
	struct dbuf *b = NULL;
	if (prec != WH_PREC_FP32) {
		struct wentry *base = wfind(w->s, t->data, WH_PREC_FP32, bytes);
		b = base ? dbuf_rounded(w->g, base->b, t->count, prec) : dbuf_upload(w->g, t, prec);
		if (!base)
			*h2d += wh_tensor_nbytes(t);
	} else {
		b = dbuf_upload(w->g, t, prec);
		*h2d += wh_tensor_nbytes(t);
	}
	if (!b)
		return NULL;
	if (!wput(w, t, prec, bytes, b))
		return b; /* not cached: the caller's reference is the only one */
	return dbuf_ref(b);
}

/* b's 16-bit copy in format fmt (kept with b; the store's bytes count it). When the device
 * has no room for it, the module converts b on each run instead: slower, the same values. */
static void half_of(struct wh_gpu_vals *dv, struct dbuf *b, uint64_t count, int fmt);

/* ---- a frame's device copies ---- */

struct wh_gpu_vals {
	struct wh_gpu *g;
	struct wh_gpu_weights *w;
	uint32_t n;
	struct dbuf **b;
	uint64_t h2d, d2h, d2h_total;
	void *ev0, *ev1;
	/* CUDA graphs: what makes this run's replay unsafe (a value uploaded that is not a graph
	 * input, a download before the end, a graph input read on the host); capturing: a
	 * capture is in progress (no 16-bit copies are made then) */
	uint32_t not_capturable;
	bool capturing;
	/* WHITTLE_CUDA_TRACE: the run's start, time in the module's run, in weight uploads
	 * (and their rounding), in 16-bit copies, in downloads; the slowest step */
	double t0, run_ms, wup_ms, half_ms, down_ms, slow_ms;
	uint32_t steps, wups, halves;
	char slow[96];
};

enum wh_status wh_gpu_vals_create(struct wh_gpu *g, struct wh_gpu_weights *w, uint32_t n_values, struct wh_gpu_vals **out)
{
	struct wh_gpu_vals *dv = calloc(1, sizeof *dv);
	if (!dv || !(dv->b = calloc((size_t)n_values + 1, sizeof *dv->b))) {
		free(dv);
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	}
	dv->g = g;
	dv->w = w;
	dv->n = n_values;
	run_lock_take();
	if (w && tracing()) {
		w->runs++;
		dv->t0 = wh_os_now_s();
	}
	*out = dv;
	return WH_OK;
}

void wh_gpu_vals_destroy(struct wh_gpu_vals *dv)
{
	if (!dv)
		return;
	double t1 = tracing() ? wh_os_now_s() : 0;
	for (uint32_t v = 0; v < dv->n; v++)
		dbuf_unref(dv->g, dv->b[v]);
	dv->g->api->event_free(dv->ev0);
	dv->g->api->event_free(dv->ev1);
	if (dv->w && tracing())
		trace("engine %u run %u: %.2f ms (freeing %.2f): %u steps on the GPU, %.2f ms in the module's run; %u weights up in %.2f ms; %u 16-bit copies in %.2f ms; downloads %.2f ms (%.1f KB); slowest step %.2f ms %s",
		      dv->w->id, dv->w->runs, ms_since(dv->t0), ms_since(t1), dv->steps, dv->run_ms, dv->wups, dv->wup_ms, dv->halves,
		      dv->half_ms, dv->down_ms, (double)dv->d2h_total / 1e3, dv->slow_ms, dv->slow);
	pthread_mutex_unlock(&run_lock);
	free(dv->b);
	free(dv);
}

bool wh_gpu_vals_device_only(const struct wh_gpu_vals *dv, uint32_t v, const struct wh_tensor *t)
{
	return dv && v < dv->n && dv->b[v] && !t->blob && t->count;
}

enum wh_status wh_gpu_vals_to_host(struct wh_gpu_vals *dv, uint32_t v, struct wh_tensor *t)
{
	if (!wh_gpu_vals_device_only(dv, v, t))
		return WH_OK;
	size_t bytes = wh_tensor_nbytes(t);
	struct wh_blob *blob;
	void *w;
	enum wh_status st = wh_blob_create(bytes, &blob, &w);
	if (st != WH_OK)
		return st;
	double t0 = wh_os_now_s();
	int rc = dv->g->api->download(w, dv->b[v]->p, bytes);
	dv->down_ms += ms_since(t0);
	dv->d2h_total += bytes;
	if (rc != 0) {
		wh_blob_release(blob);
		return wh_error(WH_ERR_INTERNAL, "GPU: copying a tensor to the host: %s (check the GPU with nvidia-smi)", dv->g->api->last_error());
	}
	dv->d2h += bytes;
	dv->not_capturable++;
	t->blob = blob;
	t->data = w;
	return WH_OK;
}

void wh_gpu_vals_drop(struct wh_gpu_vals *dv, uint32_t v)
{
	if (dv && v < dv->n && dv->b[v]) {
		dbuf_unref(dv->g, dv->b[v]);
		dv->b[v] = NULL;
	}
}

void wh_gpu_vals_copies(struct wh_gpu_vals *dv, uint64_t *h2d, uint64_t *d2h)
{
	*h2d = dv ? dv->h2d : 0;
	*d2h = dv ? dv->d2h : 0;
	if (dv)
		dv->h2d = dv->d2h = 0;
}

static void half_of(struct wh_gpu_vals *dv, struct dbuf *b, uint64_t count, int fmt)
{
	if (b->half || !count || b->grid != fmt || dv->capturing)
		return;
	double t0 = wh_os_now_s();
	void *h = dv->g->api->alloc((size_t)count * 2);
	if (!h)
		return;
	if (dv->g->api->to16(h, (const float *)b->p, (size_t)count, fmt) != 0) {
		dv->g->api->free(h);
		return;
	}
	dv->halves++;
	dv->half_ms += ms_since(t0);
	b->half = h;
	dv->w->s->bytes += (size_t)count * 2;
	dv->w->bytes += (size_t)count * 2;
}

/* ---- CUDA graphs ---- */

static bool dtype_ok(enum wh_dtype dt);

void wh_gpu_vals_taint(struct wh_gpu_vals *dv)
{
	if (dv)
		dv->not_capturable++;
}

bool wh_gpu_vals_capturable(const struct wh_gpu_vals *dv)
{
	return dv && !dv->not_capturable;
}

struct gslot {
	uint32_t v;
	struct dbuf *b; /* held */
	enum wh_dtype dtype;
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	uint64_t count;
};

struct wh_gpu_graph {
	struct wh_gpu *g;
	void *exec;
	struct gslot *in, *keep; /* the graph inputs uploaded before the capture; what it left */
	uint32_t n_in, n_keep;
};

static void gslot_of(struct gslot *gs, uint32_t v, struct dbuf *b, const struct wh_tensor *t)
{
	gs->v = v;
	gs->b = dbuf_ref(b);
	gs->dtype = t->dtype;
	gs->rank = t->rank;
	memcpy(gs->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
	gs->count = t->count;
}

void wh_gpu_graph_destroy(struct wh_gpu_graph *gr)
{
	if (!gr)
		return;
	run_lock_take();
	gr->g->api->graph_free(gr->exec);
	for (uint32_t i = 0; i < gr->n_in; i++)
		dbuf_unref(gr->g, gr->in[i].b);
	for (uint32_t i = 0; i < gr->n_keep; i++)
		dbuf_unref(gr->g, gr->keep[i].b);
	pthread_mutex_unlock(&run_lock);
	free(gr->in);
	free(gr->keep);
	free(gr);
}

enum wh_status wh_gpu_capture_begin(struct wh_gpu_vals *dv, struct wh_tensor *vals, const uint32_t *in, uint32_t n_in,
				    struct wh_gpu_graph **out)
{
	*out = NULL;
	struct wh_gpu_graph *gr = calloc(1, sizeof *gr);
	if (!gr || !(gr->in = calloc((size_t)n_in + 1, sizeof *gr->in))) {
		free(gr);
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	}
	gr->g = dv->g;
	/* the inputs go up now: inside the capture an upload would be recorded from host
	 * memory that changes from run to run; a replay copies the new data into these */
	for (uint32_t i = 0; i < n_in; i++) {
		uint32_t v = in[i];
		struct wh_tensor *t = &vals[v];
		if (!wh_value_is_tensor(t) || !t->data || !t->count || !dtype_ok(t->dtype))
			continue;
		if (!dv->b[v]) {
			if (!(dv->b[v] = dbuf_upload(dv->g, t, WH_PREC_FP32))) {
				wh_gpu_graph_destroy(gr);
				return wh_error(WH_ERR_NOMEM, "a graph input: uploading it: %s (free GPU memory)", dv->g->api->last_error());
			}
			dv->h2d += wh_tensor_nbytes(t);
		}
		gslot_of(&gr->in[gr->n_in++], v, dv->b[v], t);
	}
	if (dv->g->api->capture_begin() != 0) {
		wh_gpu_graph_destroy(gr);
		return WH_OK; /* no graph: the run goes on as it is */
	}
	dv->capturing = true;
	*out = gr;
	return WH_OK;
}

bool wh_gpu_capture_end(struct wh_gpu_vals *dv, const struct wh_tensor *vals, struct wh_gpu_graph *gr, bool run_ok)
{
	dv->capturing = false;
	void *exec = dv->g->api->capture_end();
	if (!exec || !run_ok || dv->not_capturable)
		goto fail;
	gr->exec = exec;
	exec = NULL;
	uint32_t n = 0;
	for (uint32_t v = 0; v < dv->n; v++)
		n += dv->b[v] != NULL;
	if (!(gr->keep = calloc((size_t)n + 1, sizeof *gr->keep)))
		goto fail;
	for (uint32_t v = 0; v < dv->n; v++)
		if (dv->b[v])
			gslot_of(&gr->keep[gr->n_keep++], v, dv->b[v], &vals[v]);
	/* this run's results: the graph's first launch */
	if (dv->g->api->graph_launch(gr->exec) != 0)
		goto fail;
	return true;
fail:
	if (exec)
		dv->g->api->graph_free(exec);
	return false;
}

bool wh_gpu_graph_replay(struct wh_gpu_graph *gr, struct wh_gpu_vals *dv, struct wh_tensor *vals)
{
	for (uint32_t i = 0; i < gr->n_in; i++) {
		const struct gslot *gs = &gr->in[i];
		const struct wh_tensor *t = &vals[gs->v];
		if (!wh_value_is_tensor(t) || t->dtype != gs->dtype || t->rank != gs->rank || !t->data ||
		    memcmp(t->dims, gs->dims, sizeof(int64_t) * (size_t)t->rank))
			return false;
	}
	for (uint32_t i = 0; i < gr->n_in; i++) {
		const struct gslot *gs = &gr->in[i];
		if (dv->g->api->upload(gs->b->p, vals[gs->v].data, wh_tensor_nbytes(&vals[gs->v])) != 0)
			return false;
		dv->h2d += wh_tensor_nbytes(&vals[gs->v]);
	}
	if (dv->g->api->graph_launch(gr->exec) != 0)
		return false;
	for (uint32_t i = 0; i < gr->n_keep; i++) {
		const struct gslot *gs = &gr->keep[i];
		struct wh_tensor *t = &vals[gs->v];
		if (!t->blob && !t->seq) {
			/* type and shape; the data is on the device */
			t->dtype = gs->dtype;
			t->kind = WH_VALUE_TENSOR;
			t->rank = gs->rank;
			memcpy(t->dims, gs->dims, sizeof(int64_t) * (size_t)gs->rank);
			t->count = gs->count;
		}
		wh_gpu_vals_drop(dv, gs->v);
		dv->b[gs->v] = dbuf_ref(gs->b);
	}
	return true;
}

double wh_gpu_vals_step_ms(struct wh_gpu_vals *dv)
{
	if (!dv || !dv->ev0 || !dv->ev1)
		return -1;
	double ms = dv->g->api->event_ms(dv->ev0, dv->ev1);
	dv->g->api->event_free(dv->ev0);
	dv->g->api->event_free(dv->ev1);
	dv->ev0 = dv->ev1 = NULL;
	return ms;
}

/* ---- attributes for the module ---- */

static int64_t cb_attr_int(const void *node, const char *name, int64_t dflt)
{
	return wh_node_attr_int(node, name, dflt);
}

static double cb_attr_float(const void *node, const char *name, double dflt)
{
	const struct wh_attr *a = wh_node_attr(node, name);
	return a ? (double)wh_node_attr_float(node, name, 0) : dflt;
}

static int32_t cb_attr_ints(const void *node, const char *name, int64_t *out, int32_t max)
{
	const int64_t *v = NULL;
	int64_t n = wh_node_attr_ints(node, name, &v);
	if (n < 0)
		return -1;
	for (int64_t i = 0; i < n && i < max && out; i++)
		out[i] = v[i];
	return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

static const char *cb_attr_str(const void *node, const char *name, const char *dflt)
{
	static __thread char bufs[4][256];
	static __thread unsigned next;
	char *buf = bufs[next++ % 4];
	return wh_node_attr_string(node, name, dflt, buf, sizeof bufs[0]);
}

static int32_t cb_attr_scalar(const void *node, const char *name, void *value)
{
	const struct wh_attr *a = wh_node_attr(node, name);
	if (!a)
		return 0;
	if (a->type != WH_ATTR_TENSOR || !a->t || a->t->dtype == WH_DT_STRING)
		return -1;
	uint64_t cnt;
	size_t es = wh_dtype_size(a->t->dtype);
	if (!wh_shape_count(a->t->dims, a->t->rank, &cnt) || cnt != 1 || es == 0 || es > 8)
		return -1;
	struct wh_tensor tmp;
	wh_tensor_init(&tmp);
	if (wh_tensor_from_raw(&tmp, a->t->dtype, a->t->rank, a->t->dims, a->t->data) != WH_OK)
		return -1;
	memcpy(value, tmp.data, es);
	wh_tensor_release(&tmp);
	return (int32_t)a->t->dtype;
}

/* ---- placement ---- */

static bool is_view_op(const char *op)
{
	return !strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") ||
	       !strcmp(op, "Identity") || !strcmp(op, "Dropout");
}

static bool gemm_like(const char *op)
{
	return !strcmp(op, "MatMul") || !strcmp(op, "Gemm") || !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose");
}

/* Ops whose float outputs are values of their float inputs, or their negations or
 * magnitudes: on a format's grid when every float input is (the grid is closed under
 * selection, copy, negation, abs, max and min), so that the output needs no rounding. */
static bool keeps_grid(const char *op)
{
	static const char *const ops[] = {"Transpose", "Slice", "Concat", "Split", "Expand", "Gather", "GatherElements", "Neg",
					  "Relu", "Abs", "Max", "Min", "MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin", "Where", NULL};
	for (int i = 0; ops[i]; i++)
		if (!strcmp(op, ops[i]))
			return true;
	return false;
}

static void node_of(const struct wh_node *n, int64_t opset, struct whcu_node *cn)
{
	memset(cn, 0, sizeof *cn);
	cn->op_type = n->op_type;
	cn->name = n->name;
	cn->domain = n->domain;
	cn->opset = opset;
	cn->node = n;
	cn->attr_int = cb_attr_int;
	cn->attr_float = cb_attr_float;
	cn->attr_ints = cb_attr_ints;
	cn->attr_str = cb_attr_str;
	cn->attr_scalar = cb_attr_scalar;
}

bool wh_gpu_claims(const struct wh_gpu *g, const struct wh_node *n, int64_t opset)
{
	if (!n->domain[0] && is_view_op(n->op_type))
		return true;
	struct whcu_node cn;
	node_of(n, opset, &cn);
	uint32_t mask = 0;
	return g->api->supports(&cn, &mask) == 1;
}

static bool dtype_ok(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT || dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16 || dt == WH_DT_INT64 || dt == WH_DT_INT32 ||
	       dt == WH_DT_BOOL || dt == WH_DT_UINT8 || dt == WH_DT_INT8;
}

static int64_t host_int(const struct wh_tensor *t, uint64_t i)
{
	return wh_tensor_get_i64(t, i);
}

/* The output shape of a view op (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout)
 * from its input and its host parameters; false: leave it to the CPU. */
static bool view_shape(const struct wh_node *n, int64_t opset, const struct wh_tensor *x, const struct wh_tensor *p,
		       int32_t *rank_out, int64_t *dims)
{
	const char *op = n->op_type;
	int32_t r = x->rank;
	if (!strcmp(op, "Identity") || !strcmp(op, "Dropout")) {
		if (!strcmp(op, "Dropout") && (n->n_outputs > 1 && n->outputs[1] != WH_NONE))
			return false;
		memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
		*rank_out = r;
		return true;
	}
	if (!strcmp(op, "Flatten")) {
		int64_t a = wh_node_attr_int(n, "axis", 1);
		if (a < 0)
			a += r;
		if (a < 0 || a > r)
			return false;
		int64_t d0 = 1, d1 = 1;
		for (int32_t d = 0; d < r; d++)
			*(d < a ? &d0 : &d1) *= x->dims[d];
		dims[0] = d0;
		dims[1] = d1;
		*rank_out = 2;
		return true;
	}
	int64_t axes[WH_MAX_RANK];
	int64_t na = 0;
	if (!strcmp(op, "Reshape")) {
		if (!p || (p->dtype != WH_DT_INT64) || p->count > WH_MAX_RANK || !p->data)
			return false;
		bool allowzero = wh_node_attr_int(n, "allowzero", 0) != 0;
		int32_t rk = (int32_t)p->count, infer = -1;
		uint64_t known = 1;
		for (int32_t d = 0; d < rk; d++) {
			int64_t v = host_int(p, (uint64_t)d);
			if (v == 0 && !allowzero) {
				if (d >= r)
					return false;
				v = x->dims[d];
			}
			if (v == -1) {
				if (infer >= 0)
					return false;
				infer = d;
				v = 1;
			} else if (v < 0) {
				return false;
			} else {
				known *= (uint64_t)v;
			}
			dims[d] = v;
		}
		if (infer >= 0) {
			if (!known || x->count % known)
				return false;
			dims[infer] = (int64_t)(x->count / known);
		} else if (known != x->count) {
			return false;
		}
		*rank_out = rk;
		return true;
	}
	if (opset >= 13) {
		if (p) {
			if (!p->data || (p->dtype != WH_DT_INT64 && p->dtype != WH_DT_INT32) || p->count > WH_MAX_RANK)
				return false;
			na = (int64_t)p->count;
			for (int64_t i = 0; i < na; i++)
				axes[i] = host_int(p, (uint64_t)i);
		}
	} else {
		const int64_t *av = NULL;
		na = wh_node_attr_ints(n, "axes", &av);
		if (na > WH_MAX_RANK)
			return false;
		for (int64_t i = 0; i < na; i++)
			axes[i] = av[i];
		if (na < 0)
			na = 0;
	}
	bool mark[WH_MAX_RANK] = {false};
	if (!strcmp(op, "Squeeze")) {
		for (int64_t i = 0; i < na; i++) {
			int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
			if (a < 0 || a >= r || x->dims[a] != 1)
				return false;
			mark[a] = true;
		}
		int32_t o = 0;
		for (int32_t d = 0; d < r; d++)
			if (na ? !mark[d] : x->dims[d] != 1)
				dims[o++] = x->dims[d];
		*rank_out = o;
		return true;
	}
	if (!strcmp(op, "Unsqueeze")) {
		int32_t orank = r + (int32_t)na;
		if (orank > WH_MAX_RANK || na == 0)
			return false;
		for (int64_t i = 0; i < na; i++) {
			int64_t a = axes[i] < 0 ? axes[i] + orank : axes[i];
			if (a < 0 || a >= orank || mark[a])
				return false;
			mark[a] = true;
		}
		int32_t k = 0;
		for (int32_t d = 0; d < orank; d++)
			dims[d] = mark[d] ? 1 : x->dims[k++];
		*rank_out = orank;
		return true;
	}
	return false;
}

static enum wh_status view_step(struct wh_gpu_vals *dv, const struct wh_gpu_step *s, struct wh_tensor *vals, struct wh_tensor *outs,
				bool *ran)
{
	const struct wh_node *n = s->n;
	uint32_t v0 = n->inputs[0];
	struct wh_tensor *x = &vals[v0];
	if (!dv->b[v0] || !wh_value_is_tensor(x) || n->n_outputs < 1 || n->outputs[0] == WH_NONE)
		return WH_OK;
	struct wh_tensor *p = n->n_inputs > 1 && n->inputs[1] != WH_NONE ? &vals[n->inputs[1]] : NULL;
	if (p && wh_gpu_vals_device_only(dv, n->inputs[1], p)) {
		enum wh_status st = wh_gpu_vals_to_host(dv, n->inputs[1], p);
		if (st != WH_OK)
			return st;
	}
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!view_shape(n, s->opset, x, p, &rank, dims))
		return WH_OK;
	struct wh_tensor *y = &outs[0];
	y->dtype = x->dtype;
	y->kind = WH_VALUE_TENSOR;
	y->rank = rank;
	memcpy(y->dims, dims, sizeof(int64_t) * (size_t)rank);
	y->count = x->count;
	uint32_t ov = n->outputs[0];
	struct dbuf *b = dbuf_ref(dv->b[v0]);
	wh_gpu_vals_drop(dv, ov);
	dv->b[ov] = b;
	*ran = true;
	return WH_OK;
}

static void to_cu(const struct wh_tensor *t, struct whcu_tensor *c)
{
	memset(c, 0, sizeof *c);
	if (!t)
		return;
	c->dtype = (int32_t)t->dtype;
	c->rank = t->rank;
	for (int32_t d = 0; d < t->rank && d < WHCU_MAX_RANK; d++)
		c->dims[d] = t->dims[d];
}

enum wh_status wh_gpu_run_step(struct wh_gpu_vals *dv, const struct wh_gpu_step *s, struct wh_tensor *vals,
			       struct wh_tensor *outs, bool *ran)
{
	const struct wh_node *n = s->n;
	const struct whcu_api *api = dv->g->api;
	enum wh_status st = WH_OK;
	*ran = false;
	if (s->exec != WH_PREC_FP32 && s->exec != WH_PREC_TF32 && s->exec != WH_PREC_FP16 && s->exec != WH_PREC_BF16)
		return WH_OK;
	if ((s->out != WH_PREC_FP32 && s->out != WH_PREC_TF32 && s->out != WH_PREC_FP16 && s->out != WH_PREC_BF16) ||
	    n->n_inputs > 32 || n->n_outputs > 32 || n->n_inputs == 0)
		return WH_OK;
	/* what it reads: tensors of the types the module knows, up to its rank */
	for (uint32_t k = 0; k < n->n_inputs; k++) {
		uint32_t v = n->inputs[k];
		if (v == WH_NONE)
			continue;
		const struct wh_tensor *t = &vals[v];
		if (!wh_value_is_tensor(t) || !dtype_ok(t->dtype) || t->rank > WHCU_MAX_RANK)
			return WH_OK;
	}
	/* shape arithmetic stays on the host (TensorRT's shape tensors) */
	if (s->host_only)
		return WH_OK;
	if (!n->domain[0] && is_view_op(n->op_type)) {
		if (s->exec != WH_PREC_FP32 && s->out != s->exec)
			return WH_OK; /* a conversion: the CPU's emulation does it */
		return view_step(dv, s, vals, outs, ran);
	}
	struct whcu_tensor cin[32], cout[32];
	uint8_t want[32];
	struct dbuf *tmp[32] = {NULL}; /* the step's own references (uploads, rounded copies) */
	struct whcu_node cn;
	node_of(n, s->opset, &cn);
	cn.prec = s->exec == WH_PREC_TF32 && !gemm_like(n->op_type) ? WH_PREC_FP32 : s->exec;
	/* A Conv with a bias at fp16/bf16 runs on the module's TF32 path over inputs already on
	 * the layer's grid: every fp16 or bf16 value is exact in TF32, so the products are exact
	 * and the sums fp32, the bias is added in fp32 and the output rounded once, here, as the
	 * emulation and TensorRT's fused bias do. cuDNN's half path stores its sum in the half
	 * format before the bias is added, a second rounding that a large folded-BatchNorm bias
	 * turns into a large error (PaddleOCR det at bf16: 8 dB from the emulation). */
	if ((s->exec == WH_PREC_FP16 || s->exec == WH_PREC_BF16) && (!strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "ConvTranspose")) &&
	    n->n_inputs > 2 && n->inputs[2] != WH_NONE)
		cn.prec = WH_PREC_TF32;
	cn.fp16_accumulate = s->fp16_accumulate;
	cn.tactic = s->tactic;
	cn.allow_reduced = s->allow_reduced;
	int32_t list_n = 0, out_rounded = 0;
	if (s->out == WH_PREC_FP16 || s->out == WH_PREC_BF16) {
		cn.out_prec = s->out;
		cn.out_rounded = &out_rounded;
	}
	if (s->list) {
		cn.list = s->list;
		cn.list_max = WHCU_MAX_TACTICS;
		cn.list_n = &list_n;
		*s->list_n = 0;
	}
	cn.n_in = n->n_inputs;
	cn.n_out = n->n_outputs;
	cn.in = cin;
	cn.out = cout;
	cn.out_wanted = want;
	for (uint32_t k = 0; k < n->n_inputs; k++)
		to_cu(n->inputs[k] != WH_NONE ? &vals[n->inputs[k]] : NULL, &cin[k]);
	for (uint32_t k = 0; k < n->n_outputs; k++) {
		want[k] = s->wanted[k];
		memset(&cout[k], 0, sizeof cout[k]);
	}
	uint32_t host_mask = 0;
	if (api->supports(&cn, &host_mask) != 1)
		return WH_OK;
	int bias = !strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "ConvTranspose") ? 2 : -1;
	/* the float inputs' grid, when they all share the output's format (keeps_grid) */
	bool in_on_grid = (s->out == WH_PREC_FP16 || s->out == WH_PREC_BF16) && !n->domain[0] && keeps_grid(n->op_type);
	for (uint32_t k = 0; k < n->n_inputs; k++) {
		uint32_t v = n->inputs[k];
		if (v == WH_NONE)
			continue;
		struct wh_tensor *t = &vals[v];
		if (host_mask & (1u << k)) {
			if ((st = wh_gpu_vals_to_host(dv, v, t)) != WH_OK)
				goto out;
			cin[k].host = t->data;
			if (t->dtype == WH_DT_FLOAT)
				in_on_grid = false;
			if ((s->g->values[v].flags & WH_VALUE_INPUT) && !(s->g->values[v].flags & WH_VALUE_INITIALIZER))
				dv->not_capturable++; /* its values would be baked into a graph */
			continue;
		}
		/* the layer's format for a float input that carries data */
		int fmt = WH_PREC_FP32;
		if (t->dtype == WH_DT_FLOAT && !wh_emulate_parameter_input(n->op_type, k, (enum wh_precision)s->exec)) {
			if (s->exec == WH_PREC_FP16 || s->exec == WH_PREC_BF16)
				fmt = s->exec;
			else if (s->exec == WH_PREC_TF32 && gemm_like(n->op_type) && (int)k != bias)
				fmt = WH_PREC_TF32;
		}
		struct dbuf *b = NULL;
		if (!dv->b[v] && s->persistent[k] && t->count) {
			/* an engine constant: uploaded (and rounded) once per engine */
			double tw = wh_os_now_s();
			uint64_t h0 = dv->h2d;
			b = weight_get(dv->w, t, fmt, &dv->h2d);
			dv->wups += dv->h2d != h0;
			dv->wup_ms += ms_since(tw);
			if (!b) {
				st = wh_error(WH_ERR_NOMEM, "node '%s' (%s): uploading a weight: %s (free GPU memory)", n->name, n->op_type, api->last_error());
				goto out;
			}
			tmp[k] = b;
			/* a GEMM or Conv at this weight's 16-bit format reads its persistent 16-bit copy,
			 * made once (the module converted the float copy on every run before: the
			 * decoder's MatMuls read and wrote their weights three times per run) */
			if ((fmt == WH_PREC_FP16 || fmt == WH_PREC_BF16) && cn.prec == fmt && gemm_like(n->op_type) && t->dtype == WH_DT_FLOAT)
				half_of(dv, b, t->count, fmt);
			cin[k].half = b->half;
		} else {
			if (!dv->b[v]) {
				if (!(dv->b[v] = dbuf_upload(dv->g, t, WH_PREC_FP32))) {
					st = wh_error(WH_ERR_NOMEM, "node '%s' (%s): uploading input '%s': %s (free GPU memory)", n->name, n->op_type,
						      s->g->values[v].name, api->last_error());
					goto out;
				}
				dv->h2d += wh_tensor_nbytes(t);
				if (!(s->g->values[v].flags & WH_VALUE_INPUT) || (s->g->values[v].flags & WH_VALUE_INITIALIZER))
					dv->not_capturable++;
			}
			b = dv->b[v];
			/* rounding is idempotent: a value its producer stored on this grid (a layer
			 * at the same format) is read as it is, one kernel less per input */
			if (fmt != WH_PREC_FP32 && t->count && b->grid != fmt) {
				if (!(tmp[k] = dbuf_rounded(dv->g, b, t->count, fmt))) {
					st = wh_error(WH_ERR_NOMEM, "node '%s' (%s): rounding input '%s': %s (free GPU memory)", n->name, n->op_type,
						      s->g->values[v].name, api->last_error());
					goto out;
				}
				b = tmp[k];
			}
		}
		cin[k].data = b->p;
		if (t->dtype == WH_DT_FLOAT && b->grid != s->out)
			in_on_grid = false;
	}
	if (s->timed) {
		api->event_free(dv->ev0);
		api->event_free(dv->ev1);
		dv->ev1 = NULL;
		dv->ev0 = api->event_record();
	}
	double tr0 = wh_os_now_s();
	int r = api->run(&cn);
	if (trace_on > 0) {
		double ms = ms_since(tr0);
		dv->steps++;
		dv->run_ms += ms;
		if (ms > dv->slow_ms) {
			dv->slow_ms = ms;
			snprintf(dv->slow, sizeof dv->slow, "%.40s (%.40s)", n->op_type, n->name);
		}
	}
	if (s->timed)
		dv->ev1 = api->event_record();
	if (r < 0) {
		st = wh_error(WH_ERR_INTERNAL, "node '%s' (%s): on the GPU: %s (run it with --device cpu to compare)", n->name, n->op_type,
			      api->last_error());
		goto out;
	}
	if (r != 0)
		goto out; /* declined: the CPU runs it */
	if (s->list)
		*s->list_n = list_n < 0 ? 0 : list_n > WHCU_MAX_TACTICS ? WHCU_MAX_TACTICS : (uint32_t)list_n;
	for (uint32_t k = 0; k < n->n_outputs; k++) {
		struct whcu_tensor *c = &cout[k];
		if (!c->dtype)
			continue;
		uint32_t ov = n->outputs[k];
		if (!want[k] || ov == WH_NONE) {
			api->free(c->data);
			continue;
		}
		struct wh_tensor *y = &outs[k];
		y->dtype = (enum wh_dtype)c->dtype;
		y->kind = WH_VALUE_TENSOR;
		y->rank = c->rank;
		memcpy(y->dims, c->dims, sizeof(int64_t) * (size_t)c->rank);
		y->count = whcu_count(c);
		struct dbuf *b = dbuf_wrap(c->data, wh_tensor_nbytes(y));
		if (!b) {
			api->free(c->data);
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			continue;
		}
		if (c->dtype == WHCU_FLOAT && (in_on_grid || out_rounded)) {
			b->grid = s->out; /* already on it (or rounded by the op's kernel): no rounding kernel */
		} else if (c->dtype == WHCU_FLOAT && (s->out == WH_PREC_FP16 || s->out == WH_PREC_BF16) && y->count) {
			if (api->round(b->p, b->p, y->count, s->out) != 0)
				st = wh_error(WH_ERR_INTERNAL, "node '%s' (%s): rounding the output: %s", n->name, n->op_type, api->last_error());
			else
				b->grid = s->out;
		}
		wh_gpu_vals_drop(dv, ov);
		dv->b[ov] = b;
	}
	*ran = st == WH_OK;
out:
	for (uint32_t k = 0; k < n->n_inputs; k++)
		dbuf_unref(dv->g, tmp[k]);
	return st;
}

/* ---- executor.h's entry points ---- */

#include "executor/executor.h"

enum wh_status wh_device_cuda_check(int device, char *info, size_t size)
{
	struct wh_gpu *g = NULL;
	enum wh_status st = gpu_get(device, &g, false); /* the caller writes the line */
	if (st == WH_OK && size)
		snprintf(info, size, "%s", g->info);
	return st;
}

enum wh_status wh_device_cuda_start(int device)
{
	return wh_gpu_start(device);
}

void wh_device_finish(int code)
{
	wh_gpu_finish(code);
}

bool wh_device_cuda_claims(int device, const struct wh_model *m, const struct wh_node *n)
{
	struct wh_gpu *g = NULL;
	if (wh_gpu_get(device, &g) != WH_OK)
		return false;
	int64_t opset = wh_model_opset(m, n->domain);
	return wh_gpu_claims(g, n, opset ? opset : 1);
}
