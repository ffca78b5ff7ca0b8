#!/bin/bash
# The layering the design rests on, checked on the sources and on the built objects:
# dependencies point graph -> executor -> reducer -> reducer/cli (front end), never back; no
# file outside executor/ includes an executor-private header (kernel.h, *-internal.h, ops/,
# or one whose first line says "Private to executor"); and the runtime calls no function of
# the builder (the builder drives the runtime through executor/build-internal.h), so the two
# do not call each other in a circle.
set -euo pipefail
: "${WHITTLE_SRC:?}" "${WHITTLE_BUILD:?}"
cd "$WHITTLE_SRC"
pass=0
fail=0
ok() { echo "ok $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# ---- includes ----
private_header() { # executor/<path>
	case $1 in
	executor/ops/* | *-internal.h | executor/kernel.h) return 0 ;;
	esac
	[ -f "$1" ] && head -1 "$1" | grep -q 'Private to executor'
}
# includes FILE... -> "file:line:header" for every quoted project include
includes() {
	grep -Hn -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z]+/' "$@" |
		sed -E 's/^([^:]+):([0-9]+):.*"([^"]+)".*/\1:\2:\3/'
}
n_bad=0
while IFS=: read -r file line hdr; do
	layer=${file%%/*}
	case $hdr in
	reducer/*) [ "$layer" = graph ] || [ "$layer" = executor ] && { bad "$file:$line includes $hdr (graph/ and executor/ never include the reducer)"; n_bad=$((n_bad + 1)); } ;;
	executor/*)
		if [ "$layer" = graph ]; then
			bad "$file:$line includes $hdr (graph/ never includes the executor)"; n_bad=$((n_bad + 1))
		elif [ "$layer" = reducer ] && private_header "$hdr"; then
			bad "$file:$line includes the executor-private $hdr"; n_bad=$((n_bad + 1))
		fi ;;
	esac
done < <(includes $(find graph executor reducer -name '*.[ch]' | sort))
[ "$n_bad" = 0 ] && ok "includes point graph -> executor -> reducer, and the reducer includes no executor-private header"
# the front end is the top: nothing below it includes it
if grep -rln '#include "reducer/cli/' graph executor reducer --include='*.[ch]' | grep -v '^reducer/cli/' | grep -q .; then
	bad "a file below the front end includes reducer/cli/: $(grep -rln '#include "reducer/cli/' graph executor reducer --include='*.[ch]' | grep -v '^reducer/cli/' | tr '\n' ' ')"
else
	ok "nothing below the front end includes reducer/cli/"
fi

# ---- calls, from the built objects ----
# objects of the library and the front end whose source still exists (a build tree keeps
# the objects of sources that were moved or deleted)
objs=$(find "$WHITTLE_BUILD/CMakeFiles" -name '*.c.o' -path '*/whittle_*.dir/*' | sort |
	while read -r o; do
		rel=${o#*.dir/}
		[ -f "$WHITTLE_SRC/${rel%.o}" ] && echo "$o"
	done)
[ -n "$objs" ] || { echo "FAIL no objects under $WHITTLE_BUILD/CMakeFiles (build first)"; exit 1; }
layer_of() { # object path -> graph | executor | reducer | cli
	case $1 in
	*/reducer/cli/*) echo cli ;;
	*/reducer/*) echo reducer ;;
	*/executor/*) echo executor ;;
	*/graph/*) echo graph ;;
	*) echo other ;;
	esac
}
defs=$(mktemp)
trap 'rm -f "$defs"' EXIT
for o in $objs; do
	nm --defined-only -g "$o" | awk -v L="$(layer_of "$o")" -v O="$(basename "$o" .c.o)" 'NF == 3 && $2 ~ /[TDBR]/ { print $3, L, O }'
done | sort -k1,1 > "$defs"
rank() { case $1 in graph) echo 0 ;; executor) echo 1 ;; reducer) echo 2 ;; cli) echo 3 ;; *) echo 9 ;; esac; }
n_bad=0
for o in $objs; do
	L=$(layer_of "$o")
	[ "$L" = other ] && continue
	r=$(rank "$L")
	while read -r sym dl dobj; do
		if [ "$(rank "$dl")" -gt "$r" ]; then
			bad "$(basename "$o" .o) ($L) calls $sym of $dobj.c ($dl): calls point graph -> executor -> reducer -> front end"
			n_bad=$((n_bad + 1))
		fi
	done < <(nm -u "$o" | awk '{ print $2 }' | sort -u | join - "$defs")
done
[ "$n_bad" = 0 ] && ok "no object calls into a layer above its own"

rt=$(echo "$objs" | grep '/executor/runtime\.c\.o$' || true)
bl=$(echo "$objs" | grep '/executor/builder\.c\.o$' || true)
if [ -z "$rt" ] || [ -z "$bl" ]; then
	bad "runtime.c.o or builder.c.o not found under $WHITTLE_BUILD"
else
	calls=$(comm -12 <(nm -u "$rt" | awk '{ print $2 }' | sort -u) <(nm --defined-only -g "$bl" | awk 'NF == 3 { print $3 }' | sort -u) | tr '\n' ' ')
	back=$(comm -12 <(nm -u "$bl" | awk '{ print $2 }' | sort -u) <(nm --defined-only -g "$rt" | awk 'NF == 3 { print $3 }' | sort -u) | tr '\n' ' ')
	if [ -n "$calls" ]; then
		bad "the runtime calls the builder: $calls(the builder drives the runtime, never the reverse)"
	elif [ -z "$back" ]; then
		bad "the builder calls no runtime function: has the build moved? (update this test)"
	else
		ok "the builder calls the runtime ($back), the runtime never calls the builder"
	fi
fi

echo "layering: $pass passed, $fail failed"
[ "$fail" = 0 ]
