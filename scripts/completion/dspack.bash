# bash completion for dspack, dsbench and dssync (installed under each name in
# share/bash-completion/completions). It asks the binary itself: commands from `TOOL --help`,
# flags from `TOOL COMMAND --help` (dsbench io: fio's options too), so it is as current as the
# tool. Paths complete as files otherwise.
_dspack_complete() {
  local tool=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} sub="" w
  local help
  help=$("$tool" --help 2>/dev/null) || return 0
  local subs
  subs=$(awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}' <<<"$help")
  for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    if [[ $w != -* ]] && grep -qx -- "$w" <<<"$subs"; then sub=$w; break; fi
  done
  if [[ -n $subs && -z $sub && $cur != -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    return 0
  fi
  if [[ $cur == -* ]]; then
    local flags
    flags=$("$tool" ${sub:+"$sub"} --help 2>/dev/null | grep -oE -- '--[a-zA-Z0-9_-]+' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
    return 0
  fi
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -o filenames -F _dspack_complete dspack dsbench dssync
