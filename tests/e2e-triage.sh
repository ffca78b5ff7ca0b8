#!/bin/bash
# `whittle triage` end to end (issue 7, acceptance 3 and 4): on the fixtures of
# tests/gen-triage-fixtures.py it reaches the right branch of the flowchart
#  (a) a flaky injected tactic (WHITTLE_FAULTY_TACTIC=matmul-avx2:p2o.MatMul.1): builds
#      disagree, the culprit layer and tactic are confirmed, the fixed replay avoids it;
#  (b) a single-layer fp16 overflow: p2o.Pow.0 fails alone; keeping p2o.Pow.0 and its
#      consumer p2o.ReduceMean.0 (which converts the squares to fp16 when it runs in fp16)
#      in fp32 fixes it, and the written layer-precisions file makes `run` pass;
#  (c) a failure that needs two distant layers, each adding an error that only together
#      exceed the tolerance: the first failing layer p2o.Sub.1 passes alone, the reduction
#      keeps the two sources p2o.Sub.0 and p2o.Add.2 and the layer where they meet,
#      p2o.Sub.1 (p2o.Sub.0 nine layers before it); keeping either source in fp32 fixes
#      it (the search picks p2o.Sub.0); the diagnosis places the start at p2o.Sub.0 (most
#      error added relative to what it receives), which passes alone; once more with an
#      external --check;
#  (d) two independent overflow sites far apart: p2o.Pow.0 fails alone (single-layer
#      branch, no reduction), but only keeping both sites (each Pow and the ReduceMean that
#      reads its squares) in fp32 fixes it;
# each ends with a repro bundle whose command.sh, run as written (whittle from PATH), still
# fails (exit 1, "compare: FAIL"); the SVGs parse as XML (xml.etree) with one bar per layer,
# the first failing layer marked, node boxes named after the answer's layers (Graphviz's
# picture when `dot` is installed, whittle's own with --no-graphviz); report.md names the
# layers in words.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run
mkdir -p "$tmp/bin"
ln -s "$whittle" "$tmp/bin/whittle"

"$py" "$src/tests/gen-triage-fixtures.py" "$tmp/fx"
fx=$tmp/fx

