# cellbox's bash runner: one long-lived bash whose cwd, variables, functions
# and aliases carry from cell to cell. It speaks the runners' NDJSON protocol
# (crates/protocol/src/runner): requests on stdin, frames on the frames fd;
# a cell's output goes straight to fds 1 and 2, which the host streams.
#
#   bash --noprofile --norc runner.sh --host-pid N --frames-fd 3 --diagnostics-fd 4
#
# Bash 4.1 or newer (fds held in variables). Every name of the runner's own
# starts with __cellbox_, so a cell's `set` output shows where they come from.

__cellbox_host= __cellbox_frames_fd=3 __cellbox_diag_fd=4
while (($#)); do
  case $1 in
    --host-pid) __cellbox_host=$2; shift 2 ;;
    --frames-fd) __cellbox_frames_fd=$2; shift 2 ;;
    --diagnostics-fd) __cellbox_diag_fd=$2; shift 2 ;;
    *) shift ;;
  esac
done

# The protocol's fds move to fds of their own, closed in every cell, so that
# nothing a cell starts holds them (a background job would otherwise keep the
# host from seeing the kernel end). A cell's stdin is /dev/null.
exec {__cellbox_req}<&0 </dev/null {__cellbox_out}>&"$__cellbox_frames_fd" {__cellbox_diag}>&"$__cellbox_diag_fd"
exec 3>&- 4>&-
# A cell's positional parameters start empty.
set --

shopt -s expand_aliases
__cellbox_count=0 __cellbox_interrupted= __cellbox_stop= __cellbox_running= __cellbox_user_flags= __cellbox_status=0

# Leave, taking the process group along, once the host has died (the host's
# sweep ends the watcher with the kernel otherwise).
if [[ -n $__cellbox_host ]]; then
  (
    trap '' INT
    exec {__cellbox_req}<&- {__cellbox_out}>&- {__cellbox_diag}>&- >/dev/null 2>&1
    # A host the sandbox keeps this shell from signalling is alive: only "No such process" is death.
    LC_ALL=C
    __cellbox_alive() { [[ $(kill -0 "$1" 2>&1) != *"No such process"* ]]; }
    while __cellbox_alive "$__cellbox_host" && __cellbox_alive $$; do sleep 1; done
    __cellbox_alive $$ && kill -KILL -- -$$
  ) &
  # Not a job of the cells: their `wait` must not wait for it.
  disown $!
fi

# A cell is sourced at the top level (its `declare`s are global, as typed at
# a prompt). An interrupt, or `exit` in a cell, unwinds it: with extdebug, a
# DEBUG trap that returns 2 makes the function or sourced file it runs in
# return, so every frame of the cell is left that way, and none of the
# runner's. extdebug is on only then: a cell's own DEBUG trap works as usual.
# An interrupt between cells changes nothing. The shell stays.
__cellbox_unwind() {
  [[ -n $__cellbox_running ]] || return 0
  ((BASH_SUBSHELL)) && return 0
  case ${FUNCNAME[1]-main} in main | __cellbox_*) return 0 ;; esac
  return 2
}
__cellbox_arm() {
  builtin shopt -s extdebug
  builtin trap __cellbox_unwind DEBUG
}
builtin trap '__cellbox_interrupted=1; [[ -n $__cellbox_running ]] && __cellbox_arm' INT
exit() {
  local status=$?
  ((BASH_SUBSHELL)) || [[ -z $__cellbox_running ]] && builtin exit "$@"
  __cellbox_stop=${1:-$status}
  __cellbox_arm
  return "$__cellbox_stop"
}

__cellbox_frame() { builtin printf '%s\n' "$1" >&"$__cellbox_out"; }

