"""Okta's Users API as the official clients call it (``/api/v1/users``): the simulator behind
:mod:`worlds.engine.tools.okta`, kept apart for length.

Wire format: ``Authorization: SSWS <token>``; users as Okta writes them (times with milliseconds and
``Z``, ``profile``, ``credentials.provider``, ``type``, ``_links``); errors as
``{errorCode, errorSummary, errorLink, errorId, errorCauses}`` with Okta's codes (E0000011 bad token,
E0000007 unknown user, E0000031 bad search, E0000016/E0000001/E0000032/E0000038 forbidden lifecycle
transitions); cursor pagination with ``Link: <…>; rel="self"`` and ``rel="next"`` (the cursor is the
last user id of the page: users are kept in id order, as Okta lists them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from ..clock import parse_iso
from ..credentials import matches
from ..http import Request, Response
from ..ids import digest, okta_id
from ..results import StateResult
from ..simulator import BuildContext, Simulator

__all__ = ["OktaError", "OktaSimulator", "okta_time"]

STATUSES = (
    "STAGED",
    "PROVISIONED",
    "ACTIVE",
    "RECOVERY",
    "PASSWORD_EXPIRED",
    "LOCKED_OUT",
    "SUSPENDED",
    "DEPROVISIONED",
)
# Seed users in these statuses have not set a password yet (unless the scene says ``password: true``).
NO_PASSWORD = ("STAGED", "PROVISIONED")
# Seed users were created this long before the clock start and last signed in this long before it.
SEED_AGE = timedelta(days=30)
SEED_LOGIN = timedelta(days=1)
PAGE_DEFAULT, PAGE_MAX, Q_DEFAULT = 200, 200, 10
JSON = {"Content-Type": "application/json"}
_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def okta_time(moment: datetime | None) -> str | None:
    """``2026-03-02T09:00:00.000Z``: Okta always writes the milliseconds."""
    if moment is None:
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _token(scene: str, salt: str, length: int = 20) -> str:
    number, out = digest(scene, salt, "okta-token"), []
    for _ in range(length):
        number, r = divmod(number, len(_ALNUM))
        out.append(_ALNUM[r])
    return "".join(out)


class OktaError(Exception):
    """An Okta error answer: ``raise OktaError(403, "E0000038", "...")`` in a handler."""

    def __init__(self, status: int, code: str, summary: str, causes: tuple[str, ...] = ()) -> None:
        super().__init__(summary)
        self.status, self.code, self.summary, self.causes = status, code, summary, causes


def _not_found(ident: str) -> OktaError:
    return OktaError(404, "E0000007", f"Not found: Resource not found: {ident} (User)")


def _validation(field: str, message: str) -> OktaError:
    return OktaError(400, "E0000001", f"Api validation failed: {field}", (f"{field}: {message}",))


def _bad_search() -> OktaError:
    return OktaError(400, "E0000031", "Invalid search criteria.")


# -- filter and search expressions --------------------------------------------------------------------
# ``attr op "value"`` joined with ``and`` (binding tighter) and ``or``, with parentheses. ``filter`` and
# ``search`` differ only in the attributes and operators they accept and in case (search values are
# case-insensitive, filter values exact); anything else is Okta's E0000031.

_TOKEN = re.compile(r'\s*(\(|\)|"(?:[^"\\]|\\.)*"|[^\s()"]+)')
SEARCH_RULES = {"status": ("eq", "sw"), "profile.login": ("eq", "sw"), "profile.email": ("eq", "sw")}
FILTER_RULES = {
    "status": ("eq",),
    "id": ("eq",),
    "profile.login": ("eq",),
    "profile.email": ("eq",),
    "profile.firstName": ("eq",),
    "profile.lastName": ("eq",),
    "lastUpdated": ("eq", "gt", "ge", "lt", "le"),
}
Predicate = Callable[[dict[str, Any]], bool]


def _tokens(text: str) -> list[str]:
    out, pos, text = [], 0, text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise _bad_search()
        out.append(match.group(1))
        pos = match.end()
    return out


def compile_expression(text: str, rules: Mapping[str, tuple[str, ...]], *, fold: bool) -> Predicate:
    """A predicate on a stored user for a ``filter``/``search`` expression; raises E0000031."""
    tokens, pos = _tokens(text), 0
    if not tokens:
        raise _bad_search()

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise _bad_search()
        pos += 1
        return tokens[pos - 1]

    def joined(word: str, operand: Callable[[], Predicate], combine: Callable) -> Predicate:
        """``operand (word operand)*``: one predicate, or ``combine`` (any / all) of them."""
        parts = [operand()]
        while (peek() or "").lower() == word:
            take()
            parts.append(operand())
        return parts[0] if len(parts) == 1 else (lambda u: combine(p(u) for p in parts))

    def disjunction() -> Predicate:
        return joined("or", conjunction, any)

    def conjunction() -> Predicate:
        return joined("and", comparison, all)

    def comparison() -> Predicate:
        if peek() == "(":
            take()
            inner = disjunction()
            if take() != ")":
                raise _bad_search()
            return inner
        attr, op, raw = take(), take().lower(), take()
        if attr not in rules or op not in rules[attr] or not (len(raw) >= 2 and raw[0] == raw[-1] == '"'):
            raise _bad_search()
        return _compare(attr, op, raw[1:-1].replace('\\"', '"'), fold)

    predicate = disjunction()
    if pos != len(tokens):
        raise _bad_search()
    return predicate


def _compare(attr: str, op: str, value: str, fold: bool) -> Predicate:
    if attr == "lastUpdated":
        try:
            moment = okta_time(parse_iso(value))
        except ValueError:
            raise _bad_search() from None
        compare = {
            "eq": str.__eq__,
            "gt": str.__gt__,
            "ge": str.__ge__,
            "lt": str.__lt__,
            "le": str.__le__,
        }[op]
        return lambda u: compare(u["lastUpdated"], moment)
    section, _, key = attr.rpartition(".")
    want = value.casefold() if fold else value

    def read(user: dict[str, Any]) -> str:
        got = (user["profile"] if section else user).get(key) or ""
        return got.casefold() if fold else got

    if op == "sw":
        return lambda u: read(u).startswith(want)
    return lambda u: read(u) == want


# -- the simulator ------------------------------------------------------------------------------------


class OktaSimulator(Simulator):
    """An Okta org's users, as an API token of an admin sees them.

    State (plain JSON): ``type_id`` (the default user type); ``users`` by id, in id order (the order
    Okta lists them in), each with its status, Okta's times (already written as Okta writes them),
    ``profile``, ``password`` (whether a password is set), ``ref`` and ``seqs`` (the trace seqs of the
    agent calls that changed it); ``deleted``: users deleted during the trial, by id, kept for the
    ``okta.user`` check; ``tokens``: a counter for activation and reset tokens.
    """

    tool = "okta"
    routes = (
        ("GET", "/api/v1/users", "_list_users"),
        ("GET", "/api/v1/users/{user}", "_get_user"),
        ("DELETE", "/api/v1/users/{user}", "_delete_user"),
        ("POST", "/api/v1/users/{user}/lifecycle/{operation}", "_lifecycle"),
    )

    # -- building -----------------------------------------------------------------------------------
    @classmethod
    def build(cls, ctx: BuildContext) -> dict[str, Any]:
        scene = ctx.scene.name
        created = ctx.scene.start - SEED_AGE
        users: dict[str, dict[str, Any]] = {}
        for ref, record in ctx.records.get("users", {}).items():
            f = record.fields
            uid = okta_id(scene, ref)
            status = f.get("status") or "ACTIVE"
            password = f.get("password")
            if password is None:
                password = status not in NO_PASSWORD
            staged = status == "STAGED"
            signed_in = status not in NO_PASSWORD
            users[uid] = {
                "id": uid,
                "ref": ref,
                "status": status,
                "password": bool(password),
                "created": okta_time(created),
                "activated": None if staged else okta_time(created),
                "statusChanged": None if staged else okta_time(created),
                "lastLogin": okta_time(ctx.scene.start - SEED_LOGIN) if signed_in else None,
                "lastUpdated": okta_time(created),
                "passwordChanged": okta_time(created) if password else None,
                "profile": {
                    "firstName": f.get("first_name"),
                    "lastName": f.get("last_name"),
                    "email": f.get("email") or f["login"],
                    "login": f["login"],
                },
                "seqs": [],
            }
            ctx.world.ids[ref] = uid
        return {
            "type_id": "oty" + okta_id(scene, "\0user-type")[3:],
            "users": {uid: users[uid] for uid in sorted(users)},
            "deleted": {},
            "tokens": 0,
        }

    # -- answering ----------------------------------------------------------------------------------
    def call(self, request: Request) -> Response:
        try:
            return super().call(request)
        except OktaError as exc:
            return self._error(exc)

    def authenticate(self, request: Request) -> Response | None:
        # ``SSWS <token>``; the official Python SDK (3.x) sends ``SSWS<token>`` with no space, and its
        # calls work against Okta, so the space is optional here too.
        header = (request.header("authorization") or "").strip()
        if header.startswith("SSWS") and matches(header[4:].strip(), self.credential.get("token", "")):
            return None
        return self._error(OktaError(401, "E0000011", "Invalid token provided"))

    def gap(self, request: Request) -> Response:
        response = self._error(OktaError(404, "E0000008", "The requested path was not found"))
        response.coverage_gap = True
        return response

    def bad_body(self, request: Request, message: str) -> Response:
        return self._error(OktaError(400, "E0000003", "The request body was not well-formed."))

    def _error(self, exc: OktaError) -> Response:
        # Okta's errorId is opaque ("oae" and 22 characters); ours comes from the call's seq.
        error_id = "oae" + _token(self.world.scene.name, f"error{self.world.current_seq}", 22)
        body = {
            "errorCode": exc.code,
            "errorSummary": exc.summary,
            "errorLink": exc.code,
            "errorId": error_id,
            "errorCauses": [{"errorSummary": cause} for cause in exc.causes],
        }
        return Response(exc.status, body, headers=dict(JSON))

    def _root(self, request: Request) -> str:
        host = request.header("x-forwarded-host") or request.header("host") or "127.0.0.1"
        proto = request.header("x-forwarded-proto") or "http"
        return f"{proto}://{host}/worlds/{self.world.id}/okta"

    @property
    def _now(self) -> str:
        return okta_time(self.world.clock.now) or ""

    def _find(self, ident: str) -> dict[str, Any] | None:
        """A user by id, login (any case) or login shortname when it is unambiguous."""
        users = self.state["users"]
        if ident in users:
            return users[ident]
        folded = ident.casefold()
        by_login = [u for u in users.values() if u["profile"]["login"].casefold() == folded]
        if by_login:
            return by_login[0]
        short = [u for u in users.values() if u["profile"]["login"].casefold().split("@")[0] == folded]
        return short[0] if len(short) == 1 else None

    def _user(self, ident: str) -> dict[str, Any]:
        user = self._find(ident)
        if user is None:
            raise _not_found(ident)
        return user

    def _render(self, user: dict[str, Any], root: str, *, full: bool) -> dict[str, Any]:
        href = f"{root}/api/v1/users/{user['id']}"
        links: dict[str, Any] = {"self": {"href": href}}
        if full:  # GET of one user: the lifecycle operations its status allows, as Okta links them
            status = user["status"]
            for name, operation in LINKS:
                if status in ALLOWED[operation]:
                    links[name] = {"href": f"{href}/lifecycle/{operation}", "hints": {"allow": ["POST"]}}
            links["type"] = {"href": f"{root}/api/v1/meta/types/user/{self.state['type_id']}"}
        credentials: dict[str, Any] = {"provider": {"type": "OKTA", "name": "OKTA"}}
        if user["password"]:
            credentials = {"password": {}, **credentials}
        return {
            "id": user["id"],
            "status": user["status"],
            "created": user["created"],
            "activated": user["activated"],
            "statusChanged": user["statusChanged"],
            "lastLogin": user["lastLogin"],
            "lastUpdated": user["lastUpdated"],
            "passwordChanged": user["passwordChanged"],
            "type": {"id": self.state["type_id"]},
            "profile": dict(user["profile"]),
            "credentials": credentials,
            "_links": links,
        }

    # -- GET /api/v1/users ----------------------------------------------------------------------------
    def _list_users(self, request: Request) -> Response:
        q, filt, search = request.arg("q"), request.arg("filter"), request.arg("search")
        if sum(x is not None for x in (q, filt, search)) > 1:
            raise OktaError(
                400, "E0000033", "Bad request. Can't specify a search query and filter in the same request."
            )
        limit = self._limit(request.arg("limit"), Q_DEFAULT if q is not None else PAGE_DEFAULT)
        after = request.arg("after") or ""
        if search is not None:
            keep = compile_expression(search, SEARCH_RULES, fold=True)
        elif filt is not None:
            keep = compile_expression(filt, FILTER_RULES, fold=False)
        else:  # the plain list and q leave out deprovisioned users, as Okta does
            prefix = (q or "").casefold()

            def keep(u: dict[str, Any]) -> bool:
                if u["status"] == "DEPROVISIONED":
                    return False
                p = u["profile"]
                fields = (p["firstName"], p["lastName"], p["email"], p["login"])
                return not prefix or any((v or "").casefold().startswith(prefix) for v in fields)

        page: list[dict[str, Any]] = []
        more = False
        for user in self._after(after):
            if keep(user):
                if len(page) == limit:
                    more = True
                    break
                page.append(user)
        root = self._root(request)
        links = [f'<{self._link(root, request, {})}>; rel="self"']
        if more and q is None:  # q answers one page only (Okta: "doesn't support pagination")
            links.append(f'<{self._link(root, request, {"after": page[-1]["id"]})}>; rel="next"')
        body = [self._render(u, root, full=False) for u in page]
        return Response(200, body, headers={**JSON, "Link": ", ".join(links)})

    def _after(self, cursor: str) -> Iterator[dict[str, Any]]:
        users = self.state["users"]
        if not cursor:
            yield from users.values()
            return
        for uid, user in users.items():  # id order: the cursor is the last id already answered
            if uid > cursor:
                yield user

    @staticmethod
    def _limit(raw: str | None, default: int) -> int:
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise _validation("limit", f"must be a number, not {raw!r}") from None
        return min(value, PAGE_MAX) if value > 0 else default

    def _link(self, root: str, request: Request, change: dict[str, str]) -> str:
        query = {k: list(v) for k, v in request.query.items() if k != "after"}
        query.update({k: [v] for k, v in change.items()})
        text = urlencode(query, doseq=True, quote_via=quote)
        return f"{root}{quote(request.path)}" + (f"?{text}" if text else "")

    # -- GET / DELETE /api/v1/users/{id} -------------------------------------------------------------
    def _get_user(self, request: Request, user: str) -> Response:
        body = self._render(self._user(user), self._root(request), full=True)
        return Response(200, body, headers=dict(JSON))

    def _delete_user(self, request: Request, user: str) -> Response:
        self._flag(request, "sendEmail")
        found = self._user(user)
        if found["status"] != "DEPROVISIONED":  # the first delete deactivates
            self._change(found, "DEPROVISIONED")
        else:  # the second deletes for good
            self._touch(found)
            del self.state["users"][found["id"]]
            self.state["deleted"][found["id"]] = found
        # No body; not labelled JSON, or the official client tries to parse the empty body.
        return Response(204, None, headers={"Content-Type": "text/plain"})

    # -- POST /api/v1/users/{id}/lifecycle/{operation} -----------------------------------------------
    def _lifecycle(self, request: Request, user: str, operation: str) -> Response:
        if operation not in ALLOWED:
            return self.gap(request)
        send_email = self._flag(request, "sendEmail")
        found = self._user(user)
        status = found["status"]
        if status not in ALLOWED[operation]:
            raise _forbidden(operation, status)
        root, body = self._root(request), {}  # Okta: "Returns an empty object" by default
        if operation == "activate":
            self._change(found, "ACTIVE" if found["password"] else "PROVISIONED", activated=True)
            if send_email is False:  # the activation link instead of the email
                token = self._new_token(found)
                body = {"activationUrl": f"{root}/welcome/{token}", "activationToken": token}
        elif operation == "reset_password":
            self._change(found, "RECOVERY")
            if send_email is False:  # the reset link instead of the email
                body = {"resetPasswordUrl": f"{root}/reset_password/{self._new_token(found)}"}
        else:
            self._change(found, RESULT[operation])
        return Response(200, body, headers=dict(JSON))

    @staticmethod
    def _flag(request: Request, name: str) -> bool | None:
        raw = request.arg(name)
        if raw is None or raw == "":
            return None
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise _validation(name, f"must be true or false, not {raw!r}")

    def _new_token(self, user: dict[str, Any]) -> str:
        self.state["tokens"] += 1
        return _token(self.world.scene.name, f"{user['id']}:{self.state['tokens']}")

    def _touch(self, user: dict[str, Any]) -> None:
        seq = self.world.current_seq
        if seq is not None and seq not in user["seqs"]:
            user["seqs"].append(seq)

    def _change(self, user: dict[str, Any], status: str, *, activated: bool = False) -> None:
        now = self._now
        if status != user["status"]:  # unlocking an ACTIVE user updates it without a status change
            user["status"], user["statusChanged"] = status, now
        user["lastUpdated"] = now
        if activated:
            user["activated"] = now
        self._touch(user)

    # -- judging ------------------------------------------------------------------------------------
    def state_check(self, name: str, spec: Mapping[str, Any]) -> StateResult:
        if name != "user":
            return super().state_check(name, spec)
        return self._user_check(spec)

    def _user_check(self, spec: Mapping[str, Any]) -> StateResult:
        """``okta.user``: ``user`` is a ref name or a login; exactly one of ``status``, ``status_in`` or
        ``exists: false``. A deleted or never-existing user passes only ``exists: false``. Evidence: the
        seqs of the agent calls that changed the user."""
        wanted = str(spec["user"])
        uid = self.world.ids.get(wanted)
        user, gone = None, False
        if isinstance(uid, str):
            user = self.state["users"].get(uid)
            if user is None and uid in self.state["deleted"]:
                user, gone = self.state["deleted"][uid], True
        else:
            folded = wanted.casefold()
            for pool, deleted in ((self.state["users"], False), (self.state["deleted"], True)):
                user = next((u for u in pool.values() if u["profile"]["login"].casefold() == folded), None)
                if user is not None:
                    gone = deleted
                    break
        label = (
            wanted
            if user is None or user["profile"]["login"] == wanted
            else (f"{wanted} ({user['profile']['login']})")
        )
        if spec.get("status_in"):
            statuses = list(spec["status_in"])
            expected = f"Okta user {label} with a status in {', '.join(statuses)}"
        elif spec.get("status"):
            statuses = [spec["status"]]
            expected = f"Okta user {label} with status {statuses[0]}"
        else:
            statuses = None
            expected = f"Okta user {label} no longer exists"
        evidence = tuple(user["seqs"]) if user is not None else ()
        if user is None:
            actual = f"{label} never existed in this world"
        elif gone:
            actual = f"{label} was deleted"
        else:
            actual = f"{label} exists with status {user['status']}"
        if statuses is None:
            passed = user is None or gone
        else:
            passed = user is not None and not gone and user["status"] in statuses
            if user is not None and gone:
                actual = f"{label} no longer exists (deleted)"
        return StateResult.of(passed, expected, actual, evidence=evidence)

    def final_state(self) -> dict[str, Any]:
        """Users by login with their id, ref, status and times; deleted users' logins."""
        users = {}
        for user in self.state["users"].values():
            users[user["profile"]["login"]] = {
                "id": user["id"],
                "ref": user["ref"],
                "status": user["status"],
                "status_changed": user["statusChanged"],
                **({"changed_by": list(user["seqs"])} if user["seqs"] else {}),
            }
        deleted = {
            u["profile"]["login"]: {"id": u["id"], "ref": u["ref"], "changed_by": list(u["seqs"])}
            for u in self.state["deleted"].values()
        }
        return {"users": users, **({"deleted": deleted} if deleted else {})}


