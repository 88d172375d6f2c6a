from __future__ import annotations

from django.urls import path

from checks import views
from core.urls import object_pages

app_name = "checks"

urlpatterns = [
    path("", views.check_index, name="check-index"),
    *object_pages(views, "check", list_route="agents/<int:agent_pk>/"),
    path("tests/", views.testset_list, name="testset-list"),
    path("test-sets/new/", views.testset_new, name="testset-new"),
    path("agents/<int:agent_pk>/test-sets/new/", views.testset_create, name="testset-create"),
    path("test-sets/<int:pk>/", views.testset_detail, name="testset-detail"),
    path("test-sets/<int:testset_pk>/tests/new/", views.test_create, name="test-create"),
    *object_pages(views, "test", list_route=None, detail_route="tests/"),
]
