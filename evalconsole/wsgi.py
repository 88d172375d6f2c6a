import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalconsole.settings")
application = get_wsgi_application()

# What is loaded now (Django, the apps, the settings) lives as long as the process: keep it out of the
# cyclic garbage collector, whose full collections otherwise walk it every few dozen requests (about
# half their cost on a list of 50 rows: bench/README.md "Serving").
gc.collect()
gc.freeze()
