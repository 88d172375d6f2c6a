"""Tasks, monitor dashboards and one-off evaluations (namespace `monitors`, included at the site root)."""

from django.urls import path

from monitors import views

app_name = "monitors"

urlpatterns = [
    path("tasks/", views.task_list, name="task-list"),
    path("tasks/<int:pk>/", views.task_detail, name="task-detail"),
    path("monitors/", views.monitor_list, name="monitor-list"),
    path("monitors/new/", views.monitor_create, name="monitor-create"),
    path("monitors/<int:pk>/", views.monitor_detail, name="monitor-detail"),
    path("monitors/<int:pk>/edit/", views.monitor_edit, name="monitor-edit"),
    path("monitors/<int:pk>/delete/", views.monitor_delete, name="monitor-delete"),
    path("evaluations/", views.evaluation_list, name="evaluation-list"),
    path("evaluations/new/", views.evaluation_create, name="evaluation-create"),
    path("evaluations/<int:pk>/", views.evaluation_detail, name="evaluation-detail"),
]
