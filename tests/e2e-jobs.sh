#!/bin/bash
# -j N (checks in flight) on precision, build, repeat and triage, with the local launcher
# (issue 16): the answer does not depend on N, and N checks do run at once.
#  - precision (ddmin and bisect, an external check and the built-in one) on the multi-site
#    fixtures: -j 3 writes the layer precisions of -j 1;
#  - build on long_dot with WHITTLE_FAULTY_TACTIC (the builds that pick the faulty tactic are
#    bad): --until 10, good, bad and confirmed with -j 3 sort the same builds into good/ and
#    bad/ and name the same suspects and culprit as -j 1 (builds past the stop are dropped,
#    their replays removed); an external builder (--build-cmd) with -j 3 as well;
#  - repeat: --until bad -j 3 stops at the first run (the runs in flight past it are not
#    counted); --until 6 -j 3 counts 6 runs, and the runs overlap (-j 1: never);
#  - triage -j 3 on the flaky fixture and on one where a subgraph fails (steps 4 and 5 with
#    -j): the answer of -j 1;
#  - precision -j 3 interrupted: its temporary folders (generated inputs) are removed;
#  - usage: -j 0 and -j 65 refused; --artifacts with -j 2 refused (build, repeat); -j with
#    the built-in check (no --check) accepted.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

$py "$src/scripts/gen-precision-fixtures.py" "$tmp/pf" > /dev/null
$py "$src/tests/gen-precision-search-fixtures.py" "$tmp/ps" > /dev/null
$py "$src/tests/gen-triage-fixtures.py" "$tmp/tf" > /dev/null
tol=(--atol 1e-2 --rtol 1e-2)

# ---- precision ----
pcheck=(--check "$whittle" run '{model}' --load-inputs '{inputs}' --layer-precisions '{precisions}' --compare fp32 "${tol[@]}")
for fx in two_sites three_sites; do
	for mode in ddmin bisect; do
		for j in 1 3; do
			rc=0
			"$whittle" precision "$tmp/ps/$fx.onnx" --load-inputs "$tmp/ps/$fx" --precision fp16 --mode "$mode" -j $j \
				-o "$tmp/p-$fx-$mode-$j.json" "${pcheck[@]}" > /dev/null 2> "$tmp/p.err" || rc=$?
			[ "$rc" = 0 ] || bad "precision $fx $mode -j $j: exit $rc: $(tail -1 "$tmp/p.err")"
		done
		if cmp -s "$tmp/p-$fx-$mode-1.json" "$tmp/p-$fx-$mode-3.json"; then
			ok "precision $fx --mode $mode, external check: -j 3 gives the layers of -j 1"
		else
			bad "precision $fx --mode $mode: -j 3 differs from -j 1"
		fi
	done
done
for j in 1 3; do
	"$whittle" precision "$tmp/ps/three_sites.onnx" --load-inputs "$tmp/ps/three_sites" --precision fp16 -j $j "${tol[@]}" \
		-o "$tmp/pb-$j.json" > /dev/null 2>&1 || bad "precision built-in -j $j: exit $?"
done
if cmp -s "$tmp/pb-1.json" "$tmp/pb-3.json"; then
	ok "precision three_sites, built-in check (no --check): -j 3 gives the layers of -j 1"
else
	bad "precision built-in: -j 3 differs from -j 1"
fi
# N checks at once: a check that sleeps; each records how many are running beside it
cat > "$tmp/overlap.sh" << 'SH'
#!/bin/sh
d=$OVERLAP_DIR
mkdir -p "$d/running"
touch "$d/running/$$"
sleep 0.3
ls "$d/running" | wc -l >> "$d/seen"
rm -f "$d/running/$$"

exec "$@"
SH
chmod +x "$tmp/overlap.sh"
most() { sort -n "$1/seen" | tail -1; }
rm -rf "$tmp/ov"
OVERLAP_DIR=$tmp/ov "$whittle" precision "$tmp/ps/two_sites.onnx" --load-inputs "$tmp/ps/two_sites" --precision fp16 -j 3 \
	-o "$tmp/p-ov.json" --check "$tmp/overlap.sh" "$whittle" run '{model}' --load-inputs '{inputs}' --layer-precisions '{precisions}' \
	--compare fp32 "${tol[@]}" > /dev/null 2>&1 || true
if cmp -s "$tmp/p-ov.json" "$tmp/p-two_sites-ddmin-1.json" && [ "$(most "$tmp/ov")" -ge 2 ]; then
	ok "precision -j 3: up to $(most "$tmp/ov") checks ran at once, the same answer"
else
	bad "precision -j 3: at most $(most "$tmp/ov" 2>/dev/null || echo ?) checks at once"
fi

