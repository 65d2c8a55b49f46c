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

shopt -s extdebug expand_aliases
__cellbox_count=0 __cellbox_interrupted= __cellbox_stop= __cellbox_user_flags=

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

# An interrupt, or `exit` in a cell, unwinds the cell: with extdebug, a DEBUG
# trap that returns 2 makes the function it runs in return, and every frame
# above the runner's own is left that way. The shell stays.
__cellbox_unwind() {
  ((BASH_SUBSHELL)) && return 0
  ((${#FUNCNAME[@]} > 3)) && return 2
  return 0
}
trap '__cellbox_interrupted=1; trap __cellbox_unwind DEBUG' INT
exit() {
  local status=$?
  ((BASH_SUBSHELL)) && builtin exit "$@"
  __cellbox_stop=${1:-$status}
  trap __cellbox_unwind DEBUG
  return "$__cellbox_stop"
}

__cellbox_frame() { printf '%s\n' "$1" >&"$__cellbox_out"; }

# $1 as a JSON string, into __cellbox_json.
__cellbox_quote() {
  local s=$1
  s=${s//\\/\\\\} s=${s//\"/\\\"} s=${s//$'\n'/\\n} s=${s//$'\r'/\\r} s=${s//$'\t'/\\t}
  __cellbox_json="\"$s\""
}

# A JSON string's body (quotes off; \\ and \" already swapped for \x01 and
# \x02), decoded into __cellbox_value. The host's JSON escapes only these.
__cellbox_unescape() {
  local s=$1 hex char
  s=${s//\\n/$'\n'} s=${s//\\t/$'\t'} s=${s//\\r/$'\r'} s=${s//\\\//\/} s=${s//\\b/$'\b'} s=${s//\\f/$'\f'}
  while [[ $s =~ \\u00([0-9a-fA-F]{2}) ]]; do
    hex=${BASH_REMATCH[1]}
    printf -v char "\\x$hex"
    s=${s//"\\u00$hex"/$char}
  done
  s=${s//$'\x02'/\"} s=${s//$'\x01'/\\}
  __cellbox_value=$s
}

# An execute request's fields into __cellbox_field_<name>, its env into the
# arrays __cellbox_env_names and __cellbox_env_values ("=value", or "-" to unset).
__cellbox_parse() {
  local line=$1 i key separator depth=0
  line=${line//\\\\/$'\x01'} line=${line//\\\"/$'\x02'}
  local IFS='"'
  local -a parts
  read -ra parts <<<"$line"
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
    [[ $key =~ ^[A-Za-z]+$ ]] || continue
    if [[ $separator == : ]]; then
      __cellbox_unescape "${parts[i + 2]-}"
      printf -v "__cellbox_field_$key" '%s' "$__cellbox_value"
      ((i += 2))
    else
      separator=${separator#:}
      printf -v "__cellbox_field_$key" '%s' "${separator%%[,\}]*}"
    fi
  done
}

__cellbox_cell() { eval "$1"; }

__cellbox_execute() {
  local status=0 i name saved_names=() saved_values=()
  __cellbox_quote "$__cellbox_field_id"
  local id=$__cellbox_json
  __cellbox_frame "{\"type\":\"started\",\"id\":$id}"
  for i in "${!__cellbox_env_names[@]}"; do
    name=${__cellbox_env_names[i]}
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
    if [[ $__cellbox_field_restoreEnv == true ]]; then
      saved_names+=("$name")
      if [[ -v $name ]]; then saved_values+=("=${!name}"); else saved_values+=("-"); fi
    fi
    if [[ ${__cellbox_env_values[i]} == =* ]]; then export "$name=${__cellbox_env_values[i]#=}"; else unset "$name"; fi
  done
  if [[ -n $__cellbox_field_cwd ]] && ! cd -- "$__cellbox_field_cwd"; then
    status=1
  fi
  __cellbox_interrupted= __cellbox_stop=
  trap - DEBUG
  if ((status == 0)) && [[ -n $__cellbox_field_code ]]; then
    # The user's own `set -e`/`-u`/`-x`/`pipefail` hold in cells, not in the runner.
    [[ -n $__cellbox_user_flags ]] && set "-$__cellbox_user_flags"
    [[ -n $__cellbox_user_pipefail ]] && set -o pipefail
    __cellbox_cell "$__cellbox_field_code" {__cellbox_req}<&- {__cellbox_out}>&- {__cellbox_diag}>&- || status=$?
    __cellbox_user_flags=${-//[^eux]/} __cellbox_user_pipefail=
    [[ -o pipefail ]] && __cellbox_user_pipefail=1
    set +eux +o pipefail
  fi
  trap - DEBUG
  [[ -n $__cellbox_stop ]] && status=$__cellbox_stop
  for i in "${!saved_names[@]}"; do
    if [[ ${saved_values[i]} == =* ]]; then export "${saved_names[i]}=${saved_values[i]#=}"; else unset "${saved_names[i]}"; fi
  done
  local cancelled=false outcome=ok
  [[ -n $__cellbox_interrupted ]] && cancelled=true
  [[ $__cellbox_field_silent == true ]] || ((__cellbox_count += 1))
  if [[ $cancelled == true ]]; then
    outcome=error
  elif ((status != 0)); then
    outcome=error
    __cellbox_frame "{\"type\":\"error\",\"id\":$id,\"ename\":\"ExitStatus\",\"evalue\":\"exit status $status\",\"traceback\":[]}"
  fi
  __cellbox_interrupted=
  __cellbox_frame "{\"type\":\"done\",\"id\":$id,\"status\":\"$outcome\",\"executionCount\":$__cellbox_count,\"cancelled\":$cancelled}"
}

# Whether code is a whole cell yet: bash's own parser, on a copy of the shell.
__cellbox_complete() {
  local answer=complete problem
  if ! problem=$(bash -n -c "$__cellbox_field_code" 2>&1); then
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
while :; do
  IFS= read -r -u "$__cellbox_req" __cellbox_line
  __cellbox_read=$?
  # An interrupt between cells cuts a read short: read again.
  ((__cellbox_read > 128)) && { __cellbox_interrupted= ; trap - DEBUG; continue; }
  ((__cellbox_read == 0)) || break
  __cellbox_parse "$__cellbox_line"
  case $__cellbox_field_type in
    execute) __cellbox_execute ;;
    exit) break ;;
    complete) __cellbox_complete ;;
    check) __cellbox_checked ;;
    *) __cellbox_refuse ;;
  esac
done
builtin exit 0
