from django.urls import path

from worlds import views

app_name = "worlds"

urlpatterns = [
    path("agents/<int:agent_pk>/", views.scene_list, name="scene-list"),
    path("agents/<int:agent_pk>/new/", views.scene_create, name="scene-create"),
    path("agents/<int:agent_pk>/validate/", views.scene_validate, name="scene-validate"),
    path("<int:pk>/", views.scene_detail, name="scene-detail"),
    path("<int:pk>/edit/", views.scene_edit, name="scene-edit"),
    path("<int:pk>/archive/", views.scene_archive, name="scene-archive"),
    path("test-sets/<int:testset_pk>/tests/new/", views.scene_test_create, name="scene-test-create"),
]
