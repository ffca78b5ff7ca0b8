#!/bin/bash
# The runtime's side of the CUDA backend, where there is no GPU: tests/fake-cuda.c stands in
# for libwhittle-cuda.so (host memory, a few ops), loaded through WHITTLE_CUDA_LIB. A model
# mixing layers the module takes, views of its outputs, shape arithmetic and layers it leaves
# to the CPU (tests/gen-gpu-host-fixture.py) must give the CPU's results at fp32 and fp16,
# place each layer where docs/gpu.md says, upload the weights once per engine and free every
# device buffer it allocates.
set -uo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
. "$WHITTLE_SRC/tests/lib-e2e.sh"
export WHITTLE_CUDA_LIB
WHITTLE_CUDA_LIB=$(dirname "$WHITTLE")/tests/libfake-cuda.so
[ -f "$WHITTLE_CUDA_LIB" ] || { echo "FAIL $WHITTLE_CUDA_LIB not built"; exit 1; }
/usr/bin/python3 "$WHITTLE_SRC/tests/gen-gpu-host-fixture.py" "$tmp"
m=$tmp/mixed.onnx
export WHITTLE_FAKE_CUDA_LOG=$tmp/fake.log

for p in fp32 fp16 bf16; do
	rm -rf "$tmp/cpu" "$tmp/gpu"
	run "$WHITTLE" run "$m" --precision $p --val-range -1,1 --save-outputs "$tmp/cpu" --mark-all
	run "$WHITTLE" run "$m" --precision $p --val-range -1,1 --save-outputs "$tmp/gpu" --mark-all --device cuda
	[ "$rc" = 0 ] || bad "$p: the run with --device cuda failed"
	read -r _ allocs _ frees _ _ _ _ <"$tmp/fake.log"
	if [ "$allocs" -gt 0 ] && [ "$allocs" = "$frees" ]; then ok "$p: $allocs device buffers, all freed"; else bad "$p: $allocs device buffers, $frees freed"; fi
	# an input its producer already rounded to the layer's format is read as it is: beyond
	# fp32's buffers only the rounded weights and inputs (not one copy per layer input)
	[ "$p" = fp32 ] && fp32_allocs=$allocs
	if [ "$p" != fp32 ] && [ $((allocs - fp32_allocs)) -gt 6 ]; then bad "$p: $((allocs - fp32_allocs)) more device buffers than fp32 (a rounded copy per input?)"; fi
	run "$WHITTLE" compare "$tmp/gpu" "$tmp/cpu" --atol 1e-5 --rtol 1e-5
	if [ "$rc" = 0 ]; then ok "$p: every tensor as on the CPU"; else bad "$p: differs from the CPU: $(grep -m2 FAIL "$tmp/out")"; fi
done
# the fp16 overflow shows where the CPU emulation shows it (big = fl1 x 30000 beyond 65504)
run "$WHITTLE" run "$m" --precision fp16 --val-range -1,1 --device cuda --validate
if [ "$rc" = 1 ]; then ok "fp16: the overflow is found on the GPU path ($(head -1 "$tmp/err"))"; else bad "fp16: --validate exit $rc, expected 1"; fi

# where each layer runs
run "$WHITTLE" run "$m" --device cuda --profile --iterations 2
dev() { awk -v l="$1" '$2 == l {print $4}' "$tmp/out"; }
want="mm1:cuda add1:cpu relu1:cuda tr1:cuda sh:cpu d0:cpu newshape:cpu rs1:cuda fl1:cuda big:cuda sm:cpu th:cpu th2:cuda rs2:cuda w2i:cpu mm2:cuda"
got=""
for w in $want; do got="$got ${w%%:*}:$(dev "${w%%:*}")"; done
if [ "${got# }" = "$want" ]; then ok "placement: $want"; else bad "placement: got${got}, expected $want"; fi
grep -q '^devices: 10 layers on cuda, 7 on the cpu' "$tmp/out" && ok "profile: devices line" || bad "profile: $(grep -m1 devices "$tmp/out")"
run "$WHITTLE" inspect "$m" --device cuda
if grep -qE '^  cuda  MatMul mm1$' "$tmp/out" && grep -qE '^  host  Shape sh$' "$tmp/out" && grep -qE '^  cpu   Tanh th$' "$tmp/out"; then
	ok "inspect --device cuda: cuda, host and cpu layers"
else
	bad "inspect --device cuda: $(grep -E '^  (cuda|host|cpu) ' "$tmp/out" | head -4 | tr '\n' '|')"
