#!/usr/bin/env bash
# `make up`: the demo agent, a django-q2 worker and the web server (gunicorn) in the foreground.
# Ctrl-C, SIGTERM to this script, or SIGTERM to `make` (its parent goes away) stops all three.
set -u
PY="${PY:-.venv/bin/python}"
PORT="${PORT:-8000}"
DEMO_AGENT_PORT="${DEMO_AGENT_PORT:-8001}"
VAR_DIR="${EVALCONSOLE_VAR_DIR:-var}"
STOP_TIMEOUT="${STOP_TIMEOUT:-10}"   # seconds the three get to exit on SIGTERM before they are killed
owner="$(ps -o ppid= -p "$PPID" 2>/dev/null | tr -d ' ')"   # make, when started by make
[ -n "$owner" ] || owner=$PPID
pids=()
worker=""

any_alive() {
  local pid
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done
  [ -n "$worker" ] && kill -0 -- "-$worker" 2>/dev/null   # the worker's sentinel and pool, even once its main process exited
}

stop() {
  trap - INT TERM EXIT
  echo; echo "stopping web server, worker and demo agent..."
  # One SIGTERM each, then a bounded wait, then SIGKILL: a second signal can deadlock django-q2 while it
  # stops (Cluster.sig_handler re-enters Cluster.stop inside Event.set; django-q2 issue #346).
  kill -TERM "${pids[@]}" 2>/dev/null
  local ticks=0
  while any_alive && [ "$ticks" -lt $((STOP_TIMEOUT * 10)) ]; do sleep 0.1; ticks=$((ticks + 1)); done
  if any_alive; then
    echo "still running after ${STOP_TIMEOUT}s; killing what is left" >&2
    kill -KILL "${pids[@]}" 2>/dev/null
    [ -n "$worker" ] && kill -KILL -- "-$worker" 2>/dev/null
  fi
  wait "${pids[@]}" 2>/dev/null
  exit 0
}
trap stop INT TERM EXIT

"$PY" -m agents.demo_agent --port "$DEMO_AGENT_PORT" & pids+=($!)
# The worker gets a process group of its own, so that Ctrl-C (SIGINT to the terminal's foreground group)
# and SIGTERM to make's group reach only this script, which then signals the worker exactly once.
"$PY" -c 'import os, sys; os.setpgid(0, 0); os.execv(sys.executable, [sys.executable, *sys.argv[1:]])' \
  manage.py qcluster & worker=$!; pids+=($worker)
# gunicorn with threads (WhiteNoise serves the static files). One process by default: a scene's world
# is kept in the process that answers its calls, and a call that lands on another process restores the
# world from the database (tens of ms); EVALCONSOLE_WEB_PROCESSES raises it for API-heavy use.
"$PY" -m gunicorn evalconsole.wsgi:application --bind "127.0.0.1:$PORT" \
  --workers "${EVALCONSOLE_WEB_PROCESSES:-1}" --worker-class gthread --threads "${EVALCONSOLE_WEB_THREADS:-16}" \
  --graceful-timeout 5 --timeout 120 --log-level warning & pids+=($!)
sleep 1
echo
echo "  evalconsole is running: http://127.0.0.1:$PORT/"
echo "  log in as admin / $(cat "$VAR_DIR/admin_password" 2>/dev/null || echo "(see $VAR_DIR/admin_password)")   (Ctrl-C stops it)"
echo

# Stay in the foreground until a signal, until make goes away, or until one of the three dies.
while kill -0 "$owner" 2>/dev/null; do
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || { echo "process $pid exited; stopping the rest" >&2; stop; }
  done
  sleep 1
done
stop
