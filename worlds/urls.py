from django.urls import path

from worlds import entry

app_name = "worlds-entry"

urlpatterns = [
    path("<str:world_id>/<str:tool>/", entry.world_call, name="tool-root"),
    path("<str:world_id>/<str:tool>/<path:rest>", entry.world_call, name="call"),
]
