"""The documentation cannot rot: every Python block of README.md and docs/ runs, the API
reference covers every public name, every page is in the site's navigation, and every
example is linked.

Blocks of one file run in order in one namespace (a page is one session, as a reader
would type it), from the repository root (robot paths are relative to it). Blocks that
are not runnable Python (signatures, shell, output) are tagged ``text`` or ``bash``;
an untagged block fails the fence check.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import numpy as np
import pytest

import stackik

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(r"^```(\S*)\s*$")
LANGUAGES = {"python", "text", "bash", "yaml", "xml", "toml"}


def blocks(path: Path) -> list[tuple[str, int, str]]:
    """``(language, first line, code)`` of every fenced block of a markdown file."""
    out = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            assert i < len(lines), f"{path}:{start}: unclosed code block"
            out.append((m.group(1), start + 1, "\n".join(body)))
        i += 1
    return out


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


RUNNABLE = [p for p in PAGES if any(lang == "python" for lang, _, _ in blocks(p))]


def check_readme(ns: dict) -> None:
    # The third snippet: local and global IK on the Panda (q_seed defined, both solve).
    assert ns["res"].status == stackik.SolverStatus.SUCCESS
    assert len(ns["configs"]) >= 1


def check_position_ik(ns: dict) -> None:
    # The first example on the shipped UR5 must be feasible.
    assert ns["res"].status == stackik.SolverStatus.SUCCESS
    assert len(ns["configs"]) >= 1


#: What some pages must have computed once their blocks ran (beyond running at all).
EXPECTED = {"README.md": check_readme, "docs/position_ik.md": check_position_ik}


@pytest.mark.parametrize("path", RUNNABLE, ids=[rel(p) for p in RUNNABLE])
def test_every_python_block_runs(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    ns: dict = {"__name__": f"docs:{rel(path)}"}
    for lang, line, code in blocks(path):
        if lang != "python":
            continue
        try:
            exec(compile(code, f"{rel(path)}:{line}", "exec"), ns)
        except Exception as exc:  # name the block in the failure
            pytest.fail(f"{rel(path)}, block at line {line}: {type(exc).__name__}: {exc}")
    if rel(path) in EXPECTED:
        EXPECTED[rel(path)](ns)


@pytest.mark.parametrize("path", PAGES, ids=[rel(p) for p in PAGES])
def test_code_blocks_say_what_they_are(path):
    for lang, line, code in blocks(path):
        assert lang in LANGUAGES, (
            f"{rel(path)}:{line}: tag the block (```python runs in the tests; use ```text or "
            "```bash for signatures, output and shell)"
        )
        if lang == "python":
            ast.parse(code)


# -- the site -------------------------------------------------------------------------------
def mkdocs_nav() -> set[str]:
    """Pages named in the ``nav`` of mkdocs.yml (no YAML parser needed: ``- Title: page.md``)."""
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:") :]
    return set(re.findall(r":\s*(\S+\.md)\s*$", nav, flags=re.M))


def test_every_page_is_in_the_navigation():
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    nav = mkdocs_nav()
    assert nav <= pages, f"nav names missing pages: {sorted(nav - pages)}"
    assert pages <= nav, f"add these pages to the nav of mkdocs.yml: {sorted(pages - nav)}"


def directives() -> dict[str, list[str] | None]:
    """``::: identifier`` of the API pages, with their ``members:`` list (None: all)."""
    out: dict[str, list[str] | None] = {}
    for page in sorted((DOCS / "api").glob("*.md")):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("::: "):
                continue
            members: list[str] | None = None
            j = i + 1
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                if lines[j].strip() == "members: false":
                    members = []
                elif lines[j].strip() == "members:":
                    members = []
                    j += 1
                    while j < len(lines) and lines[j].strip().startswith("- "):
                        members.append(lines[j].strip()[2:])
                        j += 1
                    continue
                j += 1
            out[line[4:].strip()] = members
    return out


def public_modules() -> list[str]:
    """The public subpackages of stackik (and the ik layer's modules, which have no
    package-level ``__all__``; its compiled kernels are internal)."""
    pkg = ROOT / "python" / "stackik"
    subs = [p.name for p in sorted(pkg.iterdir()) if (p / "__init__.py").exists()]
    names = [f"stackik.{s}" for s in subs if not s.startswith("_")]
    ik = [f"stackik.ik.{p.stem}" for p in sorted((pkg / "ik").glob("*.py"))]
    return names + [m for m in ik if not m.endswith(("__init__", "_kernels"))]


def test_api_reference_covers_every_public_name():
    documented = directives()
    missing = [n for n in stackik.__all__ if f"stackik.{n}" not in documented]
    assert not missing, f"add '::: stackik.NAME' to docs/api/ for: {missing}"
    top = set(stackik.__all__)
    for module in public_modules():
        exported = getattr(importlib.import_module(module), "__all__", None)
        if exported is None:
            continue
        if module.count(".") == 1:
            assert module in documented, f"add '::: {module}' to a page of docs/api/"
        listed = documented.get(module, [])
        rendered = set(exported) if listed is None else set(listed)
        left = sorted(set(exported) - top - rendered)
        assert not left, f"{module}: document {left} (members of '::: {module}' in docs/api/)"


def test_every_example_is_linked_from_the_docs():
    text = (DOCS / "guides" / "examples.md").read_text()
    for example in sorted((ROOT / "examples").glob("*.py")):
        assert f"examples/{example.name}" in text, f"link {example.name} in guides/examples.md"


def test_the_screenshot_is_a_real_image():
    png = (DOCS / "images" / "viewer.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = np.frombuffer(png[16:24], dtype=">u4")
    assert width >= 800 and height >= 500
