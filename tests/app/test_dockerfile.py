"""The Dockerfile, checked without a Docker engine: base image, installs, every COPY source, port, health, CMD."""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = (ROOT / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def of(kind: str) -> list[str]:
    return [arg for k, arg in instructions() if k == kind]


def copy_sources() -> list[str]:
    sources = []
    for arg in of("COPY"):
        parts = json.loads(arg) if arg.startswith("[") else shlex.split(arg)
        parts = [p for p in parts if not p.startswith("--")]
        sources += parts[:-1]
    return sources


def _docker_regex(pattern: str) -> re.Pattern:
    """Docker's .dockerignore matching: anchored at the context root, '*' stops at '/', '**' spans folders."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def ignored(rel: str, patterns: list[str]) -> bool:
    """Whether .dockerignore excludes ``rel``: a pattern matching the path or one of its parent folders."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    hit = False
    for pat in patterns:
        neg = pat.startswith("!")
        rx = _docker_regex(pat.lstrip("!").strip("/"))
        if any(rx.fullmatch(p) for p in prefixes):
            hit = not neg
    return hit


def test_dockerignore_matching_rules():
    assert ignored("x.csv", ["/*.csv"]) and not ignored("dpsurv_core/data/x.csv", ["/*.csv"])
    assert ignored("dpsurv_core/__pycache__/a.pyc", ["**/__pycache__"])
    assert ignored("tests/test_io.py", ["tests"]) and not ignored("tests_data/a", ["tests"])
    assert not ignored("a.csv", ["*.csv", "!a.csv"])


def test_base_image_is_python_311_slim():
    assert of("FROM") == ["python:3.11-slim"]


def test_every_copied_path_exists_and_is_not_dockerignored():
    patterns = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]
    sources = copy_sources()
    assert sources, "the Dockerfile copies nothing"
    for src in sources:
        path = ROOT / src
        assert path.exists(), f"COPY {src}: no such path in the checkout"
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        assert files, f"COPY {src} copies an empty folder"
        for f in files:
            rel = f.relative_to(ROOT).as_posix()
            assert not ignored(rel, patterns), f"{rel} is copied but excluded by .dockerignore"


def test_requirements_are_copied_then_installed():
    assert "requirements.txt" in copy_sources()
    runs = " ".join(of("RUN"))
    assert re.search(r"pip install .*-r requirements\.txt", runs)
    kinds = [k for k, _ in instructions()]
    first_copy_req = next(i for i, (k, a) in enumerate(instructions()) if k == "COPY" and "requirements.txt" in a)
    install = next(i for i, (k, a) in enumerate(instructions()) if k == "RUN" and "requirements.txt" in a)
    assert first_copy_req < install and kinds.count("FROM") == 1
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][^\s]*", line.strip()), f"unpinned requirement {line!r}"


def test_the_app_and_everything_it_imports_is_copied():
    sources = {s.rstrip("/").removeprefix("./") for s in copy_sources()}
    assert "dpsurv_app" in sources  # app.py and pages/ are inside it
    local = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    needed = set()
    app = ROOT / "dpsurv_app"
    assert (app / "app.py").is_file() and len(list((app / "pages").glob("*.py"))) == 9
    for f in [*sorted(app.glob("*.py")), *sorted((app / "pages").glob("*.py"))]:  # app.py among the first
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                needed |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                needed.add(node.module.split(".")[0])
    first_party = needed & local
    assert {"dpsurv_core", "dpsurv_app"} <= first_party
    assert first_party <= sources, f"imported but not copied: {first_party - sources}"


def test_port_health_check_and_command():
    assert of("EXPOSE") == ["8501"]
    (health,) = of("HEALTHCHECK")
    assert "/_stcore/health" in health and "8501" in health
    (cmd,) = of("CMD")
    shell = json.loads(cmd)
    assert shell[:2] == ["sh", "-c"]
    check, _, serve = shell[2].partition(" && exec ")
    assert check == "python -m dpsurv_app.serving 0.0.0.0"  # the sign-in check runs before the server starts
    argv = serve.split()
    assert argv[argv.index("run") - 1] == "streamlit" and argv[argv.index("run") + 1] == "dpsurv_app/app.py"
    assert "--server.port=8501" in argv and "--server.headless=true" in argv
    import streamlit.config as config

    for flag in argv:
        if flag.startswith("--"):
            name, _, _ = flag[2:].partition("=")
            config.get_option(name)  # raises for an option Streamlit does not have


@pytest.mark.parametrize("heavy", [".venv", ".git", "tests"])
def test_dockerignore_keeps_the_context_small(heavy):
    patterns = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln.strip()]
    assert heavy in patterns


def test_the_ledger_lives_on_a_volume_the_app_user_can_write():
    assert of("VOLUME") == ["/data"]
    envs = " ".join(of("ENV"))
    assert re.search(r"\bDPSURV_LEDGER=/data/\S+", envs), "the ledger must be kept on the /data volume"
    kinds = [k for k, _ in instructions()]
    owned = next(i for i, (k, a) in enumerate(instructions()) if k == "RUN" and "chown" in a and "/data" in a)
    assert owned < kinds.index("VOLUME") < kinds.index("USER")  # changes after VOLUME would be discarded


def test_the_app_image_installs_no_spark():
    installed = (ROOT / "requirements.txt").read_text() + (ROOT / "requirements-pdf.txt").read_text()
    assert "pyspark" not in installed.lower()
