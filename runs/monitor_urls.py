"""Tasks, monitor dashboards and one-off evaluations (namespace `monitors`)."""

from django.urls import path

from runs import monitor_views as views

app_name = "monitors"

urlpatterns = [
    path("tasks/", views.task_list, name="task-list"),
    path("monitors/", views.monitor_list, name="monitor-list"),
]
