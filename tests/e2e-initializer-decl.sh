#!/bin/bash
# A tensor that is an initializer and also declared, as a graph input (the initializer is
# its default value, which ONNX allows), a value_info or a graph output
# (fixtures/models/initializer-*.onnx, made by tests/gen-initializer-fixtures.py; they also
# seed the fuzz-model corpus, whose finding this was: the declaration replaced the data's
# shape, and the saved model did not load again):
#  - each initializer-ok-* model loads and saves unchanged (tests/roundtrip-compare.py:
#    the declarations as declared, the initializer with its own dims), and saving the
#    saved model again gives the same bytes (fuzz-model's check);
#  - each initializer-bad-* model, whose declaration the data contradicts, is refused in
#    one line, exit 3;
#  - the fixtures in the tree are what the generator writes.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC, WHITTLE_BUILD.
set -uo pipefail
whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
tool=${WHITTLE_BUILD:?set by ctest}/tests/tool-roundtrip
py=/usr/bin/python3
. "$src/tests/lib-e2e.sh"

fx=$src/fixtures/models
run "$py" "$src/tests/gen-initializer-fixtures.py" "$tmp/gen"
stale=""
for f in "$tmp"/gen/*.onnx; do
	cmp -s "$f" "$fx/$(basename "$f")" || stale="$stale $(basename "$f")"
done
if [ "$rc" -eq 0 ] && [ -z "$stale" ]; then ok "the fixtures are the generator's"; else bad "fixtures differ from the generator's:$stale (run tests/gen-initializer-fixtures.py)"; fi

mkdir -p "$tmp/saved" "$tmp/again"
n_ok=0
for f in "$fx"/initializer-ok-*.onnx; do
	n_ok=$((n_ok + 1))
	name=$(basename "$f" .onnx)
	mkdir -p "$tmp/saved/$name" "$tmp/again/$name"
	run "$tool" "$tmp/saved/$name" "$f"
	saved=$tmp/saved/$name/0.onnx
	if [ "$rc" -ne 0 ]; then
		bad "$name: does not load and save: $(cat "$tmp/out")"
		continue
	fi
	cp "$tmp/out" "$tmp/pairs"
	run "$py" "$src/tests/roundtrip-compare.py" compare "$tmp/pairs"
	if [ "$rc" -eq 0 ]; then ok "$name: saved unchanged"; else bad "$name: saved model differs: $(head -5 "$tmp/out" | tr '\n' ' ')"; fi
	run "$tool" "$tmp/again/$name" "$saved"
	if [ "$rc" -eq 0 ] && cmp -s "$saved" "$tmp/again/$name/0.onnx"; then
		ok "$name: the saved model loads again and saves to the same bytes"
	else
		bad "$name: saving the saved model: exit $rc, $(cat "$tmp/out")"
	fi
done

n_bad=0
for f in "$fx"/initializer-bad-*.onnx; do
	n_bad=$((n_bad + 1))
	name=$(basename "$f" .onnx)
	run "$whittle" inspect "$f"
	if [ "$rc" -eq 3 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "tensor 'w': its declared type or shape differs from its initializer's" "$tmp/err"; then
		ok "$name: refused in one line, exit 3"
	else
		bad "$name: exit $rc, $(head -2 "$tmp/err" | tr '\n' ' ')"
	fi
done
[ "$n_ok" -ge 7 ] && [ "$n_bad" -ge 5 ] || bad "only $n_ok ok and $n_bad bad fixtures under $fx"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
