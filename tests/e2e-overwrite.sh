#!/bin/bash
# Nothing the user has is ever overwritten (issue 22, findings 1, 2, 3, 11 and 14), on the
# models of scripts/gen-overwrite.py (model A in orig/ with weights in w.bin and w2.bin;
# model B in out/ with its own weights named w.bin):
#  - every command and every output option of the option table (tests/overwrite.py: aimed
#    at the input model, a link to it, each of its weights files, and into a folder holding
#    another model's same-named weights file): refused with one line, exit 2 or 3, and
#    every file the user had keeps its hash (findings 2, 3; acceptance 2);
#  - extracting A into out/ keeps B's w.bin: B computes what it did, the cut computes A
#    (finding 1), and says where it linked A's weights;
#  - --shared-dir that does not exist: one line, nothing created (finding 11);
#  - a weights file rewritten during a precision search or a reduction: no answer, one line
#    naming the file, exit 3; the reduce replay stays (finding 14).
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -uo pipefail
whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run
cd "$tmp"
one_line() {
	[ "$rc" -eq "$1" ] && [ "$(grep -c . "$tmp/err")" -eq 1 ] && grep -qE '^whittle: .+: .+ \(.+\)$' "$tmp/err"
}
# after progress lines: exit RC, one error line, the last
last_error() {
	[ "$rc" -eq "$1" ] && [ "$(grep -c '^whittle: ' "$tmp/err")" -eq 1 ] && tail -n 1 "$tmp/err" | grep -qE '^whittle: .+: .+ \(.+\)$'
}
hash_of() { "$whittle" run "$1" --hash-outputs 2>/dev/null | grep xxh3; }

# ---- acceptance 2: every command, every output option ----
mkdir loop
if /usr/bin/python3 "$src/tests/overwrite.py" "$src" "$whittle" "$tmp/loop" >loop.txt 2>&1; then
	ok "every output option of every command: $(grep -c '^ok' loop.txt) cases, nothing the user had changed"
else
	grep -v '^ok' loop.txt | head -20 | sed 's/^/    /'
	bad "output options: $(grep -c '^FAIL' loop.txt) cases failed (tests/overwrite.py)"
fi

# ---- finding 1: a different file of the linked name is kept ----
/usr/bin/python3 "$src/scripts/gen-overwrite.py" m >/dev/null
b_before=$(hash_of m/out/other.onnx)
a_hash=$(hash_of m/orig/model.onnx)
wb=$(sha256sum <m/out/w.bin)
run "$whittle" extract m/orig/model.onnx -o m/out/cut.onnx --inputs x --outputs y
if [ "$rc" -eq 0 ] && [ "$(sha256sum <m/out/w.bin)" = "$wb" ] && [ "$(hash_of m/out/other.onnx)" = "$b_before" ] &&
	[ "$(hash_of m/out/cut.onnx)" = "$a_hash" ] && [ m/out/w.bin.1 -ef m/orig/w.bin ] && [ m/out/w2.bin -ef m/orig/w2.bin ] &&
	grep -q "w.bin.1" "$tmp/err"; then
	ok "1: extract into a folder holding another model's w.bin: kept, the cut links w.bin.1 and computes the original, said so"
else
	bad "1: extract into out/: exit $rc, B $b_before -> $(hash_of m/out/other.onnx), cut $(hash_of m/out/cut.onnx) (want $a_hash)"
fi
# the same save again reuses its own link, and a save next to the original links nothing
run "$whittle" extract m/orig/model.onnx -o m/out/cut.onnx --inputs x --outputs y
run2=$rc
run "$whittle" sanitize m/orig/model.onnx -o m/orig/s.onnx
if [ "$run2" -eq 0 ] && [ "$rc" -eq 0 ] && [ ! -e m/out/w.bin.2 ] && [ ! -e m/orig/w.bin.1 ] &&
	[ "$(hash_of m/orig/s.onnx)" = "$a_hash" ]; then
	ok "1: saving again reuses the link (no w.bin.2); a save next to the original links nothing"
else
	bad "1: saving again: exit $run2/$rc, files: $(ls m/out m/orig | tr '\n' ' ')"
fi
# a weights file name given explicitly that another model's file has: refused, kept
run "$whittle" extract m/orig/model.onnx -o m/out/n.onnx --inputs x --outputs y --save-external-data=w.bin
if one_line 2 && [ "$(sha256sum <m/out/w.bin)" = "$wb" ] && [ ! -e m/out/n.onnx ]; then
	ok "1: --save-external-data=w.bin where another model's w.bin is: refused, kept"
else
	bad "1: --save-external-data=w.bin into out/: exit $rc"
fi

