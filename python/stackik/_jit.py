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
    the same functions run as plain Python: identical results, 10 to 100 times slower
    per step (a Panda step with a world of obstacles: 7.9 ms against 0.26 ms compiled).
    Useful for debugging.

Warm-up:
    Modules register small warm-up callables with :func:`register_warmup`; they call
    their kernels once on tiny inputs so that the compiled (or cached) specialisations
    are ready before a control loop's first tick.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import _kcache
from .errors import KernelCacheWarning

__all__ = [
    "FIRST_USE_VAR",
    "CompileRecord",
    "Kernel",
    "cache_dir",
    "compile_log",
    "follow",
    "is_compiled",
    "kernel",
    "load",
    "missing_kernels",
    "on_compile",
    "register_warmup",
    "runs_python_first",
    "specialisations",
    "start",
    "warmup",
    "warmup_jobs",
]

LOGGER = logging.getLogger("stackik.jit")
#: Environment variable that hands a warm-up worker its parent's cache folder.
FOLDER_VAR = "STACKIK_KERNEL_FOLDER"
#: The notice printed (once per process) when kernels compile; ``{folder}`` is filled.
NOTICE = (
    "stackik: compiling numba kernels for this machine into {folder}; this happens once "
    "per machine and stackik/numba version and takes one to a few minutes on a 2-core "
    "machine (later runs load them in a second or two; `stackik warmup` does it ahead of "
    "time)"
)

_LOCK = threading.RLock()
_KERNELS: list[Kernel] = []
_WARMUPS: list[Callable[[], None]] = []
_STATE: dict[str, Any] = {"loaded": False, "numba": None, "noticed": False}
#: (kernel, own seconds, total seconds, compiled in a warm-up worker)
CompileRecord = tuple[str, float, float, bool]
_LOG: list[CompileRecord] = []
_HOOKS: list[Callable[[str, str], None]] = []
_MACHINE_ONLY: set[Callable[[], None]] = set()
_CACHES: dict[Callable[..., Any], Any] = {}  # kernel function -> its cache (when cached)
_BY_FUNC: dict[Callable[..., Any], Kernel] = {}  # kernel function -> its Kernel
#: Environment variable: how many background processes compile on a first use (0: none).
WORKERS_VAR = "STACKIK_COMPILE_WORKERS"
#: Environment variable: what the first kernel call of a process does. ``python`` (the
#: default): run the kernels as plain Python while a background thread loads (or has
#: compiled) the machine code, then switch; ``wait``: load or compile before returning.
FIRST_USE_VAR = "STACKIK_FIRST_USE"
#: The notice of a first use on a machine without compiled kernels (plain Python meanwhile).
TIERED_NOTICE = (
    "stackik: compiling numba kernels for this machine into {folder}, in the background "
    "(once per machine and stackik/numba version; one to a few minutes on a 2-core "
    "machine); meanwhile they run as plain Python, with the same results, 10-100x "
    "slower (`stackik warmup` compiles them ahead of time)"
)
#: Whether kernels run as plain Python until the background switch (see :func:`start`).
_TIERED = [False]


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

    def __init__(self, func: Callable[..., Any], inline: bool = False, digest: bool = True) -> None:
        self.py_func = func
        self.inline = inline
        self.digest = digest
        self.module = func.__module__
        self.name = func.__name__
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self._impl: Callable[..., Any] | None = None
        self._compiled: Any = None  # the numba dispatcher, once made

    @property
    def impl(self) -> Callable[..., Any]:
        """The callable to use: the numba dispatcher (or the Python function)."""
        if self._impl is None:
            load()
        assert self._impl is not None
        return self._impl

    def __call__(self, *args: Any) -> Any:
        impl = self._impl
        if impl is None:
            start()
            impl = self._impl if self._impl is not None else self.impl
        if _TIERED[0]:
            return _python_call(self, args)
        return impl(*args)

    def __repr__(self) -> str:
        state = "unloaded" if self._impl is None else ("compiled" if is_compiled() else "python")
        return f"<stackik kernel {self.module}.{self.name} ({state})>"


