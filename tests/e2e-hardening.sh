#!/bin/bash
# Defects found by trying to break whittle (issue 12), each with a case that failed before
# its fix: wrong verdicts (Inf counts, int64 compared as double), crashes (a negative or
# unknown timing-cache entry, a replay of another model), erased error lines, concurrent
# timing-cache writers, layers merged by name, replays that load nothing silently.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run
cd "$tmp"
# one_line RC: exit RC, exactly one well-formed error line, no crash
one_line() {
	[ "$rc" -eq "$1" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qE '^whittle: .+: .+ \(.+\)$' "$tmp/err"
}

/usr/bin/python3 - <<'PY'
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

def save(name, nodes, inputs, outputs, inits=(), extra_opsets=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    ops = [helper.make_opsetid("", 13)] + [helper.make_opsetid(d, 1) for d in extra_opsets]
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 7
    onnx.save(m, name + ".onnx")

def pb(path, name, arr):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())

f2 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
save("identity", [helper.make_node("Identity", ["x"], ["y"], name="id")], [f2], [y])
infs = np.array([np.inf, -np.inf], np.float32)
pb("infs/x.pb", "x", infs)
pb("infs-ref/y.pb", "y", infs)
pb("int-a/t.pb", "t", np.array([2**62 + 1, 5], np.int64))
pb("int-b/t.pb", "t", np.array([2**62, 5], np.int64))

# Conv layers (with tactics), dynamic spatial size so that runs can time distinct shapes
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "h", "w"])
w = numpy_helper.from_array(np.random.RandomState(0).randn(4, 4, 3, 3).astype(np.float32), "w")
def convs(name, n1, n2):
    kw = {} if n1 is None else {"name": n1}
    kw2 = {} if n2 is None else {"name": n2}
    save(name, [helper.make_node("Conv", ["x", "w"], ["t"], pads=[1, 1, 1, 1], **kw),
                helper.make_node("Conv", ["t", "w"], ["y"], pads=[1, 1, 1, 1], **kw2)], [x], [y], [w])
convs("conv2", "c1", "c2")
convs("conv-dup", "c", "c")
convs("conv-unnamed", None, None)
save("relu", [helper.make_node("Relu", ["x"], ["y"], name="r")], [f2], [y])
save("unsupported", [helper.make_node("Relu", ["x"], ["t"], name="r"),
                     helper.make_node("Frobnicate", ["t"], ["y"], name="f", domain="com.example")],
     [f2], [y], extra_opsets=["com.example"])
PY

# ---- 1: Inf counts (isinf(-inf) is -1) ----
run "$whittle" run identity.onnx --load-inputs infs --validate
if [ "$rc" -eq 1 ] && grep -q 'validate: FAIL.*(0 NaN, 2 Inf of 2)' "$tmp/out"; then
	ok "1: run --validate of [inf, -inf] fails, counting 2 Inf"
else
	bad "1: run --validate of [inf, -inf]: exit $rc, $(head -2 "$tmp/out" | tr '\n' ' ')"
fi
run "$whittle" run identity.onnx --load-inputs infs --compare infs-ref --json
if grep -q '"inf": 2' "$tmp/out"; then
	ok "1: run --compare --json counts 2 Inf"
else
	bad "1: run --compare --json of [inf, -inf]: $(head -c 300 "$tmp/out")"
fi

# ---- 3: int64 compared exactly ----
run "$whittle" compare int-a int-b
if [ "$rc" -eq 1 ] && grep -q '^FAIL t: max_abs 1 ' "$tmp/out"; then
	ok "3: compare of 2^62+1 against 2^62 fails with max_abs 1"
else
	bad "3: compare of 2^62+1 against 2^62: exit $rc, $(head -1 "$tmp/out")"
fi
run "$whittle" compare int-a int-a
[ "$rc" -eq 0 ] && ok "3: compare of equal int64 tensors passes" || bad "3: compare of equal int64 tensors: exit $rc"

