"""A migration operation Django lacks: move a model to another app, keeping its table and rows."""

from __future__ import annotations

from django.db.migrations.operations.base import Operation
from django.db.migrations.utils import get_references


class MoveModel(Operation):
    """Move model `name` from app `from_app` to app `to_app` in the migration state only.

    The table keeps its name (the moved model must say `db_table` in its Meta, e.g. "agents_task"), so
    the database is not touched and no row moves; every relation to the model now points at its new
    app. Reversible.
    """

    reduces_to_sql = False
    reversible = True

    def __init__(self, name: str, from_app: str, to_app: str) -> None:
        self.name, self.from_app, self.to_app = name, from_app, to_app

    def deconstruct(self):
        return (
            self.__class__.__qualname__,
            [],
            {"name": self.name, "from_app": self.from_app, "to_app": self.to_app},
        )

    def state_forwards(self, app_label, state) -> None:
        move_model_state(state, self.name, self.from_app, self.to_app)

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        pass

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        pass

    def describe(self) -> str:
        return f"Move model {self.name} from {self.from_app} to {self.to_app} (the table stays)"

    @property
    def migration_name_fragment(self) -> str:
        return f"move_{self.name.lower()}_to_{self.to_app}"


def move_model_state(state, name: str, from_app: str, to_app: str) -> None:
    """`ProjectState.rename_model`, across apps: the same model name under another app label."""
    name_lower = name.lower()
    moved = state.models[from_app, name_lower].clone()
    moved.app_label = to_app
    moved.options.setdefault("db_table", f"{from_app}_{name_lower}")
    state.models[to_app, name_lower] = moved
    to_reload = {(to_app, name_lower)}
    new_remote = f"{to_app}.{name}"
    for model_state, field_name, field, reference in list(get_references(state, (from_app, name_lower))):
        changed = field.clone()
        if reference.to:
            changed.remote_field.model = new_remote
        if reference.through:
            changed.remote_field.through = new_remote
        model_state.fields[field_name] = changed
        to_reload.add((model_state.app_label, model_state.name_lower))
    state._relations = None  # recomputed from the fields on next use
    to_reload.discard((from_app, name_lower))
    state.remove_model(from_app, name_lower)
    state.reload_models(to_reload, delay=True)
