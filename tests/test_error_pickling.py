"""Every typed error pickles with its message and attributes, and crosses process pools.

The classes are enumerated from :mod:`stackik.errors`, so a new error class is covered
as soon as it exists (a constructor argument without a sample below fails the test
until one is added). Python's default pickles an exception as ``cls(*args)``, which
breaks for errors whose ``args`` are a formatted message: the parent of a process pool
could not unpickle the worker's error and the whole pool broke (``BrokenProcessPool``).
"""

from __future__ import annotations

import concurrent.futures
import copy
import functools
import inspect
import multiprocessing
import os
import pickle
from pathlib import Path

import pytest

import stackik
from stackik import errors
from stackik.errors import (
    FrameNotFound,
    InvalidInput,
    MalformedDescription,
    RobotFileNotFound,
    StackIKError,
)

ROOT = Path(__file__).resolve().parents[1]

#: A sample value for every constructor argument name used by the error classes.
SAMPLES: dict[str, object] = {
    "path": "/robots/arm.urdf",
    "reason": "line 3: <box size='1 2'> needs 3 sizes",
    "filename": "package://arm/meshes/link1.stl",
    "searched": ["/opt/a", "/opt/b"],
    "name": "panda_hand_tpc",
    "available": ["panda_hand_tcp", "panda_link8", "world"],
    "message": "something specific went wrong",
    "what": "q",
    "value": 1.5,
    "expected": (7,),
    "given": (6,),
    "indices": [2, 5],
    "subject": "scene",
    "kind": "attached object",
    "joint": "panda_joint4",
    "lower": -3.07,
    "upper": -0.07,
    "pairs": [("link1", "link5", 0.01, 0.005)],
    "nv": 2000,
    "needed": 256 * 10**9,
    "memory": 32 * 2**30,
}


def error_classes() -> list[type[BaseException]]:
    """Every exception or warning class defined in :mod:`stackik.errors`."""
    return [
        cls
        for cls in vars(errors).values()
        if inspect.isclass(cls)
        and issubclass(cls, BaseException)
        and cls.__module__ == errors.__name__
    ]


def instance(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` built from the samples (every argument given)."""
    params = [
        p
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    missing = [p.name for p in params if p.name not in SAMPLES]
    assert not missing, f"{cls.__name__}: add samples for {missing} to SAMPLES"
    args = [SAMPLES[p.name] for p in params if p.kind is not p.KEYWORD_ONLY]
    kwargs = {p.name: SAMPLES[p.name] for p in params if p.kind is p.KEYWORD_ONLY}
    if not params:  # the root takes a message only
        args = [SAMPLES["message"]]
    return cls(*args, **kwargs)


def assert_same_error(back: BaseException, original: BaseException) -> None:
    assert type(back) is type(original)
    assert str(back) == str(original)
    assert back.args == original.args
    assert vars(back) == vars(original)


def test_the_module_defines_the_documented_classes():
    names = {cls.__name__ for cls in error_classes()}
    assert {
        "StackIKError",
        "NameNotFound",
        "FrameNotFound",
        "NonFiniteInput",
        "ShapeError",
        "InvalidBounds",
        "MalformedDescription",
        "RobotLoadError",
        "MeshNotFound",
        "RobotFileNotFound",
        "CollisionMarginWarning",
    } <= names


@pytest.mark.parametrize("cls", error_classes(), ids=lambda c: c.__name__)
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_every_error_class_round_trips(cls, protocol):
    original = instance(cls)
    back = pickle.loads(pickle.dumps(original, protocol=protocol))
    assert_same_error(back, original)
    # Its attributes by name, and the built-in classes it also is (KeyError, OSError ...).
    for key, value in vars(original).items():
        assert getattr(back, key) == value
    for base in cls.__mro__:
        assert isinstance(back, base)


def test_file_not_found_keeps_its_message_and_path():
    original = RobotFileNotFound("/robots/arm.urdf")
    back = pickle.loads(pickle.dumps(original))
    assert str(back) == "cannot load robot description '/robots/arm.urdf': file not found"
    assert back.path == "/robots/arm.urdf"
    assert back.reason == "file not found"
    assert isinstance(back, FileNotFoundError)


def test_a_name_error_keeps_its_suggestions():
    back = pickle.loads(pickle.dumps(FrameNotFound("panda_hand_tpc", SAMPLES["available"])))
    assert back.closest[0] == "panda_hand_tcp"
    assert back.available == SAMPLES["available"]
    assert str(back).startswith("unknown frame 'panda_hand_tpc'; closest: panda_hand_tcp")


def test_an_unpicklable_offending_value_is_kept_as_its_repr():
    def value():  # a local function does not pickle
        return 0

    original = InvalidInput("callback must return a bool", what="validate", value=value)
    back = pickle.loads(pickle.dumps(original))
    assert str(back) == str(original)
    assert back.what == "validate"
    assert back.value == repr(value)


def test_notes_survive_pickling_and_copy():
    original = MalformedDescription("<string>", "no <robot> element")
    original.add_note("while loading the test robot")
    for back in (copy.copy(original), pickle.loads(pickle.dumps(original))):
        assert_same_error(back, original)
        assert back.__notes__ == ["while loading the test robot"]


# -- across processes ------------------------------------------------------------------------
def raise_error(name: str) -> None:
    """Raise the sample instance of the class called ``name`` (runs in a worker)."""
    raise instance(getattr(errors, name))


def _pool(method: str, workers: int = 1) -> concurrent.futures.ProcessPoolExecutor:
    return concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context(method)
    )


def test_a_process_pool_delivers_every_error_class():
    classes = [c for c in error_classes() if issubclass(c, StackIKError)]
    with _pool("fork", 2) as pool:
        futures = {cls: pool.submit(raise_error, cls.__name__) for cls in classes}
        for cls, future in futures.items():
            with pytest.raises(cls) as exc:
                future.result(timeout=60)
            assert_same_error(exc.value, instance(cls))
        # The pool is still alive after delivering them all.
        assert pool.submit(abs, -3).result(timeout=60) == 3


def test_a_spawned_worker_loading_a_missing_robot_reports_it(tmp_path):
    missing = tmp_path / "nope.urdf"
    with _pool("spawn") as pool:
        future = pool.submit(functools.partial(stackik.RobotModel, missing))
        with pytest.raises(RobotFileNotFound) as exc:
            future.result(timeout=120)
        assert exc.value.path == str(missing)
        assert str(exc.value) == f"cannot load robot description {str(missing)!r}: file not found"
        future = pool.submit(stackik.RobotModel.from_urdf_string, "<robot name='r'><link/></robot>")
        with pytest.raises(MalformedDescription) as exc:
            future.result(timeout=120)
        assert exc.value.path == "<string>"


@pytest.mark.slow
def test_a_ray_task_delivers_the_error():
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(ROOT / "python")])}},
    )
    try:

        @ray.remote(max_retries=0)
        def load(path: str) -> None:
            stackik.RobotModel(path)

        @ray.remote(max_retries=0)
        def look_up() -> None:
            raise FrameNotFound("panda_hand_tpc", ["panda_hand_tcp", "world"])

        with pytest.raises(RobotFileNotFound) as exc:
            ray.get(load.remote("/nonexistent/arm.urdf"))
        assert exc.value.path == "/nonexistent/arm.urdf"
        assert exc.value.reason == "file not found"
        with pytest.raises(FrameNotFound) as exc:
            ray.get(look_up.remote())
        assert exc.value.name == "panda_hand_tpc"
        assert exc.value.closest == ["panda_hand_tcp"]
    finally:
        ray.shutdown()
