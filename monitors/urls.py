"""Tasks, monitor dashboards and one-off evaluations (namespace `monitors`, included at the site root)."""

from django.urls import path

from core.urls import object_pages
from monitors import views

app_name = "monitors"

urlpatterns = [
    path("tasks/", views.task_list, name="task-list"),
    path("tasks/<int:pk>/", views.task_detail, name="task-detail"),
    *object_pages(
        views, "monitor", list_route="monitors/", detail_route="monitors/", actions=("edit", "delete")
    ),
    *object_pages(views, "evaluation", list_route="evaluations/", detail_route="evaluations/", actions=()),
]
