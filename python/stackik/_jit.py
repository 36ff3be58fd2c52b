"""The one JIT loader of stackik: every compiled kernel of the package goes through it.

Kernels are plain Python functions written as explicit loops, decorated with
:func:`kernel`. Nothing is compiled and numba is not imported at ``import stackik``.
The first call of any kernel (or :func:`load`, or :func:`stackik.warmup`) imports numba
once and binds every registered kernel to a ``numba.njit(cache=True, nogil=True)``
dispatcher, in every ``stackik`` module and every module defining kernels that holds a
reference to it (also names imported with ``from ... import``), so compiled kernels
call each other directly and Python callers reach the dispatcher without a wrapper.
Later processes load the machine code from numba's cache. ``@kernel(inline=True)`` asks
numba to inline a small helper into its callers (numba does not inline calls between
kernels otherwise).

Cache location:
    ``<base>/kernels-<hash>``, where ``<base>`` is ``STACKIK_CACHE_DIR`` when set, else
    ``NUMBA_CACHE_DIR``, else ``$XDG_CACHE_HOME/stackik`` (``~/.cache/stackik``), and
    ``<hash>`` is a digest of the sources of every module that defines kernels (and of
    the numba version). Numba keys its cache on each function's own file only, while a
    compiled caller embeds its callees from other files; the digest makes any edit of
    any kernel file start a fresh cache, so a stale callee is never run. When the folder
    cannot be created, numba's own rule applies (``__pycache__`` beside the sources).

Fallback:
    Without numba, or with ``STACKIK_DISABLE_JIT=1`` (or numba's ``NUMBA_DISABLE_JIT``),
    the same functions run as plain Python: identical results, about a thousand times
    slower. Useful for debugging.

Warm-up:
    Modules register small warm-up callables with :func:`register_warmup`; they call
    their kernels once on tiny inputs so that the compiled (or cached) specialisations
    are ready before a control loop's first tick.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "Kernel",
    "cache_dir",
    "is_compiled",
    "kernel",
    "load",
    "register_warmup",
    "warmup",
]

_LOCK = threading.RLock()
_KERNELS: list[Kernel] = []
_WARMUPS: list[Callable[[], None]] = []
_STATE: dict[str, Any] = {"loaded": False, "numba": None}


class Kernel:
    """A registered kernel: the Python function and, once loaded, its compiled form.

    Calling a :class:`Kernel` loads every kernel on first use and then calls the
    compiled implementation. Hot paths that keep a reference should read :attr:`impl`
    once and call that.

    Attributes:
        py_func: The plain Python function.
        module: Name of the module that defines it.
        name: Its name in that module.
    """

    def __init__(self, func: Callable[..., Any], inline: bool = False) -> None:
        self.py_func = func
        self.inline = inline
        self.module = func.__module__
        self.name = func.__name__
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self._impl: Callable[..., Any] | None = None

    @property
    def impl(self) -> Callable[..., Any]:
        """The callable to use: the numba dispatcher (or the Python function)."""
        if self._impl is None:
            load()
        assert self._impl is not None
        return self._impl

    def __call__(self, *args: Any) -> Any:
        impl = self._impl if self._impl is not None else self.impl
        return impl(*args)

    def __repr__(self) -> str:
        state = "unloaded" if self._impl is None else ("compiled" if is_compiled() else "python")
        return f"<stackik kernel {self.module}.{self.name} ({state})>"


def kernel(func: Callable[..., Any] | None = None, *, inline: bool = False) -> Any:
    """Register ``func`` as a compiled kernel (decorator, with or without arguments).

    Args:
        func: A numba-compatible function (loops over NumPy arrays and scalars).
        inline: Inline the kernel into compiled callers (numba ``inline="always"``); for
            small helpers on hot loops.

    Returns:
        The :class:`Kernel` wrapper that stands in the module until loading (or a
        decorator when called with keyword arguments only).
    """
    if func is None:
        return lambda f: kernel(f, inline=inline)
    k = Kernel(func, inline)
    with _LOCK:
        _KERNELS.append(k)
        if _STATE["loaded"]:
            # A module imported after loading: the name the decorator binds is the
            # implementation itself, so compiled callers defined later see a dispatcher.
            _bind(k)
            assert k._impl is not None
            return k._impl
    return k


def register_warmup(func: Callable[[], None]) -> Callable[[], None]:
    """Register a warm-up callable (decorator): it runs kernels once on tiny inputs."""
    with _LOCK:
        _WARMUPS.append(func)
    return func


def _cache_base() -> Path:
    for var in ("STACKIK_CACHE_DIR", "NUMBA_CACHE_DIR"):
        value = os.environ.get(var, "").strip()
        if value:
            return Path(value)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "stackik"


def sources_digest(version: str = "") -> str:
    """Digest of the source files of every module that defines kernels (16 hex digits)."""
    digest = hashlib.sha256(version.encode())
    for name in sorted({k.module for k in _KERNELS}):
        path = getattr(sys.modules.get(name), "__file__", None)
        digest.update(name.encode())
        if path is not None and os.path.exists(path):
            digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def _numba() -> Any | None:
    """numba, configured with the stackik cache folder, or None (plain Python)."""
    if os.environ.get("STACKIK_DISABLE_JIT", "").strip() not in ("", "0"):
        return None
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        return None
    folder = _cache_base() / f"kernels-{sources_digest(numba.__version__)}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # read-only home: numba's own rule
        return numba
    _STATE["cache_dir"] = str(folder)
    setattr(numba.config, "CACHE_DIR", str(folder))  # noqa: B010 - numba types its config loosely
    return numba


def _bind(k: Kernel) -> None:
    numba = _STATE["numba"]
    if numba is None or numba.config.DISABLE_JIT:
        k._impl = k.py_func
    elif k.inline:
        k._impl = numba.njit(cache=True, nogil=True, inline="always")(k.py_func)
    else:
        k._impl = numba.njit(cache=True, nogil=True)(k.py_func)


def _rebind_module(module_name: str) -> None:
    """Replace every :class:`Kernel` object held in a module's globals by its impl."""
    mod = sys.modules.get(module_name)
    if mod is None:
        return
    space = mod.__dict__
    for name, value in list(space.items()):
        if isinstance(value, Kernel) and value._impl is not None:
            space[name] = value._impl


