"""Model-layer immutability for frozen versions (CheckVersion, TestVersion)."""

from __future__ import annotations

from django.db import models

from core.errors import ImmutableError


class ImmutableQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise ImmutableError(f"{self.model._meta.verbose_name} rows are immutable; edit the parent to add a version")

    def delete(self):
        # Row-by-row so that each instance's delete() guard runs.
        deleted = 0
        for obj in self:
            obj.delete()
            deleted += 1
        return deleted, {self.model._meta.label: deleted}


class ImmutableModel(models.Model):
    """Saved once, never updated; deleted only while nothing references it (see `in_use`)."""

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ImmutableError(f"{self._meta.verbose_name} {self.pk} is immutable; edit the parent instead")
        kwargs["force_insert"] = True
        return super().save(*args, **kwargs)

    def in_use(self) -> bool:  # pragma: no cover - overridden
        return False

    def delete(self, *args, **kwargs):
        if self.in_use():
            raise ImmutableError(f"{self._meta.verbose_name} {self.pk} is used by a run and cannot be deleted")
        return super().delete(*args, **kwargs)
