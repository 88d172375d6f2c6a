"""Scene texts the tests share: laura asks a question in #support and the bot should answer her; a
customer looked up in a declared CRM; the checks reference's examples."""

from __future__ import annotations

from typing import Any


def support_question(
    question: str = "My CSV export never arrives.",
    *,
    scene: str = "export-question",
    task: str = '"A customer asked in #support. Answer her in the thread."',
    description: str = "",
    in_thread: bool = True,
    read_first: bool = True,
    judge_model: str = "",
    checks: str = "",
) -> str:
    """The scene's YAML: ``question`` asked ten minutes before the start; the check ``answered`` wants a
    message from the bot in #support (in her thread when ``in_thread``), and ``read_first`` (when
    asked for) a read of the channel's history. ``task`` is YAML as it stands on its line. ``checks``
    (the lines of the checks list) replaces those two; ``judge_model`` sets the scene's judge model."""
    where = ", in_thread_of: $slack_question" if in_thread else ""
    asked = f'at: -10m, text: "{question}"'
    read = '  - id: read_first\n    trace: { called: "POST /api/conversations.history" }\n'
    answered = (
        "  - id: answered\n"
        f"    state: {{ slack.message: {{ channel: $slack_support, from: $slack_bot{where} }} }}\n"
        + (read if read_first else "")
    )
    return (
        f"scene: {scene}\n"
        + (f"description: {description}\n" if description else "")
        + f"task: {task}\n"
        + (f"judge: {{ model: {judge_model} }}\n" if judge_model else "")
        + "world:\n"
        "  slack:\n"
        "    users:\n"
        "      slack_bot: { name: orders-bot, bot: true }\n"
        "      slack_laura: { name: laura }\n"
        "    channels:\n"
        "      slack_support: { name: support, members: [$slack_bot, $slack_laura] }\n"
        "    messages:\n"
        f"      slack_question: {{ channel: $slack_support, from: $slack_laura, {asked} }}\n"
        "checks:\n"
        + (checks or answered)
    )


def broken_export(*, scene: str, **options: Any) -> str:
    """``support_question`` asking "Is the export broken?", to be answered in its thread in #support."""
    task = '"Answer the question in #support in its thread."'
    return support_question("Is the export broken?", scene=scene, task=task, **options)


def crm_lookup(*, description: str = "", answers: bool = False) -> str:
    """A scene whose only tool is a declared ``crm`` (answering customers' plans when ``answers``) and
    whose check ``looked_up`` wants a customer read."""
    crm = '    crm:\n      answers:\n        "GET /crm/customers/*": { status: 200, body: { plan: pro } }\n'
    return (
        "scene: crm-lookup\n"
        + (f"description: {description}\n" if description else "")
        + "task: Look the customer up.\n"
        "world:\n"
        + ("  tools:\n" + crm if answers else "  tools: { crm: {} }\n")
        + "checks:\n"
        "  - id: looked_up\n"
        '    trace: { called: "GET /crm/customers/*" }\n'
    )


# The checks reference's trace and github.* examples, word for word, as lines of a scene's checks.
REFERENCE_TRACE_CHECKS = """\
  - id: filed
    trace: { called: "POST /repos/acme/orders/issues" }
  - id: posted
    trace: { called: "* /api/chat.postMessage" }
  - id: read_before_write
    trace: { called: ["GET /repos/acme/orders/issues/13", "POST /repos/acme/orders/issues/13/comments"] }
  - id: no_crm_writes
    trace: { not_called: ["POST /crm/*", "PATCH /crm/*", "DELETE /crm/*"] }
"""
REFERENCE_GITHUB_CHECKS = """\
  - id: runbook_updated
    state: { github.file_at: [$github_orders, main, docs/runbook.md], contains: "verified health check" }
  - id: pr_merged
    state: { github.pull: { pull: $github_runbook_pr, merged: true } }
  - id: issue_filed
    state: { github.issue: { repo: $github_orders, body_contains: [CSV, export], labels: [bug], state: open,
                             count: 1 } }
"""
# The reference's process check examples (people, messages, order, time), word for word.
REFERENCE_PROCESS_CHECKS = """\
  - { id: ben_got_the_details, knows: [ben, laura.beta_on] }
  - { id: laura_got_the_workaround, told: [laura, ben.workaround] }
  - { id: priority_decided, decided: [mike, severity, p1] }
  - { id: answered_in_her_thread, message: { to: laura, in_thread_of: $slack_question, from: $slack_bot } }
  - { id: no_root_cause_to_customer, never: { to: laura, fact: ben.root_cause } }
  - { id: priority_before_label, before: [{ decided: [mike, severity, p1] }, { called: "POST /repos/*/issues/*/labels" }] }
  - { id: answered_fast, within: { event: { message: { to: laura, from: $slack_bot } }, of: start, limit: 30m } }
"""  # noqa: E501 - copied as the reference writes them