# ---- findings 2 and 3 by name (the loop above covers every option) ----
rm -rf m && /usr/bin/python3 "$src/scripts/gen-overwrite.py" m >/dev/null
sums=$(cat m/orig/* | sha256sum)
for args in "extract m/orig/model.onnx --inputs x --outputs h1 -o m/orig/model.onnx" "extract m/orig/model.onnx --inputs x --outputs h1 -o m/orig/w.bin" \
	"sanitize m/orig/model.onnx -o ./m/orig/model.onnx" "sanitize m/orig/model.onnx -o m/orig/x.onnx --save-external-data=w.bin" \
	"reduce m/orig/model.onnx -o m/orig/w2.bin --check false" "run m/orig/model.onnx --save-tactics m/orig/model.onnx" \
	"run m/orig/model.onnx --precision fp16 --compare fp32 --report m/orig/model.onnx" \
	"run m/orig/model.onnx --precision int8 --calibration-cache m/orig/model.onnx"; do
	# shellcheck disable=SC2086
	run "$whittle" $args
	if one_line 2 && [ "$(cat m/orig/* | sha256sum)" = "$sums" ]; then
		ok "2/3: whittle $args: refused, nothing changed"
	else
		bad "2/3: whittle $args: exit $rc"
	fi
	rm -rf m && /usr/bin/python3 "$src/scripts/gen-overwrite.py" m >/dev/null
done

# a file written inside a folder read: would replace an input tensor
"$whittle" run m/orig/model.onnx --save-inputs in >/dev/null 2>&1
xs=$(sha256sum <in/x.pb)
run "$whittle" run m/orig/model.onnx --load-inputs in --save-tactics in/x.pb
if one_line 2 && [ "$(sha256sum <in/x.pb)" = "$xs" ] && grep -q 'inside the folder that --load-inputs reads' "$tmp/err"; then
	ok "3: --save-tactics inside the --load-inputs folder: refused, the input kept"
else
	bad "3: --save-tactics in/x.pb with --load-inputs in: exit $rc"
fi

# ---- finding 11: --shared-dir is never created ----
run "$whittle" reduce m/orig/model.onnx -o r.onnx --launcher slurm --shared-dir "$tmp/typo/shared" --check false
if one_line 2 && [ ! -e "$tmp/typo" ] && grep -q 'does not exist' "$tmp/err"; then
	ok "11: --shared-dir that does not exist: refused in one line, nothing created"
else
	bad "11: --shared-dir missing: exit $rc, created: $([ -e "$tmp/typo" ] && echo yes || echo no)"
fi
touch afile
run "$whittle" reduce m/orig/model.onnx -o r.onnx --launcher slurm --shared-dir afile --check false
one_line 2 && grep -q 'not a folder' "$tmp/err" && ok "11: --shared-dir naming a file: refused" || bad "11: --shared-dir a file: exit $rc"

# ---- finding 14: a weights file rewritten during a search ----
/usr/bin/python3 "$src/scripts/gen-overwrite.py" f >/dev/null
# the check keeps layer m1 high to pass, and rewrites w.bin in place (same inode, new bytes)
rewrite='dd if=f/orig/w-other.bin of=f/orig/w.bin conv=notrunc status=none'
run "$whittle" precision f/orig/model.onnx --precision fp16 -o layers.json --check sh -c "$rewrite; grep -q '\"m1\"' \"\$1\"" sh {precisions}
if last_error 3 && grep -q 'w.bin: the weights file changed during the run' "$tmp/err" && [ ! -e layers.json ]; then
	ok "14: precision: weights rewritten during the search: no answer, one line naming the file"
else
	bad "14: precision with the weights rewritten: exit $rc"
fi
/usr/bin/python3 "$src/scripts/gen-overwrite.py" f >/dev/null
run "$whittle" precision f/orig/model.onnx --precision fp16 -o layers.json --check sh -c "grep -q '\"m1\"' \"\$1\"" sh {precisions}
[ "$rc" -eq 0 ] && grep -q '"m1"' layers.json && ok "14: precision: the same search with the weights kept answers m1" ||
	bad "14: precision, weights kept: exit $rc"
run "$whittle" reduce f/orig/model.onnx -o r14.onnx --save-replay r14.jsonl --check sh -c "$rewrite; exit 1"
if last_error 3 && grep -q 'w.bin: the weights file changed during the run' "$tmp/err" && [ ! -e r14.onnx ] &&
	[ "$(grep -c '"verdict"' r14.jsonl)" -ge 1 ]; then
	ok "14: reduce: weights rewritten during the search: no model, one line, the replay kept ($(grep -c '"verdict"' r14.jsonl) verdicts)"
else
	bad "14: reduce with the weights rewritten: exit $rc, replay: $(wc -l <r14.jsonl 2>/dev/null)"
fi
# replaced by rename (another inode): the same
/usr/bin/python3 "$src/scripts/gen-overwrite.py" f >/dev/null
run "$whittle" reduce f/orig/model.onnx -o r14.onnx --check sh -c "cp f/orig/w-other.bin f/orig/w.tmp && mv f/orig/w.tmp f/orig/w.bin; exit 1"
last_error 3 && grep -q 'changed during the run' "$tmp/err" && ok "14: reduce: weights replaced by rename: refused" ||
	bad "14: reduce, weights replaced by rename: exit $rc"

echo "e2e-overwrite: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
