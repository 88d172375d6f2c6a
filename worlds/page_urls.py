from django.urls import path

from core.urls import object_pages
from worlds import views

app_name = "worlds"

urlpatterns = [
    *object_pages(views, "scene", list_route="agents/<int:agent_pk>/"),
    path("agents/<int:agent_pk>/validate/", views.scene_validate, name="scene-validate"),
    path("test-sets/<int:testset_pk>/tests/new/", views.scene_test_create, name="scene-test-create"),
]
