"""The arguments of `evalconsole scene ...` (evalconsole/scene_cli.py runs them). Only argparse here: the
`evalconsole` command builds its whole parser at start-up, and the scene commands' engine imports wait
until a scene command runs."""

from __future__ import annotations

from typing import Any


def add_parser(sub: Any) -> None:
    scene = sub.add_parser("scene", help="validate, run and inspect scenes locally (no console needed)")
    ssub = scene.add_subparsers(dest="scene_command", metavar="SUBCOMMAND", parser_class=type(scene))
    validate = ssub.add_parser("validate", help="list every problem of a scene file (exit 0 or 3)")
    validate.add_argument("file")
    run = ssub.add_parser("run", help="run a scene's trials against an agent, each in a fresh world")
    run.add_argument("file")
    run.add_argument(
        "--agent",
        required=True,
        metavar="URL|ID",
        help="the agent's evalconsole/1 endpoint; with --url, the agent's id in the console",
    )
    run.add_argument("--url", default=None, help="run on this console instead (or EVALCONSOLE_URL)")
    run.add_argument("--token", default=None, help="the console's API token (or EVALCONSOLE_TOKEN)")
    run.add_argument(
        "--trials", type=int, default=None, metavar="N", help="trials (1..10; default: the scene's)"
    )
    run.add_argument("--out", default="results", metavar="DIR", help="where results go (default results/)")
    run.add_argument("--json", action="store_true", help="print the whole result as JSON")
    run.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    run.add_argument("--timeout", type=float, default=120.0, metavar="S", help="the agent's timeout (120)")
    up = ssub.add_parser("up", help="keep one world alive to point an agent at by hand")
    up.add_argument("file")
    up.add_argument("--port", type=int, default=8900)
    up.add_argument("--host", default="127.0.0.1")
    up.add_argument("--advertise-url", default=None, metavar="URL", help="the root agents reach the world at")
    up.add_argument("--token", default=None, help="the state endpoint's bearer token (default: random)")
    check = ssub.add_parser("check", help="the checks now, on a live world served by `scene up`")
    check.add_argument("file")
    check.add_argument("--world", required=True, metavar="URL", help="the root `scene up` printed")
    check.add_argument(
        "--token", default=None, help="the state token `scene up` printed (default: $EVALCONSOLE_SCENE_TOKEN)"
    )
    check.add_argument("--json", action="store_true")
    explain = ssub.add_parser(
        "explain", help="the failed checks of results, with the trace entries they cite"
    )
    explain.add_argument("dir")