fi

# the weights go up once per engine: a third run uploads what a run computes on the CPU and
# the input, never w1 and w2 (512 bytes; w2 through an Identity, a view of it) again
run "$WHITTLE" run "$m" --device cuda --repeat 2
read -r _ _ _ _ _ _ _ up2 <"$tmp/fake.log"
run "$WHITTLE" run "$m" --device cuda --repeat 3
read -r _ _ _ _ _ _ _ up3 <"$tmp/fake.log"
if [ "$rc" = 0 ] && [ $((up3 - up2)) -gt 0 ] && [ $((up3 - up2)) -lt 512 ]; then ok "a run uploads $((up3 - up2)) bytes (weights once: $up2 bytes for 2 runs)"; else bad "a run uploads $((up3 - up2)) bytes (rc $rc)"; fi

# fp16 GEMMs read their weights' 16-bit copies, made once per engine (ABI 4: whcu_tensor.half;
# the fake MatMul reads B from it, so a wrong copy would have failed the comparisons above)
run "$WHITTLE" run "$m" --device cuda --precision fp16 --val-range -1,1
read -r _ to16_1 _ reads_1 _ fused_1 _ _ < <(sed -n 2p "$tmp/fake.log")
run "$WHITTLE" run "$m" --device cuda --precision fp16 --val-range -1,1 --repeat 3
read -r _ to16_3 _ reads_3 _ _ _ caps_3 < <(sed -n 2p "$tmp/fake.log")
if [ "$rc" = 0 ] && [ "${to16_1:-0}" -gt 0 ] && [ "$to16_3" = "$to16_1" ] && [ "$reads_3" -gt "$reads_1" ]; then
	ok "fp16 weights converted once per engine ($to16_1 copies; MatMuls read them $reads_1 times in 1 run, $reads_3 in 3)"
else
	bad "16-bit weight copies: $to16_1 for 1 run, $to16_3 for 3 (reads $reads_1, $reads_3; rc $rc)"
fi
run "$WHITTLE" run "$m" --device cuda --precision fp32 --val-range -1,1
read -r _ to16_0 _ _ _ _ _ _ < <(sed -n 2p "$tmp/fake.log")
# CUDA graphs: the second of 3 runs is captured; the fake cannot replay, so the capture fails
# and the run is done again without it (once: the engine then stays eager), same bits
[ "$caps_3" = 0 ] && ok "a model with CPU segments is never captured as a CUDA graph" || bad "mixed: $caps_3 captures, expected none"
/usr/bin/python3 - "$tmp/chain.onnx" <<'PY'
import sys
from onnx import TensorProto, helper, save
nodes, prev = [], "x"
for i in range(8):
    if i % 2:
        nodes.append(helper.make_node("Add", [prev, "c"], [f"v{i}"], name=f"n{i}"))
    else:
        nodes.append(helper.make_node("Relu", [prev], [f"v{i}"], name=f"n{i}"))
    prev = f"v{i}"
