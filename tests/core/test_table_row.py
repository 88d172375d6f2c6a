"""core.views.table_row: a list's row drawn in Python, laid out as the list templates draw theirs."""

from django.template import Context, Template
from django.utils.safestring import SafeString

from core.views import table_row


def test_a_row_is_laid_out_as_a_template_loop_draws_it():
    template = Template(
        '<tbody>\n  {% for r in rows %}\n    <tr data-run="{{ r }}">\n      <td>#{{ r }}</td>\n'
        '      <td class="num">{{ r }}</td>\n    </tr>\n  {% endfor %}</tbody>'
    )
    rows = "".join(
        table_row(f"<td>#{r}</td>", f'<td class="num">{r}</td>', attrs=f' data-run="{r}"') for r in (1, 2)
    )
    drawn = f"<tbody>\n  {rows}</tbody>"
    assert drawn == template.render(Context({"rows": [1, 2]}))


def test_indent_and_tail_follow_the_template():
    row = table_row("<td>a</td>", "", "<td>b</td>", indent=6, tail=6)
    assert row == "\n      <tr>\n        <td>a</td>\n        \n        <td>b</td>\n      </tr>\n      "
    assert isinstance(row, SafeString)


def test_the_cells_are_html_as_given():
    assert table_row("<td><b>x</b> &amp;</td>") == "\n    <tr>\n      <td><b>x</b> &amp;</td>\n    </tr>\n  "
