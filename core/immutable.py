"""Model-layer immutability for frozen versions (CheckVersion, TestVersion, SceneVersion), and the
mutable library identity those versions hang from (Check, Test, Scene)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core.errors import ImmutableError
from core.urls import DetailPage


class ImmutableQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise ImmutableError(
            f"{self.model._meta.verbose_name} rows are immutable; edit the parent to add a version"
        )

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
            raise ImmutableError(
                f"{self._meta.verbose_name} {self.pk} is used by a run and cannot be deleted"
            )
        return super().delete(*args, **kwargs)


class ImmutableVersion(ImmutableModel):
    """Version `number` of its `parent` (a foreign key each model declares), frozen once saved."""

    number = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["parent", "-number"]
        constraints = [models.UniqueConstraint(fields=["parent", "number"], name="%(class)s_unique_number")]

    def __str__(self) -> str:
        return f"{self.name} v{self.number}"


# ----------------------------------------------------------------------------- the versioned identity


class VersionedQuerySet(models.QuerySet):
    def active(self):
        return self.filter(archived_at__isnull=True)


class Versioned(DetailPage, models.Model):
    """A stable identity in an agent's library whose content lives in immutable versions: the number of
    its current version (denormalised for lists; its service keeps it), who made it, when, and when it
    was archived. Each model adds its `current_version = current_version_of("<its version model>")`."""

    version = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.name} (v{self.version})"


def current_version_of(version_model: str) -> models.ForeignKey:
    """The identity's pointer to its current version (empty only while the first one is being saved)."""
    return models.ForeignKey(version_model, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
