from __future__ import annotations

from django import forms


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, label="Token name", help_text="Where it is used, e.g. 'CI'.")
    can_write = forms.BooleanField(
        required=False, initial=True, label="Can write", help_text="Untick for a read-only token."
    )
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=3650, label="Expires after (days)", help_text="Empty: never."
    )


class JudgeBudgetForm(forms.Form):
    judge_monthly_token_budget = forms.IntegerField(
        required=False, min_value=0, label="AI judge budget (tokens per month)",
        help_text="Input plus output tokens per calendar month (UTC). Empty: the site default. "
        "0: no judge calls.",
    )
