"""The kernel cache of stackik: where compiled kernels live, how processes share them.

Used by :mod:`stackik._jit` only; nothing here imports numba at module level.

Folder:
    ``<base>/kernels-<key>``: ``<base>`` is ``STACKIK_CACHE_DIR`` when set, else
    ``NUMBA_CACHE_DIR``, else ``$XDG_CACHE_HOME/stackik`` (``~/.cache/stackik``).
    ``<key>`` digests the sources of every module that defines kernels, the numba,
    llvmlite and Python versions, and the CPU name and feature set LLVM compiles for
    (numba's ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` when set): an edited kernel, a
    new numba or another CPU (a container image run on another host) gets a fresh
    folder, never code built for something else. ``KEY.txt`` in the folder says what
    the key was made of.

Fails safe:
    * an unwritable folder (read-only home, a path that is a file): a
      :class:`~stackik.errors.KernelCacheWarning` and a per-user folder under the system
      temporary directory; if that fails too, kernels compile in memory (every process
      compiles again);
    * a corrupted cache file (truncated, overwritten, a bad checksum): it is deleted and
      the kernel compiled again, never loaded;
    * an error while saving (disk full, folder removed): the kernel is used uncached.

Sharing:
    Processes on one node that use the same folder (a process pool, Ray workers) never
    compile a kernel at the same time: on a cache miss a process takes the kernel's
    lock file (``fcntl.flock``), looks in the cache again, and only then compiles and
    saves; a second process waiting on the lock then loads what the first saved.
    Kernels call each other along a call graph without cycles and a process only waits
    for a callee of what it holds, so two processes never wait on each other.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

try:  # POSIX only; elsewhere kernels are compiled without the cross-process lock
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from .errors import KernelCacheWarning

__all__ = ["cache_base", "cache_key", "choose_folder", "make_cache_class", "try_lock"]

#: Leading bytes of every data file this cache writes (then a SHA-256 of the payload).
MAGIC = b"stackik-kernel-1\n"


def cache_base() -> Path:
    """The folder that holds the ``kernels-<key>`` folders (see the module docstring)."""
    for var in ("STACKIK_CACHE_DIR", "NUMBA_CACHE_DIR"):
        value = os.environ.get(var, "").strip()
        if value:
            return Path(value)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "stackik"


def machine(numba: Any) -> dict[str, str]:
    """What compiled code depends on besides the sources: versions and the target CPU."""
    import llvmlite
    import llvmlite.binding as ll

    config = numba.config
    cpu = config.CPU_NAME or ll.get_host_cpu_name()
    features = config.CPU_FEATURES
    if features is None:
        features = ll.get_host_cpu_features().flatten()
    return {
        "numba": str(numba.__version__),
        "llvmlite": str(llvmlite.__version__),
        "python": sys.version.split()[0],
        "platform": sys.platform,
        "cpu": str(cpu),
        "cpu_features": str(features),
    }


def cache_key(sources: str, numba: Any) -> tuple[str, dict[str, str]]:
    """The folder key (16 hex digits) and what it digests.

    Args:
        sources: Digest of the kernel sources.
        numba: The numba module.
    """
    parts = {"sources": sources, **machine(numba)}
    digest = hashlib.sha256(repr(sorted(parts.items())).encode())
    return digest.hexdigest()[:16], parts


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError:
        return False
    return True


def _fallback_base() -> Path:
    user = getattr(os, "getuid", lambda: "user")()
    return Path(tempfile.gettempdir()) / f"stackik-{user}"


def choose_folder(key: str, parts: dict[str, str]) -> Path | None:
    """The cache folder for ``key``: the configured one, a fallback, or None (no cache).

    Warns with :class:`~stackik.errors.KernelCacheWarning` when the configured folder
    cannot be written.
    """
    preferred = cache_base() / f"kernels-{key}"
    if _writable(preferred):
        folder: Path | None = preferred
    else:
        fallback = _fallback_base() / f"kernels-{key}"
        folder = fallback if _writable(fallback) else None
        where = f"using {folder}" if folder else "compiling in memory (no cache)"
        warnings.warn(
            f"stackik: the kernel cache folder {preferred} cannot be written; {where}. "
            "Set STACKIK_CACHE_DIR to a writable folder.",
            KernelCacheWarning,
            stacklevel=4,
        )
    if folder is not None:
        note = folder / "KEY.txt"
        if not note.exists():
            text = "".join(f"{k}: {v}\n" for k, v in parts.items())
            try:
                note.write_text(text)
            except OSError:
                pass
    return folder


class _Locks:
    """Process-wide, re-entrant exclusive locks on lock files (one per kernel)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: dict[str, list[int]] = {}  # path -> [fd, depth]

    def acquire(self, path: str) -> bool:
        """Take the lock at ``path`` (waits for other processes); False if impossible."""
        with self._guard:
            entry = self._held.get(path)
            if entry is not None:
                entry[1] += 1
                return True
        if fcntl is None:
            return False
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            return False
        with self._guard:
            self._held[path] = [fd, 1]
        return True

    def release(self, path: str) -> None:
        """Give back one level of the lock at ``path`` (no-op when not held)."""
        with self._guard:
            entry = self._held.get(path)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._held[path]
        try:
            fcntl.flock(entry[0], fcntl.LOCK_UN)
        finally:
            os.close(entry[0])

    def held(self) -> list[str]:
        """Paths of the locks this process holds."""
        with self._guard:
            return list(self._held)