def load() -> bool:
    """Bind every registered kernel (import numba once); return whether they are compiled.

    Safe to call many times and from several threads; only the first call works.
    """
    with _LOCK:
        if not _STATE["loaded"]:
            _STATE["numba"] = _numba()
            for k in _KERNELS:
                _bind(k)
            package = __name__.split(".")[0]
            names = {m for m in list(sys.modules) if m == package or m.startswith(package + ".")}
            names.update(k.module for k in _KERNELS)  # kernel modules outside the package
            for module_name in sorted(names):
                _rebind_module(module_name)
            _STATE["loaded"] = True
    return is_compiled()


def is_compiled() -> bool:
    """Whether kernels run as numba machine code (False: plain Python fallback)."""
    numba = _STATE["numba"]
    return bool(_STATE["loaded"] and numba is not None and not numba.config.DISABLE_JIT)


def cache_dir() -> str:
    """Where compiled kernels are cached (known once kernels are loaded)."""
    folder = _STATE.get("cache_dir")
    if folder:
        return str(folder)
    if _STATE["loaded"]:
        return "numba default (__pycache__ beside the sources, or the user cache)"
    return f"{_cache_base()}/kernels-<digest of the kernel sources> (after loading)"


def warmup() -> int:
    """Load every kernel and run every registered warm-up; return how many ran."""
    load()
    with _LOCK:
        runs = list(_WARMUPS)
    for func in runs:
        func()
    return len(runs)