# ---- 5: a tensor file of 50000 nested sequences (the model nesting is in e2e-hostile) ----
/usr/bin/python3 - <<'PY'
import os
import onnx
from onnx import TensorProto, helper
def varint(n):
    b = bytearray()
    while True:
        if n < 0x80:
            return bytes(b + bytes([n]))
        b.append(n & 0x7F | 0x80)
        n >>= 7
seq = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, None)
out = helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)
m = helper.make_model(helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id")], "s", [seq], [out]),
                      opset_imports=[helper.make_opsetid("", 16)])
m.ir_version = 8
onnx.save(m, "seq.onnx")
# SequenceProto{elem_type SEQUENCE (2), sequence_values (5): inner}, 50000 deep (5000 do not
# exhaust protobuf-c's stack here; 50000 did): written outside in, from the inner lengths
lengths = [0]
for _ in range(50000):
    lengths.append(3 + len(varint(lengths[-1])) + lengths[-1])
prefixes = [varint(2 << 3) + varint(2) + varint(5 << 3 | 2) + varint(n) for n in reversed(lengths[:-1])]
os.makedirs("deepseq", exist_ok=True)
open("deepseq/x.pb", "wb").write(b"".join(prefixes))
PY
run "$whittle" run seq.onnx --load-inputs deepseq
if one_line 3 && grep -q 'nested more than 100 levels' "$tmp/err"; then
	ok "5: a SequenceProto file nested 50000 deep refused with one line"
else
	bad "5: a SequenceProto file nested 50000 deep: exit $rc"
fi

# ---- 6: timing-cache entries validated ----
key='Conv|float32:1x4x8x8;float32:4x4x3x3|pads=1,1,1,1,'
for entry in '-1' '1e308, "conv-gemm-avx2": -5' '"fast"'; do
	printf '{"%s": {"conv-gemm-scalar": %s}}\n' "$key" "$entry" >bad-cache.json
	run "$whittle" run conv2.onnx --input-shapes x:1x4x8x8 --save-tactics t.json --timing-cache bad-cache.json --timing-iterations 1
	if one_line 3 && grep -q 'not a time in ms' "$tmp/err"; then
		ok "6: timing cache entry $entry refused with one line"
	else
		bad "6: timing cache entry $entry: exit $rc"
	fi
done
printf '{"%s": {"conv-no-such-tactic": 0.5}}\n' "$key" >bad-cache.json
run "$whittle" run conv2.onnx --input-shapes x:1x4x8x8 --save-tactics t.json --timing-cache bad-cache.json --timing-iterations 1
if one_line 3 && grep -q "names tactic 'conv-no-such-tactic'" "$tmp/err"; then
	ok "6: timing cache entry of an unknown tactic refused with one line"
else
	bad "6: timing cache entry of an unknown tactic: exit $rc"
fi
printf '{"format": "whittle-tactics", "layers": {"c1": {"op": "Conv", "tactic": "conv-gemm-scalar", "ms": -3}}}\n' >bad-replay.json
run "$whittle" run conv2.onnx --input-shapes x:1x4x8x8 --load-tactics bad-replay.json
one_line 3 && ok "6: tactic replay with a negative time refused" || bad "6: tactic replay with a negative time: exit $rc"

# ---- 7: --load-replay of another model's replay names that model's hash ----
run "$whittle" reduce relu.onnx -o r.onnx --save-replay relu.jsonl --check false
orig=$(head -1 relu.jsonl | sed -n 's/.*"original":"\([0-9a-f]*\)".*/\1/p')
run "$whittle" reduce identity.onnx -o r.onnx --load-replay relu.jsonl --check false
if [ -n "$orig" ] && one_line 2 && grep -q "replay of another model (hash $orig, this model" "$tmp/err"; then
	ok "7: --load-replay of another model's replay names its hash"
else
	bad "7: --load-replay of another model's replay (hash '$orig'): exit $rc"
fi

