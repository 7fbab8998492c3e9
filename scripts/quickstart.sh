#!/usr/bin/env bash
# Runs each distributed crate's README quick start as a newcomer would: the
# shell commands are read out of the README itself (so the README cannot
# drift from what is tested), the server is started exactly as written, and
# the example's output is checked for what the README says it prints.
#
#   bash scripts/quickstart.sh            # from any directory; runs as root
#
# `sudo ` is dropped from the install line when already root. The servers
# use the README's fixed ports (ZooKeeper 2181, etcd 23790 and 23800): they
# must be free, and the script fails if they are not.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CARGO_TERM_COLOR=never DEBIAN_FRONTEND=noninteractive

# The lines of the README's ```sh blocks, in order, one block per
# paragraph; backslash continuations are joined.
sh_blocks() {
  python3 - "$1" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    print(block.replace("\\\n", " "))
EOF
}

# The one line of README $1's sh blocks that starts with $2.
line_of() {
  local found
  found=$(grep -E "^$2" <<<"$(sh_blocks "$1")" || true)
  [[ $(grep -c . <<<"${found}") -eq 1 ]] ||
    { echo "expected one line starting with '$2' in $1, found: ${found:-none}" >&2; exit 1; }
  # A comment after the command is for the reader.
  printf '%s\n' "${found%%#*}"
}

as_root() {
  if [[ $(id -u) -eq 0 ]]; then echo "${1#sudo }"; else echo "$1"; fi
}

port_free() {
  ! python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 1)" 2>/dev/null
}

wait_port() {
  local i
  for i in $(seq 1 60); do
    port_free "$1" || return 0
    sleep 0.5
  done
  echo "nothing listens on port $1 after 30 s" >&2
  return 1
}

server_pid=
stop_server() {
  if [[ -n "${server_pid}" ]]; then
    kill -- "-${server_pid}" 2>/dev/null || kill "${server_pid}" 2>/dev/null || true
    wait "${server_pid}" 2>/dev/null || true
    server_pid=
  fi
}
trap stop_server EXIT

# Starts command $1 in its own process group, output to log $2.
start_server() {
  setsid bash -c "$1" >"$2" 2>&1 &
  server_pid=$!
}

echo "=== aqs-zookeeper quick start"
readme=aqs-zookeeper/README.md
install=$(as_root "$(line_of "${readme}" 'sudo apt-get install')")
eval "${install} -y -qq" >/dev/null 2>&1 || { apt-get update -qq && eval "${install} -y -qq" >/dev/null; }
port_free 2181 || { echo "port 2181 is taken: the quick start needs it" >&2; exit 1; }
start_server "$(line_of "${readme}" '/usr/share/zookeeper/bin/zkServer.sh')" /tmp/aqs-quickstart-zk.log
wait_port 2181
out=$(eval "$(line_of "${readme}" 'cargo run')")
printf '%s\n' "${out}" | tail -3
grep -Eq '^peak lease nodes across 3 processes: [0-6] \(limit 5, plus 1 in line\)$' <<<"${out}" ||
  { echo "the example did not print the README's last line" >&2; exit 1; }
stop_server

echo "=== aqs-etcd quick start"
readme=aqs-etcd/README.md
install=$(as_root "$(line_of "${readme}" 'sudo apt-get install')")
eval "${install} -y -qq" >/dev/null 2>&1 || { apt-get update -qq && eval "${install} -y -qq" >/dev/null; }
for p in 23790 23800; do
  port_free "${p}" || { echo "port ${p} is taken: the quick start needs it" >&2; exit 1; }
done
etcd_cmd=$(line_of "${readme}" 'etcd --data-dir')
data_dir=$(sed -E 's/.*--data-dir ([^ ]+).*/\1/' <<<"${etcd_cmd}")
rm -rf "${data_dir}"
start_server "${etcd_cmd}" /tmp/aqs-quickstart-etcd.log
wait_port 23790
out=$(eval "$(line_of "${readme}" 'cargo run')")
printf '%s\n' "${out}"
grep -Eq '^leading, fencing token [0-9]+ \(key /service/leader/[0-9a-f]+\)$' <<<"${out}" ||
  { echo "the example did not print what the README says" >&2; exit 1; }
stop_server
rm -rf "${data_dir}"
echo "=== quick starts: ok"
