from django.apps import AppConfig


class EvalconsoleConfig(AppConfig):
    name = "evalconsole"
    verbose_name = "Console"
