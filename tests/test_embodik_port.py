"""EmbodiK code runs on stackik with only the import changed: the snippets' pass rate.

``tests/embodik_snippets.py`` holds small scripts written against EmbodiK's API as a
porting user writes them. Each runs on EmbodiK 0.23.2 (where installed: it must pass
there, or it is no EmbodiK code) and on stackik imported as ``embodik``. Every snippet
that passes on EmbodiK passes on stackik, except the documented behavioural differences
(``KNOWN_DIFFERENCES``, each a migration note in ``docs/embodik.md``), which must
still differ.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import embodik_snippets as snippets

HAVE_EMBODIK = importlib.util.find_spec("embodik") is not None
DOCS = Path(__file__).resolve().parents[1] / "docs" / "embodik.md"


@pytest.mark.parametrize("name", list(snippets.SNIPPETS))
def test_snippet_runs_on_stackik_as_on_embodik(name):
    if HAVE_EMBODIK:
        ok, error = snippets.run("embodik", name)
        assert ok, f"not valid EmbodiK code: {error}"
    ok, error = snippets.run("stackik", name)
    if name in snippets.KNOWN_DIFFERENCES:
        assert not ok, "a documented difference no longer differs: update the docs"
    else:
        assert ok, error


@pytest.mark.skipif(not HAVE_EMBODIK, reason="embodik not installed")
def test_pass_rate():
    results = snippets.table()
    on_embodik = [n for n in snippets.SNIPPETS if results["embodik"][n][0]]
    on_both = [n for n in on_embodik if results["stackik"][n][0]]
    rate = len(on_both) / len(on_embodik)
    print(f"\nstackik passes {len(on_both)}/{len(on_embodik)} ({rate:.0%}) of the EmbodiK snippets")
    assert set(on_embodik) == set(snippets.SNIPPETS)
    assert set(on_embodik) - set(on_both) == set(snippets.KNOWN_DIFFERENCES)
    assert rate >= 0.9


def test_every_known_difference_is_documented():
    text = DOCS.read_text()
    for name in snippets.KNOWN_DIFFERENCES:
        assert f"`{name}`" in text, name
