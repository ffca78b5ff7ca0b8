#!/bin/bash
# Real tactics on the GPU (issue 25, docs/gpu.md "Tactics"); ctest label gpu. Skips with
# one line where there is no GPU. On a GPU:
#  - inspect --tactics --device cuda lists cuBLASLt and cuDNN tactics with their notes;
#  - `build --device cuda --until 20` on two corpus models (no fault injected) gives at
#    least two different tactic sets, and a build is under 60 s;
#  - --load-tactics of a build with deterministic tactics reproduces its outputs bit for bit,
#    and `repeat --until 20` of that run reports 0 % flaky;
#  - on scripts/gen-long-reduction.py's model at fp16 with reduced-precision reduction
#    allowed and a tolerance between the two tactics' errors, builds sort into good and bad
#    by whether the MatMul took an fp16-accumulating tactic, diff-tactics confirms it by
#    swapping, the block list keeps it out, and triage answers "intermittent".
# WHITTLE_GPU_LOG=DIR keeps the logs there.
set -uo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
. "$WHITTLE_SRC/tests/lib-e2e.sh"
W=$WHITTLE
corpus=$WHITTLE_SRC/fixtures/corpus
log=${WHITTLE_GPU_LOG:-$tmp/log}
mkdir -p "$log"
run "$W" run "$corpus/kws_dscnn.onnx" --device cuda
if [ "$rc" != 0 ]; then
	echo "skipped: no GPU ($(head -1 "$tmp/err"))"
	echo "e2e-gpu-tactics: $pass passed, $fail failed"
	exit 0
fi
# sets DIR: how many different tactic sets the replays of a build folder hold
sets() { for f in "$1"/*/build_*.json; do grep '"tactic"' "$f" | md5sum; done | sort -u | wc -l; }

# 4. a real faulty tactic: fp16 accumulation over K = 8192
lr=${WHITTLE_LONG_MODEL:-$tmp/long.onnx}
[ -f "$lr" ] || /usr/bin/python3 "$WHITTLE_SRC/scripts/gen-long-reduction.py" "$lr"
opts=(--precision fp16 --allow-reduced-precision-reduction --atol 0.25 --rtol 2e-2 --device cuda)
run timeout 30 "$W" inspect "$lr" --tactics --device cuda --precision fp16 --allow-reduced-precision-reduction
cp "$tmp/out" "$log/inspect-long.txt"
grep -q 'long_matmul (MatMul, cuda): lt-.*-acc16 (' "$tmp/out" && ok "the long MatMul lists cuBLASLt tactics, fp16-accumulating ones too" || bad "no -acc16 tactic listed for long_matmul"
run timeout 30 "$W" inspect "$lr" --tactics --device cuda --precision fp16
grep -q -- '-acc16' "$tmp/out" && bad "-acc16 listed without --allow-reduced-precision-reduction" || ok "no -acc16 tactic without --allow-reduced-precision-reduction"
run timeout 100 "$W" build "$lr" "${opts[@]}" --until 20 --timing-tolerance inf --artifacts-dir "$tmp/lr"
cp "$tmp/out" "$log/build-long.txt"; cp "$tmp/err" "$log/build-long.err"
good_acc=$(cat "$tmp"/lr/good/build_*.json 2>/dev/null | grep -c -- '-acc16"')
bad_all=$(ls "$tmp"/lr/bad/build_*.json 2>/dev/null | wc -l)
bad_acc=$(grep -l -- '-acc16"' "$tmp"/lr/bad/build_*.json 2>/dev/null | wc -l)
if [ "$bad_all" -gt 0 ] && [ "$bad_acc" = "$bad_all" ] && [ "$good_acc" = 0 ]; then
	ok "builds sort by fp16 accumulation: $bad_all bad builds, all -acc16; no good build has one"
else
	bad "long: $bad_all bad builds, $bad_acc with -acc16; $good_acc good builds with -acc16"
fi
grep -qE "^confirmed: layer 'long_matmul' tactic '[^']*-acc16'" "$tmp/out" && ok "$(grep -m1 '^confirmed' "$tmp/out")" || bad "not confirmed: $(grep -m3 -E 'suspect|confirm' "$tmp/out")"
[ -s "$tmp/lr/blocklist.json" ] && cp "$tmp/lr/blocklist.json" "$log/" && ok "blocklist.json written" || bad "no blocklist.json"
b0=$(ls "$tmp"/lr/bad/build_*.json 2>/dev/null | head -1)
g0=$(ls "$tmp"/lr/good/build_*.json 2>/dev/null | head -1)
if [ -n "$b0" ] && [ -n "$g0" ]; then
	run "$W" diff-tactics --dir "$tmp/lr"
	cp "$tmp/out" "$log/diff-tactics.txt"
	grep -q "long_matmul" "$tmp/out" && ok "diff-tactics names long_matmul" || bad "diff-tactics: $(head -3 "$tmp/out")"
fi
# blocking every -acc16 tactic the layer has (inspect's list: the builds above drew only some
# of them, and a build may draw another): good builds only
{
	echo '{"format": "whittle-blocklist", "version": 1, "blocked": ['
	grep -o 'lt-[A-Za-z0-9-]*-acc16' "$log/inspect-long.txt" | sort -u | sed 's/.*/{"layer": "long_matmul", "tactic": "&", "why": "fp16 accumulation"}/' | paste -sd, -
	echo ']}'
} >"$tmp/lr/all-acc16.json"
run timeout 60 "$W" build "$lr" "${opts[@]}" --until 5 --timing-tolerance inf --artifacts-dir "$tmp/lr2" --block-tactics "$tmp/lr/all-acc16.json" --no-confirm
[ "$(ls "$tmp"/lr2/bad/build_*.json 2>/dev/null | wc -l)" = 0 ] && ok "--block-tactics: 5 builds without the blocked tactics, none bad" || bad "--block-tactics: $(tail -1 "$tmp/err")"
run timeout 100 "$W" triage "$lr" "${opts[@]}" --builds 8 --timing-tolerance inf --no-precision-search --artifacts-dir "$tmp/tri"
cp "$tmp/out" "$log/triage.txt"; cp "$tmp/tri/report.md" "$log/triage-report.md" 2>/dev/null
grep -qi "intermittent" "$tmp/out" "$tmp/tri/report.md" 2>/dev/null && grep -q -- "-acc16" "$tmp/tri/report.md" && ok "triage: intermittent, names the -acc16 tactic" || bad "triage: $(head -5 "$tmp/out")"

