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