# an interrupt removes precision's temporary folders (the generated inputs, the candidates'
# layer precisions) and stops every check in flight
mkdir -p "$tmp/int"
cat > "$tmp/int-check.sh" << 'SH'
#!/bin/sh
sleep 5
exit 0
SH
chmod +x "$tmp/int-check.sh"
TMPDIR=$tmp/int "$whittle" precision "$tmp/ps/two_sites.onnx" --precision fp16 -j 3 --check "$tmp/int-check.sh" '{model}' '{inputs}' '{precisions}' \
	> /dev/null 2> "$tmp/int.err" &
pid=$!
for i in $(seq 1 50); do
	[ -n "$(ls "$tmp/int")" ] && break
	sleep 0.1
done
had=$(ls "$tmp/int" | tr '\n' ' ')
sleep 0.5
kill -INT $pid || true
rc=0; wait $pid || rc=$?
if [ "$rc" = 130 ] && grep -q 'whittle-precision-inputs-' <<< "$had" && [ -z "$(ls "$tmp/int")" ] && ! pgrep -f "$tmp/int-check.sh" > /dev/null; then
	ok "precision -j 3 interrupted: exit 130, its temporary folders ($had) removed, no check left"
else
	bad "precision interrupted: exit $rc, had [$had], left [$(ls "$tmp/int")]: $(tail -1 "$tmp/int.err")"
fi

# ---- build ----
fault=matmul-splitk-scalar:long_dot
bargs=(--load-inputs "$tmp/pf/long_dot" --precision fp16 --timing-tolerance inf --timing-iterations 1)
bcheck=(--check "$whittle" run '{model}' --load-inputs '{inputs}' --load-tactics '{tactics}' --precision fp16 --compare fp32 "${tol[@]}")
# sorted: the builds in good/ and bad/; answer: the printed answer without the fastest good
# build (fixed.json is picked by measured time) and the paths
sorted() { (cd "$1" && find good bad -name 'build_*.json' | sort | tr '\n' ' '); }
answer() { grep -v '^fixed:\|^report:\|^block list:' "$1"; }
for until in 10 good bad confirmed; do
	extra=()
	[ "$until" = 10 ] || extra=(--max-builds 10)
	for j in 1 3; do
		rc=0
		WHITTLE_FAULTY_TACTIC=$fault "$whittle" build "$tmp/pf/long_dot.onnx" "${bargs[@]}" --until $until "${extra[@]}" -j $j \
			--artifacts-dir "$tmp/b-$until-$j" "${bcheck[@]}" > "$tmp/b-$until-$j.out" 2> "$tmp/b.err" || rc=$?
		[ "$rc" = 0 ] || bad "build --until $until -j $j: exit $rc: $(tail -1 "$tmp/b.err")"
	done
	s1=$(sorted "$tmp/b-$until-1")
	if [ "$s1" = "$(sorted "$tmp/b-$until-3")" ] && diff <(answer "$tmp/b-$until-1.out") <(answer "$tmp/b-$until-3.out") > /dev/null &&
		grep -q 'bad/' <<< "$s1" && ! ls "$tmp/b-$until-3/work" > /dev/null 2>&1; then
		ok "build --until $until -j 3: the builds of -j 1 sorted alike [$s1], the same suspects and culprit"
	else
		bad "build --until $until: -j 1 [$s1] -j 3 [$(sorted "$tmp/b-$until-3")]; $(diff <(answer "$tmp/b-$until-1.out") <(answer "$tmp/b-$until-3.out") | head -3)"
	fi
done
if grep -q "^confirmed: layer 'long_dot' tactic 'matmul-splitk-scalar'" "$tmp/b-10-3.out"; then
	ok "build --until 10 -j 3: the planted tactic confirmed"
else
	bad "build --until 10 -j 3: the planted tactic not confirmed: $(cat "$tmp/b-10-3.out")"
fi
# an external builder and pinner, -j 3
for j in 1 3; do
	WHITTLE_FAULTY_TACTIC=$fault "$whittle" build "$tmp/pf/long_dot.onnx" --until 8 -j $j --artifacts-dir "$tmp/x-$j" \
		--build-cmd "'$whittle' run {model} --load-inputs $tmp/pf/long_dot --precision fp16 --save-tactics {tactics} --build-seed {seed} --timing-tolerance inf --timing-iterations 1 > /dev/null" \
		--pin-cmd true "${bcheck[@]}" > "$tmp/x-$j.out" 2> "$tmp/x.err" || bad "build --build-cmd -j $j: exit $?: $(tail -1 "$tmp/x.err")"
done
if [ "$(sorted "$tmp/x-1")" = "$(sorted "$tmp/x-3")" ] && diff <(answer "$tmp/x-1.out") <(answer "$tmp/x-3.out") > /dev/null && grep -q '^confirmed:' "$tmp/x-3.out"; then
	ok "build --build-cmd --pin-cmd -j 3: the answer of -j 1 [$(sorted "$tmp/x-3")]"
else
	bad "build --build-cmd: -j 1 [$(sorted "$tmp/x-1")] -j 3 [$(sorted "$tmp/x-3")]"
fi

