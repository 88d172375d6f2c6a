from django.apps import AppConfig


class WorldsConfig(AppConfig):
    name = "worlds"
    verbose_name = "Worlds and scenes"

    def ready(self) -> None:
        # The test builder (checks floor) offers scenes through this slot: checks may not import worlds.
        from checks import scene_mode
        from worlds.builder import WorldsSceneMode

        scene_mode.register(WorldsSceneMode())
