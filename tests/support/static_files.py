"""WhiteNoise's middleware with the static files it finds kept for the process (tests/settings.py uses it).

Django's test client builds its middleware chain afresh for every ``Client`` (every test that makes
requests, every case of the authorization matrix), and WhiteNoiseMiddleware, with WHITENOISE_USE_FINDERS
and DEBUG off, lists every static file of every app and stats and describes each one (~220 files, ~14 ms)
each time. The files do not change while tests run, so this subclass finds them once per process and
settings: the same ``StaticFile`` objects, made by WhiteNoise's own code, as each new middleware would
make. Anything the middleware reads from the settings is part of the key, so a test that overrides one
gets files found under its settings.
"""

from __future__ import annotations

from django.conf import settings
from whitenoise.middleware import WhiteNoiseMiddleware

__all__ = ["FilesFoundOnceWhiteNoiseMiddleware", "found_files_key"]

# What WhiteNoiseMiddleware and the staticfiles finders read from the settings, besides WHITENOISE_*.
_SETTINGS = (
    "DEBUG",
    "FORCE_SCRIPT_NAME",
    "INSTALLED_APPS",
    "STATIC_URL",
    "STATIC_ROOT",
    "STATICFILES_DIRS",
    "STATICFILES_FINDERS",
    "STORAGES",
)


def found_files_key(middleware: WhiteNoiseMiddleware) -> str:
    """The settings the files found depend on, with the middleware's own (prefix, headers' inputs)."""
    names = [*_SETTINGS, *sorted(name for name in dir(settings) if name.startswith("WHITENOISE_"))]
    return repr(
        (
            [(name, getattr(settings, name, None)) for name in names],
            middleware.static_prefix,
            middleware.autorefresh,
            middleware.use_finders,
        )
    )


class FilesFoundOnceWhiteNoiseMiddleware(WhiteNoiseMiddleware):
    _found: dict[str, dict] = {}  # found_files_key → {url: StaticFile or Redirect}, for the process

    def add_files_from_finders(self) -> None:
        key = found_files_key(self)
        found = self._found.get(key)
        if found is None:
            others, self.files = self.files, {}
            try:
                super().add_files_from_finders()
                found = self._found[key] = self.files
            finally:
                self.files = others
        self.files.update(found)  # after STATIC_ROOT's and WHITENOISE_ROOT's, as WhiteNoise adds them