# ---- 8: an unsupported op's line survives, with advice for the check in use ----
run "$whittle" reduce unsupported.onnx -o r.onnx
if one_line 3 && grep -q 'Frobnicate.*built-in check.*--check' "$tmp/err"; then
	ok "8: reduce (built-in check) of a model with an unsupported op names it"
else
	bad "8: reduce (built-in check) of a model with an unsupported op: exit $rc"
fi
run "$whittle" reduce unsupported.onnx -o r.onnx --check true
if one_line 3 && grep -q 'Frobnicate.*--reference DIR' "$tmp/err"; then
	ok "8: reduce --check of a model with an unsupported op names it and asks for --reference"
else
	bad "8: reduce --check of a model with an unsupported op: exit $rc"
fi

# ---- 12 (acceptance 4): concurrent --save-tactics runs on one timing cache ----
rm -f cache.json
bad12=0
for round in 1 2 3 4 5 6 7 8 9 10; do
	a=$((round + 4))
	b=$((round + 20))
	"$whittle" run conv2.onnx --input-shapes x:1x4x${a}x${a} --save-tactics ta.json --timing-cache cache.json \
		--timing-iterations 1 --threads 1 >/dev/null 2>ea.txt &
	pa=$!
	"$whittle" run conv2.onnx --input-shapes x:1x4x${b}x${b} --save-tactics tb.json --timing-cache cache.json \
		--timing-iterations 1 --threads 1 >/dev/null 2>eb.txt &
	pb=$!
	wait $pa || { bad12=1; echo "    round $round: run A failed: $(cat ea.txt)"; }
	wait $pb || { bad12=1; echo "    round $round: run B failed: $(cat eb.txt)"; }
done
keys=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' cache.json 2>/dev/null || echo invalid)
if [ "$bad12" -eq 0 ] && [ "$keys" = 20 ]; then
	ok "12: ten rounds of two concurrent --save-tactics runs leave a valid cache with all 20 shapes"
else
	bad "12: concurrent --save-tactics runs: cache holds $keys shapes, 20 expected"
fi

# ---- 15: layers merged by name, mixed replays, long Polygraphy names, silent replays ----
for m in conv-dup conv-unnamed; do
	run "$whittle" run $m.onnx --input-shapes x:1x4x8x8 --save-tactics t.json --timing-iterations 1
	if one_line 3 && grep -q 'tactic replay names layers' "$tmp/err"; then
		ok "15: --save-tactics on $m refused"
	else
		bad "15: --save-tactics on $m: exit $rc"
	fi
done
mkdir -p mix/good mix/bad
"$whittle" run conv2.onnx --input-shapes x:1x4x8x8 --save-tactics mix/good/a.json --timing-iterations 1 >/dev/null
"$whittle" run conv2.onnx --input-shapes x:1x4x8x8 --save-tactics mix/bad/b.json --timing-iterations 1 --precision fp16 >/dev/null
run "$whittle" diff-tactics --dir mix
if one_line 3 && grep -q 'one precision only' "$tmp/err"; then
	ok "15: diff-tactics refuses replays of two precisions"
else
	bad "15: diff-tactics of replays of two precisions: exit $rc"
fi
sed 's/"model": "[0-9a-f]*"/"model": "00000000000000000000000000000000"/' mix/good/a.json >mix/bad/b.json
run "$whittle" diff-tactics --dir mix
if one_line 3 && grep -q 'one model only' "$tmp/err"; then
	ok "15: diff-tactics refuses replays of two models"
else
	bad "15: diff-tactics of replays of two models: exit $rc"
fi
long=$(printf 'sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_%s' aligna4_alignc4)
printf '{"replay": {"c1": {"implementation": "CaskConvolution", "tactic": "%s"}}}\n' "$long" >poly.json
run "$whittle" run conv2.onnx --input-shapes x:1x4x8x8 --load-tactics poly.json --strict-tactics
if one_line 3 && grep -qF "CaskConvolution:$long'" "$tmp/err"; then
	ok "15: a Polygraphy tactic name of ${#long} characters is kept whole"
else
	bad "15: a Polygraphy tactic name of ${#long} characters: exit $rc"
