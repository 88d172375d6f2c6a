"""tests/support/static_files.py: the test settings' WhiteNoise finds the static files once per process and
settings, and serves what WhiteNoise's own middleware would."""

from __future__ import annotations

from django.conf import settings
from django.test import Client, override_settings
from whitenoise.middleware import WhiteNoiseMiddleware

from tests.support.static_files import FilesFoundOnceWhiteNoiseMiddleware


def _described(files: dict) -> dict:
    """Each URL's file and response headers (per encoding), as WhiteNoise answers a GET with them."""
    return {
        url: [(path, sorted(headers)) for _, path, headers in getattr(file, "alternatives", [])] or repr(file)
        for url, file in files.items()
    }


def test_the_test_settings_use_it_in_whitenoises_place():
    assert "whitenoise.middleware.WhiteNoiseMiddleware" not in settings.MIDDLEWARE
    assert settings.MIDDLEWARE.count("tests.support.static_files.FilesFoundOnceWhiteNoiseMiddleware") == 1


def test_it_finds_the_files_once_and_has_what_whitenoise_finds(monkeypatch):
    plain = WhiteNoiseMiddleware(lambda request: None)
    FilesFoundOnceWhiteNoiseMiddleware(lambda request: None)  # found now, if not before in this process
    calls = []
    monkeypatch.setattr(WhiteNoiseMiddleware, "add_files_from_finders", lambda self: calls.append(self))

    first = FilesFoundOnceWhiteNoiseMiddleware(lambda request: None)
    second = FilesFoundOnceWhiteNoiseMiddleware(lambda request: None)

    assert calls == []  # neither lists the files again
    assert len(plain.files) > 100 and first.files.keys() == second.files.keys() == plain.files.keys()
    assert _described(first.files) == _described(plain.files)  # the same headers for every file
    assert first.files is not second.files  # each middleware has its own dictionary


def test_other_settings_are_found_again():
    FilesFoundOnceWhiteNoiseMiddleware(lambda request: None)
    with override_settings(WHITENOISE_MAX_AGE=7):
        other = FilesFoundOnceWhiteNoiseMiddleware(lambda request: None)
    headers = dict(other.files["/static/admin/css/base.css"].alternatives[0][2])
    assert headers["Cache-Control"] == "max-age=7, public"


def test_a_static_file_is_served_by_every_client():
    for _ in range(2):
        response = Client().get("/static/admin/css/base.css")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/css")
        assert response["Cache-Control"] == "max-age=60, public"
