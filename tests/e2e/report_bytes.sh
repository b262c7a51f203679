# report_bytes.sh - every report mode, byte for byte, on a wide trace.
# The report's hot paths (stacks, symbolization, interning, each format's
# writer) are tuned for speed (bench/views.sh); a faster pass must write
# the very same bytes.  bench/synth writes two traces of 200,000 samples
# (about 39,000 distinct stacks: Lua under host stacks, native, kernel,
# VM pseudo-frames), and each mode's output is compared with the SHA-256
# kept in tests/e2e/report_bytes.sha256.  A change meant to alter the
# output regenerates that file with `bash tests/e2e/report_bytes.sh
# --update` and says why in its commit.  `info` is left out: it prints the
# trace's own sizes, which the writer's encoding decides.  No root needed.
. tests/lib.sh

SUMS=$PWD/tests/e2e/report_bytes.sha256
make --no-print-directory -s build/bench/synth >/dev/null ||
	{ fail "build/bench/synth builds"; exit 1; }
# The traces under fixed names: some formats print the trace's name.
cd "$TMP" || exit 1
"$OLDPWD"/build/bench/synth -n 200000 a.lp && "$OLDPWD"/build/bench/synth -n 200000 -s 2 b.lp &&
	"$OLDPWD"/build/bench/synth -n 100000 -k 10 n.lp ||
	{ fail "synth writes the traces"; exit 1; }

# NAME ARGS...: one mode's output, "NAME SHA256".
modes() {
	cat <<'EOF'
top		report a.lp
top-all-lines	report -n 0 --lines a.lp
folded		report --format folded a.lp
folded-comm	report --format folded --comm a.lp
folded-window	report --format folded --from 10 --to 30 a.lp
folded-merged	report --format folded a.lp b.lp
folded-narrow	report --format folded n.lp
folded-lines	report --format folded --lines a.lp
callgraph	report --format callgraph a.lp
callgraph-all	report --format callgraph --percent-limit 0 --comm a.lp
flamegraph	report --format flamegraph a.lp
flamegraph-inv	report --format flamegraph --inverted --lines a.lp
pprof		report --format pprof a.lp
pprof-comm	report --format pprof --comm --lines a.lp
speedscope	report --format speedscope a.lp
speedscope-comm	report --format speedscope --comm a.lp
by-line		report --by line -n 0 a.lp
annotate	report --annotate -n 0 a.lp
vmstate		report --vmstate -n 0 a.lp
diff		diff -n 0 a.lp b.lp
diff-rate	diff --per-second a.lp b.lp
diff-folded	diff --format folded a.lp b.lp
diff-flamegraph	diff --format flamegraph a.lp b.lp
EOF
}

got=$TMP/got.sha256
: >"$got"
while read -r name args; do
	# shellcheck disable=SC2086 # args are words
	if ! $LUAPROF $args -o out 2>err; then
		fail "$name: luaprof $args" "$(head -c 300 err)"
		continue
	fi
	echo "$name $(sha256sum <out | cut -d' ' -f1)" >>"$got"
done < <(modes)

if [ "${1:-}" = --update ]; then
	cp "$got" "$SUMS"
	echo "# $TEST: wrote $SUMS"
	exit 0
fi
while read -r name sum; do
	want=$(awk -v n="$name" '$1 == n { print $2 }' "$SUMS")
	if [ -z "$want" ]; then
		fail "$name: no checksum in $SUMS (--update)"
	elif [ "$sum" = "$want" ]; then
		ok "$name: the same bytes"
	else
		fail "$name: output differs" "sha256 $sum, kept $want"
	fi
done <"$got"
