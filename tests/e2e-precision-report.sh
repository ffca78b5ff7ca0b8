#!/bin/bash
# A long precision answer reported readably (issue 23, acceptance 4), on a generated model
# whose answer is 60 layers named like an exporter's module scopes, one scope hostile (an
# ESC sequence, a '|', a backtick; tests/gen-many-layers-fixture.py):
#  - `precision` finds the 60 layers (-o FILE and --json hold exactly them) and prints the
#    answer (stdout, and stderr from its summary line on) in at most 15 lines: counted by op
#    type and grouped by module scope, each scope escaped (no raw ESC byte);
#  - it says how to apply the answer on TensorRT 11 (whittle convert, --stronglyTyped) and
#    TensorRT 10 (--layerPrecisions, --precisionConstraints=obey);
#  - `triage` lists the answer once in report.md, as a table of 60 rows with every layer
#    in exactly one row and '|' escaped in its cell, no other line of report.md naming two
#    of its layers; its next step names the TensorRT 11 and 10 ways and not the removed
#    setPrecision API.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
tol=(--atol 1e-2 --rtol 1e-2)

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

"$py" "$src/tests/gen-many-layers-fixture.py" "$tmp" >"$tmp/expect.txt"
m=$tmp/sixty.onnx
data=(--load-inputs "$tmp/sixty")

# the layers the generator expects, as JSON (names hold control characters)
"$py" - "$tmp/expect.txt" >"$tmp/expect.json" <<'EOF'
import ast, json, sys
names = [ast.literal_eval(l.split(" ", 3)[3]) for l in open(sys.argv[1]) if l.startswith("expect ")]
json.dump(sorted(names), sys.stdout)
EOF

run "$whittle" precision "$m" --precision fp16 "${data[@]}" "${tol[@]}" -o "$tmp/keep.json"
answer_lines=$(($(wc -l <"$tmp/out") + $(sed -n '/^precision: keep /,$p' "$tmp/err" | wc -l)))
if [ "$rc" = 0 ] && "$py" -c '
import json, sys
want = json.load(open(sys.argv[1])); got = sorted(json.load(open(sys.argv[2]))["layers"])
sys.exit(0 if got == want and len(got) == 60 else "got %d layers" % len(got))' "$tmp/expect.json" "$tmp/keep.json"; then
	ok "precision finds the 60 layers; -o FILE holds exactly them"
else
	bad "precision on sixty (rc $rc)"
fi
if [ "$answer_lines" -le 15 ] && grep -q '^60 layers at fp32 (Mul 60), by module scope:' "$tmp/out" &&
	[ "$(grep -c '^  /m/model/layers\.[0-5]' "$tmp/out")" = 6 ]; then
	ok "the answer prints in $answer_lines lines: counted by op, six module scopes"
else
	bad "the answer takes $answer_lines lines: $(head -c 600 "$tmp/out")"
fi
if ! grep -q $'\x1b' "$tmp/out" "$tmp/err" && grep -qF '/m/model/layers.5\x1b[2J|`' "$tmp/out"; then
	ok "the hostile scope is escaped on the terminal"
else
	bad "a raw ESC reaches the terminal, or the scope is missing"
fi
if grep -q '^precision: TensorRT 11: whittle convert .* --layer-precisions .*keep.json -o OUT.onnx .*trtexec --onnx=OUT.onnx --stronglyTyped' "$tmp/err" &&
	grep -q '^precision: TensorRT 10: trtexec .* --fp16 --precisionConstraints=obey --layerPrecisions=' "$tmp/err"; then
	ok "precision says how to apply the answer on TensorRT 11 and 10"
else
	bad "no TensorRT 11/10 lines: $(tail -3 "$tmp/err")"
fi
# --json: every layer, whatever the count
run "$whittle" precision "$m" --precision fp16 "${data[@]}" "${tol[@]}" --json
if [ "$rc" = 0 ] && tail -1 "$tmp/out" | "$py" -c '
import json, sys
r = json.loads(sys.stdin.read()); want = json.load(open(sys.argv[1]))
sys.exit(0 if sorted(l["layer"] for l in r["layers"]) == want else 1)' "$tmp/expect.json"; then
	ok "--json lists all 60 layers"
else
	bad "--json result (rc $rc)"
fi

# triage: the answer once in report.md, as a table
run "$whittle" triage "$m" --precision fp16 "${data[@]}" "${tol[@]}" --artifacts-dir "$tmp/tri"
rep=$tmp/tri/report.md
if [ "$rc" = 0 ] && [ -f "$rep" ] && "$py" - "$rep" "$tmp/expect.json" <<'EOF'; then
import json, re, sys
rep = open(sys.argv[1], encoding="utf-8", errors="surrogateescape").read().split("\n")
want = json.load(open(sys.argv[2]))
def md(n):  # what wh_name_md_cell makes of these names: ESC as \x1b, '|' as \|, in a code span
    return n.replace("\x1b", "\\x1b").replace("|", "\\|")
heads = [i for i, l in enumerate(rep) if l == "## Layers to keep in fp32"]
assert len(heads) == 1, "headings: %d" % len(heads)
rows = []
for l in rep[heads[0] + 1:]:
    if l.startswith("## "):
        break
    if l.startswith("| ") and not l.startswith("| #") and not l.startswith("| ---"):
        rows.append(l)
assert len(rows) == 60, "rows: %d" % len(rows)
def cell(r):  # the layer cell's text: "| k | <code span> | <op> |", the fence and padding off
    span = r.split(" | ", 1)[1].rsplit(" | ", 1)[0]
    return span.strip("`").strip(" ") if span.startswith("``") else span.strip("`")
cells = [cell(r) for r in rows]
for n in want:
    assert cells.count(md(n)) == 1, "%r in %d rows" % (n, cells.count(md(n)))
assert not any("\x1b" in r for r in rows), "raw ESC in the table"
table = set(rows)
for l in rep:
    if l in table:
        continue
    named = [n for n in want if any(re.search(re.escape(x) + r"(?![\w.])", l) for x in (md(n), n))]
    assert len(named) <= 1, "a line lists %d kept layers: %s" % (len(named), l[:200])
EOF
	ok "report.md lists the 60 layers once, in one table, escaped; no inline list"
else
	bad "triage report.md (rc $rc)"
fi
if grep -q 'whittle convert .*--layer-precisions .*layer-precisions.json -o OUT.onnx.*trtexec --onnx=OUT.onnx --stronglyTyped' "$tmp/out" &&
	grep -q 'TensorRT 10: `trtexec .*--precisionConstraints=obey --layerPrecisions=' "$tmp/out" &&
	! grep -q 'setPrecision\|setOutputType' "$tmp/out" "$rep"; then
	ok "triage's next step: TensorRT 11 and 10, not setPrecision"
else
	bad "triage next step: $(grep '^next' "$tmp/out" | head -c 600)"
fi
if ! grep -q $'\x1b' "$tmp/out"; then
	ok "triage's terminal output holds no raw ESC"
else
	bad "a raw ESC reaches the terminal from triage"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
