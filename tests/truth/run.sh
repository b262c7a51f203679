#!/usr/bin/env bash
# tests/truth/run.sh - compiled-code placement held to measured truth.
#
# For every program gen.lua writes (or those named), the true share of
# each function (time.lua: ablation, on this machine, now), luaprof's
# share (its self time in a recording) and jit.p's (LuaJIT's own
# profiler, -jp=f, run on its own), side by side, with each profiler's
# error.  A share is of the samples whose leafmost Lua frame is one of
# the program's functions (f, g, h, k); samples luaprof marks as inlined
# code it cannot place ("f [inlined: g, h]") count as "unplaced", for no
# function.  The truth is each function's work; the program's shape (its
# loop, calls and comparisons), which no ablation saves, may be any of
# theirs, so a share is right from the work share to the work share and
# all of the shape, and its error is its distance from there.  Per
# program, MAE is the mean error over the functions LuaJIT kept a
# comparison in (a snapshot inside them); "all" over every function.
#
#   usage: tests/truth/run.sh [-o DIR] [-s SECONDS] [-l LUAJIT] [PROGRAM...]
#   DIR (default: a new temporary directory) keeps the programs,
#   recordings and DIR/results: one line per function,
#     PROGRAM FN GUARDS WORK SPREAD SHAPE LUAPROF JITP
#   (WORK "-" where the program has no truth) and one per program,
#     PROGRAM - unplaced SHARE.
set -u
cd "$(dirname "$0")/../.."

dir= secs=3 lj=${LUAJIT:-/usr/bin/luajit}
LUAPROF=${LUAPROF:-$PWD/build/luaprof}
while getopts o:s:l: opt; do
	case $opt in
	o) dir=$OPTARG ;;
	s) secs=$OPTARG ;;
	l) lj=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ -n "$dir" ] || dir=$(mktemp -d /tmp/luaprof-truth.XXXXXX)
mkdir -p "$dir" || exit 1
$lj tests/truth/gen.lua "$dir" || exit 1
programs=${*:-$(cut -d" " -f1 "$dir/programs")}

# shares FILE.lua: luaprof's self share of each of the program's
# functions, from a folded report on stdin: the leafmost frame of FILE,
# by name ("unplaced" for a frame marked [inlined: ...]).
shares() {
	awk -v file="$1:" '{ c = $NF; st = $0; sub(/ [0-9]+$/, "", st); n = split(st, fr, ";")
		for (i = n; i >= 1; i--) if (index(fr[i], "(" file) || index(fr[i], "/" file)) break
		if (i < 1) next
		name = fr[i]; sub(/ \(.*/, "", name)
		if (name ~ /\[inlined/) name = "unplaced"
		if (name == "main") next
		self[name] += c; tot += c }
		END { for (k in self) printf "%s %.4f\n", k, self[k] / tot }'
}

# jp_shares: jit.p's raw counts by function (-jp=frm0) as shares, its
# main chunk left out as ours is.
jp_shares() {
	awk '$1 ~ /^[0-9]+$/ && $2 !~ /:0$/ { c[$2] += $1; tot += $1 }
		END { for (k in c) printf "%s %.4f\n", k, c[k] / tot }'
}

: >"$dir/results"
for p in $programs; do
	fns=$(awk '{ printf "%s ", $1 }' "$dir/$p.fns")
	truth=$(awk -v p="$p" '$1 == p { print $2 }' "$dir/programs")
	$lj tests/truth/time.lua "$dir" "$p" $fns >"$dir/$p.truth" || exit 1
	$LUAPROF record -q -F 999 -o "$dir/$p.lp" -- $lj "$dir/$p.lua" "$secs" 2>"$dir/$p.err" ||
		{ cat "$dir/$p.err" >&2; exit 1; }
	$LUAPROF report --format folded "$dir/$p.lp" 2>/dev/null | shares "$p.lua" >"$dir/$p.ours"
	(cd "$dir" && $lj -jp=frm0i1,"$p.jp" "$p.lua" "$secs") || exit 1
	jp_shares <"$dir/$p.jp" >"$dir/$p.theirs"
	awk -v p="$p" -v truth="$truth" 'FILENAME ~ /fns$/ { g[$1] = $2; order[++n] = $1; next }
		FILENAME ~ /truth$/ { t[$1] = $2; sp[$1] = $3; next }
		FILENAME ~ /ours$/ { o[$1] = $2; next }
		{ j[$1] = $2 }
		END { shape = t["shape"] > 0 ? t["shape"] : 0
			for (i = 1; i <= n; i++) { f = order[i]
			printf "%s %s %d %s %.4f %.4f %.4f %.4f\n", p, f, g[f],
				truth == "none" ? "-" : sprintf("%.4f", t[f]), sp[f], shape, o[f] + 0, j[f] + 0 }
			printf "%s - unplaced %.4f\n", p, o["unplaced"] + 0 }' \
		"$dir/$p.fns" "$dir/$p.truth" "$dir/$p.ours" "$dir/$p.theirs" >>"$dir/results"
done

# The table, in points: each function's work share (truth) and the
# shape no ablation saves; a profiler's share is right anywhere from the
# work share to the work share and all of the shape (which function the
# shape is not known), and its error is its distance from that range.
awk 'function err(x, lo, hi) { return x < lo ? lo - x : x > hi ? x - hi : 0 }
	$2 == "-" { un[$1] = $4; next }
	{ if (!($1 in seen)) { seen[$1] = 1; progs[++np] = $1; shape[$1] = $6 }
	  if ($4 == "-") {
		row[$1] = row[$1] sprintf("  %-3s %17s %7.1f %6.1f\n", $2, "-", 100 * $7, 100 * $8)
		next
	  }
	  row[$1] = row[$1] sprintf("  %-3s %5.1f ±%3.1f ..%5.1f %7.1f %6.1f\n", $2, 100 * $4, 100 * $5,
		100 * ($4 + $6), 100 * $7, 100 * $8)
	  eo = err($7, $4, $4 + $6); ej = err($8, $4, $4 + $6)
	  ao[$1] += eo; aj[$1] += ej; na[$1]++
	  if ($3 > 0) { so[$1] += eo; sj[$1] += ej; ns[$1]++ } }
	END { printf "%-8s %-3s %17s %7s %6s\n", "program", "fn", "truth (work .. +shape)", "luaprof", "jit.p"
		for (i = 1; i <= np; i++) { p = progs[i]
			printf "%s (shape %.1f, unplaced %.1f)\n%s", p, 100 * shape[p], 100 * un[p], row[p]
			if (!na[p]) continue
			printf "  MAE, functions with a comparison: luaprof %.1f, jit.p %.1f; all: %.1f, %.1f\n",
				ns[p] ? 100 * so[p] / ns[p] : 0, ns[p] ? 100 * sj[p] / ns[p] : 0,
				100 * ao[p] / na[p], 100 * aj[p] / na[p]
			tso += so[p]; tsj += sj[p]; tns += ns[p]; tao += ao[p]; taj += aj[p]; tna += na[p] }
		printf "mean absolute error, functions with a comparison: luaprof %.1f, jit.p %.1f points; all functions: %.1f, %.1f\n",
			tns ? 100 * tso / tns : 0, tns ? 100 * tsj / tns : 0, 100 * tao / tna, 100 * taj / tna }' "$dir/results"
echo "(files in $dir)"