def kernel(
    func: Callable[..., Any] | None = None, *, inline: bool = False, digest: bool = True
) -> Any:
    """Register ``func`` as a compiled kernel (decorator, with or without arguments).

    Args:
        func: A numba-compatible function (loops over NumPy arrays and scalars).
        inline: Inline the kernel into compiled callers (numba ``inline="always"``); for
            small helpers on hot loops.
        digest: Count the kernel's module in the cache folder's digest. False for a
            module that imports numba itself and is imported only on the compiled path,
            at a time that varies: counted only when imported before loading, it would
            change the folder. Its kernels must call no other kernel (numba's own index,
            keyed on the file, keeps them fresh; the digest is for callees in other files).

    Returns:
        The :class:`Kernel` wrapper that stands in the module until loading (or a
        decorator when called with keyword arguments only).
    """
    if func is None:
        return lambda f: kernel(f, inline=inline, digest=digest)
    k = Kernel(func, inline, digest)
    with _LOCK:
        _KERNELS.append(k)
        _BY_FUNC[func] = k
        if _STATE["loaded"]:
            # A module imported after loading: the name the decorator binds is the
            # implementation itself, so compiled callers defined later see a dispatcher.
            _bind(k)
            assert k._impl is not None
            return k._impl
        if _TIERED[0]:  # runs as plain Python until the switch binds it with the rest
            k._impl = k.py_func
            return func  # its module calls it directly (see _python_kernel_modules)
    return k


def register_warmup(func: Any = None, *, machine_only: bool = False) -> Any:
    """Register a warm-up callable (decorator, with or without arguments).

    A warm-up runs kernels once on tiny inputs, with the argument types real calls use,
    so that their compiled (or cached) specialisations are ready.

    Args:
        func: A function without arguments.
        machine_only: Run it only when compiling for the machine (``stackik warmup``,
            ``warmup(everything=True)`` and the background workers of a first use),
            not in every :func:`warmup` (for heavier jobs, e.g. a whole solver step).
    """
    if func is None:
        return lambda f: register_warmup(f, machine_only=machine_only)
    with _LOCK:
        _WARMUPS.append(func)
        if machine_only:
            _MACHINE_ONLY.add(func)
    return func


def sources_digest(version: str = "") -> str:
    """Digest of the source files of every module that defines kernels (16 hex digits)."""
    digest = hashlib.sha256(version.encode())
    for name in sorted({k.module for k in _KERNELS if k.digest}):
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
    if getattr(numba.config, "DISABLE_JIT", False):
        return numba
    given = os.environ.get(FOLDER_VAR, "").strip()  # a warm-up worker: the parent's folder
    if given:
        folder: Path | None = Path(given)
    else:
        key, parts = _kcache.cache_key(sources_digest(), numba)
        folder = _kcache.choose_folder(key, parts)
    if folder is not None:
        _STATE["cache_dir"] = str(folder)
        setattr(numba.config, "CACHE_DIR", str(folder))  # noqa: B010 - loosely typed config
        _STATE["cache_class"] = _kcache.make_cache_class(numba, _cache_event)
    _install_listener(numba)
    return numba


def _bind(k: Kernel) -> None:
    numba = _STATE["numba"]
    if numba is None or numba.config.DISABLE_JIT:
        k._impl = k.py_func
        return
    k._impl = _dispatcher(k)


def _dispatcher(k: Kernel) -> Any:
    """``k``'s numba dispatcher with the stackik cache (made once)."""
    if k._compiled is not None:
        return k._compiled
    numba = _STATE["numba"]
    options: dict[str, Any] = {"nogil": True}
    if k.inline:
        options["inline"] = "always"
    dispatcher = numba.njit(**options)(k.py_func)
    cache_class = _STATE.get("cache_class")
    if cache_class is not None:
        try:
            cache = cache_class(k.py_func)
        except Exception as exc:  # no cache locator for this file: compile uncached
            _cache_event("uncached", f"{k.module}.{k.name}", str(exc))
        else:
            # numba has no public hook for a cache class of one's own: its
            # ``Dispatcher.enable_caching`` sets this same attribute to a FunctionCache.
            setattr(dispatcher, "_cache", cache)  # noqa: B010
            _CACHES[k.py_func] = cache
    k._compiled = dispatcher
    return dispatcher


