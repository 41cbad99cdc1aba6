"""Seven fixes to kopf 1.45.2 (pinned), applied when the operator starts.

kopf fills its indexes before any handler runs: every object of an indexed kind holds a toggle
in one `ToggleSet`, and every object's worker waits on that set's condition until all toggles
are off. Each toggle dropped notifies *every* waiter, and each re-checks the whole set: with
2,000 KafkaTopics a restart spent ~30 s (measured with py-spy: `ToggleSet.make_toggle` /
`wait_for` dominating) before the first handler ran, growing with the square of the count.

The fix keeps the semantics (wait until the set is on/off) but lets one watcher per set and
state wait on the condition; every other waiter waits on an Event that watcher sets. Upstream
kopf may fix this itself; `tests/k8s/test_kopf_patches.py` fails if the patch stops applying.

A second fix: kopf wraps every watch event in a `Body` and a `Patch` whose views (`meta`, `spec`,
`status`, and `meta`'s `labels`/`annotations`) point back at them: reference cycles, so each
event's body and patch, and the raw object they hold, wait for the cyclic garbage collector
instead of being freed when the event is done. At 10,000 KafkaTopics created at once, full
collections (each walking every live object) took 22 s of the operator's 67 s, 56 of them,
measured with `gc.callbacks`; `gc.DEBUG_SAVEALL` showed the garbage was these objects, nearly
alone. Here the views of a body point at a small shared root that holds the raw object (the body
keeps its cached views; replacing a daemon's body replaces the root's object, so the views stay
live), and a patch builds its views when asked (writes still land in the patch). Neither is a
cycle, so both are freed by reference counting, which is what lets `collector.py` run full
collections rarely without holding every event's body until the next one.

A third: kopf gives every object with a live worker or a queued event a `Stream` whose backlog is
an `asyncio.Queue`: three deques and an `Event` with a fourth, 3.3 KB (tracemalloc), for a
queue that holds one to three events and has one reader (the object's worker) and one writer (the
watcher). With a worker limit, every object waiting for a worker holds one: ~90,000 of them, ~350 MB,
when 100,000 objects arrive at once (docs/benchmarks.md, "kopf's per-object queue"). `Backlog`
offers what kopf's watcher and worker call (`put`, `get`, `empty`, `qsize`) in 0.14 KB, and
`Pressure` the `asyncio.Event` beside it (set by the watcher, cleared by the worker, slept on by
the handler machinery) without the deque every Event has: 0.9 -> 0.06 KB.

A fourth: kopf keeps a `ResourceMemory` per object for as long as it exists, and in it a
`DaemonsMemory` (a dataclass, its `__dict__`, an empty set and an empty dict: ~0.5 KB) even for
kinds that have no daemons or timers; only KafkaClusters have one here. Objects now share one
empty, read-only `DaemonsMemory` until kopf processes a spawning cause for them (which it does only
for kinds with daemons or timers), and get their own at that moment.

A fifth, a deadlock: with a worker limit (`settings.queueing.worker_limit`, `kafkaops run
--worker-limit`), a start with more objects of a kind than the limit handled nothing, ever. kopf
gives every listed object a worker to fill the indexes, and each worker, once its object is
indexed, waits on the operator's `ToggleSet` until every object is: the first `limit` workers
held every slot waiting for objects that could not get one (kopf issue #1243, still open
upstream; found here by restarting an operator with 20 KafkaTopics and a limit of 5). Here a
worker of a limited scheduler that waits on a `ToggleSet` does not count against the limit (the
scheduler's `_can_spawn` leaves it out), so every listed object gets its worker, and when the
indexes are full they all go on at once: the objects that were there at the start are resumed
together, as with no limit (their workers exist by then; making them queue for slots again
delayed an edit made after a restart with 10,000 objects from 0.3 to 6.1 s and saved no memory),
and the limit holds again for the objects that come after.

A sixth, also with a worker limit: kopf sleeps through a handler's retry delay inside the object's
worker, then touches the object (a PATCH whose echo brings the worker back). The worker never
idles, so it never gives its slot up: as many objects retrying at once as the limit (deletions
waiting for the deletion cap, a cluster refusing writes) held every slot for as long as they
retried, and every other object's events waited. Here, with a limit, a delay with nothing to patch
is slept in a task of its own, which touches the object as kopf would; the worker idles and ends.
A new event for the object meanwhile does not cancel that touch (kopf's sleep would have woken
and skipped it): one more touch and handling cycle at most, with nothing to do.

A seventh, a wedge: when kopf's PATCH after a handler fails (a 409 Conflict, which kopf does not
retry; a 5xx or 403 past its nine retries), kopf logs it, throttles the object for a second and
then waits for the object's next watch event to handle it again. An object nothing else writes to
gets none: a KafkaTopic whose deletion handler's retry could not be recorded, in a Namespace being
deleted, kept its finalizer for ever and the Namespace stayed Terminating (the soak, seed 50248:
a 409 on that PATCH). Here a failed PATCH is followed by touches of the object, at kopf's own error
delays, until one is accepted: its echo is that next event.
"""

