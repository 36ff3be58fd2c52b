"""A progress bar for long runs: targets done, targets/s and ETA (rich, else tqdm, else text)."""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["Progress", "progress_bar"]


class Progress:
    """Interface of the bars: ``update(n)`` targets more, ``close()``."""

    def update(self, n: int) -> None:  # pragma: no cover - interface
        """Count ``n`` more targets done."""

    def close(self) -> None:  # pragma: no cover - interface
        """Stop the bar."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Silent(Progress):
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Rich(Progress):
    def __init__(self, total: int, done: int, description: str, console: Any) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress
        from rich.text import Text

        class Rate(ProgressColumn):
            """Targets per second."""

            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text(f"{speed:,.0f} targets/s" if speed else "- targets/s")

        self.bar = RichProgress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            Rate(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.bar.start()
        self.task = self.bar.add_task(description, total=total, completed=done)

    def update(self, n: int) -> None:
        self.bar.update(self.task, advance=n)

    def close(self) -> None:
        self.bar.stop()


class _Tqdm(Progress):
    def __init__(self, total: int, done: int, description: str) -> None:
        from tqdm import tqdm  # type: ignore[import-untyped]

        self.bar = tqdm(total=total, initial=done, desc=description, unit=" targets", smoothing=0.1)

    def update(self, n: int) -> None:
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


class _Text(Progress):
    """A line every few seconds on stderr (when neither rich nor tqdm is installed)."""

    def __init__(self, total: int, done: int, description: str) -> None:
        self.total, self.done, self.start_done = total, done, done
        self.description = description
        self.t0 = self.last = time.perf_counter()

    def update(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if now - self.last >= 5.0 or self.done >= self.total:
            self.last = now
            rate = (self.done - self.start_done) / max(now - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            print(
                f"{self.description}: {self.done}/{self.total} targets, {rate:,.0f} targets/s, "
                f"ETA {eta:,.0f} s",
                file=sys.stderr,
            )

    def close(self) -> None:
        pass


def progress_bar(
    total: int, done: int = 0, description: str = "reach", enabled: bool = True, console: Any = None
) -> Progress:
    """A bar over ``total`` targets (``done`` already): rich, else tqdm, else text lines."""
    if not enabled:
        return _Silent()
    try:
        return _Rich(total, done, description, console)
    except ImportError:
        pass
    try:
        return _Tqdm(total, done, description)
    except ImportError:
        return _Text(total, done, description)
