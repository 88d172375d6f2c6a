"""Scene texts the tests share: laura asks a question in #support and the bot should answer her."""

from __future__ import annotations


def support_question(
    question: str = "My CSV export never arrives.",
    *,
    scene: str = "export-question",
    task: str = '"A customer asked in #support. Answer her in the thread."',
    description: str = "",
    in_thread: bool = True,
    read_first: bool = True,
) -> str:
    """The scene's YAML: ``question`` asked ten minutes before the start; the check ``answered`` wants a
    message from the bot in #support (in her thread when ``in_thread``), and ``read_first`` (when
    asked for) a read of the channel's history. ``task`` is YAML as it stands on its line."""
    where = ", in_thread_of: $slack_question" if in_thread else ""
    asked = f'at: -10m, text: "{question}"'
    read = '  - id: read_first\n    trace: { called: "POST /api/conversations.history" }\n'
    return (
        f"scene: {scene}\n"
        + (f"description: {description}\n" if description else "")
        + f"task: {task}\n"
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
        "  - id: answered\n"
        f"    state: {{ slack.message: {{ channel: $slack_support, from: $slack_bot{where} }} }}\n"
        + (read if read_first else "")
    )