# Which statuses each lifecycle operation is allowed from (Okta's Users API reference), and where the
# simple ones lead (activate: ACTIVE with a password, else PROVISIONED; reset_password: RECOVERY).
ALLOWED = {
    "activate": ("STAGED", "DEPROVISIONED"),
    "deactivate": tuple(s for s in STATUSES if s != "DEPROVISIONED"),
    "suspend": ("ACTIVE",),
    "unsuspend": ("SUSPENDED",),
    "unlock": ("LOCKED_OUT", "ACTIVE"),
    "reset_password": ("ACTIVE", "RECOVERY", "PASSWORD_EXPIRED", "LOCKED_OUT"),
}
RESULT = {"deactivate": "DEPROVISIONED", "suspend": "SUSPENDED", "unsuspend": "ACTIVE", "unlock": "ACTIVE"}
LINKS = (
    ("activate", "activate"),
    ("deactivate", "deactivate"),
    ("suspend", "suspend"),
    ("unsuspend", "unsuspend"),
    ("unlock", "unlock"),
    ("resetPassword", "reset_password"),
)


def _forbidden(operation: str, status: str) -> OktaError:
    """Okta's answer to a lifecycle operation the user's status does not allow."""
    if operation == "activate":
        return OktaError(403, "E0000016", "Activation failed because the user is already active")
    if operation in ("suspend", "unsuspend"):
        need = "ACTIVE" if operation == "suspend" else "SUSPENDED"
        return _validation("status", f"the user must be {need} to {operation} it; it is {status}")
    if operation == "unlock":
        return OktaError(403, "E0000032", "Unlock is not allowed for this user.")
    return OktaError(403, "E0000038", "This operation is not allowed in the user's current status.")
