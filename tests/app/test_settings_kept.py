"""Settings kept across pages (:func:`dpsurv_app.session.keep_settings`) re-set value widgets' keys only: a button, a download,
a chart or an editor whose key looked like a setting would make Streamlit refuse the page (a real browser found
``au_run``). This scans every page and dpsurv_app module for such widgets."""

from __future__ import annotations

import ast
from pathlib import Path

from dpsurv_app.session import _NOT_SETTING, _SETTING

ROOT = Path(__file__).resolve().parents[2]
NOT_VALUES = {"button", "download_button", "file_uploader", "data_editor", "plotly_chart", "dataframe",
              "form_submit_button", "link_button", "camera_input", "chat_input", "altair_chart", "vega_lite_chart",
              "pydeck_chart", "audio_input", "fragment"}


def _keys() -> list[tuple[str, str, str]]:
    found = []
    for path in [*sorted((ROOT / "dpsurv_app" / "pages").glob("*.py")), *sorted((ROOT / "dpsurv_app").glob("*.py"))]:  # app.py too
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NOT_VALUES:
                for kw in node.keywords:
                    if kw.arg != "key":
                        continue
                    v = kw.value
                    if isinstance(v, ast.Constant) and isinstance(v.value, str):
                        found.append((path.name, node.func.attr, v.value))
                    elif isinstance(v, ast.JoinedStr):  # an f-string: its fixed parts, a placeholder "x" between
                        found.append((path.name, node.func.attr,
                                      "".join(x.value if isinstance(x, ast.Constant) else "x" for x in v.values)))
    return found


def test_no_button_download_chart_or_editor_is_kept_as_a_setting():
    keys = _keys()
    assert any(k == "au_run" for _, _, k in keys)  # the scan sees the pages' buttons
    kept = [(f, kind, k) for f, kind, k in keys if _SETTING.match(k) and not _NOT_SETTING.search(k)]
    assert kept == []
