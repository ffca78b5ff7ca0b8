#!/bin/bash
# Names from a model cannot inject into terminals or reports (issue 22, findings 5 and 6,
# acceptance 3). scripts/gen-hostile-names.py writes a model whose layer, tensor, input,
# output and weight names hold backticks, `|`, <script>, <img onerror>, newlines, ESC
# sequences (CSI 2J, OSC 52), C1 controls, DEL, bytes that are not UTF-8 and a 300-byte
# name; it sits in a folder whose name holds ESC, a backtick, `|` and HTML too. Every
# command that prints or reports runs on it: run (--compare fp32 --mark-all --report,
# --validate, --hash-outputs, --repeat, --profile, --save-outputs), compare, inspect (every
# --show mode, --tactics), reduce --artifacts-dir, precision, triage (--no-graphviz and
# default), build with a faulty tactic, diff-tactics on its replays, repeat, extract,
# sanitize. Checked by tests/hostile-names-check.py, which parses the bytes (no Markdown
# library): no control character (C0 but newline and tab, DEL, C1) and nothing that is not
# UTF-8 reaches stdout or stderr; every Markdown file (run's --report, report.md of reduce,
# build and triage, the repro bundles') has every name inside a code span, no live HTML and
# tables whose rows keep their columns. The JSON outputs still carry the names unchanged.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
chk=$src/tests/hostile-names-check.py

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

dir=$tmp/$'m\x1b[2J`x`|<b>PWN'
mkdir -p "$dir"
m=$dir/model.onnx
"$py" "$src/scripts/gen-hostile-names.py" "$m"

n=0
# term LABEL EXPECTED_RC CMD...: runs CMD, checks its exit status and that its stdout and
# stderr carry no control character; keeps them as $tmp/t<k>.out/.err for later checks
term() {
	local label=$1 want=$2
	shift 2
	n=$((n + 1))
	run "$@"
	cp "$tmp/out" "$tmp/t$n.out"
	cp "$tmp/err" "$tmp/t$n.err"
	if [ "$rc" != "$want" ]; then
		bad "$label: exit $rc, expected $want"
	elif ! "$py" "$chk" term "$tmp/out" "$tmp/err" >"$tmp/why"; then
		head -5 "$tmp/why"
		bad "$label: a control character reached the terminal"
	else
		ok "$label: exit $rc, no control character on stdout or stderr"
	fi
}
md() {
	local label=$1
	shift
	if ! "$py" "$chk" md "$@" >"$tmp/why" 2>&1; then
		head -8 "$tmp/why"
		bad "$label: Markdown"
	else
		ok "$label: names in code spans, no live HTML, tables intact"
	fi
}

# run, with every printing option
term "run --compare fp32 --mark-all --report" 1 "$whittle" run "$m" --precision fp16 --compare fp32 --mark-all --report "$tmp/run.md"
grep -qF 't\x1b[2J\x1b[HPASS PWN' "$tmp/out" && grep -qF 'sq\xc2\x9b31mPWN\xc2\x85' "$tmp/out" &&
	grep -qF 'out|`PWN`|\n| fake | row |\n# PWN heading' "$tmp/out" && ok "run: names shown escaped" || bad "run: names shown escaped"
md "run --report" "$tmp/run.md"
grep -c '^| [0-9]' "$tmp/run.md" | grep -qx 5 && ok "run --report: one row per tensor" || bad "run --report: one row per tensor"
term "run --validate --hash-outputs --mark-all" 1 "$whittle" run "$m" --precision fp16 --validate --hash-outputs --mark-all
term "run --repeat --mark-all" 0 "$whittle" run "$m" --repeat 2 --mark-all
term "run --profile" 0 "$whittle" run "$m" --profile --iterations 2
term "run --mark-all --save-outputs (fp32)" 0 "$whittle" run "$m" --mark-all --save-outputs "$tmp/a"
term "run --mark-all --save-outputs (fp16)" 0 "$whittle" run "$m" --mark-all --precision fp16 --save-outputs "$tmp/b"
term "compare" 1 "$whittle" compare "$tmp/b" "$tmp/a"
rm -f "$tmp/a"/out*
term "compare (missing tensors)" 1 "$whittle" compare "$tmp/b" "$tmp/a"

