"""`@frozen` (kafkaops/frozen.py): a frozen slots dataclass whose __init__ sets fields through their
slots, generated at the class's first instantiation. Its __init__ must say exactly what
dataclasses' own would: the same parameters, defaults, factories, __post_init__, and the same
objects built."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from dataclasses import InitVar, field

import pytest

import kafkaops
from kafkaops.frozen import DATACLASS_INIT, frozen, slot_init


def _package_classes() -> list[type]:
    found = []
    for module in pkgutil.walk_packages(kafkaops.__path__, "kafkaops."):
        if module.name.endswith("__main__"):
            continue
        loaded = importlib.import_module(module.name)
        found += [value for value in vars(loaded).values()
                  if isinstance(value, type) and value.__module__ == loaded.__name__ and DATACLASS_INIT in vars(value)]
    return found


def _parameters(init) -> list[tuple[str, object, object]]:
    out = []
    for p in inspect.signature(init).parameters.values():
        default = p.default
        if default is not inspect.Parameter.empty and (default is dataclasses.MISSING or repr(default) == "<factory>"):
            default = "<factory>"  # dataclasses' sentinel and ours both mean: call the field's factory
        out.append((p.name, p.kind, default))
    return out


PACKAGE_CLASSES = _package_classes()


def test_the_package_builds_its_records_with_the_slot_init():
    by_name = {c.__qualname__: c for c in PACKAGE_CLASSES}
    # the per-resource objects of a plan, an apply, a wait and an outcome (issue 17's apply row)
    hot = ["ResourcePlan", "FieldChange", "CreateTopic", "StepResult", "Applied", "TopicReady", "Outcome",
           "NewTopic", "ItemResult", "TopicInfo", "PartitionInfo", "Source"]
    assert set(hot) <= set(by_name)
    assert all(slot_init(by_name[name]) is not None for name in hot)
    assert len(PACKAGE_CLASSES) >= 100


@pytest.mark.parametrize("cls", PACKAGE_CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_package_class_takes_what_dataclasses_would(cls):
    expected = _parameters(getattr(cls, DATACLASS_INIT))
    init = slot_init(cls)
    if init is not None:
        assert _parameters(init) == expected
    assert _parameters(cls.__init__) == expected  # before its first use too (inspect follows __wrapped__)


def test_the_first_instance_installs_the_slot_init():
    ours, theirs = _twins({"__annotations__": {"a": "int", "b": "int"}, "b": 2})
    stub = ours.__init__
    assert ours(1) == ours(1, 2) and _values(ours(1)) == _values(theirs(1))
    assert ours.__init__ is not stub and ours.__init__ is not getattr(ours, DATACLASS_INIT)
    assert not hasattr(ours.__init__, "__wrapped__")  # the generated one, installed once
    installed = ours.__init__
    ours(3, 4)
    assert ours.__init__ is installed


# --- behaviour, against dataclasses' own class of the same fields ----------------------------------


def _twins(body: dict, bases: tuple = (), **options):
    """The same class made by @frozen and by @dataclass(frozen=True, slots=True)."""
    ours = frozen(**options)(type("Record", bases, dict(body)))
    theirs = dataclasses.dataclass(frozen=True, slots=True, **options)(type("Record", bases, dict(body)))
    return ours, theirs


def _values(obj) -> dict:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def test_defaults_and_factories_as_dataclasses_gives_them():
    body = {"__annotations__": {"name": "str", "count": "int", "tags": "list", "note": "str | None"},
            "count": 3, "tags": field(default_factory=list), "note": None}
    ours, theirs = _twins(body)
    for args, kwargs in [(("a",), {}), (("a", 5), {}), (("a",), {"tags": ["x"], "note": "n"}), ((), {"name": "b", "count": 0})]:
        assert _values(ours(*args, **kwargs)) == _values(theirs(*args, **kwargs))
    first, second = ours("a"), ours("a")
    assert first.tags == [] and first.tags is not second.tags  # a fresh list each time, as a factory gives
    with pytest.raises(TypeError):
        ours()  # the name has no default
    with pytest.raises(TypeError):
        ours("a", 1, [], None, "one too many")


def test_post_init_and_fields_not_taken_by_init():
    def post(self):
        object.__setattr__(self, "derived", self.value * 2)

    body = {"__annotations__": {"value": "int", "derived": "int", "seen": "list", "flag": "bool"},
            "derived": field(init=False), "seen": field(init=False, default_factory=list),
            "flag": field(init=False, default=True), "__post_init__": post}
    ours, theirs = _twins(body)
    assert _values(ours(4)) == _values(theirs(4)) == {"value": 4, "derived": 8, "seen": [], "flag": True}
    with pytest.raises(TypeError):
        ours(4, 8)  # derived is not a parameter


def test_keyword_only_fields():
    body = {"__annotations__": {"a": "int", "b": "int", "c": "int"}, "b": field(kw_only=True), "c": field(default=1, kw_only=True)}
    ours, theirs = _twins(body)
    assert _parameters(ours.__init__) == _parameters(theirs.__init__)
    assert _values(ours(1, b=2)) == _values(theirs(1, b=2))
    with pytest.raises(TypeError):
        ours(1, 2)


def test_frozen_equal_hashable_ordered_picklable_replaceable():
    body = {"__annotations__": {"a": "int", "b": "str"}, "b": "x"}
    ours, theirs = _twins(body, order=True)
    one = ours(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.a = 2  # type: ignore[misc]
    assert one == ours(1, "x") and hash(one) == hash(ours(1, "x")) and one < ours(2)
    assert repr(one) == repr(theirs(1)) == "Record(a=1, b='x')"
    assert dataclasses.replace(one, b="y") == ours(1, "y")
    assert not hasattr(one, "__dict__")


def test_pickles_through_a_module_class():
    from kafkaops.reconcile.actions import Action, FieldChange, ResourcePlan
    from kafkaops.resources.documents import Source

    plan = ResourcePlan(Source("a.yaml", 1, "KafkaTopic", None, "t"), "KafkaTopic", "t", Action.CREATE,
                        (FieldChange("config.x", None, "secret", True),), owner="topic/t")
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert plan.changes[0].new == "(sensitive)"  # FieldChange's __post_init__ ran
    assert plan.problem is None and plan.owned_keys is None


def test_what_it_cannot_match_keeps_the_dataclass_init():
    body = {"__annotations__": {"a": "int", "scale": "InitVar[int]"}, "__post_init__": lambda self, scale: None}
    with_initvar = frozen(type("WithInitVar", (), dict(body, __annotations__={"a": int, "scale": InitVar[int]})))
    assert slot_init(with_initvar) is None
    assert with_initvar(1, 2).a == 1
    assert with_initvar.__init__ is getattr(with_initvar, DATACLASS_INIT)

    base = frozen(type("Base", (), {"__annotations__": {"a": int}}))
    child = frozen(type("Child", (base,), {"__annotations__": {"b": int}}))
    assert slot_init(child) is None  # `a`'s slot is the base's
    assert _values(child(1, 2)) == {"a": 1, "b": 2}
    assert child.__init__ is getattr(child, DATACLASS_INIT)


def test_the_package_declares_frozen_slots_dataclasses_one_way():
    """One idiom (docs/architecture.md, "`@frozen`"): a frozen dataclass with slots is `@frozen`."""
    import re
    from pathlib import Path

    root = Path(kafkaops.__file__).parent
    pattern = re.compile(r"dataclass\((?=[^)]*frozen=True)(?=[^)]*slots=True)[^)]*\)")
    found = [f"{path.relative_to(root)}:{n}" for path in sorted(root.rglob("*.py")) if path.name != "frozen.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if line.lstrip().startswith("@") and pattern.search(line)]
    assert found == [], f"declare these @frozen (kafkaops.frozen): {found}"