LOCKS = _Locks()


def try_lock(path: str) -> int | None:
    """Take the lock at ``path`` if it is free (no waiting); the open descriptor, or None.

    Closing the descriptor releases the lock (so does the process's exit).
    """
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _checked(payload: bytes) -> bytes:
    return MAGIC + hashlib.sha256(payload).digest() + payload


def _unchecked(blob: bytes) -> bytes:
    head = len(MAGIC)
    if blob[:head] != MAGIC or len(blob) < head + 32:
        raise ValueError("not a stackik kernel cache file")
    digest, payload = blob[head : head + 32], blob[head + 32 :]
    if hashlib.sha256(payload).digest() != digest:
        raise ValueError("checksum mismatch")
    return payload


def make_cache_class(numba: Any, on_event: Any) -> type:
    """A numba ``FunctionCache`` that checks, locks and never raises.

    Args:
        numba: The numba module.
        on_event: ``on_event(kind, name, detail)`` is called for ``"corrupt"``,
            ``"save-failed"`` and ``"waited"`` events (diagnostics).

    Returns:
        The class; ``cls(py_func)`` is the cache of one dispatcher.
    """
    import pickle

    from numba.core import caching

    class _CheckedFile(caching.IndexDataCacheFile):
        """Index and data files with a checksum; a bad file reads as missing."""

        def _load_data(self, name: str) -> Any:
            with open(self._data_path(name), "rb") as f:
                blob = f.read()
            return pickle.loads(_unchecked(blob))

        def _save_data(self, name: str, data: Any) -> None:
            with self._open_for_write(self._data_path(name)) as f:
                f.write(_checked(self._dump(data)))

        def index(self) -> dict[Any, str]:
            """The index: data file name per key (raises on a damaged index file)."""
            return dict(self._load_index())

        def data_path(self, name: str) -> str:
            """Path of a data file."""
            return str(self._data_path(name))

        def index_path(self) -> str:
            """Path of the index file."""
            return str(self._index_path)

    class SafeCache(caching.FunctionCache):
        """Per-kernel cache: checked files, a lock around compile-and-save, no raising."""

        def __init__(self, py_func: Any) -> None:
            super().__init__(py_func)
            self._files = _CheckedFile(
                cache_path=self._cache_path,
                filename_base=self._impl.filename_base,
                source_stamp=self._impl.locator.get_source_stamp(),
            )
            self._cache_file = self._files
            self._lock_path = self._files.index_path() + ".lock"
            self._kernel = f"{py_func.__module__}.{py_func.__qualname__}"

        def has_entries(self) -> bool:
            """Whether the cache holds any compiled specialisation of this kernel."""
            return os.path.exists(self._files.index_path())

        def holds(self, sig: Any, target_context: Any) -> bool:
            """Whether the index lists ``sig`` for this machine (nothing is loaded)."""
            try:
                key = self._index_key(sig, target_context.codegen())
                return key in self._files.index()
            except Exception:  # no index, or a damaged one
                return False

        def lock_path(self) -> str:
            """The kernel's lock file."""
            return str(self._lock_path)

        def _try_load(self, sig: Any, target_context: Any) -> Any:
            try:
                return super().load_overload(sig, target_context)
            except Exception as exc:  # a damaged index or data file: drop it
                on_event("corrupt", self._kernel, f"{type(exc).__name__}: {exc}")
                self._discard(sig, target_context)
                return None

        def _discard(self, sig: Any, target_context: Any) -> None:
            files = self._files
            try:
                key = self._index_key(sig, target_context.codegen())
                name = files.index().get(key)
                if name is not None:
                    os.unlink(files.data_path(name))
                    return
            except Exception:  # the index itself is bad
                pass
            try:
                os.unlink(files.index_path())
            except OSError:
                pass

        def load_overload(self, sig: Any, target_context: Any) -> Any:
            """Load ``sig``; on a miss, hold the kernel's lock until it is saved."""
            hit = self._try_load(sig, target_context)
            if hit is not None or not self._enabled:
                return hit
            if not LOCKS.acquire(self._lock_path):
                return None  # no lock possible: compile anyway
            hit = self._try_load(sig, target_context)  # saved while we waited?
            if hit is not None:
                LOCKS.release(self._lock_path)
                on_event("waited", self._kernel, "")
            return hit

        def save_overload(self, sig: Any, data: Any) -> None:
            """Save ``sig`` (errors become a warning) and release the kernel's lock."""
            try:
                super().save_overload(sig, data)
            except Exception as exc:
                on_event("save-failed", self._kernel, f"{type(exc).__name__}: {exc}")
            finally:
                LOCKS.release(self._lock_path)

        def release(self) -> None:
            """Release the lock after a failed compilation."""
            LOCKS.release(self._lock_path)

    return SafeCache
