"""Two fixes to kopf 1.45.2 (pinned), applied when the operator starts.

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
"""

from __future__ import annotations

import asyncio
from typing import Any

from kopf._cogs.aiokits.aiotoggles import ToggleSet
from kopf._cogs.structs import bodies, dicts, patches

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
    await event.wait()


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


def apply() -> None:
    if ToggleSet.wait_for is not _shared_wait_for:
        ToggleSet.wait_for = _shared_wait_for  # type: ignore[method-assign]
    for owner, name, replacement in _ACYCLIC:
        if owner.__dict__.get(name) is not replacement:
            setattr(owner, name, replacement)


def applied() -> bool:
    return ToggleSet.wait_for is _shared_wait_for and all(
        owner.__dict__.get(name) is replacement for owner, name, replacement in _ACYCLIC)


__all__: list[Any] = ["apply", "applied"]
