"""The WSGI module gunicorn serves: Django's handler, with what it loaded kept out of the cyclic collector."""

from __future__ import annotations

import gc
import importlib
import sys


def test_the_wsgi_module_freezes_what_it_loaded():
    gc.unfreeze()
    sys.modules.pop("evalconsole.wsgi", None)
    try:
        module = importlib.import_module("evalconsole.wsgi")
        from django.core.handlers.wsgi import WSGIHandler

        assert isinstance(module.application, WSGIHandler)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