def _rebind_module(module_name: str) -> None:
    """Replace every kernel a module's globals hold by the kernel's impl.

    A kernel is held as its :class:`Kernel` object, or as its plain function while
    kernels run as Python (:func:`start`).
    """
    mod = sys.modules.get(module_name)
    if mod is None:
        return
    space = mod.__dict__
    for name, value in list(space.items()):
        if not isinstance(value, Kernel):
            plain = isinstance(value, types.FunctionType)
            value = _BY_FUNC.get(value) if plain else None
            if value is None:
                continue
        if value._impl is not None:
            space[name] = value._impl


def load() -> bool:
    """Bind every registered kernel (import numba once); return whether they are compiled.

    Safe to call many times and from several threads; only the first call works. While
    a first use runs the kernels as plain Python (:func:`start`), waits for the switch
    to compiled code.
    """
    if _TIERED[0] and _tier.wait():
        return is_compiled()
    with _LOCK:
        if not _STATE["loaded"]:
            if _STATE["numba"] is None:  # (a first use whose switch failed has it)
                _STATE["numba"] = _numba()
            for k in _KERNELS:
                _bind(k)
            _rebind_modules()
            _STATE["loaded"] = True
            _TIERED[0] = False
    return is_compiled()


def _rebind_modules() -> None:
    """Every module of the package (and every kernel module) to the kernels' impls."""
    package = __name__.split(".")[0]
    names = {m for m in list(sys.modules) if m == package or m.startswith(package + ".")}
    names.update(k.module for k in _KERNELS)  # kernel modules outside the package
    for module_name in sorted(names):
        _rebind_module(module_name)


def runs_python_first() -> bool:
    """Whether kernels run (or will first run) as plain Python, loading in the background.

    See :func:`start`.
    """
    return _TIERED[0] or (not _STATE["loaded"] and _first_use_python())


def _first_use_python() -> bool:
    """Whether a first use runs plain Python while loading in the background."""
    if os.environ.get(FIRST_USE_VAR, "python").strip().lower() in ("wait", "compile"):
        return False
    if os.environ.get("STACKIK_DISABLE_JIT", "").strip() not in ("", "0"):
        return False  # plain Python for good: load() binds it
    return not os.environ.get(FOLDER_VAR, "").strip()  # a warm-up worker compiles


def start(jobs: Sequence[str] | None = None) -> None:
    """Make the kernels callable without waiting for numba (the first use of a process).

    By default (``STACKIK_FIRST_USE=python``) every kernel runs as plain Python at once,
    with the same results bit for bit, while a background thread imports numba and
    loads the machine code from the cache; on a machine where the cache is empty it
    first compiles every kernel in worker processes (one per core but one), or waits for
    the process of this node that already does. Then it loads what this process has
    called and switches every kernel to its compiled form. ``STACKIK_FIRST_USE=wait``
    (and a warm-up worker) loads, or compiles, here instead: :func:`load`.

    Args:
        jobs: The warm-up jobs the background workers run on an empty cache (default:
            every registered one, ``machine_only`` included: the whole package).
    """
    if _STATE["loaded"] or _TIERED[0]:
        return
    if not _first_use_python():
        load()
        return
    with _LOCK:
        if _STATE["loaded"] or _TIERED[0]:
            return
        for k in _KERNELS:
            k._impl = k.py_func
        _STATE["background"] = False  # the tier thread compiles, not a listener
        _TIERED[0] = True
        _python_kernel_modules()
        _tier.begin(jobs)


def follow(func: Callable[..., Any]) -> Callable[..., Any]:
    """A reference to keep to a kernel read from its module: it follows the switch.

    While kernels run as plain Python (:func:`start`), a kernel module holds the plain
    function; kept as is, it would stay plain Python after the switch. This returns the
    :class:`Kernel` for it then (which calls the compiled form once switched), and
    ``func`` itself otherwise.
    """
    if _TIERED[0] and isinstance(func, types.FunctionType):
        return _BY_FUNC.get(func, func)
    return func


