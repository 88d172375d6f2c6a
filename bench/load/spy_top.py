#!/usr/bin/env python
"""Where a process's CPU went under load: sums py-spy raw stacks (``bench_load.py --profile``, or
``py-spy record --format raw --gil``) into the stages a request passes through and the modules it
spends in.

  python bench/load/spy_top.py /tmp/bench_load/profile/web-*.txt
  python bench/load/spy_top.py --top 40 --grep runs/services.py /tmp/bench_load/profile/web-*.txt

Stages (each sample in exactly one, by its stack): the gunicorn main thread's loop; a gunicorn thread
reading and parsing a request; gunicorn writing the answer; Django's WSGI handler outside the
middleware chain (request object, the request_started/finished signals: closing old connections);
each middleware's own work (the frame right under the chain: ``SessionMiddleware.process_response``
...); URL resolving; the view (with its template rendering); "other" (threads outside requests).
Modules: a sample counts once in every module group any frame of its stack belongs to, so the groups
overlap (the DB driver inside a view counts for both).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

CHAIN = re.compile(
    r"^(convert_exception_to_response\.<locals>\.inner|MiddlewareMixin\.__call__|\w*Middleware\.__call__) "
)
FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?):(?P<line>\d+)\)$")

MODULES = [
    ("gunicorn", ("gunicorn/",)),
    ("django WSGI handler", ("django/core/handlers/",)),
    ("DB driver (psycopg)", ("psycopg/", "psycopg_c", "psycopg_pool/")),
    ("DB backend (django/db/backends)", ("django/db/backends/",)),
    (
        "DB connection open/close/check",
        ("close_old_connections", "ensure_connection", "is_usable", "connect ("),
    ),
    ("ORM (django/db/models)", ("django/db/models/",)),
    ("templates (django/template)", ("django/template/",)),
    ("DRF (rest_framework)", ("rest_framework/",)),
    ("sessions (django/contrib/sessions)", ("django/contrib/sessions/",)),
    ("auth (django/contrib/auth)", ("django/contrib/auth/",)),
    ("messages (django/contrib/messages)", ("django/contrib/messages/",)),
    ("CSRF (django/middleware/csrf)", ("django/middleware/csrf.py",)),
    ("WhiteNoise", ("whitenoise/",)),
    ("django_htmx", ("django_htmx/",)),
    ("signals (django/dispatch)", ("django/dispatch/",)),
    ("logging", ("logging/",)),
    ("json", ("json/",)),
    ("gzip/zlib", ("gzip", "zlib")),
    ("django-q2", ("django_q/",)),
    ("threading/queue/selectors", ("threading.py", "queue.py", "selectors.py", "concurrent/futures/")),
    ("launch (runs/services.py)", ("runs/services.py",)),
]


def stage(frames: list[str]) -> str:
    names = [f.split(" (", 1)[0] for f in frames]
    if "ThreadWorker.handle" not in names:
        if any(n.startswith(("ThreadWorker.run", "Arbiter.")) for n in names):
            return "gunicorn main thread (accept, poll, keep-alive)"
        return "other (not a request)"
    if "ThreadWorker.handle_request" not in names:
        return "gunicorn: read/parse request"
    if "WSGIHandler.__call__" not in names:
        return "gunicorn: environ, write answer"
    i = names.index("WSGIHandler.__call__")
    if "BaseHandler.get_response" not in names[i:]:
        return "Django WSGI: " + (names[i + 1] if i + 1 < len(names) else "(own)")
    j = names.index("BaseHandler.get_response", i)
    # the deepest frame of the middleware chain, then what it called
    k = j
    for n in range(j + 1, len(names)):
        if CHAIN.match(frames[n]) or names[n] == "BaseHandler._get_response":
            k = n
            if names[n] == "BaseHandler._get_response":
                break
        else:
            break
    if names[k] != "BaseHandler._get_response":
        mw = names[k] if k + 1 >= len(names) else names[k + 1]
        return "middleware: " + mw
    nxt = names[k + 1] if k + 1 < len(names) else "(own)"
    if nxt.startswith("BaseHandler.resolve_request") or "resolve" in nxt.lower():
        return "URL resolving"
    if "Middleware." in nxt:
        return "middleware: " + nxt
    if "render" in nxt.lower():
        return "view: template response render"
    return "view"


def read(paths: list[str]) -> Counter:
    stacks: Counter = Counter()
    for path in paths:
        for line in Path(path).read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                stacks[stack] += int(count)
    return stacks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--top", type=int, default=25, help="leaf functions to list")
    ap.add_argument(
        "--grep", action="append", default=[], help="also count samples with a frame containing this"
    )
    ap.add_argument("--stage-detail", default="", help="list the frames under this stage (a prefix)")
    a = ap.parse_args()
    stacks = read(a.files)
    total = sum(stacks.values())
    print(f"{total} samples in {len(a.files)} files")
    stages: Counter = Counter()
    modules: Counter = Counter()
    leaves: Counter = Counter()
    grep: Counter = Counter()
    detail: Counter = Counter()
    for stack, n in stacks.items():
        frames = stack.split(";")
        st = stage(frames)
        stages[st] += n
        if a.stage_detail and st.startswith(a.stage_detail):
            detail[frames[-1]] += n
        for name, needles in MODULES:
            if any(needle in stack for needle in needles):
                modules[name] += n
        leaf = FRAME.match(frames[-1])
        leaves[f"{leaf['func']} ({leaf['file']})" if leaf else frames[-1]] += n
        for g in a.grep:
            if g in stack:
                grep[g] += n

    def show(title: str, counter: Counter, limit: int | None = None) -> None:
        print(f"\n{title}")
        for key, n in counter.most_common(limit):
            print(f"  {100 * n / total:5.1f} %  {n:7}  {key}")

    coarse: Counter = Counter()
    for key, n in stages.items():
        coarse[key.split(":")[0].split(" (")[0].replace("gunicorn main thread", "gunicorn")] += n
    show("stages, coarse (each sample once)", coarse)
    show("stages (each sample once)", stages)
    show("modules (inclusive, overlapping)", modules)
    show(f"top {a.top} leaf functions (self)", leaves, a.top)
    if grep:
        show("--grep", grep)
    if detail:
        show(f"leaves under {a.stage_detail!r}", detail, a.top)


if __name__ == "__main__":
    main()
