from __future__ import annotations

from django.urls import path

from checks import views

app_name = "checks"

urlpatterns = [
    path("", views.check_index, name="check-index"),
    path("agents/<int:agent_pk>/", views.check_list, name="check-list"),
    path("agents/<int:agent_pk>/new/", views.check_create, name="check-create"),
    path("<int:pk>/", views.check_detail, name="check-detail"),
    path("<int:pk>/edit/", views.check_edit, name="check-edit"),
    path("<int:pk>/archive/", views.check_archive, name="check-archive"),
    path("tests/", views.testset_list, name="testset-list"),
    path("test-sets/new/", views.testset_new, name="testset-new"),
    path("agents/<int:agent_pk>/test-sets/new/", views.testset_create, name="testset-create"),
    path("test-sets/<int:pk>/", views.testset_detail, name="testset-detail"),
    path("test-sets/<int:testset_pk>/tests/new/", views.test_create, name="test-create"),
    path("tests/<int:pk>/", views.test_detail, name="test-detail"),
    path("tests/<int:pk>/edit/", views.test_edit, name="test-edit"),
    path("tests/<int:pk>/archive/", views.test_archive, name="test-archive"),
]