# inspect, every mode; --json keeps the names as they are
term "inspect" 0 "$whittle" inspect "$m"
for s in layers attrs weights; do
	term "inspect --show $s" 0 "$whittle" inspect "$m" --show "$s"
done
term "inspect --tactics" 0 "$whittle" inspect --tactics "$m"
# (JSON is for programs: jansson escapes C0 controls; DEL and C1 are valid JSON as they are)
run "$whittle" inspect "$m" --json
if [ "$rc" = 0 ] && "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); s=json.dumps(j); assert "\\u001b[2J\\u001b[HPASS PWN" in s and "\\u009b31mPWN" in s, s[:300]' "$tmp/out"; then
	ok "inspect --json: names unchanged (JSON escapes them)"
else
	bad "inspect --json: names unchanged"
fi

# reduce with the built-in check (fp16 overflows in Pow)
term "reduce --artifacts-dir" 0 "$whittle" reduce "$m" --precision fp16 -o "$tmp/reduced.onnx" --artifacts-dir "$tmp/red"
md "reduce: repro/report.md" "$tmp/red/repro/report.md"

# precision: the layer list on stdout
term "precision" 0 "$whittle" precision "$m" --precision fp16 -o "$tmp/prec.json"
grep -qF 'pow\x1b]52;c;UFdO\x07<script>' "$tmp/out" && ok "precision: the layer list names pow escaped" || bad "precision: layer list"

# triage (single-layer failure), with whittle's picture and with the default
term "triage --no-graphviz" 0 "$whittle" triage "$m" --precision fp16 --artifacts-dir "$tmp/tri" --no-graphviz --builds 2
md "triage: report.md" "$tmp/tri/report.md" "$tmp/tri/repro/report.md"
grep -qF 'pow\x1b]52;c;UFdO\x07<script>' "$tmp/tri/report.md" && ok "triage: report.md names the failing layer" || bad "triage: report.md names the layer"

# build with a faulty tactic: some builds bad, the MatMul's tactic the culprit
term "build" 0 env WHITTLE_FAULTY_TACTIC=matmul-avx2 "$whittle" build "$m" --until 8 --timing-tolerance inf --timing-iterations 1 --artifacts-dir "$tmp/bld"
md "build: report.md" "$tmp/bld/report.md"
term "diff-tactics" 0 "$whittle" diff-tactics --dir "$tmp/bld"
grep -qF 'mm\x7f\xc2\x90|<u>PWN`' "$tmp/out" && ok "diff-tactics: names the suspect layer escaped" || bad "diff-tactics: suspect layer"
term "triage (flaky tactic)" 0 env WHITTLE_FAULTY_TACTIC=matmul-avx2 "$whittle" triage "$m" --precision fp32 --timing-tolerance inf --timing-iterations 1 --artifacts-dir "$tmp/tri2" --builds 8
md "triage (flaky): report.md" "$tmp/tri2/report.md" "$tmp/tri2/repro/report.md"

# repeat: the check's command line and output
term "repeat" 0 "$whittle" repeat --until 2 --check sh -c 'printf "\033[2J\033]52;c;UFdO\007"; exit 1' $'x\x1b[2J\xc2\x9b'

# extract and sanitize name their output
term "extract" 0 "$whittle" extract "$m" -o "$dir/cut.onnx" --inputs $'t\x1b[2J\x1b[HPASS PWN' --outputs $'sq\xc2\x9b31mPWN\xc2\x85'
term "sanitize" 0 "$whittle" sanitize "$m" -o "$dir/clean.onnx"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