def _python_call(k: Kernel, args: tuple[Any, ...]) -> Any:
    """Run ``k`` as plain Python; remember the arguments of its first call.

    Only calls from outside the kernels come here: the kernel modules themselves hold
    the plain functions while kernels run as Python (:func:`_python_kernel_modules`).
    """
    if k not in _tier.entries:
        _tier.entries[k] = args
    return k.py_func(*args)


def _python_kernel_modules() -> None:
    """In every module that defines kernels, each kernel's name to its plain function.

    (:func:`_rebind_module` with each kernel's impl, which :func:`start` has just set to
    the plain function.) Kernels then call each other without the :class:`Kernel`
    wrapper; every other module keeps the wrappers, which record the calls from outside
    for the switch.
    """
    for module_name in sorted({k.module for k in _KERNELS}):
        _rebind_module(module_name)


class _Tier:
    """The background thread of :func:`start`: compile or load, then switch."""

    def __init__(self) -> None:
        self.entries: dict[Kernel, tuple[Any, ...]] = {}  # kernel -> arguments
        self.thread: threading.Thread | None = None
        self.done = threading.Event()
        self.switched = False
        self.jobs: list[str] | None = None
        # Held while numba imports and loads: a fork waits for it (restart_in_child).
        self.busy = threading.Lock()
        self.guard: int | None = None  # the node's background lock file, while held

    def begin(self, jobs: Sequence[str] | None) -> None:
        self.jobs = None if jobs is None else list(jobs)
        self.thread = threading.Thread(target=self.run, name="stackik-kernels", daemon=True)
        self.thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the switch (not from the tier thread itself); whether it happened."""
        if threading.current_thread() is not self.thread:
            self.done.wait(timeout)
        return self.switched

    def run(self) -> None:
        # The foreground runs Python kernels without pause; at the default 5 ms switch
        # interval this thread would wait that long for the GIL after each file read of
        # numba's import and of the cache, taking many seconds. A short interval while
        # it runs lets both threads progress.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, 2e-4))
        try:
            self.load_and_switch()
        finally:
            sys.setswitchinterval(interval)
            self.done.set()

    def load_and_switch(self) -> None:
        try:
            with self.busy:
                numba = _numba()
                if numba is None or numba.config.DISABLE_JIT:
                    return
                with _LOCK:
                    _STATE["numba"] = numba
                    kernels = list(_KERNELS)
                for k in kernels:
                    _typed_as_dispatcher(k, numba)
            if _STATE.get("cache_dir") and not _is_warm():
                self.compile_elsewhere()
            with self.busy:
                self.preload()
                self.switch()
        except Exception as exc:  # plain Python stays: correct results, slower
            LOGGER.warning(
                "stackik: the compiled kernels could not be loaded (%s: %s); they keep "
                "running as plain Python",
                type(exc).__name__,
                exc,
            )

    def compile_elsewhere(self) -> None:
        """Fill the cache in worker processes, or wait for the node's process that does."""
        path = os.path.join(str(_STATE["cache_dir"]), "background.lock")
        guard = _kcache.try_lock(path)
        if guard is None:  # another process of this node compiles: wait for it
            if _kcache.LOCKS.acquire(path):
                _kcache.LOCKS.release(path)
            if _is_warm():
                return
            guard = _kcache.try_lock(path)
            if guard is None:
                return
        self.guard = guard
        try:
            if _is_warm():
                return
            LOGGER.warning(TIERED_NOTICE.format(folder=cache_dir()))
            _STATE["noticed"] = True
            jobs = self.jobs if self.jobs is not None else warmup_jobs(everything=True)
            count = _background_count()
            if count >= 1 and _run_workers(jobs, count, None):
                _mark_warm(jobs)
        finally:
            self.guard = None
            os.close(guard)

    def restart_in_child(self) -> None:
        """A process forked before the switch: its own thread, from the start."""
        self.busy = threading.Lock()  # (the parent's was held across the fork)
        if self.guard is not None:  # this process's copy of the parent's lock file
            os.close(self.guard)
            self.guard = None
        if _TIERED[0] and not self.switched:
            self.done = threading.Event()
            self.begin(self.jobs)

    def preload(self) -> None:
        """Load each kernel this process called, with those argument types, if cached.

        A specialisation the cache does not hold compiles on its first compiled call
        (here it would compile against the plain functions the kernel modules hold).
        """
        for k, args in list(self.entries.items()):
            cache = _CACHES.get(k.py_func)
            if k.inline or cache is None:
                continue
            dispatcher = k._compiled
            try:
                sig = tuple(dispatcher.typeof_pyval(a) for a in args)
                if cache.holds(sig, dispatcher.targetctx):
                    dispatcher.compile(sig)
            except Exception:  # loaded (or compiled) on its first compiled call instead
                LOGGER.debug("stackik: preloading %s failed", k.name, exc_info=True)

    def switch(self) -> None:
        """Every kernel and every module's name of it to the compiled form, at once."""
        with _LOCK:
            for k in _KERNELS:  # (unused while _TIERED holds: calls go to _python_call)
                _typed_as_dispatcher(k, _STATE["numba"])
                k._impl = k._compiled
            _rebind_modules()
            _STATE["loaded"] = True
            _TIERED[0] = False
            self.switched = True
            self.entries.clear()


