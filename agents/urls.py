from __future__ import annotations

from agents import views
from core.urls import object_pages

app_name = "agents"

urlpatterns = object_pages(views, "agent", actions=("edit", "ping", "archive"))
