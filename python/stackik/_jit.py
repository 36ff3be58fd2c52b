"""Lazy numba compilation for small hot-path kernels.

Kernels are written as plain Python loops. :func:`lazy_njit` wraps one so that the
first call compiles it with ``numba.njit(cache=True)`` (later processes load the cached
machine code) and imports numba only then, keeping ``import stackik`` fast. Without
numba the plain Python function runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class lazy_njit:
    """Decorator: compile ``func`` with numba on its first call.

    Args:
        func: A numba-compatible function.
    """

    def __init__(self, func: Callable[..., Any]) -> None:
        self.py_func = func
        self._impl: Callable[..., Any] | None = None
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__

    def compile(self) -> Callable[..., Any]:
        """Compile now (if numba is installed) and return the implementation."""
        if self._impl is None:
            try:
                import numba
            except ImportError:  # pragma: no cover - numba is a dependency
                self._impl = self.py_func
            else:
                self._impl = numba.njit(cache=True, nogil=True)(self.py_func)
        return self._impl

    def __call__(self, *args: Any) -> Any:
        impl = self._impl if self._impl is not None else self.compile()
        return impl(*args)