_tier = _Tier()


def _before_fork() -> None:
    _tier.busy.acquire()  # never fork while numba imports or loads: the child could not


def _after_fork_in_parent() -> None:
    _tier.busy.release()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_tier.restart_in_child,
    )


def _typed_as_dispatcher(k: Kernel, numba: Any) -> None:
    """Make ``k``'s dispatcher and let numba type the plain function as that dispatcher.

    While kernels run as plain Python their modules hold the plain functions; a kernel
    compiled in this process meanwhile (or while the switch rebinds the modules) finds
    a callee's plain function as a global, which numba types through ``_numba_type_``.
    """
    if k._compiled is not None:  # (made, and typed, by an earlier call)
        return
    dispatcher = _dispatcher(k)
    setattr(k.py_func, "_numba_type_", numba.typeof(dispatcher))  # noqa: B010


def specialisations() -> dict[str, int]:
    """How many compiled specialisations each kernel has in this process (by name)."""
    with _LOCK:
        kernels = list(_KERNELS)
    return {
        f"{k.module}.{k.name}": len(k._compiled.signatures) if k._compiled is not None else 0
        for k in kernels
    }


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
        return (
            "no cache (kernels compile in memory)" if is_compiled() else "no cache (plain Python)"
        )
    return f"{_kcache.cache_base()}/kernels-<key> (known after loading)"


def compile_log() -> list[CompileRecord]:
    """Every kernel compilation of this process (and of its warm-up workers) so far.

    Returns:
        ``(kernel, own s, total s, in_worker)`` per compiled specialisation, in the order
        they finished: *own* excludes callees compiled while typing it, *total*
        includes them. Loads from the cache are not compilations and are not listed.
    """
    with _LOCK:
        return list(_LOG)


def on_compile(callback: Callable[[str, str], None]) -> Callable[[], None]:
    """Call ``callback(event, kernel)`` when a kernel starts (``"start"``) or ends compiling.

    For progress displays. Worker processes of :func:`warmup` report ``"end"`` events of
    their compilations when each of their jobs is done.

    Returns:
        A function that removes the callback.
    """
    with _LOCK:
        _HOOKS.append(callback)

    def remove() -> None:
        with _LOCK:
            if callback in _HOOKS:
                _HOOKS.remove(callback)

    return remove


def _notify(event: str, name: str) -> None:
    for hook in list(_HOOKS):
        try:
            hook(event, name)
        except Exception:  # a display must never break a compilation
            LOGGER.debug("compile hook failed", exc_info=True)


def _notice() -> None:
    """The one line that says kernels are compiling (once per process)."""
    with _LOCK:
        if _STATE["noticed"]:
            return
        _STATE["noticed"] = True
    LOGGER.warning(NOTICE.format(folder=cache_dir()))


