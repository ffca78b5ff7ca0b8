#!/bin/bash
# trtexec-ready check data (issue 23, acceptance 3): {trt-inputs} and {trt-golden} expand,
# per check, to trtexec's --loadInputs / --loadRefOutputs specifications ('name':file,
# comma-separated) over raw little-endian files that whittle writes.
#  - the raw files hold exactly the tensors' bytes: each is compared byte for byte with
#    numpy's tobytes() of the .npy / .pb file it came from (read by numpy and onnx, not by
#    whittle), for float32, float16, int64 and bool inputs and the FP32 golden outputs;
#  - every tensor is named in the spec, once, with its model name (':' and '/' in a name are
#    kept inside the quotes; the file name escapes them);
#  - the same with --shell (the spec is one shell word, quoted);
#  - the files are removed after the check;
#  - a name trtexec cannot say (a ',') is refused with one line naming the reason, before
#    any check runs; without tensors (repeat) the placeholder stays as it is;
#  - a repro bundle (reduce) holds trt-inputs/ and its command.sh names them relative to it.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
py=/usr/bin/python3

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

# a model with four inputs of four types; a, b:0/x go through Relu (float layers)
"$py" - "$tmp" <<'EOF'
import sys, os, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
d = sys.argv[1]
def model(path, names):
    a, b, c, e = names
    g = helper.make_graph(
        [helper.make_node("Relu", [a], ["ya"], name="relu_a"),
         helper.make_node("Relu", [b], ["yb"], name="relu_b"),
         helper.make_node("Identity", [c], ["yc"], name="id_c"),
         helper.make_node("Not", [e], ["yd"], name="not_d")],
        "g",
        [helper.make_tensor_value_info(a, TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info(b, TensorProto.FLOAT16, [5]),
         helper.make_tensor_value_info(c, TensorProto.INT64, [3]),
         helper.make_tensor_value_info(e, TensorProto.BOOL, [4])],
        [helper.make_tensor_value_info("ya", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("yb", TensorProto.FLOAT16, [5]),
         helper.make_tensor_value_info("yc", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("yd", TensorProto.BOOL, [4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
def data(folder, names):
    a, b, c, e = names
    os.makedirs(folder)
    rng = np.random.default_rng(3)
    np.save(f"{folder}/a.npy", rng.standard_normal((2, 3)).astype(np.float32))
    t = numpy_helper.from_array(rng.standard_normal(5).astype(np.float16), b)
    open(f"{folder}/b.pb", "wb").write(t.SerializeToString())
    np.save(f"{folder}/c.npy", np.array([-7, 1 << 40, 3], dtype=np.int64))
    t = numpy_helper.from_array(np.array([True, False, False, True]), e)
    open(f"{folder}/d.pb", "wb").write(t.SerializeToString())
model(f"{d}/m.onnx", ["a", "b:0/x", "c", "d"])
data(f"{d}/in", ["a", "b:0/x", "c", "d"])
model(f"{d}/comma.onnx", ["a", "b,x", "c", "d"])
data(f"{d}/in-comma", ["a", "b,x", "c", "d"])
EOF

# The check: records both specs and a copy of every file they name (in spec order), then
# fails, so that `precision` stops after its two end checks (exit 3).
cat >"$tmp/record.py" <<'EOF'
import sys, os, shutil, json
out, specs = sys.argv[1], sys.argv[2:]
n = len(os.listdir(out)) if os.path.isdir(out) else 0
d = f"{out}/{n}"
os.makedirs(d)
seen = []
for role, spec in zip(["inputs", "golden"], specs):
    for k, pair in enumerate(spec.split(",")):
        # trtexec's splitNameAndValue: 'name':file
        q = pair.split("'")
        assert len(q) == 3 and q[0] == "" and q[2].startswith(":"), pair
        name, path = q[1], q[2][1:]
        dst = f"{d}/{role}-{k}.raw"
        shutil.copyfile(path, dst)
        seen.append({"role": role, "name": name, "file": dst, "src": path})
json.dump(seen, open(f"{d}/seen.json", "w"))
sys.exit(1)
EOF

# verify.py RECORD_DIR INPUTS_DIR: every check's raw files equal the tensors byte for byte
cat >"$tmp/verify.py" <<'EOF'
import sys, os, json, numpy as np, onnx
from onnx import numpy_helper
rec, ind = sys.argv[1], sys.argv[2]
want = {"a": np.load(f"{ind}/a.npy"),
        "b:0/x": numpy_helper.to_array(onnx.load_tensor(f"{ind}/b.pb")),
        "c": np.load(f"{ind}/c.npy"),
        "d": numpy_helper.to_array(onnx.load_tensor(f"{ind}/d.pb"))}
gold = {"ya": np.maximum(want["a"], 0), "yb": np.maximum(want["b:0/x"], 0), "yc": want["c"], "yd": ~want["d"]}
checks = sorted(os.listdir(rec))
assert len(checks) == 2, checks
for c in checks:
    seen = json.load(open(f"{rec}/{c}/seen.json"))
    names = {r: sorted(s["name"] for s in seen if s["role"] == r) for r in ("inputs", "golden")}
    assert names["inputs"] == sorted(want), names
    assert names["golden"] == sorted(gold), names
    for s in seen:
        ref = (want if s["role"] == "inputs" else gold)[s["name"]]
        got = open(s["file"], "rb").read()
        assert got == np.ascontiguousarray(ref).tobytes(), (s, got, ref.tobytes())
        assert os.path.basename(s["src"]).endswith(".raw"), s
        assert "/" not in os.path.basename(s["src"])[:-4] and ":" not in os.path.basename(s["src"]), s
        assert not os.path.exists(s["src"]), "left behind: " + s["src"]
print("bytes ok")
EOF

prec=(precision "$tmp/m.onnx" --precision fp16 --load-inputs "$tmp/in")

run "$whittle" "${prec[@]}" --check "$py" "$tmp/record.py" "$tmp/rec" {trt-inputs} {trt-golden}
if [ "$rc" = 3 ] && grep -q "still fails with every float layer" "$tmp/err"; then
	ok "precision runs the two end checks with {trt-inputs} {trt-golden}"
else
	bad "precision with {trt-inputs} {trt-golden} (rc $rc)"
fi
if "$py" "$tmp/verify.py" "$tmp/rec" "$tmp/in" >"$tmp/v.out" 2>&1; then
	ok "raw files hold exactly the tensors' bytes (float32, float16, int64, bool; golden outputs)"
else
	bad "raw files differ from the tensors: $(tail -3 "$tmp/v.out")"
fi

# --shell: the spec is one shell word (names with ':' and '/' inside quotes)
run "$whittle" "${prec[@]}" --shell --check "$py" "$tmp/record.py" "$tmp/rec-sh" {trt-inputs} {trt-golden}
if [ "$rc" = 3 ] && "$py" "$tmp/verify.py" "$tmp/rec-sh" "$tmp/in" >"$tmp/v.out" 2>&1; then
	ok "--shell: the specs arrive whole, the bytes equal"
else
	bad "--shell specs (rc $rc): $(tail -3 "$tmp/v.out")"
fi

# FAIL path: a name trtexec cannot say
run "$whittle" precision "$tmp/comma.onnx" --precision fp16 --load-inputs "$tmp/in-comma" --check "$py" "$tmp/record.py" "$tmp/rec-c" {trt-inputs}
if [ "$rc" != 0 ] && [ "$(wc -l <"$tmp/err")" -le 2 ] && grep -q "b,x.*trtexec.*cannot name it" "$tmp/err" && [ ! -d "$tmp/rec-c" ]; then
	ok "a name with ',' is refused in one line, before any check runs"
else
	bad "a name with ',' (rc $rc)"
fi
run "$whittle" repeat --until 1 --check sh -c 'echo {trt-inputs}'
if [ "$rc" = 0 ] && grep -q 'run 0: good' "$tmp/err"; then
	ok "without tensors (repeat) the placeholder is left as it is"
else
	bad "repeat with {trt-inputs} (rc $rc)"
fi

# a repro bundle names its own raw files, relative to itself
run "$whittle" reduce "$tmp/m.onnx" -o "$tmp/reduced.onnx" --load-inputs "$tmp/in" --artifacts-dir "$tmp/art" --check "$py" -c 'import sys; sys.exit(1)' {trt-inputs} {trt-golden}
cmdsh=$tmp/art/repro/command.sh
if [ "$rc" = 0 ] && [ -f "$cmdsh" ] && grep -q "trt-inputs/" "$cmdsh" && ! grep -q "$tmp/art/repro/trt" "$cmdsh" &&
	ls "$tmp/art/repro/trt-inputs/"*.raw >/dev/null 2>&1; then
	ok "reduce's repro bundle: trt-inputs/ written, command.sh names it relative to the bundle"
else
	bad "repro bundle with {trt-inputs} (rc $rc): $(cat "$cmdsh" 2>/dev/null | tail -2)"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
