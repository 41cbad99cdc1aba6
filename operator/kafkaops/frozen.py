"""`@frozen`: a frozen dataclass with slots whose `__init__` sets each field through its slot.

    @frozen
    class Outcome:
        source: Source
        state: State
        notes: tuple[str, ...] = ()

It is `@dataclass(frozen=True, slots=True)` (same fields, defaults, factories, `__post_init__`,
equality, hashing, repr, `replace`, pickling, FrozenInstanceError on assignment), with one change:
the generated `__init__` stores each argument with its slot's own setter instead of
`object.__setattr__(self, name, value)`, which looks the attribute up again for every field. A
first apply of 5,000 topics builds ~20 of these objects per topic (the plan, the step results,
the wait, the outcome); with this `__init__` a 9-field `ResourcePlan` is built in 0.72 µs instead
of 1.17 (docs/benchmarks.md, "`@frozen`"; docs/architecture.md, "`@frozen`").

The `__init__` is generated at the class's first instantiation, not at import (a command's
start-up would pay for every class it imports). Where it cannot say the same thing as
dataclasses' own (an `InitVar`, a field whose slot is not the class's own), the class keeps
dataclasses' `__init__`: the decorator changes speed, never meaning. tests/unit/test_frozen.py
holds every `@frozen` class in the package to the signature dataclasses would give it.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T", bound=type)

# The class's own `__init__` as dataclasses made it (tests compare the two signatures).
DATACLASS_INIT = "__dataclass_init__"


@overload
def frozen(cls: T, /) -> T: ...
@overload
def frozen(*, eq: bool = True, order: bool = False) -> Callable[[T], T]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: Any = None, /, *, eq: bool = True, order: bool = False) -> Any:
    def wrap(c: T) -> T:
        made = dataclasses.dataclass(c, frozen=True, slots=True, eq=eq, order=order)
        setattr(made, DATACLASS_INIT, made.__init__)
        made.__init__ = _first_init(made)  # type: ignore[misc]
        return made

    return wrap if cls is None else wrap(cls)


def _first_init(cls: type) -> Callable[..., None]:
    """An `__init__` that makes the class's slot `__init__` at its first call, installs it and
    runs it. Generating one costs ~80 µs (it is compiled, as dataclasses' own is): at import, the
    CLI's 116 classes would add 9 ms to every command's start-up, though a run builds objects of
    far fewer of them."""
    dataclass_init = getattr(cls, DATACLASS_INIT)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = slot_init(cls) or dataclass_init
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__wrapped__ = dataclass_init  # type: ignore[attr-defined]  # inspect.signature: the fields
    return __init__


def slot_init(cls: type) -> Callable[..., None] | None:
    """An `__init__` for dataclass `cls` (frozen, with slots) that sets fields through their slot
    descriptors; None when it could not match dataclasses' own."""
    # dataclasses marks an InitVar pseudo-field privately; were the mark gone, every class keeps its own
    initvar = getattr(dataclasses, "_FIELD_INITVAR", None)
    fields = getattr(cls, "__dataclass_fields__", {})
    if initvar is None or any(getattr(f, "_field_type", None) is initvar for f in fields.values()):
        return None
    namespace: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    params: list[str] = []
    keyword_only: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):
        slot = cls.__dict__.get(f.name)
        if not isinstance(slot, types.MemberDescriptorType):
            return None  # an inherited field: its slot is another class's
        namespace[f"_set_{f.name}"] = slot.__set__
        has_factory = f.default_factory is not dataclasses.MISSING
        if has_factory:
            namespace[f"_make_{f.name}"] = f.default_factory
        if not f.init:
            if has_factory:
                body.append(f"_set_{f.name}(self, _make_{f.name}())")
            elif f.default is not dataclasses.MISSING:
                namespace[f"_default_{f.name}"] = f.default
                body.append(f"_set_{f.name}(self, _default_{f.name})")
            continue  # no default: left for __post_init__, as dataclasses does
        if has_factory:
            param = f"{f.name}=_MISSING"
            body.append(f"_set_{f.name}(self, _make_{f.name}() if {f.name} is _MISSING else {f.name})")
        else:
            if f.default is not dataclasses.MISSING:
                namespace[f"_default_{f.name}"] = f.default
                param = f"{f.name}=_default_{f.name}"
            else:
                param = f.name
            body.append(f"_set_{f.name}(self, {f.name})")
        (keyword_only if f.kw_only else params).append(param)
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    signature = ", ".join(["self", *params, *(["*", *keyword_only] if keyword_only else [])])
    source = f"def __init__({signature}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    exec(source, namespace)  # noqa: S102 - generated from the class's own field names, as dataclasses does
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init