from __future__ import annotations

import asyncio
import datetime
import sys
import weakref
from types import MappingProxyType
from typing import Any

from kopf._cogs.aiokits import aiotasks
from kopf._cogs.aiokits.aiotoggles import ToggleSet
from kopf._cogs.structs import bodies, dicts, patches
from kopf._core.actions import application
from kopf._core.engines import daemons
from kopf._core.reactor import inventory, processing, queueing

_original_wait_for = ToggleSet.wait_for
_EVENTS = "_kafkaops_waiters"


async def _shared_wait_for(self: ToggleSet, state: bool, /) -> None:
    wanted = bool(state)
    if self.is_on() == wanted:
        return
    events: dict[bool, asyncio.Event] = self.__dict__.setdefault(_EVENTS, {})
    event = events.get(wanted)
    if event is None:
        event = events[wanted] = asyncio.Event()

        async def watch(done: asyncio.Event = event) -> None:
            try:
                await _original_wait_for(self, wanted)
            finally:
                events.pop(wanted, None)
                done.set()

        task = asyncio.create_task(watch(), name=f"kopf toggle set -> {wanted}")
        self.__dict__.setdefault("_kafkaops_tasks", set()).add(task)
        task.add_done_callback(self.__dict__["_kafkaops_tasks"].discard)
    current = asyncio.current_task()
    scheduler = next((s for s in _SCHEDULERS if current in s._running_tasks), None) if current else None
    if scheduler is None or scheduler._limit is None:
        await event.wait()
        return
    # a worker of a limited scheduler (kopf's worker limit) waiting here does not count against the
    # limit while it waits (see the module's docstring, the fifth fix)
    scheduler._kafkaops_parked += 1  # type: ignore[attr-defined]
    try:
        async with scheduler._condition:
            scheduler._condition.notify_all()  # -> its spawner: the next object's worker may start
        await event.wait()
    finally:
        scheduler._kafkaops_parked -= 1  # type: ignore[attr-defined]


_SCHEDULERS: weakref.WeakSet[aiotasks.Scheduler] = weakref.WeakSet()
_KOPF_SCHEDULER_INIT = aiotasks.Scheduler.__init__


def _scheduler_init(self: aiotasks.Scheduler, *args: Any, **kwargs: Any) -> None:
    _KOPF_SCHEDULER_INIT(self, *args, **kwargs)
    self._kafkaops_parked = 0  # type: ignore[attr-defined]  # running tasks waiting on a ToggleSet
    _SCHEDULERS.add(self)


def _can_spawn(self: aiotasks.Scheduler) -> bool:
    """kopf's own test, with the running tasks that wait on a ToggleSet left out of the count."""
    parked: int = getattr(self, "_kafkaops_parked", 0)
    return not self._pending_coros.empty() and (
        self._limit is None or len(self._running_tasks) - parked < self._limit)


