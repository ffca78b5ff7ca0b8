# Sourced by tests/e2e-*.sh (its name keeps it out of their glob): the pieces every
# end-to-end script shares. Gives $tmp, a fresh temporary folder removed at exit; the
# counters $pass and $fail with ok LABEL and bad LABEL (which shows the end of the last
# command's stderr); and run CMD..., which runs a command with its stdout and stderr in
# $tmp/out and $tmp/err and its exit status in $rc, never stopping the script.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0
ok() {
	echo "ok   $1"
	pass=$((pass + 1))
}
bad() {
	echo "FAIL $1"
	[ -s "$tmp/err" ] && tail -c 800 "$tmp/err" | sed 's/^/    /'
	fail=$((fail + 1))
}
run() {
	rc=0
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
}