# jq-like access to the JSON result: prints the Python expression's value
field() {
	"$py" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# Runs command.sh of a bundle as written: from anywhere, whittle found on PATH.
repro_fails() {
	local dir=$1
	(cd / && env -u WHITTLE PATH="$tmp/bin:$PATH" sh "$dir/repro/command.sh") >"$tmp/err" 2>&1 && return 1
	local rc=$?
	[ "$rc" -eq 1 ] && grep -q "FAIL" "$tmp/err"
}

# The SVG checks (xml.etree): the plot has one bar per compared layer, exactly one marked,
# it is the expected layer; the picture has one node box per layer of the answer, named.
svg_check() {
	"$py" - "$@" <<'EOF'
import sys, xml.etree.ElementTree as ET
plot, pic, marked, nbars = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
layers = sys.argv[5].split(",")
NS = "{http://www.w3.org/2000/svg}"
def classes(e):
    return e.get("class", "").split()
t = ET.parse(plot).getroot()
assert t.tag == NS + "svg", t.tag
bars = [e for e in t.iter(NS + "rect") if "bar" in classes(e)]
assert len(bars) == nbars, "%d bars, expected %d" % (len(bars), nbars)
m = [e for e in bars if "marked" in classes(e)]
if marked == "-":
    assert not m, "a bar is marked"
else:
    assert len(m) == 1 and m[0].get("data-layer") == marked, [e.get("data-layer") for e in m]
    labels = ["".join(e.itertext()) for e in t.iter(NS + "text") if "marker-label" in classes(e)]
    assert len(labels) == 1 and marked in labels[0], labels
    assert any(e.tag == NS + "line" and "marker" in classes(e) for e in t.iter()), "no marker line"
for e in bars:
    assert e.find(NS + "title") is not None, "bar without a title"
    assert float(e.get("height")) > 0
assert any("axis-label" in classes(e) for e in t.iter(NS + "text")), "no axis label"
assert any("title" in classes(e) for e in t.iter(NS + "text")), "no title"
g = ET.parse(pic).getroot()
assert g.tag == NS + "svg", g.tag
# whittle's picture: g.node for layers, g.tensor for tensors; Graphviz's: g.node for both,
# told apart by the DOT ids whittle gives them (layer<k>, tensor<k>) in their <title>
def is_layer(e):
    t = e.find(NS + "title")
    return "node" in classes(e) and not (t is not None and (t.text or "").startswith("tensor"))
nodes = [e for e in g.iter(NS + "g") if is_layer(e)]
assert len(nodes) == len(layers), "%d node boxes, expected %d" % (len(nodes), len(layers))
for n in nodes:
    assert n.find(".//" + NS + "text") is not None, "a node without a label"
    assert n.find(NS + "rect") is not None or n.find(NS + "path") is not None or n.find(NS + "polygon") is not None, "a node without a box"
texts = " ".join("".join(e.itertext()) for e in g.iter(NS + "text"))
for name in layers:
    assert name in texts, "layer %s not named in the picture" % name
print("svg ok: %d bars, %d nodes" % (len(bars), len(nodes)))
EOF
}

has_dot=0
command -v dot >/dev/null 2>&1 && has_dot=1

# ---- (b) single-layer overflow ----
d=$tmp/ov
if "$whittle" triage "$fx/overflow.onnx" --load-inputs "$fx/overflow" --atol 1e-2 --rtol 1e-2 --artifacts-dir "$d" --json \
	>"$tmp/ov.json" 2>"$tmp/err"; then
	ok "overflow: triage runs"
else
	bad "overflow: triage exits $?"
fi
if [ "$(field "$tmp/ov.json" 'r["outcome"]')" = single-layer ] &&
	[ "$(field "$tmp/ov.json" 'r["first_failing"]["layer"]')" = p2o.Pow.0 ] &&
	[ "$(field "$tmp/ov.json" 'r["where_it_starts"]["layer"] + "/" + r["where_it_starts"]["kind"]')" = p2o.Pow.0/overflow ] &&
	[ "$(field "$tmp/ov.json" 'r["layer_alone"]')" = fail ] &&
	[ "$(field "$tmp/ov.json" '",".join(r["layers"])')" = p2o.Pow.0 ] &&
	[ "$(field "$tmp/ov.json" '",".join(r["keep_fp32"])')" = p2o.Pow.0,p2o.ReduceMean.0 ]; then
	ok "overflow: single-layer branch, p2o.Pow.0 fails alone; keep p2o.Pow.0 and p2o.ReduceMean.0 in fp32"
else
	bad "overflow: wrong branch or layers: $(cat "$tmp/ov.json")"
fi
if "$whittle" run "$fx/overflow.onnx" --load-inputs "$fx/overflow" --precision fp16 --layer-precisions "$d/layer-precisions.json" \
	--compare fp32 --atol 1e-2 --rtol 1e-2 >"$tmp/err" 2>&1; then
	ok "overflow: the layer-precisions file makes run pass"
else
	bad "overflow: run with the layer-precisions file fails"
fi
if repro_fails "$d"; then
	ok "overflow: repro/command.sh run as written still fails (exit 1)"
else
	bad "overflow: repro/command.sh does not fail as it should"
fi
if grep -q 'The failure comes from layer `p2o.Pow.0` (`Pow`): its output overflows fp16 (max 65504)' "$d/report.md" &&
	grep -q 'Keeping 2 layers in fp32 makes the model pass (`Pow` 1, `ReduceMean` 1; every one in report.md' "$d/report.md" &&
	grep -qx '| 1 | `p2o.Pow.0` | `Pow` |' "$d/report.md" && grep -qx '| 2 | `p2o.ReduceMean.0` | `ReduceMean` |' "$d/report.md" &&
	grep -q 'Keep these 2 layers in fp32' "$d/report.md" && grep -q 'layer-errors.svg' "$d/report.md" &&
	grep -q 'subgraph.svg' "$d/report.md" && grep -q 'still fails' "$d/report.md"; then
	ok "overflow: report.md names the layer, the op, the overflow and what to do"
else
	bad "overflow: report.md lacks the finding"
fi
if svg_check "$d/layer-errors.svg" "$d/subgraph.svg" p2o.Pow.0 6 p2o.Pow.0 >"$tmp/err" 2>&1; then
	ok "overflow: SVGs are valid ($([ $has_dot = 1 ] && echo Graphviz || echo whittle) picture): $(cat "$tmp/err")"
else
	bad "overflow: SVG check"
fi

# ---- (c) two distant layers ----
d=$tmp/two
if "$whittle" triage "$fx/two_layers.onnx" --load-inputs "$fx/two_layers" --atol 0.5 --rtol 1e-2 --artifacts-dir "$d" --json \
	--no-graphviz >"$tmp/two.json" 2>"$tmp/err"; then
	ok "two layers: triage runs"
else
	bad "two layers: triage exits $?"
fi
if [ "$(field "$tmp/two.json" 'r["outcome"]')" = subgraph ] &&
	[ "$(field "$tmp/two.json" 'r["first_failing"]["layer"]')" = p2o.Sub.1 ] &&
	[ "$(field "$tmp/two.json" 'r["where_it_starts"]["layer"] + "/" + r["where_it_starts"]["kind"]')" = p2o.Sub.0/error ] &&
	[ "$(field "$tmp/two.json" 'r["layer_alone"]')" = pass ] &&
	[ "$(field "$tmp/two.json" '",".join(r["layers"])')" = p2o.Sub.0,p2o.Add.2,p2o.Sub.1 ] &&
	[ "$(field "$tmp/two.json" '",".join(r["keep_fp32"])')" = p2o.Sub.0 ]; then
	ok "two layers: first over the tolerance p2o.Sub.1, where it starts p2o.Sub.0 (passes alone), subgraph branch keeps p2o.Sub.0, p2o.Add.2 and p2o.Sub.1; p2o.Sub.0 in fp32 fixes it"
else
	bad "two layers: wrong branch or layers: $(cat "$tmp/two.json")"
fi
if [ "$("$py" -c 'import onnx,sys; print(",".join(n.name for n in onnx.load(sys.argv[1]).graph.node))' "$d/repro/model.onnx")" = p2o.Sub.0,p2o.Add.2,p2o.Sub.1 ]; then
	ok "two layers: repro/model.onnx holds exactly the three layers"
else
	bad "two layers: repro/model.onnx holds other layers"
fi
if repro_fails "$d"; then
	ok "two layers: repro/command.sh run as written still fails (exit 1)"
else
	bad "two layers: repro/command.sh does not fail as it should"
fi
# either source alone in fp32 fixes it; the one where they meet does not
for keep in p2o.Sub.0:0 p2o.Add.2:0 p2o.Sub.1:1; do
	printf '{"default": "fp16", "layers": {"%s": {"precision": "fp32"}}}\n' "${keep%:*}" >"$tmp/keep.json"
	set +e
	"$whittle" run "$fx/two_layers.onnx" --load-inputs "$fx/two_layers" --precision fp16 --layer-precisions "$tmp/keep.json" \
		--compare fp32 --atol 0.5 --rtol 1e-2 >"$tmp/err" 2>&1
	rc=$?
	set -e
	if [ "$rc" -eq "${keep#*:}" ]; then
		ok "two layers: with ${keep%:*} in fp32 run exits $rc"
	else
		bad "two layers: with ${keep%:*} in fp32 run exits $rc, expected ${keep#*:}"
	fi
done
if grep -q 'The failure needs 3 layers together: `p2o.Sub.0` (`Sub`), `p2o.Add.2` (`Add`), `p2o.Sub.1` (`Sub`)' "$d/report.md" &&
	grep -q 'passes on its own' "$d/report.md" && grep -q '9 layers earlier' "$d/report.md" &&
	grep -q 'layer-precisions.json' "$d/report.md"; then
	ok "two layers: report.md names both layers and says the first failing one passes alone"
else
	bad "two layers: report.md lacks the finding"
fi
# the marked layer is where the failure starts (the diagnosis): p2o.Sub.0 adds the most
# error relative to what it receives (tied with p2o.Add.2, and first in order)
if svg_check "$d/layer-errors.svg" "$d/subgraph.svg" p2o.Sub.0 11 p2o.Sub.0,p2o.Add.2,p2o.Sub.1 >"$tmp/err" 2>&1 &&
	grep -q '<g class="node highlight" data-layer="p2o.Sub.0"' "$d/subgraph.svg"; then
	ok "two layers: SVGs are valid (whittle's own picture): $(cat "$tmp/err")"
else
	bad "two layers: SVG check"
fi

# the same with an external check: the flowchart gives the same answer
d=$tmp/two-ext
if "$whittle" triage "$fx/two_layers.onnx" --load-inputs "$fx/two_layers" --atol 0.5 --rtol 1e-2 --artifacts-dir "$d" --json \
	--check "$whittle" run {model} --load-inputs {inputs} --layer-precisions {precisions} --compare {golden} --atol 0.5 --rtol 0.01 \
	>"$tmp/ext.json" 2>"$tmp/err" &&
	[ "$(field "$tmp/ext.json" 'r["outcome"]')" = subgraph ] &&
	[ "$(field "$tmp/ext.json" '",".join(r["layers"])')" = p2o.Sub.0,p2o.Add.2,p2o.Sub.1 ] &&
	[ "$(field "$tmp/ext.json" '",".join(r["keep_fp32"])')" = p2o.Sub.0 ] && repro_fails "$d"; then
	ok "two layers, external check: same branch and layers; its repro still fails"
else
	bad "two layers, external check: $(cat "$tmp/ext.json" 2>/dev/null)"
fi

# ---- (d) two independent overflow sites ----
d=$tmp/sites
if "$whittle" triage "$fx/two_sites.onnx" --load-inputs "$fx/two_sites" --atol 1e-2 --rtol 1e-2 --artifacts-dir "$d" --json \
	--no-graphviz >"$tmp/sites.json" 2>"$tmp/err"; then
	ok "two sites: triage runs"
else
	bad "two sites: triage exits $?"
fi
if [ "$(field "$tmp/sites.json" 'r["outcome"]')" = single-layer ] &&
	[ "$(field "$tmp/sites.json" 'r["first_failing"]["layer"]')" = p2o.Pow.0 ] &&
	[ "$(field "$tmp/sites.json" 'r["layer_alone"]')" = fail ] &&
	[ "$(field "$tmp/sites.json" '",".join(r["layers"])')" = p2o.Pow.0 ] &&
	[ "$(field "$tmp/sites.json" '",".join(r["keep_fp32"])')" = p2o.Pow.0,p2o.ReduceMean.0,p2o.Pow.1,p2o.ReduceMean.1 ]; then
	ok "two sites: single-layer branch, p2o.Pow.0 fails alone; keep both Pows and both ReduceMeans in fp32"
else
	bad "two sites: wrong branch or layers: $(cat "$tmp/sites.json")"
fi
if "$whittle" run "$fx/two_sites.onnx" --load-inputs "$fx/two_sites" --precision fp16 --layer-precisions "$d/layer-precisions.json" \
	--compare fp32 --atol 1e-2 --rtol 1e-2 >"$tmp/err" 2>&1; then
	ok "two sites: the layer-precisions file makes run pass"
else
	bad "two sites: run with the layer-precisions file fails"
fi
# one site kept in fp32 is not enough: the other one still overflows
for keep in p2o.Pow.0,p2o.ReduceMean.0 p2o.Pow.1,p2o.ReduceMean.1; do
	printf '{"default": "fp16", "layers": {"%s": {"precision": "fp32"}, "%s": {"precision": "fp32"}}}\n' "${keep%,*}" "${keep#*,}" >"$tmp/keep.json"
	set +e
	"$whittle" run "$fx/two_sites.onnx" --load-inputs "$fx/two_sites" --precision fp16 --layer-precisions "$tmp/keep.json" \
		--compare fp32 --atol 1e-2 --rtol 1e-2 >"$tmp/err" 2>&1
	rc=$?
	set -e
	if [ "$rc" -eq 1 ]; then
		ok "two sites: with only $keep in fp32 run still fails"
	else
		bad "two sites: with only $keep in fp32 run exits $rc, expected 1"
	fi
done
if repro_fails "$d"; then
	ok "two sites: repro/command.sh run as written still fails (exit 1)"
else
	bad "two sites: repro/command.sh does not fail as it should"
fi
if grep -q 'Keeping 4 layers in fp32 makes the model pass (`Pow` 2, `ReduceMean` 2; every one in report.md' "$d/report.md" &&
	[ "$(sed -n '/^## Layers to keep in fp32$/,/^## /p' "$d/report.md" | grep -c '^| [1-4] | `p2o\.\(Pow\|ReduceMean\)\.[01]` |')" = 4 ] &&
	grep -q 'Keep these 4 layers in fp32' "$d/report.md"; then
	ok "two sites: report.md names both layers to keep in fp32"
else
	bad "two sites: report.md lacks the finding"
fi
if svg_check "$d/layer-errors.svg" "$d/subgraph.svg" p2o.Pow.0 16 p2o.Pow.0 >"$tmp/err" 2>&1; then
	ok "two sites: SVGs are valid (whittle's own picture): $(cat "$tmp/err")"
else
	bad "two sites: SVG check"
fi

# ---- (a) flaky tactic ----
d=$tmp/flaky
faulty=matmul-avx2:p2o.MatMul.1
# every eligible tactic counts as equally fast, so the build seed alone decides: builds
# 0..11 differ reproducibly
if WHITTLE_FAULTY_TACTIC=$faulty "$whittle" triage "$fx/flaky_matmul.onnx" --load-inputs "$fx/flaky_matmul" --atol 1e-2 --rtol 1e-2 \
	--builds 12 --timing-tolerance inf --artifacts-dir "$d" --json >"$tmp/fl.json" 2>"$tmp/err"; then
	ok "flaky: triage runs"
else
	bad "flaky: triage exits $?"
fi
n_tac=$("$py" -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("layers", {})))' "$d/builds/build_0.json" 2>/dev/null || echo 0)
avx2=$("$whittle" inspect --tactics "$fx/flaky_matmul.onnx" 2>/dev/null | grep -c matmul-avx2 || true)
if [ "$n_tac" -eq 0 ]; then
	echo "SKIPPED: no tactics yet (the flaky case needs MatMul layers with several tactics)"
