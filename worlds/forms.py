"""The scene form: the file pasted (YAML or JSON) or uploaded; validated by worlds.services."""

from __future__ import annotations

from django import forms

from worlds.services import MAX_SOURCE_BYTES


class SceneForm(forms.Form):
    source = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 28, "spellcheck": "false", "class": "code"}),
        help_text="The scene file in YAML or JSON (see WORLDS.md). Problems show on their lines as you type.",
    )
    upload = forms.FileField(required=False, help_text="Or upload a .yaml, .yml or .json file.")

    def clean(self):
        data = super().clean()
        upload = data.get("upload")
        if upload is not None:
            if upload.size > MAX_SOURCE_BYTES:
                self.add_error("upload", f"the file is over {MAX_SOURCE_BYTES // 1024} KB")
                return data
            try:
                data["source"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                self.add_error("upload", "the file is not UTF-8 text")
                return data
            data["filename"] = upload.name.rsplit("/", 1)[-1][:100]
        if not (data.get("source") or "").strip() and "upload" not in self.errors:
            self.add_error("source", "paste a scene or upload a file")
        return data


class SceneTestForm(forms.Form):
    """A test that plays library scenes, with library checks beside the scenes' own."""

    name = forms.CharField(max_length=200)
    scenes = forms.TypedMultipleChoiceField(coerce=int, widget=forms.CheckboxSelectMultiple)
    checks = forms.TypedMultipleChoiceField(coerce=int, widget=forms.CheckboxSelectMultiple, required=False)
    samples_per_scenario = forms.IntegerField(min_value=1, max_value=10_000, initial=1)
    min_valid_per_scenario = forms.IntegerField(min_value=1, max_value=10_000, initial=1)
    required_pass_rate = forms.IntegerField(min_value=1, max_value=100, initial=100)

    def __init__(self, *args, scenes=(), checks=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scenes"].choices = [(s.pk, s.name) for s in scenes]
        self.fields["checks"].choices = [(c.pk, c.name) for c in checks]
        self.fields["scenes"].error_messages["required"] = "pick at least one scene"
