# For tests/cli_assets.rs: completes each argument (a command line, Tab typed at its end) in
# an interactive zsh on a pseudo-terminal whose completion system loads the functions in $1
# (compinit, as an installed completion is found on $fpath); prints each candidate the
# completion functions offer ("HIT:word"), then END, per line.
# Usage: zsh -f complete.zsh DIR LINE...
#
# No step waits on time. The shell says when it is ready for keys: its .zshrc (in a ZDOTDIR
# of its own, so nothing is typed to set it up) prints READY-n from zle-line-init, which runs
# once the line editor reads keys, and Tab is bound to a widget that completes, then prints
# DONE-n. Each line is typed only after the marker before it was read, so no key is typed
# ahead of the shell (a completion may discard typeahead). Markers are computed ($((++n))), so
# an echo of typed text is never taken for one. Reading is bounded by 30 s in all.
zmodload zsh/zpty || exit 3
dir=$1; shift
home=$(mktemp -d) || exit 3
trap 'zpty -d z 2>/dev/null; rm -rf -- $home' EXIT
print -r -- 'unsetopt global_rcs' >$home/.zshenv
cat >$home/.zshrc <<EOF
PS1='' PS2='' RPS1=''
fpath=(${(q)dir} \$fpath)
autoload -Uz compinit && compinit -u -D
# compadd wrapped: prints the matches it would add (HIT:word), then adds them.
compadd() { local -a __h; builtin compadd -O __h "\$@"; (( \$#__h )) && print -rl -- HIT:\${^__h}; builtin compadd "\$@"; }
zstyle ':completion:*' list-prompt ''
__ready=0 __done=0
zle-line-init() { print -r -- "READY-\$((++__ready))"; }
zle -N zle-line-init
complete-and-mark() { zle complete-word; print -r -- \$'\n'"DONE-\$((++__done))"; }
zle -N complete-and-mark
bindkey '^I' complete-and-mark
EOF
zpty z "ZDOTDIR=${(q)home} zsh -i" || exit 3
deadline=$((SECONDS + 30))
# Reads the shell's output until it matches the pattern $1; leaves it, carriage returns
# removed, in $seen. Past the deadline: prints what was read and fails.
await() {
  local chunk
  seen=
  until [[ $seen == $~1 ]]; do
    if (( SECONDS > deadline )); then
      print -r -- "no ${1//\*/} within 30 s; read: ${(q)seen}"
      exit 4
    fi
    # Nothing to read yet: look again shortly (the wait is only how often it looks).
    zpty -r -t z chunk || { sleep 0.01; continue; }
    seen+=${chunk//$'\r'/}
  done
}
await '*READY-1*'
k=0
for line in "$@"; do
  k=$((k + 1))
  zpty -w -n z "$line"$'\t'
  await "*DONE-$k*"
  hits=(${${(M)${(f)seen}:#*HIT:*}#*HIT:})
  (( $#hits )) && print -rl -- HIT:${^${(ou)hits}}
  echo END
  # Ctrl-U: the line is killed before the next one's keys are read (keys are read in order).
  zpty -w -n z $'\x15'
done
