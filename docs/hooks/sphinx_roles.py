"""mkdocs hook: show the Sphinx roles of the docstrings as code.

The package's docstrings are Google style with Sphinx cross-reference roles
(``:class:`~stackik.model.Kinematics```, ``:meth:`solve```). mkdocstrings renders
Markdown, where a role arrives as ``:class:<code>~stackik.model.Kinematics</code>``; this
hook turns it into ``<code>Kinematics</code>`` (the ``~`` keeps the last component, as
in Sphinx).
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj):<code>(~?)([^<]+)</code>")


def _code(match: re.Match[str]) -> str:
    tilde, target = match.group(1), match.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if tilde else target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """Rewrite every role of the page's HTML."""
    return _ROLE.sub(_code, html)
