# For tests/cli_assets.rs: completes each argument (a command line, Tab typed at its end) in
# an interactive zsh on a pseudo-terminal whose completion system loads the functions in $1
# (compinit, as an installed completion is found on $fpath); prints each candidate the
# completion functions offer ("HIT:word"), then END, per line.
# Usage: zsh -f complete.zsh DIR LINE...
zmodload zsh/zpty || exit 3
dir=$1; shift
zpty z zsh -f -i
# Typed input before the shell has started is lost.
sleep 0.5
k=0
# Types $1, then Ctrl-U (kill the line) and a line printing a marker; keeps the matches seen
# before the marker in $hits (the completion functions print them: compadd is wrapped below).
# A read that finds nothing yet is retried, for at most about 10 s.
type_line() {
  k=$((k + 1))
  zpty -w -n z "$1"
  # Typed ahead of a completion still running, the marker line could be discarded with it.
  sleep 0.2
  zpty -w z $'\x15'"print MARK-$k"
  local tries=0 got
  hits=()
  while (( tries < 200 )); do
    if ! zpty -r -t z got; then tries=$((tries + 1)); sleep 0.05; continue; fi
    got=${got//$'\r'/}
    # The marker as printed, not as echoed while typed (a completion listing can leave the
    # cursor mid-line, so it need not start the line).
    [[ $got == *MARK-$k* && $got != *"print MARK-$k"* ]] && return 0
    # A match printed while the cursor is still on the typed line follows that line's text; the
    # echo of the wrapper's own definition is not a match.
    [[ $got == *HIT:* && $got != *"builtin compadd"* ]] && hits+=(${${got#*HIT:}%%$'\n'})
  done
  print "no marker $k"
  return 1
}
type_line $'PS1=\'\'; PS2=\'\'\n'
type_line "fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D"$'\n'
# compadd wrapped: prints the matches it would add (HIT:word), then adds them.
type_line $'compadd() { local -a __h; builtin compadd -O __h "$@"; (( $#__h )) && print -rl -- HIT:${^__h}; builtin compadd "$@"; }\n'
type_line $'zstyle \':completion:*\' list-prompt \'\'; bindkey \'^I\' complete-word\n'
for line in "$@"; do
  # A completion that printed nothing is typed again (at most 3 times): the first Tab loads the
  # completion system, which a loaded machine can make outlast the wait above.
  for try in 1 2 3; do
    type_line "$line"$'\t'
    (( $#hits )) && break
  done
  (( $#hits )) && print -rl -- HIT:${^${(ou)hits}}
  echo END
done
zpty -d z
