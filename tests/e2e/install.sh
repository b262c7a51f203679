# install.sh - `make install` as a user runs it, into a scratch DESTDIR:
# the binary runs; each man page renders with `man -l` and holds every
# option its command's --help lists (the pages are made from --help by
# help2man, man/man.sh: they must never disagree); bash completion
# completes commands and a command's options.
. tests/lib.sh

root=$TMP/root
make --no-print-directory install DESTDIR=$root PREFIX=/usr >$TMP/install.log 2>&1
check "make install DESTDIR=... PREFIX=/usr exits 0" test $? -eq 0
bin=$root/usr/bin/luaprof
check "the binary is installed, executable" test -x $bin
check "... and runs" sh -c "$bin --version | grep -q '^luaprof [0-9]'"
man1=$root/usr/share/man/man1
for page in luaprof luaprof-record luaprof-report luaprof-diff luaprof-info luaprof-heap luaprof-check; do
	check "$page.1 is installed" test -f $man1/$page.1
	MANWIDTH=200 man -l $man1/$page.1 >$TMP/$page.txt 2>$TMP/$page.err
	check "man -l $page.1 renders" test -s $TMP/$page.txt
	cmd=${page#luaprof}
	cmd=${cmd#-}
	# Every long option --help names, on the page.
	missing=$($bin $cmd --help 2>&1 | grep -oE -- '--[a-z][a-z-]*' | sort -u |
		while read -r opt; do grep -qF -- "$opt" $TMP/$page.txt || echo "$opt"; done)
	n=$($bin $cmd --help 2>&1 | grep -oE -- '--[a-z][a-z-]*' | sort -u | wc -l)
	check_num "$page: options of --help" "$n" ">=" 1
	check "$page: every option of --help on the page${missing:+ (missing: $missing)}" \
		test -z "$missing"
done
check "luaprof.1 names the commands' pages" grep -q "luaprof-record(1)" $TMP/luaprof.txt
comp=$root/usr/share/bash-completion/completions/luaprof
check "bash completion is installed" test -f $comp
got=$(PATH=$root/usr/bin:$PATH bash -c ". $comp; COMP_WORDS=(luaprof rec); COMP_CWORD=1;
	_luaprof; echo \${COMPREPLY[*]}")
check "bash completion: luaprof rec<TAB> is record" test "$got" = record
got=$(PATH=$root/usr/bin:$PATH bash -c ". $comp; COMP_WORDS=(luaprof record --stall-t);
	COMP_CWORD=2; _luaprof; echo \${COMPREPLY[*]}")
check "bash completion: luaprof record --stall-t<TAB> is --stall-threshold" \
	test "$got" = --stall-threshold
