"""Code spans that no label can close, and st.table frames (styled or not) whose text is escaped."""

from __future__ import annotations

import pandas as pd

from dpsurv_app.curves_view import literal_table, style_flips
from dpsurv_core.report.text import markdown_code
from tests.app.tables import shown
from tests.app.test_text_is_text import outside_code

IMAGE = "![x](http://example.invalid/x.png)"


def test_markdown_code_fences_beyond_the_labels_own_backticks():
    assert markdown_code("python -m dpsurv_core km --data lung") == "`python -m dpsurv_core km --data lung`"
    assert markdown_code("--data 'a`b'") == "``--data 'a`b'``"
    assert markdown_code("`x`") == "`` `x` ``"  # a space inside each fence: CommonMark strips one each side
    assert markdown_code("two\nlines") == "`two lines`"
    for name in (f"n`{IMAGE}`", f"``{IMAGE}``", f"a```{IMAGE}"):
        shown_as = f"Run {markdown_code(f'budget show --data {name}')} now."
        assert outside_code(shown_as) == "Run  now.", shown_as  # the whole command stays inside the code span


def test_literal_table_escapes_text_cells_headers_and_index_and_keeps_the_styles():
    df = pd.DataFrame({"Group": [IMAGE, "plain"], "p (95% CI)": ["0.5", "0.01"], "Flip?": ["FLIP", ""],
                       "n": [3, 4]})
    plain = literal_table(df)
    assert plain["Group"].iloc[0] == (r"\!\[x\]\(http\://example\.invalid/x\.png\)".replace("://", ":\u200b//"))
    assert list(plain.columns) == ["Group", r"p \(95% CI\)", "Flip?", "n"] and plain["n"].tolist() == [3, 4]
    pd.testing.assert_frame_equal(shown(plain), df)  # as displayed: the text itself
    styled = literal_table(df, style_flips(df))
    assert styled.data["Group"].iloc[0] == plain["Group"].iloc[0]
    html = styled.to_html()
    assert "background-color" in html and "font-weight: 600" in html  # the flipped row still painted


def test_bare_addresses_do_not_become_links():
    """GitHub-flavoured Markdown links http://... and www. even when escaped: a zero-width space breaks them."""
    from dpsurv_core.report.text import markdown_literal

    shown = markdown_literal('=HYPERLINK("http://evil.example/x","click") www.evil.example HTTPS://x.y')
    assert "://" not in shown.replace("\\", "") and "www." not in shown.replace("\\", "")
    assert shown.replace("\u200b", "").replace("\\", "") == '=HYPERLINK("http://evil.example/x","click") ' \
        'www.evil.example HTTPS://x.y'
