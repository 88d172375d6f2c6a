from __future__ import annotations

from django.urls import path

from runs import views

app_name = "runs"

urlpatterns = [
    path("", views.run_list, name="run-list"),
    path("launch/", views.run_launch, name="run-launch"),
    path("compare/", views.run_compare, name="run-compare"),
    path("<int:pk>/", views.run_detail, name="run-detail"),
    path("<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
]
