#!/usr/bin/python3
"""Seeded random cuts of a model, extracted by whittle and checked with ONNX Runtime
(driven by tests/e2e-extract-ort.sh).

    extract-cuts.py MODEL WORKDIR --whittle BIN --ort-run SCRIPT --input-shapes x:1x3x640x640
                    [--seed S] [--count N] [--min-multi M]

1. ONNX Runtime runs the full model once with every tensor marked as an output and graph
   optimizations off (ort-run.js --all --no-opt) on a seeded input: the reference values.
2. A cut is drawn over the topological order of the nodes that compute from the inputs
   (Constant nodes and nodes fed by constants only are "weights": whittle's extraction
   pulls them in where needed, and they are never cut). A window of consecutive nodes is
   chosen, then a non-empty subset of the tensors it produces that leave the window (used
   further down or graph outputs), sometimes with one tensor inside it, as the outputs.
   The nodes needed for those outputs are found walking back inside the window; the
   inputs are the frontier: every tensor they consume that is computed outside the window.
   A skip connection crossing the window's edge makes two or more inputs (or outputs), so
   cuts through residual branches come up by themselves; at least --min-multi of them are
   required among the --count cuts.
3. For each cut: `whittle extract MODEL -o cut.onnx --inputs .. --outputs .. --input-shapes
   ..`; the result must pass onnx.checker, have exactly the cut's inputs and outputs and
   exactly the nodes computing them (the window part plus the weights it uses); ONNX
   Runtime (--no-opt) runs it fed with the reference values of its inputs, and each
   output must equal the reference value of the same tensor.

Equality: within 1e-6 relative (|a - b| <= 1e-6 * |b|, which is exact equality where b is
0). Both sides are ONNX Runtime's unoptimized CPU kernels on the same values with the same
shapes and one thread, so the results are expected to be bit-identical; the margin only
keeps the test from failing should a kernel pick a different blocking for a graph output
than for an intermediate tensor. The largest absolute difference seen is printed.
Prints one line per cut and "extract: N cuts, M with several inputs, F failures".
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
from collections import deque

import numpy as np
import onnx
from onnx import numpy_helper


def escape(name):
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "".join("%%%02X" % b for b in c.encode())
                   for c in name)


def topo_order(graph):
    produced_by = {}
    for i, n in enumerate(graph.node):
        for o in n.output:
            if o:
                produced_by[o] = i
    indeg = [0] * len(graph.node)
    users = [[] for _ in graph.node]
    for i, n in enumerate(graph.node):
        for t in set(x for x in n.input if x):
            if t in produced_by:
                indeg[i] += 1
                users[produced_by[t]].append(i)
    q = deque(i for i in range(len(graph.node)) if indeg[i] == 0)
    order = []
    while q:
        i = q.popleft()
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                q.append(u)
    if len(order) != len(graph.node):
        raise SystemExit("extract-cuts: the model has a cycle")
    return order, produced_by


class Model:
    def __init__(self, path):
        self.model = onnx.load(path)
        g = self.model.graph
        self.nodes = list(g.node)
        self.order, self.produced_by = topo_order(g)
        self.graph_inputs = [i.name for i in g.input]
        self.graph_outputs = {o.name for o in g.output}
        # Weights: initializers and tensors computed from them alone.
        const = {t.name for t in g.initializer}
        self.const_nodes = set()
        for i in self.order:
            n = self.nodes[i]
            if all((not x) or x in const for x in n.input):
                self.const_nodes.add(i)
                const.update(o for o in n.output if o)
        self.const = const
        self.compute = [i for i in self.order if i not in self.const_nodes]
        self.pos = {n: k for k, n in enumerate(self.compute)}
        self.consumers = {}
        for i, n in enumerate(self.nodes):
            for x in n.input:
                if x:
                    self.consumers.setdefault(x, set()).add(i)

    def const_closure(self, tensors):
        """Weight nodes needed to compute the given constant tensors."""
        need, stack = set(), [t for t in tensors if t in self.const]
        while stack:
            t = stack.pop()
            p = self.produced_by.get(t)
            if p is None or p in need:
                continue
            need.add(p)
            stack.extend(x for x in self.nodes[p].input if x)
        return need

    def cut(self, rng, max_len):
        start = rng.randrange(len(self.compute))
        length = rng.randint(1, min(max_len, len(self.compute) - start))
        window = set(self.compute[start:start + length])
        leaving = []
        inside = []
        for i in sorted(window, key=self.pos.get):
            for o in self.nodes[i].output:
                if not o:
                    continue
                users = self.consumers.get(o, set())
                if o in self.graph_outputs or any(u not in window for u in users):
                    leaving.append(o)
                else:
                    inside.append(o)
        if not leaving:
            return None
        k = rng.randint(1, min(3, len(leaving)))
        outputs = rng.sample(leaving, k)
        if inside and rng.random() < 0.3:
            outputs.append(rng.choice(inside))
        # Walk back from the outputs inside the window.
        need, stack, inputs = set(), list(outputs), []
        while stack:
            t = stack.pop()
            p = self.produced_by.get(t)
            if p is not None and p in window:
                if p not in need:
                    need.add(p)
                    stack.extend(x for x in self.nodes[p].input if x)
            elif t not in self.const and t not in inputs:
                inputs.append(t)
        if not inputs:
            return None
        weights = self.const_closure(x for i in need for x in self.nodes[i].input if x)
        inputs.sort(key=lambda t: (self.pos.get(self.produced_by.get(t), -1), t))
        return {"inputs": inputs, "outputs": outputs, "nodes": len(need) + len(weights),
                "window": (start, length)}


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("workdir")
    ap.add_argument("--whittle", required=True)
    ap.add_argument("--ort-run", required=True)
    ap.add_argument("--input-shapes", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--min-multi", type=int, default=5)
    ap.add_argument("--max-len", type=int, default=120)
    a = ap.parse_args()

    m = Model(a.model)
    work = a.workdir
    ref_in, ref = os.path.join(work, "ref-in"), os.path.join(work, "ref")
    p = run(["node", a.ort_run, a.model, ref_in, ref, "--all", "--no-opt", "--threads", "1",
             "--seed", str(a.seed), "--shapes", a.input_shapes])
    if p.returncode:
        print("FAIL: ONNX Runtime on the full model: %s" % p.stderr.strip())
        return 1
    # The graph inputs' values are references too: store them under their names.
    for k, name in enumerate(m.graph_inputs):
        src = os.path.join(ref_in, "input_%d.pb" % k)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(ref, escape(name) + ".pb"))
    n_ref = len(os.listdir(ref))
    print("reference: %d tensors of %s from ONNX Runtime (--all --no-opt, seed %d)"
          % (n_ref, os.path.basename(a.model), a.seed))

    rng = random.Random(a.seed)
    cuts, seen = [], set()
    multi = 0
    for _ in range(20000):
        if len(cuts) >= a.count and multi >= a.min_multi:
            break
        c = m.cut(rng, a.max_len)
        if c is None:
            continue
        key = (tuple(sorted(c["inputs"])), tuple(sorted(c["outputs"])))
        if key in seen:
            continue
        is_multi = len(c["inputs"]) > 1
        if len(cuts) >= a.count and not is_multi:
            continue
        seen.add(key)
        cuts.append(c)
        multi += is_multi
    if len(cuts) < a.count or multi < a.min_multi:
        print("FAIL: could only draw %d cuts (%d with several inputs)" % (len(cuts), multi))
        return 1

    failures = 0
    worst = 0.0
    for k, c in enumerate(cuts):
        tag = "cut %2d: %d nodes, inputs %s -> outputs %s" % (k, c["nodes"], ",".join(c["inputs"]),
                                                              ",".join(c["outputs"]))
        out_model = os.path.join(work, "cut%d.onnx" % k)
        p = run([a.whittle, "extract", a.model, "-o", out_model, "--inputs", ",".join(c["inputs"]),
                 "--outputs", ",".join(c["outputs"]), "--input-shapes", a.input_shapes])
        if p.returncode:
            print("FAIL %s: whittle extract exited %d: %s" % (tag, p.returncode, p.stderr.strip()))
            failures += 1
            continue
        problem = None
        try:
            cm = onnx.load(out_model)
            onnx.checker.check_model(cm)
        except Exception as e:
            problem = "not valid ONNX: %s" % str(e).splitlines()[0]
        if problem is None:
            got_in = sorted(i.name for i in cm.graph.input if i.name not in {t.name for t in cm.graph.initializer})
            got_out = sorted(o.name for o in cm.graph.output)
            if got_in != sorted(c["inputs"]):
                problem = "inputs %s, expected %s" % (got_in, sorted(c["inputs"]))
            elif got_out != sorted(c["outputs"]):
                problem = "outputs %s, expected %s" % (got_out, sorted(c["outputs"]))
            elif len(cm.graph.node) != c["nodes"]:
                problem = "%d nodes, expected %d" % (len(cm.graph.node), c["nodes"])
        if problem is None:
            feed = os.path.join(work, "cut%d-in" % k)
            os.makedirs(feed)
            for t in c["inputs"]:
                shutil.copy(os.path.join(ref, escape(t) + ".pb"), os.path.join(feed, escape(t) + ".pb"))
            got = os.path.join(work, "cut%d-out" % k)
            p = run(["node", a.ort_run, out_model, feed, got, "--no-opt", "--threads", "1"])
            if p.returncode:
                problem = "ONNX Runtime cannot run it: %s" % p.stderr.strip()
        if problem is None:
            max_abs = 0.0
            for t in c["outputs"]:
                name, y = read_tensor(os.path.join(got, escape(t) + ".pb"))
                _, r = read_tensor(os.path.join(ref, escape(t) + ".pb"))
                if name != t or y.dtype != r.dtype or y.shape != r.shape:
                    problem = "output %s: %s %s, reference %s %s" % (t, y.dtype, y.shape, r.dtype, r.shape)
                    break
                if y.dtype.kind == "f":
                    d = np.abs(y.astype(np.float64) - r.astype(np.float64))
                    bad = ~(d <= 1e-6 * np.abs(r.astype(np.float64)))
                    bad &= ~(np.isnan(y) & np.isnan(r))
                    if d.size:
                        max_abs = max(max_abs, float(np.nanmax(d)))
                else:
                    bad = y != r
                if np.any(bad):
                    problem = "output %s: %d of %d values differ (max abs %.3g)" % (
                        t, int(np.count_nonzero(bad)), y.size, max_abs)
                    break
            worst = max(worst, max_abs)
        if problem:
            print("FAIL %s: %s" % (tag, problem))
            failures += 1
        else:
            print("ok   %s (max abs diff %.3g)" % (tag, max_abs))
    print("extract: %d cuts, %d with several inputs, %d failures, max abs diff %.3g"
          % (len(cuts), multi, failures, worst))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
