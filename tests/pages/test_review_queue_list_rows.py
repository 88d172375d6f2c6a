"""The review queues list draws its rows in Python (reviews.views._queue_row) from tuples, not model
instances: each row is the HTML the template's row drew from the queues, for empty and filled queues,
with and without description and creator, names that need escaping and truncating; and the page shows
them."""

from __future__ import annotations

import pytest
from django.template import engines
from django.urls import reverse

from reviews.models import ReviewQueue
from reviews.services import create_queue
from reviews.views import QUEUE_ROW_COLUMNS, QueueUrls, _queue_row

pytestmark = pytest.mark.django_db

# The row as reviews/queue_list.html drew it before the rows moved to Python.
TEMPLATE_ROW = """{% for q in queues %}
    <tr data-queue="{{ q.name }}">
      <td><a href="{{ q.get_absolute_url }}">{{ q.name|truncatechars:80 }}</a>{% if q.description %}<div class="muted small">{{ q.description|truncatechars:120 }}</div>{% endif %}</td>
      <td class="num">{{ q.item_count }}</td>
      <td class="num">{{ q.labelled_count }}</td>
      <td class="small">{{ q.created_at|date:"Y-m-d" }}{% if q.created_by %} by {{ q.created_by }}{% endif %}</td>
      <td>{% if q.item_count %}<a class="button small" href="{% url 'reviews:queue-start' q.pk %}">Review</a>{% endif %}</td>
    </tr>
  {% endfor %}"""  # noqa: E501


def test_rows_are_what_the_template_drew(team, member):
    create_queue(
        team=team, by=member, name='<b>"Triage & co"</b> ' + "q" * 90, description="<i>why</i> & " * 20
    )
    create_queue(team=team, by=member, name="Plain")
    create_queue(team=team, by=member, name="Filled", description="short")
    plain = ReviewQueue.objects.get(team=team, name="Plain")
    ReviewQueue.objects.filter(pk=plain.pk).update(created_by=None)  # a creator since deleted
    listed = ReviewQueue.objects.filter(team=team).with_counts().order_by("pk")
    queues = list(listed.select_related("created_by"))
    rows = list(listed.values_list(*QUEUE_ROW_COLUMNS))
    assert len(queues) == len(rows) == 3
    assert queues[1].created_by is None and rows[1][4] is None
    queues[2].item_count, queues[2].labelled_count = 12, 5
    rows[2] = (*rows[2][:5], 12, 5)
    template = engines["django"].from_string(TEMPLATE_ROW)
    drawn = "".join(_queue_row(q, QueueUrls()) for q in rows)
    assert drawn == template.render({"queues": queues})
    assert drawn.count(">Review</a>") == 1


def test_the_page_shows_the_rows(login, team, member):
    queue = create_queue(team=team, by=member, name="Orders & refunds", description="From the <web> shop")
    html = login(member).get(reverse("reviews:queue-list")).content.decode()
    assert 'data-queue="Orders &amp; refunds"' in html and queue.get_absolute_url() in html
    assert "From the &lt;web&gt; shop" in html and f"by {member.username}" in html
    assert reverse("reviews:queue-start", args=[queue.pk]) not in html  # no items: nothing to review
