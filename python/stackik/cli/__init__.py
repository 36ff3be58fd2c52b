"""The ``stackik`` command line (``pip install "stackik[cli]"``).

``stackik --help`` lists the commands. Errors print as one line without a traceback;
``stackik --debug ...`` shows the traceback.

Layer: the top one. It may import every stackik package; nothing imports it, and
``import stackik`` never loads it (nor typer and rich, which only this package uses).
"""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of the ``stackik`` console script."""
    try:
        from .app import app
    except ImportError as exc:  # typer or rich missing
        print(
            f"error: the stackik command needs the cli extra ({exc.name} is missing): "
            "pip install 'stackik[cli]'",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    app()


__all__ = ["main"]