fi
run "$whittle" reduce relu.onnx -o r.onnx --load-replay "$tmp" --check false
if one_line 3 && grep -q 'not a replay file' "$tmp/err"; then
	ok "15: --load-replay of a folder refused"
else
	bad "15: --load-replay of a folder: exit $rc"
fi
{ head -1 relu.jsonl; echo '{"hash":"0123456789abcdef0123456789abcdef","verdict":"failed","nodes":1}'; } >odd.jsonl
run "$whittle" reduce relu.onnx -o r.onnx --load-replay odd.jsonl --check false
if one_line 3 && grep -q 'odd.jsonl:2: not a replay line' "$tmp/err"; then
	ok "15: a replay line with an unknown verdict refused"
else
	bad "15: a replay line with an unknown verdict: exit $rc"
fi

# ---- 13: --build-cmd values quoted for the shell ----
mkdir -p "a dir"
cp conv2.onnx "a dir/m 1.onnx"
art='x;touch PWNED;'
run "$whittle" build "a dir/m 1.onnx" --until 1 --artifacts-dir "$art" --input-shapes x:1x4x8x8 \
	--build-cmd "'$whittle' run {model} --input-shapes x:1x4x8x8 --save-tactics '{tactics}' --build-seed {seed} --timing-iterations 1 >/dev/null" \
	--pin-cmd true --check true
