#!/usr/bin/env bash
# `make up`: the demo agent, a django-q2 worker and the web server in the foreground.
# Ctrl-C, SIGTERM to this script, or SIGTERM to `make` (its parent goes away) stops all three.
set -u
PY="${PY:-.venv/bin/python}"
PORT="${PORT:-8000}"
DEMO_AGENT_PORT="${DEMO_AGENT_PORT:-8001}"
owner="$(ps -o ppid= -p "$PPID" 2>/dev/null | tr -d ' ')"   # make, when started by make
[ -n "$owner" ] || owner=$PPID
pids=()

stop() {
  trap - INT TERM EXIT
  echo; echo "stopping web server, worker and demo agent..."
  kill -TERM "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  exit 0
}
trap stop INT TERM EXIT

"$PY" -m agents.demo_agent --port "$DEMO_AGENT_PORT" & pids+=($!)
"$PY" manage.py qcluster & pids+=($!)
# --insecure: serve the stylesheet, scripts and admin assets with DEBUG off (the default), as `make up` is local.
"$PY" manage.py runserver --noreload --insecure "127.0.0.1:$PORT" & pids+=($!)
sleep 1
echo
echo "  evalconsole is running: http://127.0.0.1:$PORT/"
echo "  log in as admin / $(cat var/admin_password 2>/dev/null || echo '(see var/admin_password)')   (Ctrl-C stops it)"
echo

# Stay in the foreground until a signal, until make goes away, or until one of the three dies.
while kill -0 "$owner" 2>/dev/null; do
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || { echo "process $pid exited; stopping the rest" >&2; stop; }
  done
  sleep 1
done
stop
