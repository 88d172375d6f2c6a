"""Agent register/edit form: parses the browser's input; agents.services validates and writes."""

from __future__ import annotations

from django import forms

from agents import services
from agents.models import Agent, AgentKind, NodeKind, Protocol


class AgentForm(forms.Form):
    name = forms.CharField(label="Name", max_length=100)
    description = forms.CharField(
        label="Description", required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    kind = forms.ChoiceField(
        label="Kind",
        choices=AgentKind.choices,
        initial=AgentKind.AGENT,
        help_text="A workforce has named nodes (sub-agents and tools).",
    )
    protocol = forms.ChoiceField(label="Protocol", choices=Protocol.choices, initial=Protocol.EVALCONSOLE)
    endpoint_url = forms.CharField(
        label="Endpoint URL",
        max_length=500,
        help_text="evalconsole: the URL we POST each scenario to. openai-chat: the base URL (…/v1).",
        widget=forms.TextInput(
            attrs={"placeholder": "https://agent.example.com/evaluate", "inputmode": "url"}
        ),
    )
    model_name = forms.CharField(
        label="Model",
        required=False,
        max_length=200,
        help_text='Sent as "model" with the openai-chat protocol.',
    )
    headers = forms.CharField(
        label="Headers (secret)",
        required=False,
        # Shows only what was typed in this request (kept when the form has errors, so nothing is lost);
        # stored values never reach the form: its initial data has no headers.
        widget=forms.Textarea(
            attrs={
                "rows": 3,
                "class": "code",
                "autocomplete": "off",
                "spellcheck": "false",
                "placeholder": "Authorization: Bearer …",
            }
        ),
        help_text="One “Name: value” per line, e.g. API keys. Stored encrypted and never shown again.",
    )
    clear_headers = forms.BooleanField(label="Remove all stored headers", required=False)
    timeout_s = forms.FloatField(
        label="Timeout (seconds)", initial=30.0, help_text="Per attempt; 0.1 to 600."
    )
    retries = forms.IntegerField(
        label="Retries", initial=2, help_text="Extra attempts on connect errors, 429 and 5xx (0 to 10)."
    )
    max_concurrency = forms.IntegerField(label="Max concurrent calls", initial=10, help_text="1 to 200.")
    nodes = forms.CharField(
        label="Workforce nodes",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "code", "placeholder": "planner\nsearch: tool"}),
        help_text="One node per line: “name” for a sub-agent, “name: tool” for a tool.",
    )

    def __init__(self, *args, agent: Agent | None = None, **kwargs):
        self.agent = agent
        if agent is not None and "initial" not in kwargs:
            kwargs["initial"] = {
                "name": agent.name,
                "description": agent.description,
                "kind": agent.kind,
                "protocol": agent.protocol,
                "endpoint_url": agent.shown_endpoint_url,
                "model_name": agent.model_name,
                "timeout_s": agent.timeout_s,
                "retries": agent.retries,
                "max_concurrency": agent.max_concurrency,
                "nodes": "\n".join(
                    n.name if n.kind == NodeKind.SUBAGENT else f"{n.name}: {n.kind}"
                    for n in agent.nodes.all()
                ),
            }
        super().__init__(*args, **kwargs)
        self.initial.pop("headers", None)
        if agent is None:
            del self.fields["clear_headers"]
        else:
            names = ", ".join(agent.header_names) or "none"
            self.fields["headers"].help_text = (
                f"Stored: {names}. Leave blank to keep them; anything typed here replaces all of them. "
                "One “Name: value” per line; values are never shown again."
            )

    def clean_headers(self) -> dict[str, str] | None:
        raw = self.cleaned_data.get("headers", "")
        if not raw.strip():
            return None
        headers: dict[str, str] = {}
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition(":")
            if not sep or not name.strip():
                raise forms.ValidationError(f"line {number}: expected “Name: value”")
            headers[name.strip()] = value.strip()
        return headers

    def clean_nodes(self) -> list[dict[str, str]]:
        nodes = []
        for line in self.cleaned_data.get("nodes", "").splitlines():
            if not line.strip():
                continue
            name, _, kind = line.partition(":")
            nodes.append({"name": name.strip(), "kind": kind.strip() or NodeKind.SUBAGENT})
        return nodes

    def clean(self) -> dict:
        data = super().clean()
        # The service's rules for the fields that parsed, so that every problem shows at once on its field
        # (the service checks them again when it saves).
        parsed = {k: v for k, v in data.items() if k not in self.errors and k != "nodes"}
        for field, message in services.validate_agent_fields(parsed).items():
            if field in self.fields and field not in self.errors:
                self.add_error(field, message)
        return data

    def service_kwargs(self) -> dict:
        data = dict(self.cleaned_data)
        clear = data.pop("clear_headers", False)
        if clear and data.get("headers") is None:
            data["headers"] = {}
        return data