_KOPF_APPLY = application.apply
_TOUCHES: set[asyncio.Task[None]] = set()  # the delays slept outside the workers (strong references)


async def _apply(*, settings: Any, resource: Any, body: Any, patch: Any, delays: Any, logger: Any,
                 stream_pressure: Any = None) -> tuple[bool, str | None, Any]:
    delay = min(delays) if delays else None
    if not settings.queueing.worker_limit or delay is None or delay <= 0 or patch:
        try:
            return await _KOPF_APPLY(settings=settings, resource=resource, body=body, patch=patch, delays=delays,
                                     logger=logger, stream_pressure=stream_pressure)
        except Exception:
            _touch_until_answered(settings, resource, body, logger)  # the seventh fix (module docstring)
            raise  # kopf's throttler logs it and sleeps, as before
    delay = min(delay, application.WAITING_KEEPALIVE_INTERVAL)
    logger.debug(f"Sleeping for {delay} seconds for the delayed handlers, outside the worker.")
    task = asyncio.create_task(_touch_later(settings, resource, body, logger, delay),
                               name=f"touch {body.metadata.namespace}/{body.metadata.name} in {delay:g}s")
    _TOUCHES.add(task)
    task.add_done_callback(_TOUCHES.discard)
    return False, None, None  # what kopf's apply() answers when it slept and touched


async def _touch(settings: Any, resource: Any, body: Any, logger: Any) -> None:
    """kopf's own touch: a dummy value in the progress storage, merge-patched. A gone object (404)
    answers None: nothing to do. Raises what the API's refusal raised."""
    touch = patches.Patch()
    settings.persistence.progress_storage.touch(body=body, patch=touch,
                                                value=datetime.datetime.now(datetime.UTC).isoformat())
    await application.patch_and_check(settings=settings, resource=resource, logger=logger, patch=touch, body=body)


async def _touch_later(settings: Any, resource: Any, body: Any, logger: Any, delay: float) -> None:
    """kopf's touch after a delay."""
    await asyncio.sleep(delay)
    try:
        await _touch(settings, resource, body, logger)
    except Exception:  # noqa: BLE001 - the API refused: touched again until it answers (the seventh fix)
        logger.debug("Touching the object after its delay failed.", exc_info=True)
        _touch_until_answered(settings, resource, body, logger)


_RETOUCHES: dict[str, asyncio.Task[None]] = {}  # object uid -> its touches after a failed PATCH


def _touch_until_answered(settings: Any, resource: Any, body: Any, logger: Any) -> None:
    """After kopf's PATCH of an object failed, touch the object until a touch is accepted: its echo is
    the event kopf waits for to handle the object again. One series per object at a time."""
    uid = body.metadata.uid or f"{body.metadata.namespace}/{body.metadata.name}"
    if uid in _RETOUCHES:
        return
    task = asyncio.create_task(_retouch(settings, resource, body, logger),
                               name=f"touch {body.metadata.namespace}/{body.metadata.name} after a failed patch")
    _RETOUCHES[uid] = task
    task.add_done_callback(lambda _: _RETOUCHES.pop(uid, None))


async def _retouch(settings: Any, resource: Any, body: Any, logger: Any) -> None:
    # kopf's own error delays (1, 1, 2, 3, 5, 8... s: ~27 min in all): the first ends as kopf's
    # throttling of the object does, so the echo finds the object handled again
    for delay in settings.queueing.error_delays:
        await asyncio.sleep(delay)
        try:
            await _touch(settings, resource, body, logger)
            return
        except Exception:  # noqa: BLE001 - refused again: the next delay
            logger.debug("Touching the object after a failed patch failed too; trying again.", exc_info=True)
    logger.warning("The object could not be touched after a failed patch: it is handled again at its next event.")


class _Root(dicts.ReplaceableMappingView[str, Any]):
    """The raw object of one `Body`, shared by the body and its views (none points at the body)."""


def _root_of(source: Any) -> Any:
    return source.__dict__.get("_root", source) if isinstance(source, bodies.Body) else source


