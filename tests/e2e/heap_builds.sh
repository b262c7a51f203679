# heap_builds.sh - `luaprof heap` on every LuaJIT build of
# build/luajit-builds/builds.txt that runs here (tests/luajit-builds.sh):
# the offsets the walk used (heap -v), which it derives from the build's
# layout and the GC object structs of its reference width, are held to
# the build's DWARF (gdb on its .debug file); and the snapshot of
# samples/lua/leak.lua adds up to LuaJIT's own g->gc.total within 3%
# (what lies outside the objects: GG_State, the string table's array, the
# JIT's buffers), most of it under _G;cache;users.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
tests/luajit-builds.sh || { fail "LuaJIT builds (tests/luajit-builds.sh)"; exit 1; }
BUILDS=$PWD/build/luajit-builds/builds.txt
if [ ! -s "$BUILDS" ]; then
	fail "no LuaJIT builds ($BUILDS: tests/luajit-builds.sh)"
	exit 0
fi

# The same offsets from DWARF, as heap -v names them: "name=value" lines.
dwarf_layout() { # DEBUGFILE
	local g="((struct global_State *)0)" strtab=str.tab strmask=str.mask
	gdb -batch -ex "p sizeof($g->str)" "$1" >/dev/null 2>&1 || { strtab=strhash strmask=strmask; }
	local -a ex=(
		"g.gc.total=&$g->gc.total" "g.gc.state=&$g->gc.state" "g.gc.root=&$g->gc.root"
		"g.strtab=&$g->$strtab" "g.strmask=&$g->$strmask" "g.vmstate=&$g->vmstate"
		"g.mainthref=&$g->mainthref" "g.registrytv=&$g->registrytv" "g.gcroot=&$g->gcroot"
		"L.stack=&((lua_State *)0)->stack" "L.env=&((lua_State *)0)->env"
		"L.stacksize=&((lua_State *)0)->stacksize" "sizeof.lua_State=sizeof(lua_State)"
		"tab.metatable=&((GCtab *)0)->metatable" "tab.node=&((GCtab *)0)->node"
		"tab.asize=&((GCtab *)0)->asize" "tab.hmask=&((GCtab *)0)->hmask"
		"sizeof.GCtab=sizeof(GCtab)" "udata.env=&((GCudata *)0)->env"
		"udata.len=&((GCudata *)0)->len" "udata.metatable=&((GCudata *)0)->metatable"
		"sizeof.GCudata=sizeof(GCudata)" "fn.env=&((GCfuncL *)0)->env"
		"fn.pc=&((GCfuncL *)0)->pc" "fn.uvptr=&((GCfuncL *)0)->uvptr"
		"fn.upvalue=&((GCfuncC *)0)->upvalue" "upval.v=&((GCupval *)0)->v"
		"sizeof.GCupval=sizeof(GCupval)" "str.len=&((GCstr *)0)->len"
		"sizeof.GCstr=sizeof(GCstr)" "sizeof.GCcdata=sizeof(GCcdata)"
		"g.ctype_state=&$g->ctype_state" "sizeof.CType=sizeof(CType)"
		"trace.nins=&((GCtrace *)0)->nins" "trace.nk=&((GCtrace *)0)->nk"
		"trace.nsnap=&((GCtrace *)0)->nsnap" "trace.nsnapmap=&((GCtrace *)0)->nsnapmap"
		"trace.startpt=&((GCtrace *)0)->startpt" "sizeof.GCtrace=sizeof(GCtrace)"
		"sizeof.SnapShot=sizeof(SnapShot)"
	)
	local args=() e
	for e in "${ex[@]}"; do
		args+=(-ex "printf \"${e%%=*}=%d\\n\", (long)(${e#*=})")
	done
	gdb -batch "${args[@]}" "$1" 2>/dev/null
}

n=0
while read -r name bin debug refs rest; do
	case $name in *-lib) continue ;; esac
	[ -x "$bin" ] && "$bin" -e 'os.exit(0)' 2>/dev/null || continue
	n=$((n + 1))
	"$bin" samples/lua/leak.lua 10 $TMP/$name.count 1 >/dev/null 2>&1 &
	pid=$!
	CLEANUP_PIDS+=($pid)
	sleep 1.5
	$LUAPROF heap -v -p $pid -o $TMP/$name.lp >$TMP/$name.out 2>&1
	rc=$?
	kill $pid
	wait $pid 2>/dev/null
	if [ $rc -ne 0 ]; then
		fail "$name: heap exits 0" "$(head -c 300 $TMP/$name.out)"
		continue
	fi
	read -r total gct < <(sed -n 's/.* objects, \([0-9]*\) bytes (LuaJIT counts \([0-9]*\) in all).*/\1 \2/p' $TMP/$name.out)
	check_num "$name: the objects' bytes / g->gc.total" "$(share "${total:-0}" "${gct:-1}")" ">=" 0.97 &&
		check_num "$name: ... at most all of it" "$(share "${total:-0}" "${gct:-1}")" "<=" 1.0
	$LUAPROF report --kind heap --format folded $TMP/$name.lp >$TMP/$name.folded
	users=$(awk '/^_G;cache;users;/ { n += $NF } END { print n + 0 }' $TMP/$name.folded)
	check_num "$name: most of it is under _G;cache;users" \
		"$(share "$users" "$(folded_total $TMP/$name.folded)")" ">=" 0.9
	[ -f "$debug" ] || continue
	tr ' ' '\n' <$TMP/$name.out | grep -E '^[a-zA-Z._]+=[0-9]+$' | grep -v '^ref=' | sort >$TMP/$name.ours
	dwarf_layout "$debug" | sort >$TMP/$name.dwarf
	if [ -s $TMP/$name.dwarf ] && [ "$(wc -l <$TMP/$name.dwarf)" -eq "$(wc -l <$TMP/$name.ours)" ] &&
		cmp -s $TMP/$name.ours $TMP/$name.dwarf; then
		ok "$name: every offset the walk used is the DWARF's ($(wc -l <$TMP/$name.ours))"
	else
		fail "$name: offsets differ from the DWARF's" \
			"$(diff $TMP/$name.dwarf $TMP/$name.ours | grep '^[<>]' | tr '\n' ' ' | head -c 400)"
	fi
done <"$BUILDS"
check_num "builds tried" $n ">=" 10