# $1 as a JSON string, into __cellbox_json.
__cellbox_quote() {
  local s=$1
  s=${s//\\/\\\\} s=${s//\"/\\\"} s=${s//$'\n'/\\n} s=${s//$'\r'/\\r} s=${s//$'\t'/\\t}
  __cellbox_json="\"$s\""
}

# A JSON string's body (quotes off; \\ and \" already swapped for \x01 and
# \x02), decoded into __cellbox_value. The host's JSON escapes only these.
__cellbox_unescape() {
  # Most strings have nothing to decode; a locale switch costs more than the test.
  if [[ $1 != *\\* && $1 != *[$'\x01\x02']* ]]; then
    __cellbox_value=$1
    return
  fi
  # Bytes, not characters: string operations on long lines stay linear.
  local LC_ALL=C s=$1 hex char
  s=${s//\\n/$'\n'} s=${s//\\t/$'\t'} s=${s//\\r/$'\r'} s=${s//\\\//\/} s=${s//\\b/$'\b'} s=${s//\\f/$'\f'}
  while [[ $s =~ \\u00([0-9a-fA-F]{2}) ]]; do
    hex=${BASH_REMATCH[1]}
    builtin printf -v char "\\x$hex"
    s=${s//"\\u00$hex"/$char}
  done
  s=${s//$'\x02'/\"} s=${s//$'\x01'/\\}
  __cellbox_value=$s
}

# An execute request's fields into __cellbox_field_<name>, its env into the
# arrays __cellbox_env_names and __cellbox_env_values ("=value", or "-" to unset).
__cellbox_parse() {
  local LC_ALL=C line=$1 i key separator depth=0
  line=${line//\\\\/$'\x01'} line=${line//\\\"/$'\x02'}
  local -a parts
  # Split at the quotes by expansion, globbing off (a here-string would cost a
  # pipe and a read system call per byte).
  local IFS='"' noglob=
  [[ $- == *f* ]] || { noglob=1; builtin set -f; }
  parts=($line)
  [[ -n $noglob ]] && builtin set +f
  unset IFS
  __cellbox_field_type= __cellbox_field_id= __cellbox_field_code= __cellbox_field_cwd=
  __cellbox_field_silent= __cellbox_field_restoreEnv=
  __cellbox_env_names=() __cellbox_env_values=()
  for ((i = 1; i < ${#parts[@]}; i += 2)); do
    key=${parts[i]} separator=${parts[i + 1]-}
    if ((depth)); then
      if [[ $separator == : ]]; then
        __cellbox_unescape "${parts[i + 2]-}"
        __cellbox_env_names+=("$key") __cellbox_env_values+=("=$__cellbox_value")
        separator=${parts[i + 3]-}
        ((i += 2))
      else
        __cellbox_env_names+=("$key") __cellbox_env_values+=("-")
      fi
      [[ $separator == *'}'* ]] && depth=0
      continue
    fi
    if [[ $separator == ':{' ]]; then
      [[ -n ${parts[i + 2]-} ]] && depth=1
      continue
    fi
    [[ -n $key && $key != *[!A-Za-z]* ]] || continue
    if [[ $separator == : ]]; then
      __cellbox_unescape "${parts[i + 2]-}"
      builtin printf -v "__cellbox_field_$key" '%s' "$__cellbox_value"
      ((i += 2))
    else
      separator=${separator#:}
      builtin printf -v "__cellbox_field_$key" '%s' "${separator%%[,\}]*}"
    fi
  done
}

# Before a cell: the started frame, its environment and cwd. Fails (and the
# cell does not run) when the cwd cannot be entered.
__cellbox_begin() {
  local i name
  __cellbox_quote "$__cellbox_field_id"
  __cellbox_id=$__cellbox_json
  __cellbox_frame "{\"type\":\"started\",\"id\":$__cellbox_id}"
  __cellbox_saved_names=() __cellbox_saved_values=()
  for i in "${!__cellbox_env_names[@]}"; do
    name=${__cellbox_env_names[i]}
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ && $name != __cellbox_* ]] || continue
    if [[ $__cellbox_field_restoreEnv == true ]]; then
      __cellbox_saved_names+=("$name")
      if [[ -v $name ]]; then __cellbox_saved_values+=("=${!name}"); else __cellbox_saved_values+=("-"); fi
    fi
    if [[ ${__cellbox_env_values[i]} == =* ]]; then builtin export "$name=${__cellbox_env_values[i]#=}"; else builtin unset "$name"; fi
  done
  __cellbox_interrupted= __cellbox_stop= __cellbox_status=0
  if [[ -n $__cellbox_field_cwd ]] && ! builtin cd -- "$__cellbox_field_cwd"; then
    __cellbox_status=1
    return 1
  fi
  # The user's own `set -e` and `pipefail` hold in cells, not in the runner (`set -u` is the
  # cell's own: in a shell like this one, an unset name it catches ends the shell).
  [[ -n $__cellbox_user_flags ]] && builtin set "-$__cellbox_user_flags"
  [[ -n $__cellbox_user_pipefail ]] && builtin set -o pipefail
  return 0
}

# After a cell: the shell's options and environment back, the error and done frames.
__cellbox_finish() {
  local i status=$__cellbox_status
  __cellbox_user_flags=${-//[^e]/} __cellbox_user_pipefail=
  [[ -o pipefail ]] && __cellbox_user_pipefail=1
  builtin set +eux +o pipefail
  builtin trap - DEBUG
  builtin shopt -u extdebug
  [[ -n $__cellbox_stop ]] && status=$__cellbox_stop
  for i in "${!__cellbox_saved_names[@]}"; do
    if [[ ${__cellbox_saved_values[i]} == =* ]]; then
      builtin export "${__cellbox_saved_names[i]}=${__cellbox_saved_values[i]#=}"
    else
      builtin unset "${__cellbox_saved_names[i]}"
    fi
  done
  local cancelled=false outcome=ok
  [[ -n $__cellbox_interrupted ]] && cancelled=true
  [[ $__cellbox_field_silent == true ]] || ((__cellbox_count += 1))
  if [[ $cancelled == true ]]; then
    outcome=error
  elif ((status != 0)); then
    outcome=error
    __cellbox_frame "{\"type\":\"error\",\"id\":$__cellbox_id,\"ename\":\"ExitStatus\",\"evalue\":\"exit status $status\",\"traceback\":[]}"
  fi
  __cellbox_interrupted=
  __cellbox_frame "{\"type\":\"done\",\"id\":$__cellbox_id,\"status\":\"$outcome\",\"executionCount\":$__cellbox_count,\"cancelled\":$cancelled}"
}

# Whether code is a whole cell yet: bash's own parser, on a copy of the shell.
__cellbox_complete() {
  local answer=complete problem
  if ! problem=$("$BASH" -n -c "$__cellbox_field_code" 2>&1); then
    answer=invalid
    [[ $problem == *"unexpected end of file"* ]] && answer=incomplete
  fi
  __cellbox_quote "$__cellbox_field_id"
  __cellbox_frame "{\"type\":\"completeness\",\"id\":$__cellbox_json,\"status\":\"$answer\",\"indent\":\"\"}"
}

# The pre-run check reads no bash cell: it says so.
__cellbox_checked() {
  __cellbox_quote "$__cellbox_field_id"
  __cellbox_frame "{\"type\":\"checked\",\"id\":$__cellbox_json,\"cells\":[],\"notes\":[\"Pre-run check: bash cells are not checked; they ran as written.\"]}"
}

__cellbox_refuse() {
  __cellbox_quote "$__cellbox_field_id"
  local id=$__cellbox_json
  __cellbox_frame "{\"type\":\"error\",\"id\":$id,\"ename\":\"ProtocolError\",\"evalue\":\"the bash runner does not take $__cellbox_field_type requests\",\"traceback\":[]}"
  __cellbox_frame "{\"type\":\"done\",\"id\":$id,\"status\":\"error\",\"executionCount\":$__cellbox_count,\"cancelled\":false}"
}

__cellbox_quote "$BASH_VERSION"
__cellbox_version=$__cellbox_json
__cellbox_quote "$BASH"
__cellbox_frame "{\"type\":\"ready\",\"protocol\":1,\"python\":$__cellbox_version,\"pid\":$$,\"executable\":$__cellbox_json,\"language\":\"bash\"}"
# The cell runs here, at the top level, with the protocol's fds closed. Its
# code is sourced from a here-string on fd 63 where that is a pipe bash fills
# without blocking (bash 5.1 or newer on Linux, which checks the pipe's size;
# a cell short enough for any pipe): a process substitution forks a subshell
# for every cell, half of a warm cell's time. Elsewhere it still does: an
# older bash writes here-strings to a file in TMPDIR, which a cell can remove.
__cellbox_herestring=
[[ $OSTYPE == linux* ]] && ((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))) \
  && __cellbox_herestring=1
while :; do
  IFS= builtin read -r -u "$__cellbox_req" __cellbox_line || break
  __cellbox_parse "$__cellbox_line"
  case $__cellbox_field_type in
    execute)
      if __cellbox_begin && [[ -n $__cellbox_field_code ]]; then
        __cellbox_running=1
        if [[ -n $__cellbox_herestring ]] && ((${#__cellbox_field_code} <= 16000)); then
          . /dev/fd/63 63<<<"$__cellbox_field_code" {__cellbox_req}<&- {__cellbox_out}>&- {__cellbox_diag}>&- || __cellbox_status=$?
        else
          . <(builtin printf '%s' "$__cellbox_field_code") {__cellbox_req}<&- {__cellbox_out}>&- {__cellbox_diag}>&- || __cellbox_status=$?
        fi
        __cellbox_running=
      fi
      __cellbox_finish
      ;;
    exit) break ;;
    complete) __cellbox_complete ;;
    check) __cellbox_checked ;;
    *) __cellbox_refuse ;;
  esac
done
builtin exit 0
