# man/luaprof.bash - bash completion for luaprof, installed by `make
# install` as share/bash-completion/completions/luaprof.  The commands and
# each command's options are read from luaprof's own --help when asked,
# so that they are the binary's, whatever its version.
_luaprof()
{
	local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]:-} words
	if [ "$COMP_CWORD" -eq 1 ]; then
		words=$("${COMP_WORDS[0]}" --help 2>/dev/null |
			awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
		COMPREPLY=($(compgen -W "$words --help --version" -- "$cur"))
		return
	fi
	case $cur in
	-*)
		words=$("${COMP_WORDS[0]}" "$cmd" --help 2>&1 |
			grep -oE -- '(^|[ [,])--?[a-zA-Z][a-zA-Z-]*' | sed 's/^[ [,]//' | sort -u)
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
		;;
	*)
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	esac
}
complete -o filenames -F _luaprof luaprof
