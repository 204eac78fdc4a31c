"""A fast `replace` for frozen dataclasses (dataclasses.replace is ~10x slower).

The fold runs once per event on every read, so this is the engine's hottest path. The
state classes (Hand, Table, Trick) keep their fields in an instance `__dict__`: a copy is
one C-level dict copy instead of one `__setattr__` call per field. Slotted classes get a
per-class copier generated once from the field list, like collections.namedtuple.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")
_COPIERS: dict[type, Any] = {}
_MISSING = object()
_new = object.__new__
_setattr = object.__setattr__


def _copier(cls: type) -> Any:
    names = [f.name for f in fields(cls)]
    params = ", ".join(f"{n}=_M" for n in names)
    body = "".join(f"    _set(new, {n!r}, o.{n} if {n} is _M else {n})\n" for n in names)
    src = f"def copy(o, *, {params}):\n    new = _new(_cls)\n{body}    return new\n"
    scope: dict[str, Any] = {"_M": _MISSING, "_set": _setattr, "_new": _new, "_cls": cls}
    exec(src, scope)  # noqa: S102 - generated from the dataclass's own field names
    return scope["copy"]


def _dict_copier(cls: type) -> Any:
    known = frozenset(f.name for f in fields(cls))

    def copy(o: Any, **changes: Any) -> Any:
        if not known.issuperset(changes):
            raise TypeError(f"{cls.__name__} has no field(s) {sorted(set(changes) - known)}")
        return build(cls, o.__dict__ | changes)

    return copy


def build(cls: type[T], values: dict[str, Any]) -> T:
    """A frozen, dict-backed instance of `cls` holding exactly `values` (no __init__ runs)."""
    new = _new(cls)
    _setattr(new, "__dict__", values)
    return new


def replace(obj: T, **changes: Any) -> T:
    """A copy of `obj` with `changes`; no __init__ or __post_init__ runs."""
    cls = type(obj)
    fn = _COPIERS.get(cls)
    if fn is None:
        fn = _COPIERS[cls] = _dict_copier(cls) if hasattr(obj, "__dict__") else _copier(cls)
    return fn(obj, **changes)