def _body_init(self: bodies.Body, __src: Any) -> None:
    self.__dict__["_root"] = _Root(__src)
    dicts.MappingView.__init__(self, __src)
    self._meta = bodies.Meta(self)
    self._spec = bodies.Spec(self)
    self._status = bodies.Status(self)


def _body_src(self: bodies.Body) -> Any:
    root = self.__dict__.get("_root")
    return self.__dict__["_src"] if root is None else root._src  # a body made before apply()


def _body_set_src(self: bodies.Body, value: Any) -> None:
    root = self.__dict__.get("_root")
    if root is None:
        self.__dict__["_src"] = value
    else:
        root._src = value


def _meta_init(self: bodies.Meta, __src: Any) -> None:
    root = _root_of(__src)
    dicts.MappingView.__init__(self, root, "metadata")
    self._labels = dicts.MappingView(root, ("metadata", "labels"))
    self._annotations = dicts.MappingView(root, ("metadata", "annotations"))


def _view_init(path: str) -> Any:
    def init(self: dicts.MappingView[str, Any], __src: Any) -> None:
        dicts.MappingView.__init__(self, _root_of(__src), path)
    return init


def _patch_init(self: patches.Patch, src: dict[str, Any] | None = None, /, body: bodies.Body | None = None,
                fns: Any = ()) -> None:
    dict.__init__(self, src or {})
    self._original = body
    self._fns = (src.fns if isinstance(src, patches.Patch) else []) + list(fns)


def _meta_patch_init(self: patches.MetaPatch, __src: patches.Patch) -> None:
    dicts.MutableMappingView.__init__(self, __src, "metadata")
    self._labels = dicts.MutableMappingView(__src, ("metadata", "labels"))
    self._annotations = dicts.MutableMappingView(__src, ("metadata", "annotations"))


def _patch_meta(self: patches.Patch) -> patches.MetaPatch:
    return patches.MetaPatch(self)


def _patch_spec(self: patches.Patch) -> patches.SpecPatch:
    return patches.SpecPatch(self)


def _patch_status(self: patches.Patch) -> patches.StatusPatch:
    return patches.StatusPatch(self)


_ACYCLIC: list[tuple[Any, str, Any]] = [
    (bodies.Body, "__init__", _body_init),
    (bodies.Body, "_src", property(_body_src, _body_set_src)),
    (bodies.Meta, "__init__", _meta_init),
    (bodies.Spec, "__init__", _view_init("spec")),
    (bodies.Status, "__init__", _view_init("status")),
    (patches.Patch, "__init__", _patch_init),
    (patches.Patch, "metadata", property(_patch_meta)),
    (patches.Patch, "meta", property(_patch_meta)),
    (patches.Patch, "spec", property(_patch_spec)),
    (patches.Patch, "status", property(_patch_status)),
    (patches.MetaPatch, "__init__", _meta_patch_init),
]


def shared_keys(value: Any) -> Any:
    """`value` (parsed JSON) with every mapping key interned. `json.loads` makes new key strings for
    every document, so each queued watch event held its own "metadata", "resourceVersion"...: 3.0 ->
    2.0 KB per KafkaTopic event (tracemalloc), for 4 us of the event loop's time."""
    if type(value) is dict:
        return {sys.intern(k) if type(k) is str else k: shared_keys(v) for k, v in value.items()}
    if type(value) is list:
        return [shared_keys(v) for v in value]
    return value


class Backlog:
    """One object's queue of watch events: FIFO, one reader at a time (kopf's worker, which gets
    with a timeout: a get cancelled by it takes nothing), any number of writers. An event's keys
    are shared with every other event's (`shared_keys`): with a worker limit most of a storm's
    objects wait here as raw events."""

    __slots__ = ("_items", "_getter")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._getter: asyncio.Future[None] | None = None

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def put_nowait(self, item: Any) -> None:
        self._items.append(shared_keys(item) if type(item) is dict else item)
        getter = self._getter
        if getter is not None and not getter.done():
            getter.set_result(None)

    async def put(self, item: Any) -> None:
        self.put_nowait(item)

    async def get(self) -> Any:
        while not self._items:
            if self._getter is not None:
                raise RuntimeError("a kopf backlog has one reader at a time")
            getter = self._getter = asyncio.get_running_loop().create_future()
            try:
                await getter
            finally:
                self._getter = None
        return self._items.pop(0)  # in the step that returns: a cancellation cannot drop it