# ---- repeat ----
for j in 1 3; do
	"$whittle" repeat --until bad -j $j --check sh -c 'exit 1' > "$tmp/r-$j.out" 2> /dev/null || bad "repeat --until bad -j $j: exit $?"
done
if cmp -s "$tmp/r-1.out" "$tmp/r-3.out" && grep -q '^repeat: 1 runs: 0 good, 1 bad' "$tmp/r-3.out"; then
	ok "repeat --until bad -j 3: stops at the first run as -j 1 (the runs in flight past it not counted)"
else
	bad "repeat --until bad: -j 1 $(head -1 "$tmp/r-1.out"), -j 3 $(head -1 "$tmp/r-3.out")"
fi
for j in 1 3; do
	rm -rf "$tmp/ov"
	OVERLAP_DIR=$tmp/ov "$whittle" repeat --until 6 -j $j --check "$tmp/overlap.sh" sh -c 'exit 1' > "$tmp/r-$j.out" 2> /dev/null ||
		bad "repeat --until 6 -j $j: exit $?"
	eval "most$j=$(most "$tmp/ov")"
done
if cmp -s "$tmp/r-1.out" "$tmp/r-3.out" && grep -q '^repeat: 6 runs: 0 good, 6 bad' "$tmp/r-3.out" && [ "$most1" = 1 ] && [ "$most3" -ge 2 ]; then
	ok "repeat --until 6 -j 3: the counts of -j 1, up to $most3 runs at once (-j 1: $most1)"
else
	bad "repeat --until 6: $(head -1 "$tmp/r-3.out"), at once: -j 1 $most1, -j 3 $most3"
fi

# ---- triage ----
tfields() { $py -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["outcome"], d.get("culprit"), d.get("layers"), d["builds"], d["good"], d["bad"])' "$1"; }
for j in 1 3; do
	WHITTLE_FAULTY_TACTIC=$fault "$whittle" triage "$tmp/pf/long_dot.onnx" --load-inputs "$tmp/pf/long_dot" --precision fp16 --builds 6 -j $j \
		--timing-tolerance inf --timing-iterations 1 "${tol[@]}" --artifacts-dir "$tmp/t-$j" --json > "$tmp/t-$j.json" 2> /dev/null ||
		bad "triage flaky -j $j: exit $?"
	"$whittle" triage "$tmp/tf/two_layers.onnx" --load-inputs "$tmp/tf/two_layers" --atol 0.5 --rtol 1e-2 --builds 2 -j $j \
		--no-graphviz --artifacts-dir "$tmp/u-$j" --json > "$tmp/u-$j.json" 2> /dev/null || bad "triage two_layers -j $j: exit $?"
done
if [ "$(tfields "$tmp/t-1.json")" = "$(tfields "$tmp/t-3.json")" ] &&
	[ "$(ls "$tmp/t-1/builds")" = "$(ls "$tmp/t-3/builds")" ]; then
	ok "triage -j 3 (flaky builds): the answer of -j 1 ($(tfields "$tmp/t-3.json"))"
else
	bad "triage flaky: -j 1 $(tfields "$tmp/t-1.json"), -j 3 $(tfields "$tmp/t-3.json")"
fi
if [ "$(tfields "$tmp/u-1.json")" = "$(tfields "$tmp/u-3.json")" ] && cmp -s "$tmp/u-1/layer-precisions.json" "$tmp/u-3/layer-precisions.json" &&
	cmp -s "$tmp/u-1/reduce/reduced.onnx" "$tmp/u-3/reduce/reduced.onnx"; then
	ok "triage -j 3 (a subgraph fails): the reduced model and layer precisions of -j 1 ($(tfields "$tmp/u-3.json"))"
else
	bad "triage two_layers: -j 1 $(tfields "$tmp/u-1.json"), -j 3 $(tfields "$tmp/u-3.json")"
fi

# ---- usage ----
usage() {
	local label=$1 rc=0
	shift
	"$@" > /dev/null 2> "$tmp/u.err" || rc=$?
	if [ "$rc" = 2 ] && [ "$(wc -l < "$tmp/u.err")" = 1 ]; then
		ok "$label: exit 2, $(cat "$tmp/u.err")"
	else
		bad "$label: exit $rc: $(cat "$tmp/u.err")"
	fi
}
usage "precision -j 0" "$whittle" precision "$tmp/ps/two_sites.onnx" --precision fp16 -j 0
usage "repeat --jobs 65" "$whittle" repeat --until 2 --jobs 65 --check true
usage "build --artifacts with -j 2" "$whittle" build "$tmp/pf/long_dot.onnx" --until 2 -j 2 --artifacts-dir "$tmp/ua" --artifacts a.txt "${bcheck[@]}"
usage "repeat --artifacts with -j 2" "$whittle" repeat --until 2 -j 2 --artifacts-dir "$tmp/ua" --artifacts a.txt --check true

echo "e2e-jobs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
