#!/usr/bin/env bash
# A private Docker engine for the container tier, when no engine answers.
#
#   compose/docker-engine.sh up   STATE   use the engine that answers (DOCKER_HOST or the
#                                         default socket) or start a private one; writes
#                                         STATE/env (DOCKER_HOST=...) either way
#   compose/docker-engine.sh down STATE   stop the private engine started by `up` (by the
#                                         PID in STATE/dockerd.pid), nothing else
#   compose/docker-engine.sh check STATE  exit 1 if a container or network labelled by the
#                                         tool is left on the engine of STATE/env
#   compose/docker-engine.sh run STATE CMD...
#                                         up, CMD with DOCKER_HOST exported (or, with no
#                                         engine, VERIFIER_DOCKER_UNAVAILABLE=<reason>),
#                                         check, and down if `up` started the engine; exits
#                                         with CMD's code (1 if something was left running)
#
# `up` exits 0 with an engine, 3 when none can run here (the reason in STATE/unavailable
# and on stderr; the container tier then skips with it). The private engine is Debian's
# docker.io (installed with apt-get when missing, as root), started by hand:
#   dockerd --data-root STATE/data --exec-root RUN --host unix://RUN/docker.sock
#           --storage-driver=overlay2 --iptables=false --ip6tables=false --ip-forward=false
#           --ip=127.0.0.1 --bridge=none
# No firewall rules, no forwarding, no default bridge on the host: the tool's containers
# use their own networks and publish ports on 127.0.0.1 through docker-proxy. RUN is
# STATE/run unless that path is too long for a Unix socket (then /tmp/verifier-docker-<hash>).
set -u
cmd=${1:-}
state=${2:-.state/docker}
mkdir -p "$state"
state=$(cd "$state" && pwd)
pidfile=$state/dockerd.pid
envfile=$state/env
reason=$state/unavailable
label=org.delivery-verifier.environment

run_dir() {
  local run=$state/run
  # containerd's socket lives at RUN/containerd/containerd.sock.ttrpc: keep it under 100
  if [ ${#run} -gt 60 ]; then
    run=/tmp/verifier-docker-$(printf '%s' "$state" | sha256sum | cut -c1-12)
  fi
  echo "$run"
}

answers() {  # the engine at $1 answers within 5 s
  DOCKER_HOST=$1 timeout 5 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

unavailable() {
  echo "docker-engine: $*" >&2
  echo "$*" > "$reason"
  rm -f "$envfile"
  exit 3
}

ensure_packages() {
  local want=()
  command -v dockerd >/dev/null 2>&1 || want+=(docker.io)
  command -v docker >/dev/null 2>&1 || want+=(docker.io)
  command -v docker-compose >/dev/null 2>&1 || want+=(docker-compose)
  [ ${#want[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    unavailable "no Docker engine answers and ${want[*]} cannot be installed here (needs root and apt-get)"
  fi
  echo "docker-engine: installing ${want[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${want[@]}" | sort -u); } >/dev/null \
    || unavailable "apt-get install ${want[*]} failed"
}

up() {
  rm -f "$reason"
  local own
  own=unix://$(run_dir)/docker.sock
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && answers "$own"; then
    echo "DOCKER_HOST=$own" > "$envfile"
    echo "docker-engine: private engine already running (pid $(cat "$pidfile")), DOCKER_HOST=$own"
    return 0
  fi
  local theirs=${DOCKER_HOST:-unix:///var/run/docker.sock}
  if command -v docker >/dev/null 2>&1 && answers "$theirs"; then
    echo "DOCKER_HOST=$theirs" > "$envfile"
    rm -f "$pidfile"
    echo "docker-engine: using the engine at $theirs"
    return 0
  fi
  ensure_packages
  [ "$(id -u)" = 0 ] || unavailable "no Docker engine answers at $theirs and a private one needs root"
  local run
  run=$(run_dir)
  mkdir -p "$state/data" "$run"
  local t0=$SECONDS
  rm -f "$pidfile"  # a stale one (its process is gone, checked above) stops dockerd
  setsid dockerd --data-root "$state/data" --exec-root "$run" --pidfile "$pidfile" \
    --host "unix://$run/docker.sock" --storage-driver=overlay2 \
    --iptables=false --ip6tables=false --ip-forward=false --ip=127.0.0.1 --bridge=none \
    > "$state/dockerd.log" 2>&1 < /dev/null &
  local pid=$!  # dockerd itself (setsid execs it); dockerd writes the pid file too
  for _ in $(seq 1 300); do  # 30 s
    if answers "unix://$run/docker.sock"; then
      echo "DOCKER_HOST=unix://$run/docker.sock" > "$envfile"
      echo "docker-engine: private engine up in $((SECONDS - t0)) s (pid $pid, data $state/data, DOCKER_HOST=unix://$run/docker.sock)"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  local tail_
  tail_=$(tail -n 3 "$state/dockerd.log" 2>/dev/null | tr '\n' ' ')
  kill "$pid" 2>/dev/null
  unavailable "a private dockerd did not answer within 30 s: $tail_"
}

down() {
  [ -f "$pidfile" ] || { echo "docker-engine: no private engine to stop"; return 0; }
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 300); do  # dockerd stops its containers and containerd first
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "docker-engine: dockerd $pid still running after 30 s; SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
  fi
  # dockerd makes its data root a private mount of itself; left mounted (a dockerd that
  # was killed), it keeps `make clean` from removing the state folder
  awk -v p="$state/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  rm -f "$pidfile" "$envfile"
  echo "docker-engine: private engine (pid $pid) stopped"
}

check() {
  [ -f "$envfile" ] || { echo "docker-engine: no engine in $state"; return 0; }
  # shellcheck disable=SC1090
  . "$envfile"
  export DOCKER_HOST
  local left
  left=$( { docker ps -aq --filter "label=$label"; docker network ls -q --filter "label=$label"; \
            docker ps -aq --filter "label=com.docker.compose.project=verifier-compose"; } 2>&1)
  if [ -n "$left" ]; then
    echo "docker-engine: left running on $DOCKER_HOST:" >&2
    docker ps -a --filter "label=$label" >&2
    docker network ls --filter "label=$label" >&2
    return 1
  fi
  echo "docker-engine: no container or network of the tool left on $DOCKER_HOST"
}

run() {
  local had=""
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && had=1
  ( up ); local up_rc=$?
  if [ $up_rc -eq 0 ]; then
    # shellcheck disable=SC1090
    . "$envfile"
    export DOCKER_HOST
  else
    export VERIFIER_DOCKER_UNAVAILABLE
    VERIFIER_DOCKER_UNAVAILABLE=$(cat "$reason" 2>/dev/null || echo "no Docker engine")
  fi
  "$@"
  local rc=$?
  if [ $up_rc -eq 0 ]; then
    check || { [ $rc -ne 0 ] || rc=1; }
    [ -n "$had" ] || down
  fi
  return $rc
}

case "$cmd" in
  up) up ;;
  down) down ;;
  check) check ;;
  run) shift 2; [ $# -gt 0 ] || { echo "usage: $0 run STATE CMD..." >&2; exit 64; }; run "$@" ;;
  *) echo "usage: $0 up|down|check|run [STATE] [CMD...]" >&2; exit 64 ;;
esac