class Pressure:
    """`asyncio.Event`'s set / clear / is_set / wait, its waiters kept only while there are some."""

    __slots__ = ("_value", "_waiters")

    def __init__(self) -> None:
        self._value = False
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if not self._value:
            self._value = True
            for waiter in self._waiters or ():
                if not waiter.done():
                    waiter.set_result(True)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> bool:
        if self._value:
            return True
        waiter = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            self._waiters.remove(waiter)
            if not self._waiters:
                self._waiters = None


_KOPF_STREAM = queueing.Stream


def _light_stream(backlog: Any, pressure: Any) -> Any:
    """kopf's `Stream(backlog=asyncio.Queue(), pressure=asyncio.Event())` with a Backlog and a
    Pressure instead (the two it made for the call are dropped at once)."""
    return _KOPF_STREAM(backlog=Backlog(), pressure=Pressure())


class _NoDaemons(daemons.DaemonsMemory):
    """The `DaemonsMemory` every object shares until it has daemons: empty, and refusing writes
    (a write would reach every object)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_sealed"):
            raise AttributeError(f"the shared empty DaemonsMemory is read-only (setting {name!r})")
        object.__setattr__(self, name, value)


NO_DAEMONS = _NoDaemons(idle_reset_time=0.0, forever_stopped=frozenset(),  # type: ignore[arg-type]
                        running_daemons=MappingProxyType({}))  # type: ignore[arg-type]
NO_DAEMONS._sealed = True  # type: ignore[attr-defined]  # noqa: SLF001

_KOPF_MEMORY_INIT = inventory.ResourceMemory.__init__
_KOPF_SPAWNING = processing.process_spawning_cause


def _memory_init(self: inventory.ResourceMemory, *args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("daemons_memory", NO_DAEMONS)
    _KOPF_MEMORY_INIT(self, *args, **kwargs)


async def _spawning_cause(*, memory: inventory.ResourceMemory, **kwargs: Any) -> Any:
    if memory.daemons_memory is NO_DAEMONS:
        memory.daemons_memory = daemons.DaemonsMemory()
    return await _KOPF_SPAWNING(memory=memory, **kwargs)


def apply() -> None:
    if ToggleSet.wait_for is not _shared_wait_for:
        ToggleSet.wait_for = _shared_wait_for  # type: ignore[method-assign]
    aiotasks.Scheduler.__init__ = _scheduler_init  # type: ignore[method-assign]
    aiotasks.Scheduler._can_spawn = _can_spawn  # type: ignore[method-assign]
    application.apply = _apply
    for owner, name, replacement in _ACYCLIC:
        if owner.__dict__.get(name) is not replacement:
            setattr(owner, name, replacement)
    queueing.Stream = _light_stream  # type: ignore[assignment, misc]
    inventory.ResourceMemory.__init__ = _memory_init  # type: ignore[method-assign]
    processing.process_spawning_cause = _spawning_cause


def applied() -> bool:
    return ToggleSet.wait_for is _shared_wait_for and queueing.Stream is _light_stream and \
        aiotasks.Scheduler.__init__ is _scheduler_init and aiotasks.Scheduler._can_spawn is _can_spawn and \
        application.apply is _apply and \
        inventory.ResourceMemory.__init__ is _memory_init and processing.process_spawning_cause is _spawning_cause and all(
        owner.__dict__.get(name) is replacement for owner, name, replacement in _ACYCLIC)


__all__: list[Any] = ["NO_DAEMONS", "Backlog", "Pressure", "apply", "applied", "shared_keys"]
