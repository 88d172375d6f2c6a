from __future__ import annotations

from django.urls import path

from core.urls import object_pages
from runs import views

app_name = "runs"

urlpatterns = [
    *object_pages(views, "run", create=("launch/", "launch"), actions=("cancel",)),
    path("compare/", views.run_compare, name="run-compare"),
    path("tests/<int:pk>/consistency/", views.test_consistency, name="test-consistency"),
]