def _cache_event(kind: str, name: str, detail: str) -> None:
    """Diagnostics of the cache (see :func:`stackik._kcache.make_cache_class`)."""
    if kind == "save-failed":
        warnings.warn(
            f"stackik: could not save the compiled kernel {name} ({detail}); it stays "
            "in memory and the next process compiles it again",
            KernelCacheWarning,
            stacklevel=2,
        )
    elif kind == "corrupt":
        LOGGER.info("stackik: dropped a damaged cache entry of %s (%s)", name, detail)
    else:
        LOGGER.debug("stackik: kernel cache %s: %s %s", kind, name, detail)


def _install_listener(numba: Any) -> None:
    """Record every compilation (numba's ``numba:compile`` events) once per process."""
    from numba.core import event

    local = threading.local()

    class _Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            stack = getattr(local, "stack", None)
            if stack is None:
                stack = local.stack = []
            py_func = ev.data["dispatcher"].py_func
            name = f"{py_func.__module__}.{py_func.__qualname__}"
            if not stack:
                _notice()
                if _STATE.get("background") is None:
                    _start_background(name)
            stack.append([name, time.perf_counter(), 0.0])
            _notify("start", name)

        def on_end(self, ev: Any) -> None:
            py_func = ev.data["dispatcher"].py_func
            name, start, inner = local.stack.pop()
            total = time.perf_counter() - start
            if local.stack:
                local.stack[-1][2] += total
            with _LOCK:
                _LOG.append((name, total - inner, total, False))
            # numba's Event.is_failed reads inverted; the exception triple tells
            details = getattr(ev, "_exc_details", None)  # numba has no public reader
            cache = _CACHES.get(py_func)
            if details and details[0] is not None and cache is not None:
                cache.release()  # no save follows: give back the kernel's lock
            _notify("end", name)

    event.register("numba:compile", _Listener())


def warmup_jobs(everything: bool = False) -> list[str]:
    """The registered warm-ups as ``"module:qualname"`` names (the jobs of :func:`warmup`).

    Args:
        everything: Include the ``machine_only`` jobs (every kernel of the package).
    """
    with _LOCK:
        return [
            f"{f.__module__}:{f.__qualname__}"
            for f in _WARMUPS
            if everything or f not in _MACHINE_ONLY
        ]


def _resolve(job: str) -> Callable[[], None]:
    import importlib

    module_name, _, qualname = job.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _missing() -> list[str]:
    """Kernels (not inlined ones) of which the cache holds no compiled specialisation."""
    missing = []
    for k in list(_KERNELS):
        if k.inline:  # inlined into its callers, never compiled on its own
            continue
        cache = _CACHES.get(k.py_func)
        if cache is None or not cache.has_entries():
            missing.append(f"{k.module}.{k.name}")
    return missing


def missing_kernels() -> list[str]:
    """Registered kernels with nothing in the cache yet (all of them without a cache)."""
    load()
    return _missing()


def _is_warm() -> bool:
    """Whether a full warm-up filled the cache folder (or nothing is missing from it)."""
    folder = _STATE.get("cache_dir")
    if not folder:
        return False
    return os.path.exists(os.path.join(str(folder), "WARM")) or not _missing()


def _mark_warm(jobs: Sequence[str]) -> None:
    folder = _STATE.get("cache_dir")
    if folder and set(jobs) >= set(warmup_jobs(everything=True)):
        try:
            Path(folder, "WARM").write_text("\n".join(sorted(jobs)) + "\n")
        except OSError:
            pass