# 1. the tactics
for mdl in squeezenet1_1 bert; do
	run timeout 60 "$W" inspect "$corpus/$mdl.onnx" --tactics --device cuda
	cp "$tmp/out" "$log/inspect-$mdl.txt"
	nl=$(grep -cE ", cuda\):" "$tmp/out")
	multi=$(grep -E ', cuda\):' "$tmp/out" | awk -F', (lt|cudnn)-' 'NF > 1' | wc -l)
	if [ "$rc" = 0 ] && [ "$nl" -gt 0 ] && grep -qE ' (lt-a[0-9]+-t[0-9]+-s[0-9]+-k[0-9]+-red-|cudnn-)' "$tmp/out"; then
		ok "inspect --tactics --device cuda $mdl: $nl GPU layers, $multi with more than one tactic"
	else
		bad "inspect --tactics --device cuda $mdl: exit $rc, $nl GPU layers"
	fi
done

# 2. builds differ without any fault
total=0
for mdl in squeezenet1_1 bert; do
	t0=$(date +%s.%N)
	run timeout 100 "$W" build "$corpus/$mdl.onnx" --device cuda --until 20 --artifacts-dir "$tmp/b-$mdl" --no-confirm
	t1=$(date +%s.%N)
	cp "$tmp/out" "$log/build-$mdl.txt"; cp "$tmp/err" "$log/build-$mdl.err"
	n=$(sets "$tmp/b-$mdl")
	per=$(grep -oE ', [0-9.]+ s:' "$tmp/err" | head -1)
	echo "$mdl: $n tactic sets in 20 builds; $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}') s for the 20 builds and checks; first build$per" >>"$log/summary.txt"
	total=$((total + n))
	[ "$rc" = 0 ] && ok "build --device cuda --until 20 $mdl: $n tactic sets ($(tail -1 "$tmp/err"))" || bad "build $mdl: exit $rc"
done
[ "$total" -ge 3 ] && ok "builds differ: $total tactic sets over two models" || bad "builds differ: only $total tactic sets over two models"

# 3. a deterministic build replayed: the same bits, and 0 % flaky over 20 runs
m=$corpus/bert.onnx
r=$tmp/b-bert/good/build_0.json
[ -f "$r" ] || r=$(ls "$tmp"/b-bert/*/build_*.json | head -1)
grep -q '"flags": 1[0-9]' "$r" && echo "note: $r holds a nondeterministic tactic" >>"$log/summary.txt"
run "$W" run "$m" --device cuda --load-tactics "$r" --save-outputs "$tmp/o1"
run "$W" run "$m" --device cuda --load-tactics "$r" --compare "$tmp/o1" --atol 0 --rtol 0
[ "$rc" = 0 ] && ok "--load-tactics reproduces bert's outputs bit for bit" || bad "--load-tactics: exit $rc $(grep -m1 FAIL "$tmp/out")"
run timeout 90 "$W" repeat --until 20 --check "$W" run "$m" --device cuda --load-tactics "$r" --compare "$tmp/o1" --atol 0 --rtol 0
cp "$tmp/out" "$log/repeat.txt"; cat "$tmp/err" >>"$log/repeat.txt"
grep -qE '0 bad|0(\.0)? ?% flaky|flaky: 0' "$tmp/out" "$tmp/err" && ok "repeat --until 20: $(grep -m1 -iE 'flaky|runs' "$tmp/out")" || bad "repeat: $(tail -2 "$tmp/out")"

echo "e2e-gpu-tactics: $pass passed, $fail failed"
[ "$fail" = 0 ]
