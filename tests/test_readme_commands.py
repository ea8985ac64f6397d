"""The README's command-line examples run as written, in order, on a fresh ledger: the README cannot drift.

Every command of the first ``sh`` block of the README's "Command line" section runs from the project root, as a
reader would run it, with what it writes (``out/``: its ledger and outputs) redirected into a temporary folder. Each
must exit 0. A command that draws a figure file or prints a PDF is skipped, with the reason printed, only where this
machine has no Chromium browser for it.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def readme_commands(text: str | None = None) -> list[str]:
    """The commands of the sh block of the README's "Command line" section, in order (continuation lines joined)."""
    text = (ROOT / "README.md").read_text() if text is None else text
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the Command line section has no sh block"
    joined = re.sub(r"\\\n\s*", " ", block.group(1))
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def redirected(command: str, out: Path) -> str:
    """``command`` with the README's output folder (``out``, ``out/...``, ``$PWD/out/...``) moved to ``out``."""
    command = command.replace("$PWD/out", str(out))
    return re.sub(r"(?<![\w./$-])out(?=[/\s\"']|$)", str(out), command)


def chromium_problem(command: str) -> str | None:
    """Why ``command`` cannot run on this machine (a figure file or a PDF needs Chromium), else None."""
    if not re.search(r"\bfigure\b|--out\s+\S+\.pdf\b", command):
        return None
    from dpsurv_core.report.pdf import chromium_path

    return None if chromium_path() else "no Chromium browser here (apt-get install chromium): figures and PDFs need it"


def test_the_commands_are_found_and_start_on_a_throw_away_ledger():
    commands = readme_commands()
    assert len(commands) >= 10
    assert re.search(r"\bexport DPSURV_LEDGER=\S*out/", commands[0]), "the examples must start on a throw-away ledger"
    writes = [c for c in commands if re.search(r"--(out|document)\s", c)]
    assert writes and all(re.search(r"--(out|document)\s+out/", c) for c in writes), "outputs go to out/"
    assert re.search(r"^/?out/$", (ROOT / ".gitignore").read_text(), re.M), ".gitignore must cover out/"


def test_redirection_moves_only_the_output_folder(tmp_path):
    out = tmp_path / "out"
    assert redirected('mkdir -p out && export DPSURV_LEDGER="$PWD/out/l.sqlite3"', out) == \
        f'mkdir -p {out} && export DPSURV_LEDGER="{out}/l.sqlite3"'
    assert redirected("x report --out out/lung.html --about --timeout", out) == \
        f"x report --out {out}/lung.html --about --timeout"


def test_every_readme_command_exits_0_in_order(tmp_path):
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPSURV_")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")  # were the README to forget its ledger, the user's stays untouched
    prelude: list[str] = []  # the block's exports hold for the commands after them, as in one shell
    skipped = []
    for command in readme_commands():
        command = redirected(command, out)
        if re.search(r"\bexport\s", command):
            prelude.append(command)
        if (problem := chromium_problem(command)) is not None:
            skipped.append(command)
            print(f"skipped: {command}: {problem}")
            continue
        script = "\n".join(["set -e", *prelude, command])
        proc = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"README command failed (exit {proc.returncode}): {command}\n{proc.stderr[-2000:]}"
    assert (out / "ledger.sqlite3").exists(), "the examples did not write their throw-away ledger"
    assert not (tmp_path / "xdg").exists(), "an example used the default ledger"
    assert (out / "lung.html").exists() and (out / "plan.json").exists()
    # as the README says: the cap is spent, and one more release is refused with a sentence naming `budget raise`
    more = subprocess.run(["bash", "-c", "\n".join([*prelude, ".venv/bin/python -m dpsurv_core km --data lung "
                                                   "--mechanism laplace-counts --epsilon 1 --grid 0:1100:20 --json"])],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert more.returncode == 2 and more.stdout == "" and len(more.stderr.strip().splitlines()) == 1
    assert "budget raise --data D --cap C --reason TEXT" in more.stderr and "at least 4" in more.stderr