if [ "$rc" -eq 0 ] && [ ! -e PWNED ] && [ ! -e "$art/PWNED" ] && ls "$art"/good/*.json >/dev/null 2>&1; then
	ok "13: --build-cmd with a model path holding a space and an artifacts folder holding ';' runs as meant"
else
	bad "13: --build-cmd with hostile paths: exit $rc, PWNED: $(ls PWNED "$art/PWNED" 2>/dev/null)"
fi

art2='y z;touch PWNED2;'
run "$whittle" reduce "a dir/m 1.onnx" -o r.onnx --input-shapes x:1x4x8x8 --artifacts-dir "$art2" --shell \
	--check 'test -f {model} && exit 1; exit 0'
if [ "$rc" -eq 0 ] && [ ! -e PWNED2 ] && [ ! -e "$art2/PWNED2" ]; then
	ok "13: --shell check with a folder holding ';' and a space: {model} stays one word"
else
	bad "13: --shell check with hostile paths: exit $rc, PWNED2: $(ls PWNED2 "$art2/PWNED2" 2>/dev/null)"
fi

# ---- 16: repro/command.sh calls the whittle that made it; errors say what to do ----
run "$whittle" reduce conv2.onnx -o r.onnx --input-shapes x:1x4x8x8 --artifacts-dir repro16 --precision fp16 --atol 0 --rtol 0
if [ -x repro16/repro/command.sh ] && PATH=/usr/bin:/bin sh repro16/repro/command.sh >/dev/null 2>"$tmp/err"; rc16=$?; [ "$rc16" -eq 1 ]; then
	ok "16: repro/command.sh runs without whittle on PATH (and fails, as the reduced model does)"
else
	bad "16: repro/command.sh without whittle on PATH: exit ${rc16:-none}"
fi
if WHITTLE=/bin/false sh repro16/repro/command.sh >/dev/null 2>&1; then
	bad "16: repro/command.sh ignores WHITTLE"
else
	ok "16: WHITTLE overrides the binary in repro/command.sh"
fi
/usr/bin/python3 - <<'PY'
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
w = numpy_helper.from_array(np.ones((4, 4, 3, 3), np.float32), "w")
for name, node, inits in (("conv-group0", helper.make_node("Conv", ["x", "w"], ["y"], name="c", group=0), [w]),
                          ("softmax-axis7", helper.make_node("Softmax", ["x"], ["y"], name="s", axis=7), [])):
    m = helper.make_model(helper.make_graph([node], name, [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, name + ".onnx")
PY
for m in conv-group0 softmax-axis7; do
	run "$whittle" run $m.onnx
	one_line 3 && ok "16: run $m: one line that says what to do" || bad "16: run $m: exit $rc"
done

# ---- 11: output paths checked before the search; -o MODEL refused ----
rm -f ran
run "$whittle" reduce relu.onnx -o "$tmp/nonexist/m.onnx" --check sh -c 'touch ran; exit 1'
if one_line 3 && [ ! -e ran ] && grep -q 'does not exist' "$tmp/err"; then
	ok "11: reduce -o into a missing folder refused before any check"
else
	bad "11: reduce -o into a missing folder: exit $rc, check ran: $([ -e ran ] && echo yes || echo no)"
fi
rm -f ran
run "$whittle" precision conv2.onnx --precision fp16 --input-shapes x:1x4x8x8 -o "$tmp/nonexist/k.json" --check sh -c 'touch ran; exit 1'
if one_line 3 && [ ! -e ran ]; then
	ok "11: precision -o into a missing folder refused before any check"
else
	bad "11: precision -o into a missing folder: exit $rc, check ran: $([ -e ran ] && echo yes || echo no)"
fi
cp relu.onnx keep.onnx
ln -sf keep.onnx link.onnx
for out in keep.onnx link.onnx; do
	run "$whittle" reduce keep.onnx -o $out --check false
	if one_line 2 && cmp -s relu.onnx keep.onnx; then
		ok "11: reduce -o $out (the input model) refused, the model untouched"
	else
		bad "11: reduce keep.onnx -o $out: exit $rc"
	fi
done

# ---- 10: one run per artifacts folder ----
run "$whittle" reduce relu.onnx -o r.onnx --artifacts-dir art10 --check false
first=$rc
echo stale >art10/repro/stale.txt
run "$whittle" reduce relu.onnx -o r.onnx --artifacts-dir art10 --check false
if [ "$first" -eq 0 ] && one_line 2 && grep -q 'earlier run.*--force' "$tmp/err"; then
	ok "10: a folder of an earlier run refused without --force"
else
	bad "10: a folder of an earlier run: first exit $first, second exit $rc"
fi
run "$whittle" reduce relu.onnx -o r.onnx --artifacts-dir art10 --force --check false
if [ "$rc" -eq 0 ] && [ ! -e art10/repro/stale.txt ] && [ "$(grep -c '"original"' art10/replay.jsonl)" -eq 1 ]; then
	ok "10: --force: the repro holds this run only, the replay one header"
else
	bad "10: --force: exit $rc, stale: $(ls art10/repro), headers: $(grep -c '"original"' art10/replay.jsonl)"
fi
run "$whittle" reduce relu.onnx -o r.onnx --artifacts-dir art10 --load-replay art10/replay.jsonl --check false
[ "$rc" -eq 0 ] && ok "10: resuming from the folder's own replay needs no --force" || bad "10: resuming from the folder's replay: exit $rc"
mkdir -p art10b
flock art10b/.whittle-lock sleep 20 &
holder=$!
sleep 0.5
run "$whittle" reduce relu.onnx -o r.onnx --artifacts-dir art10b --force --check false
kill $holder 2>/dev/null || true
wait $holder 2>/dev/null || true
if one_line 3 && grep -q 'another whittle run is writing' "$tmp/err"; then
	ok "10: a second writer into one artifacts folder refused with one line"
else
	bad "10: a second writer into one artifacts folder: exit $rc"
fi
mkdir -p b10 && cd b10
run "$whittle" build ../conv2.onnx --until 1 --input-shapes x:1x4x8x8 --timing-iterations 1
dir=$(sed -n 's/^build: .*; artifacts in \(whittle-build-[0-9-]*\)$/\1/p' "$tmp/err")
cd "$tmp"
if [ "$rc" -eq 0 ] && [ -n "$dir" ] && [ -d "b10/$dir/good" ] && [ ! -e b10/whittle-build ]; then
	ok "10: build without --artifacts-dir writes a fresh folder and says which ($dir)"
else
	bad "10: build without --artifacts-dir: exit $rc, folder '$dir'"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