elif ! grep -q '"matmul-avx2"' "$d"/builds/build_*.json && [ "$avx2" -eq 0 ]; then
	echo "SKIPPED: flaky case: this CPU (or WHITTLE_ISA) offers no matmul-avx2 tactic"
else
	if [ "$(field "$tmp/fl.json" 'r["outcome"]')" = flaky-tactic ] &&
		[ "$(field "$tmp/fl.json" 'r["good"] > 0 and r["bad"] > 0')" = True ] &&
		[ "$(field "$tmp/fl.json" 'r["culprit"]["layer"]')" = p2o.MatMul.1 ] &&
		[ "$(field "$tmp/fl.json" 'r["culprit"]["tactic"]')" = matmul-avx2 ] &&
		[ "$(field "$tmp/fl.json" 'r["culprit"]["state"]')" = confirmed ]; then
		ok "flaky: builds disagree; p2o.MatMul.1 with matmul-avx2 is confirmed"
	else
		bad "flaky: wrong branch or culprit: $(cat "$tmp/fl.json")"
	fi
	if [ -f "$d/fixed.json" ] && ! "$py" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["layers"]["p2o.MatMul.1"]["tactic"] == "matmul-avx2")' "$d/fixed.json"; then
		bad "flaky: fixed.json uses the culprit"
	elif [ -f "$d/fixed.json" ]; then
		ok "flaky: fixed.json avoids the culprit"
	else
		bad "flaky: no fixed.json"
	fi
	if [ -f "$d/repro/tactics.json" ] && grep -q "WHITTLE_FAULTY_TACTIC='$faulty'" "$d/repro/command.sh" &&
		grep -q -- '--load-tactics tactics.json' "$d/repro/command.sh"; then
		ok "flaky: the repro bundle pins the bad build's tactics and keeps the fault injection"
	else
		bad "flaky: repro bundle incomplete"
	fi
	if "$whittle" run --help 2>/dev/null | grep -q -- --load-tactics; then
		if repro_fails "$d"; then
			ok "flaky: repro/command.sh run as written still fails (exit 1)"
		else
			bad "flaky: repro/command.sh does not fail as it should"
		fi
		if WHITTLE_FAULTY_TACTIC=$faulty "$whittle" run "$fx/flaky_matmul.onnx" --load-inputs "$fx/flaky_matmul" --precision fp16 \
			--load-tactics "$d/fixed.json" --compare fp32 --atol 1e-2 --rtol 1e-2 >"$tmp/err" 2>&1; then
			ok "flaky: the fixed replay passes"
		else
			bad "flaky: the fixed replay fails"
		fi
	else
		echo "SKIPPED: flaky repro command: whittle run has no --load-tactics yet"
	fi
	if grep -q 'tactic `matmul-avx2` that the builder picks for layer `p2o.MatMul.1` (`MatMul`)' "$d/report.md" &&
		grep -q 'fixed.json' "$d/report.md" && grep -q '## Tactic suspects' "$d/report.md"; then
		ok "flaky: report.md names the layer, op and tactic"
	else
		bad "flaky: report.md lacks the finding"
	fi
	if svg_check "$d/layer-errors.svg" "$d/subgraph.svg" p2o.MatMul.1 4 p2o.MatMul.1 >"$tmp/err" 2>&1; then
		ok "flaky: SVGs are valid: $(cat "$tmp/err")"
	else
		bad "flaky: SVG check"
	fi
fi

# ---- nothing fails; bad input ----
d=$tmp/passes
if "$whittle" triage "$fx/overflow.onnx" --load-inputs "$fx/overflow" --precision bf16 --atol 1e-2 --rtol 1e-2 --artifacts-dir "$d" \
	--json >"$tmp/p.json" 2>"$tmp/err" && [ "$(field "$tmp/p.json" 'r["outcome"]')" = passes ] &&
	grep -q 'Nothing fails' "$d/report.md"; then
	ok "passes: nothing to triage at bf16"
else
	bad "passes: $(cat "$tmp/p.json" 2>/dev/null)"
fi
set +e
"$whittle" triage "$fx/overflow.onnx" --builds 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
if [ $rc -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]; then
	ok "bad --builds: one error line, exit 2"
else
	bad "bad --builds: exit $rc"
fi
set +e
"$whittle" triage "$tmp/missing.onnx" --artifacts-dir "$tmp/x" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
if [ $rc -eq 3 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]; then
	ok "missing model: one error line, exit 3"
else
	bad "missing model: exit $rc"
fi

echo "e2e-triage: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