g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                      [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [2, 8])],
                      initializer=[helper.make_tensor("c", TensorProto.FLOAT, [2, 8], [0.1 * k - 0.7 for k in range(16)])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
run "$WHITTLE" run "$tmp/chain.onnx" --device cuda --precision fp16 --val-range -1,1 --repeat 3
read -r _ _ _ _ _ _ _ caps < <(sed -n 2p "$tmp/fake.log")
if [ "$rc" = 0 ] && [ "$caps" = 1 ]; then ok "all on the GPU, 3 runs: one capture (the fake fails it), the run again without it, the same bits"; else bad "chain --repeat 3: exit $rc, $caps captures"; fi
run env WHITTLE_CUDA_GRAPHS=0 "$WHITTLE" run "$tmp/chain.onnx" --device cuda --precision fp16 --val-range -1,1 --repeat 3
read -r _ _ _ _ _ _ _ caps < <(sed -n 2p "$tmp/fake.log")
[ "$rc" = 0 ] && [ "$caps" = 0 ] && ok "WHITTLE_CUDA_GRAPHS=0: no capture" || bad "WHITTLE_CUDA_GRAPHS=0: exit $rc, $caps captures"

[ "${fused_1:-0}" -gt 0 ] && ok "fp16: $fused_1 layers rounded their own output (whcu_node.out_rounded)" || bad "fp16: no layer rounded its own output" 
[ "$rc" = 0 ] && [ "$to16_0" = 0 ] && ok "fp32: no 16-bit copies" || bad "fp32 made $to16_0 16-bit copies (rc $rc)"
# --profile: the weights against the device's copy bandwidth (the fake's is 1 GB/s)
run "$WHITTLE" run "$m" --device cuda --precision fp16 --val-range -1,1 --profile --iterations 2
if grep -q '^gpu_copy_gbps 1.0 ' "$tmp/out" && grep -qE '^gpu_weights_mb [0-9.]+ \(at the layers' "$tmp/out" && grep -q '^gpu_start .*fake: nothing' "$tmp/out"; then
	ok "profile: $(grep '^gpu_weights_mb' "$tmp/out")"
else
	bad "profile: no gpu lines: $(grep '^gpu' "$tmp/out" | tr '\n' '|')"
fi

# engines of one model share its weights on the device (reduce's candidates, precision's
# configurations): run --compare fp32 makes a second engine, which uploads no weight again
run "$WHITTLE" run "$m" --device cuda --val-range -1,1
read -r _ _ _ _ _ _ _ one <"$tmp/fake.log"
run "$WHITTLE" run "$m" --device cuda --val-range -1,1 --compare fp32
read -r _ _ _ _ _ _ _ two <"$tmp/fake.log"
if [ "$rc" = 0 ] && [ $((two - one)) -le $((one - 512)) ]; then ok "a second engine uploads $((two - one)) bytes (the first $one, weights 512)"; else bad "a second engine uploads $((two - one)) bytes (the first $one: weights again?)"; fi

# the reference values of reduce (every tensor, as it is computed) come back from the GPU
run "$WHITTLE" reduce "$m" --device cuda --precision fp16 --val-range -1,1 -o "$tmp/red.onnx"
if [ "$rc" = 0 ] && [ -s "$tmp/red.onnx" ]; then ok "reduce --device cuda --precision fp16: $(grep -m1 -iE 'layers|nodes' "$tmp/out" || true)"; else bad "reduce --device cuda: exit $rc"; fi
# --reference-device cuda: the FP32 reference on the GPU, the same answer
run "$WHITTLE" reduce "$m" --precision fp16 --val-range -1,1 -o "$tmp/red-cpu.onnx"
want=$(grep -m1 -oE '^reduce: [0-9]+ -> [0-9]+ layers' "$tmp/err")
run "$WHITTLE" reduce "$m" --precision fp16 --val-range -1,1 --reference-device cuda -o "$tmp/red-ref.onnx"
read -r _ allocs _ _ <"$tmp/fake.log"
got=$(grep -m1 -oE '^reduce: [0-9]+ -> [0-9]+ layers' "$tmp/err")
if [ "$rc" = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] && [ "$allocs" -gt 0 ]; then
	ok "reduce --reference-device cuda: $got, as with the CPU's reference ($allocs device buffers)"
else
	bad "reduce --reference-device cuda: exit $rc, '$got' against '$want', $allocs device buffers"
fi
run "$WHITTLE" reduce "$m" --precision fp16 --val-range -1,1 --reference-device cuda:1 -o "$tmp/red-ref1.onnx"
if [ "$rc" = 3 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "no GPU 1" "$tmp/err"; then ok "--reference-device cuda:1: one line"; else bad "--reference-device cuda:1: exit $rc: $(head -2 "$tmp/err")"; fi
# precision and triage run their configurations on the GPU too (the FP32 reference stays
# on the CPU without --reference-device)
run "$WHITTLE" precision "$m" --device cuda --precision fp16 --val-range -1,1 --validate -o "$tmp/prec.json"
read -r _ allocs _ _ <"$tmp/fake.log"
if [ "$rc" = 0 ] && [ "$allocs" -gt 0 ]; then ok "precision --device cuda: $allocs device buffers"; else bad "precision --device cuda: exit $rc, $allocs device buffers"; fi
run "$WHITTLE" triage "$m" --device cuda --precision fp16 --val-range -1,1 --builds 1 --no-precision-search --artifacts-dir "$tmp/tri"
read -r _ allocs _ _ <"$tmp/fake.log"
if [ "$rc" = 0 ] && [ "$allocs" -gt 0 ] && grep -q "'big'\|\`big\`" "$tmp/tri/report.md"; then ok "triage --device cuda: finds big ($allocs device buffers)"; else bad "triage --device cuda: exit $rc, $allocs device buffers"; fi
# ConstantOfShape on the device: its value through the module's attr_scalar callback (the
# ONNX backend cases: the shape is a graph input there, so the layer is not a constant)
if [ -n "${WHITTLE_ONNX_TESTS:-}" ] && [ -d "$WHITTLE_ONNX_TESTS/node/test_constantofshape_float_ones" ]; then
	run "$(dirname "$WHITTLE")/tests/tool-conformance" --root "$WHITTLE_ONNX_TESTS" --suite node --case constantofshape_float_ones --device cuda
	read -r _ allocs _ frees _ _ _ _ <"$tmp/fake.log"
	if [ "$rc" = 0 ] && grep -q "1 passed, 0 failed" "$tmp/out" && [ "$allocs" -ge 1 ] && [ "$allocs" = "$frees" ]; then
		ok "ConstantOfShape on the device: its ONNX case passes ($allocs device buffers)"
	else
		bad "ConstantOfShape on the device: exit $rc, $allocs device buffers: $(tail -1 "$tmp/out")"
	fi
else
	echo "skipped: ConstantOfShape cases (WHITTLE_ONNX_TESTS not set)"
fi
run "$WHITTLE" run "$m" --device cuda:1
if [ "$rc" = 3 ] && grep -q "no GPU 1" "$tmp/err"; then ok "cuda:1: one line ($(cat "$tmp/err"))"; else bad "cuda:1: exit $rc"; fi
run env WHITTLE_CUDA_START=sync "$WHITTLE" run "$m" --device cuda:1
if [ "$rc" = 3 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "no GPU 1" "$tmp/err"; then ok "cuda:1, WHITTLE_CUDA_START=sync: one line"; else bad "cuda:1, sync start: exit $rc: $(head -2 "$tmp/err")"; fi
run env WHITTLE_CUDA_LIB="$tmp/no-such-module.so" "$WHITTLE" run "$m" --device cuda
if [ "$rc" = 3 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "no-such-module.so not found" "$tmp/err"; then ok "no module: one line, at once"; else bad "no module: exit $rc: $(head -2 "$tmp/err")"; fi

# the background start (docs/gpu.md, "Where a GPU process's time goes"): a thread loads the
# module, starts the device and warms it up once while the command goes on;
# WHITTLE_CUDA_START=sync starts it on the spot, without the warm-up; the same bits either way
rm -rf "$tmp/bg" "$tmp/sy"
run "$WHITTLE" run "$m" --device cuda --precision fp16 --val-range -1,1 --save-outputs "$tmp/bg" --mark-all
read -r _ warms_bg < <(sed -n 3p "$tmp/fake.log")
rc_bg=$rc
run env WHITTLE_CUDA_START=sync "$WHITTLE" run "$m" --device cuda --precision fp16 --val-range -1,1 --save-outputs "$tmp/sy" --mark-all
read -r _ warms_sy < <(sed -n 3p "$tmp/fake.log")
# (the fake starts at once, so the thread warms up before the run asks, unless the machine
# is slow enough for the run to ask first: then it skips the warm-up, below)
if [ "$rc_bg" = 0 ] && [ "$rc" = 0 ] && [ "$warms_bg" -le 1 ] && [ "$warms_sy" = 0 ] && cmp -s <(cd "$tmp/bg" && cat $(ls)) <(cd "$tmp/sy" && cat $(ls)); then
	ok "background start: warmed up $warms_bg time(s) (sync start: $warms_sy), the same outputs"
else
	bad "background start: exit $rc_bg/$rc, warm-ups $warms_bg/$warms_sy, or the outputs differ"
fi
# a start slower than the command's way to its first GPU layer (a context takes 0.1 to 0.3 s):
# the command waits for the device, and the warm-up, not begun, is skipped
rm -rf "$tmp/sl"
run env WHITTLE_FAKE_CUDA_INIT_MS=400 WHITTLE_CUDA_TRACE=1 "$WHITTLE" run "$m" --device cuda --precision fp16 --val-range -1,1 --save-outputs "$tmp/sl" --mark-all
read -r _ warms_sl < <(sed -n 3p "$tmp/fake.log")
if [ "$rc" = 0 ] && [ "$warms_sl" = 0 ] && grep -q "warm-up skipped" "$tmp/err" && cmp -s <(cd "$tmp/bg" && cat $(ls)) <(cd "$tmp/sl" && cat $(ls)); then
	ok "a slow start: the warm-up skipped, the same outputs"
else
	bad "a slow start: exit $rc, $warms_sl warm-ups: $(grep -m1 warm-up "$tmp/err")"
fi
# a command that stops before any engine still ends cleanly (the start's thread joined, the
# module's buffers all freed): an --input-shapes naming no input, after --device cuda
run "$WHITTLE" run "$m" --device cuda --input-shapes nosuchinput:1x2
read -r _ allocs _ frees _ _ _ _ <"$tmp/fake.log"
if [ "$rc" = 3 ] && grep -q "no input 'nosuchinput'" "$tmp/err" && [ "$allocs" = "$frees" ] && [ "$(sed -n 3p "$tmp/fake.log")" = "warms 1" ]; then ok "an early error with the start under way: exit 3, joined"; else bad "early error: exit $rc, log $(tr '\n' ' ' <"$tmp/fake.log")"; fi
# the quick exit: a module that allows it (the fake when told) ends the process with _exit
# after the output is flushed: the exit code and stdout are whole, the module's destructor
# (its log) does not run; without it (the default fake) the log is written
rm -f "$tmp/fake.log"
run env WHITTLE_FAKE_CUDA_QUICK_EXIT=1 "$WHITTLE" run "$m" --device cuda --val-range -1,1 --iterations 2
if [ "$rc" = 0 ] && grep -q "median_ms" "$tmp/out" && [ ! -e "$tmp/fake.log" ]; then ok "quick exit: exit 0, the output whole, no teardown"; else bad "quick exit: exit $rc, $(grep -c median_ms "$tmp/out") median lines, log $( [ -e "$tmp/fake.log" ] && echo written || echo absent)"; fi
run env WHITTLE_FAKE_CUDA_QUICK_EXIT=1 "$WHITTLE" run "$m" --device cuda --val-range -1,1 --input-shapes nosuchinput:1x2
if [ "$rc" = 3 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "no input 'nosuchinput'" "$tmp/err"; then ok "quick exit keeps the exit code and the line of a failure ($rc)"; else bad "quick exit after a failure: exit $rc"; fi
run env WHITTLE_FAKE_CUDA_QUICK_EXIT=1 WHITTLE_CUDA_FULL_EXIT=1 "$WHITTLE" run "$m" --device cuda --val-range -1,1
if [ "$rc" = 0 ] && [ -e "$tmp/fake.log" ]; then ok "WHITTLE_CUDA_FULL_EXIT=1: the full exit"; else bad "WHITTLE_CUDA_FULL_EXIT=1: exit $rc, no log"; fi

# GPU tactics (issue 25): the fake module's MatMul offers a default, a split-K and, for fp16
# layers with --allow-reduced-precision-reduction, an fp16-accumulating tactic, which breaks
# scripts/gen-long-reduction.py's model; every event takes the same time, so the build seed
# alone picks among them (docs/gpu.md)
lr=$tmp/long.onnx
/usr/bin/python3 "$WHITTLE_SRC/scripts/gen-long-reduction.py" "$lr" --m 4 --k 4096 --n 8
acc=lt-a2-t1-s1-k1-red-none-acc16
run "$WHITTLE" inspect "$lr" --tactics --device cuda --precision fp16 --allow-reduced-precision-reduction
if grep -q "^long_matmul (MatMul, cuda): lt-a1-t1-s1-k1-red-none (.*the default), lt-a1-t1-s1-k4-red-inplace (.*), $acc (" "$tmp/out"; then ok "inspect --tactics --device cuda: the GPU tactics with their notes"; else bad "inspect --tactics --device cuda: $(head -2 "$tmp/out")"; fi
run "$WHITTLE" inspect "$lr" --tactics --device cuda --precision fp16
if [ "$rc" = 0 ] && ! grep -q acc16 "$tmp/out"; then ok "no fp16-accumulating tactic without --allow-reduced-precision-reduction"; else bad "acc16 listed without the option (exit $rc)"; fi
topt=(--device cuda --precision fp16 --allow-reduced-precision-reduction --atol 0.25 --rtol 2e-2)
run "$WHITTLE" build "$lr" "${topt[@]}" --until 10 --artifacts-dir "$tmp/tb" --timing-cache "$tmp/tc.json"
nbad=$(ls "$tmp"/tb/bad/build_*.json 2>/dev/null | wc -l)
if [ "$rc" = 0 ] && [ "$nbad" -gt 0 ] && [ "$(grep -l "$acc" "$tmp"/tb/bad/build_*.json | wc -l)" = "$nbad" ] && ! grep -q "$acc" "$tmp"/tb/good/build_*.json; then
	ok "build --device cuda: $nbad bad builds, each with the fp16-accumulating tactic, no good one with it"
else
	bad "build --device cuda: exit $rc, $nbad bad builds"
fi
grep -q "^confirmed: layer 'long_matmul' tactic '$acc'" "$tmp/out" && ok "the swap confirms long_matmul/$acc" || bad "not confirmed: $(grep -m2 -E 'suspect|confirm' "$tmp/out")"
grep -q '"device": "fake GPU;sm_00;cublasLt 0;cudnn 0"' "$tmp/tb/fixed.json" && ok "the replay names the device" || bad "fixed.json names no device"
grep -q '"cuda|fake GPU;sm_00;cublasLt 0;cudnn 0|fp16|MatMul|' "$tmp/tc.json" && ok "the timing cache's keys name the device" || bad "timing cache: $(head -c 300 "$tmp/tc.json")"
if grep -q "\"tactic\": \"$acc\"" "$tmp/tb/blocklist.json" && grep -q '"layer": "long_matmul"' "$tmp/tb/blocklist.json"; then ok "blocklist.json names the culprit"; else bad "blocklist.json: $(cat "$tmp/tb/blocklist.json" 2>/dev/null | head -c 300)"; fi
run "$WHITTLE" build "$lr" "${topt[@]}" --until 6 --artifacts-dir "$tmp/tb2" --block-tactics "$tmp/tb/blocklist.json"
if [ "$rc" = 0 ] && [ "$(ls "$tmp"/tb2/bad/build_*.json 2>/dev/null | wc -l)" = 0 ] && ! grep -q "$acc" "$tmp"/tb2/*/build_*.json; then ok "--block-tactics: 6 builds, none takes the blocked tactic, none bad"; else bad "--block-tactics: exit $rc"; fi
b0=$(ls "$tmp"/tb/bad/build_*.json | head -1)
run "$WHITTLE" run "$lr" --precision fp16 --load-tactics "$b0"
if [ "$rc" != 0 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "is a GPU tactic (run with --device cuda" "$tmp/err"; then ok "a GPU replay without --device cuda: one line"; else bad "GPU replay on the CPU: exit $rc"; fi
run env WHITTLE_FAKE_CUDA_IDENT="other GPU;sm_99;cublasLt 1;cudnn 1" "$WHITTLE" run "$lr" --precision fp16 --allow-reduced-precision-reduction --device cuda --load-tactics "$b0"
if [ "$rc" = 0 ] && grep -q "recorded on fake GPU;sm_00;cublasLt 0;cudnn 0; this is other GPU;sm_99" "$tmp/err"; then ok "a replay from another device: applied with a warning"; else bad "replay from another device: exit $rc"; fi
sed "s/\"$acc\"/\"lt-a9-t9-s9-k1-red-none\"/" "$b0" >"$tmp/gone.json"
run "$WHITTLE" run "$lr" --precision fp16 --device cuda --load-tactics "$tmp/gone.json"
if [ "$rc" != 0 ] && grep -q "not one this fake GPU offers" "$tmp/err"; then ok "a tactic the device lacks: refused ($(tail -1 "$tmp/err" | cut -c1-100))"; else bad "missing tactic: exit $rc"; fi
g0=$(ls "$tmp"/tb/good/build_*.json | head -1)
run "$WHITTLE" run "$lr" --precision fp16 --device cuda --load-tactics "$g0" --repeat 3
if [ "$rc" = 0 ] && grep -q "repeat: PASS" "$tmp/out" && ! grep -q nondeterministic "$tmp/out"; then ok "run --repeat of a deterministic replay: PASS, no note"; else bad "run --repeat: exit $rc"; fi
sed 's/"op": "MatMul",/"op": "MatMul", "flags": 16, "notes": "fake: nondeterministic",/' "$g0" >"$tmp/nondet.json"
run "$WHITTLE" run "$lr" --precision fp16 --device cuda --load-tactics "$tmp/nondet.json" --repeat 2
grep -q "repeat: note: layer 'long_matmul' runs nondeterministic tactic" "$tmp/out" && ok "run --repeat flags a nondeterministic tactic" || bad "no nondeterministic note: $(cat "$tmp/out")"
run "$WHITTLE" triage "$lr" "${topt[@]}" --builds 8 --no-precision-search --artifacts-dir "$tmp/ttri"
if grep -qi "intermittent" "$tmp/ttri/report.md" && grep -q "$acc" "$tmp/ttri/report.md"; then ok "triage --device cuda: intermittent, names $acc"; else bad "triage: exit $rc: $(head -3 "$tmp/out")"; fi

echo "e2e-gpu-host: $pass passed, $fail failed"
[ "$fail" = 0 ]
