# Shell helpers shared by tests/bench/smoke.sh and scripts/bench (sourced).

# A TCP port on 127.0.0.1 that nothing listened on a moment ago.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT [SECONDS]: until something accepts on 127.0.0.1:PORT.
wait_port() {
  local port=$1 limit=${2:-10} i
  for ((i = 0; i < limit * 20; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "nothing listens on 127.0.0.1:$port after ${limit}s" >&2
  return 1
}

# memcached as root needs -u.
memcached_user_args() { [ "$(id -u)" -eq 0 ] && echo "-u root" || true; }

# write_pool_config FILE NAME LISTEN_PORT BACKEND_PORT...: a nutcracker.yml
# that both nutcracker and memshard read (same hash, same distribution).
write_pool_config() {
  local file=$1 name=$2 listen=$3
  shift 3
  {
    echo "$name:"
    echo "  listen: 127.0.0.1:$listen"
    echo "  hash: fnv1a_64"
    echo "  distribution: ketama"
    echo "  timeout: 5000"
    echo "  backlog: 4096"
    echo "  auto_eject_hosts: false"
    echo "  preconnect: true"
    echo "  servers:"
    local p
    for p in "$@"; do echo "   - 127.0.0.1:$p:1"; done
  } >"$file"
}

# CPU seconds (utime + stime) of a process, from /proc/PID/stat.
cpu_seconds() {
  local stat rest hz
  stat=$(cat "/proc/$1/stat") || return 1
  rest=${stat##*) }
  hz=$(getconf CLK_TCK)
  awk -v hz="$hz" '{ printf "%.2f\n", ($12 + $13) / hz }' <<<"$rest"
}

# Resident set size of a process in KiB.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# measure_idle_memory LOAD_BIN PORT PID CONNS MODE LOG: the proxy PID
# listening on PORT first serves one connection's traffic (so its backends
# are connected and the keys exist), then holds CONNS connections that each
# made one get and idle; MODE is staggered (each sends as it connects) or
# burst (all connect, then all send at once). Prints "BASE LOADED SETTLED
# AFTER RC": RSS in KB before, while held (0.5 s after the last reply),
# while still held after they idled $IDLE_SETTLE_S more seconds (default 3:
# memshard parks a client idle for 1 s, sweeping once a second), after they
# closed, and the loadgen's exit.
measure_idle_memory() {
  local load_bin=$1 port=$2 pid=$3 conns=$4 mode=$5 log=$6 rc=0 base loaded settled after lpid i
  local burst=()
  if [ "$mode" = burst ]; then burst=(--idle-burst); fi
  # 1,000 keys, spread over the servers as a fleet's are: with 100, one
  # server took most of a 10,000-connection burst, past the 4,096 requests
  # that server_queue_limit lets wait on one connection by default.
  "$load_bin" -p "$port" -c 1 -k 1000 -n 100 -D 10 --key-prefix bench-mem: >"$log" 2>&1 || rc=$?
  sleep 0.5
  base=$(rss_kb "$pid")
  "$load_bin" -p "$port" -t 2 -c 0 --idle "$conns" "${burst[@]}" -k 1000 --no-populate -D 120 \
    --timeout 30 --key-prefix bench-mem: >>"$log" 2>&1 &
  lpid=$!
  for ((i = 0; i < 1200; i++)); do
    grep -q "ready:" "$log" && break
    kill -0 "$lpid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 0.5
  loaded=$(rss_kb "$pid")
  sleep "${IDLE_SETTLE_S:-3}"
  settled=$(rss_kb "$pid")
  kill -USR1 "$lpid" 2>/dev/null || true
  wait "$lpid" || rc=$?
  sleep 1
  after=$(rss_kb "$pid")
  echo "$base $loaded $settled $after $rc"
}

# The workloads, by letter: what each is, and the load generator's options
# for it. scripts/bench and scripts/bench-commits both measure from here.
declare -A workload_desc workload_args
workload_desc[a]="get/set 90/10, 32 conns";        workload_args[a]="-c 32 -g 0.9 -s 100 -k 10000"
workload_desc[b]="10-key multi-get, 32 conns";     workload_args[b]="-c 32 -g 1 -m 10 -s 100 -k 10000"
workload_desc[c]="100-key multi-get, 32 conns";    workload_args[c]="-c 32 -g 1 -m 100 -s 100 -k 10000"
workload_desc[d]="16 KiB values 90/10, 32 conns";  workload_args[d]="-c 32 -g 0.9 -s 16384 -k 2000"
workload_desc[e]="1000 idle + 8 busy conns 90/10"; workload_args[e]="-c 8 --idle 1000 -g 0.9 -s 100 -k 10000"
workload_desc[f]="pipelined 8 conns x depth 32";   workload_args[f]="-c 8 -d 32 -g 0.9 -s 100 -k 10000"
# Binary protocol (memshard-load --protocol binary: GETK and SET frames):
# the shapes of (a) and (f), compared with them through memshard. nutcracker
# does not speak binary, so they run against direct and memshard only.
workload_desc[g]="binary (a): get/set 90/10";      workload_args[g]="-c 32 -g 0.9 -s 100 -k 10000 --protocol binary"
workload_desc[h]="binary (f): pipelined 8 x 32";   workload_args[h]="-c 8 -d 32 -g 0.9 -s 100 -k 10000 --protocol binary"
# A hot key: (a) with one key taking half the gets (memshard-load --hot-share),
# the load that one server's cap limits, and the same with (d)'s 16 KiB
# values (scripts/bench-hot-keys: with and without hot_key_cache).
workload_desc[i]="(a), one key 50% of gets";       workload_args[i]="-c 32 -g 0.9 -s 100 -k 10000 --hot-share 0.5"
workload_desc[j]="(d), one key 50% of gets";       workload_args[j]="-c 32 -g 0.9 -s 16384 -k 2000 --hot-share 0.5"
# A binary workload -> the text workload of the same shape.
declare -A workload_text_twin=([g]=a [h]=f)