def warmup(
    workers: int | None = 1,
    jobs: Sequence[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    everything: bool = False,
) -> int:
    """Load every kernel and run the registered warm-ups here; return how many ran.

    When kernels are not yet in the cache and there is more than one worker, the jobs
    first run in worker processes (in parallel, each compiling into the shared cache,
    never two the same kernel), then here, where they only load. Each job is a
    registered warm-up (:func:`warmup_jobs`) or any ``"module:qualname"`` of a function
    without arguments.

    Args:
        workers: Worker processes; ``None``: one per core. 1 (the default): compile in
            this process (pool workers that each call it share the work through the
            cache's locks).
        jobs: The jobs to run (default: the registered warm-ups).
        progress: ``progress(done, total, job)`` after each job of the workers.
        everything: With the default jobs, also the ``machine_only`` ones: every kernel
            the package has (what ``stackik warmup`` runs).

    Returns:
        The number of jobs run here.
    """
    load()
    names = list(jobs) if jobs is not None else warmup_jobs(everything)
    count = workers if workers is not None else (os.cpu_count() or 1)
    if count > 1 and is_compiled() and _STATE.get("cache_dir") and not _is_warm():
        _notice()
        _join_background()
        _run_workers(names, min(count, len(names)), progress)
    for job in names:
        _resolve(job)()
    _mark_warm(names)
    return len(names)


def _background_count() -> int:
    value = os.environ.get(WORKERS_VAR, "").strip()
    if value:
        try:
            return max(0, int(value))
        except ValueError:
            return 0
    return min(2, (os.cpu_count() or 1) - 1)


def _start_background(name: str) -> None:
    """On the first compilation of a package kernel, compile the rest in the background.

    Worker processes (``STACKIK_COMPILE_WORKERS``, default: one per core but one, at
    most 2) run every registered warm-up into the shared cache while this process
    compiles what it needs; a kernel one of them is compiling, this process waits
    for and loads. Not in a worker, not with a warm or no cache folder.
    """
    package = __name__.split(".")[0] + "."
    if not name.startswith(package) or _STATE.get("background") is not None:
        return
    count = _background_count()
    if count < 1 or not _STATE.get("cache_dir") or _is_warm():
        _STATE["background"] = False
        return
    # what this process needs first (the solver core) last: the workers start elsewhere
    jobs = sorted(warmup_jobs(everything=True), key=lambda job: job.startswith(package + "sns"))

    guard = _kcache.try_lock(os.path.join(str(_STATE["cache_dir"]), "background.lock"))
    if guard is None:  # another process of this node already compiles in the background
        _STATE["background"] = False
        return

    def run() -> None:
        try:
            if _run_workers(jobs, count, None):
                _mark_warm(jobs)
        finally:
            os.close(guard)

    thread = threading.Thread(target=run, name="stackik-compile", daemon=True)
    _STATE["background"] = thread
    thread.start()


def _join_background() -> None:
    thread = _STATE.get("background")
    if isinstance(thread, threading.Thread):
        thread.join()


WORKER = """
import json, sys
from stackik import _jit
_jit._worker_loop()
"""


def _worker_loop() -> None:
    """Body of a warm-up worker: run the jobs read from stdin, answer on stdout."""
    _STATE["noticed"] = True  # the parent says what is happening
    _STATE["background"] = False  # a worker never starts workers
    load()
    for line in sys.stdin:
        job = line.strip()
        if not job:
            break
        before = len(_LOG)
        error = ""
        try:
            _resolve(job)()
        except Exception as exc:  # reported; the parent runs the job again and raises
            error = f"{type(exc).__name__}: {exc}"
        reply = {"job": job, "error": error, "log": [list(r[:3]) for r in _LOG[before:]]}
        try:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
        except OSError:  # the parent exited (its compiles stay in the cache): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return


def _run_workers(
    jobs: Sequence[str], count: int, progress: Callable[[int, int, str], None] | None
) -> bool:
    """Run ``jobs`` over ``count`` worker processes sharing this process's cache folder.

    Returns:
        Whether every job ran without an error.
    """
    import queue

    pending: queue.Queue[str] = queue.Queue()
    for job in jobs:
        pending.put(job)
    env = dict(os.environ, **{FOLDER_VAR: str(_STATE["cache_dir"]), WORKERS_VAR: "0"})
    done = [0]

    def serve() -> None:
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            while True:
                try:
                    job = pending.get_nowait()
                except queue.Empty:
                    break
                proc.stdin.write(job + "\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
                if not line:
                    break  # the worker died: the jobs left run in this process
                reply = json.loads(line)
                if reply["error"]:
                    LOGGER.debug("warm-up job %s failed: %s", job, reply["error"])
                with _LOCK:
                    _LOG.extend((n, own, total, True) for n, own, total in reply["log"])
                    done[0] += 0 if reply["error"] else 1
                    finished = done[0]
                for record in reply["log"]:
                    _notify("end", record[0])
                if progress is not None:
                    progress(finished, len(jobs), job)
        finally:
            proc.stdin.close()
            proc.wait()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done[0] == len(jobs)
