from __future__ import annotations

from django.urls import path

from agents import views

app_name = "agents"

urlpatterns = [
    path("", views.agent_list, name="agent-list"),
    path("new/", views.agent_create, name="agent-create"),
    path("<int:pk>/", views.agent_detail, name="agent-detail"),
    path("<int:pk>/edit/", views.agent_edit, name="agent-edit"),
    path("<int:pk>/ping/", views.agent_ping, name="agent-ping"),
    path("<int:pk>/archive/", views.agent_archive, name="agent-archive"),
]
