"""Wake a waiting worker the moment work is queued, so that a worker waits without polling.

``notify()`` says "there is new work"; a ``Listener`` blocks in ``wait(timeout)`` until it hears one
(True) or the timeout passes (False: the caller then looks at the database anyway, the fallback).

- PostgreSQL: ``NOTIFY evalconsole_work`` on the caller's connection. It is transactional: sent when the
  caller's transaction commits (at once outside one), so a listener never wakes before the work is
  visible. The listener holds its own connection with ``LISTEN evalconsole_work``: any number of
  workers on any machines hear it.
- Other databases (SQLite, the embedded default, so one machine): a Unix datagram socket in the var
  directory (``<VAR_DIR>/work.sock``). ``notify()`` sends one datagram after the caller's transaction
  commits; one listener per machine binds the socket (a second one finds it taken and waits on its
  timeout alone).

Nothing here is required for correctness: a lost notification costs at most the listener's timeout.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import socket
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

__all__ = ["CHANNEL", "Listener", "listener", "notify"]

log = logging.getLogger(__name__)

CHANNEL = "evalconsole_work"


def _socket_path() -> Path:
    return Path(settings.VAR_DIR) / "work.sock"


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def notify() -> None:
    """Tell a waiting worker there is new work (on PostgreSQL when the caller's transaction commits)."""
    if _postgres():
        with connection.cursor() as cursor:
            cursor.execute(f"NOTIFY {CHANNEL}")
        return
    transaction.on_commit(_send_datagram)


def _send_datagram() -> None:
    with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)) as sock:
        sock.setblocking(False)
        with contextlib.suppress(OSError):  # no listener, or its queue is full: it wakes anyway
            sock.sendto(b"w", str(_socket_path()))


class Listener:
    """Waits for :func:`notify`. ``wait`` answers whether it heard one; ``close`` releases it."""

    def wait(self, timeout: float) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - overridden
        pass


class _Sleeper(Listener):
    """No channel to listen on: the timeout alone."""

    def wait(self, timeout: float) -> bool:
        select.select([], [], [], max(0.0, timeout))
        return False


class _PostgresListener(Listener):
    def __init__(self) -> None:
        import psycopg

        params = {
            k: v
            for k, v in connection.get_connection_params().items()
            if k not in ("cursor_factory", "context", "prepare_threshold")
        }
        self.conn = psycopg.connect(**params, autocommit=True)
        self.conn.execute(f"LISTEN {CHANNEL}")

    def wait(self, timeout: float) -> bool:
        heard = False
        for _ in self.conn.notifies(timeout=max(0.0, timeout), stop_after=1):
            heard = True
        if heard:  # take whatever else arrived meanwhile: one wake-up is enough
            for _ in self.conn.notifies(timeout=0):
                pass
        return heard

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


class _SocketListener(Listener):
    def __init__(self, path: Path, sock: socket.socket) -> None:
        self.path, self.sock = path, sock

    @classmethod
    def bind(cls) -> Listener:
        path = _socket_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            if path.exists():
                if _taken(path):  # another worker on this machine listens: share its wake-ups' effect
                    sock.close()
                    return _Sleeper()
                path.unlink()  # left by a worker that died
            sock.bind(str(path))
        except OSError as exc:
            sock.close()
            log.info("worker wake-up: cannot listen on %s (%s); waiting on the timeout alone", path, exc)
            return _Sleeper()
        sock.setblocking(False)
        return cls(path, sock)

    def wait(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not ready:
            return False
        while True:  # every datagram waiting: one wake-up is enough
            try:
                self.sock.recv(64)
            except OSError:
                return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(OSError):
            if self.path.exists() and os.stat(self.path).st_ino:
                self.path.unlink()


def _taken(path: Path) -> bool:
    """Whether a live socket is bound at ``path`` (a stale one refuses the connection)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect(str(path))
        return True
    except OSError as exc:
        return exc.errno not in (errno.ECONNREFUSED, errno.ENOENT)
    finally:
        probe.close()


def listener() -> Listener:
    """A listener for this database: PostgreSQL's LISTEN, else this machine's socket (else a sleeper)."""
    if _postgres():
        try:
            return _PostgresListener()
        except Exception as exc:  # noqa: BLE001 - the timeout still serves as the fallback
            log.warning("worker wake-up: cannot LISTEN (%s); waiting on the timeout alone", exc)
            return _Sleeper()
    return _SocketListener.bind()
