"""The event machinery: `Event`, `FlowEvent`, `Unknown`, the registry and `parse`.

The engine's kind modules (`run`, `turns`, `lanes`) register their classes here on import, and
`flamechase.events` imports them all; a flow's kinds register when the flow is imported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from flamechase.events.present import Seen, Shown

REGISTRY: dict[str, type[Event]] = {}
_BASE_FIELDS = frozenset({"lane", "actor", "seq", "at"})

EventT = TypeVar("EventT", bound="Event")


def register(cls: type[EventT]) -> type[EventT]:
    """Make `cls` (an Event subclass with a unique `kind`) parseable from stored rows."""
    kind = cls.kind
    if not kind:
        raise ValueError(f"{cls.__qualname__} has no kind")
    have = REGISTRY.get(kind)
    if have is not None and have is not cls:
        raise ValueError(
            f"event kind {kind!r} is registered twice ({have.__qualname__}, {cls.__qualname__})"
        )
    REGISTRY[kind] = cls
    return cls


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """What happened, when (`at`, ISO 8601 UTC), where (`lane`) and who did it (`actor`).

    `seq` and `at` are given by the journal when the event is written; an event built by the
    engine or a flow before that has seq 0.
    """

    kind: ClassVar[str] = ""
    version: ClassVar[int] = 1
    lane: str | None = None
    actor: str | None = None
    seq: int = 0
    at: str = ""

    def payload(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in _BASE_FIELDS
        }

    def row(self) -> dict[str, Any]:
        """The event as stored and as views and `--json` show it."""
        return {
            "seq": self.seq,
            "at": self.at,
            "kind": self.kind,
            "v": self.version,
            "lane": self.lane,
            "actor": self.actor,
            "payload": self.payload(),
        }

    def describe(self) -> str:
        """One human line, without the time: what happened, in the flow's own words."""
        return self.kind.replace("_", " ").capitalize() + "."

    def show(self, seen: Seen) -> Shown:
        """How the views draw this event, given what they have seen so far (the event
        already folded). The default is `describe()`, about nothing in particular; kinds
        that add a mark, a panel row or a score override this (events/present.py)."""
        from flamechase.events.present import Shown

        return Shown(self.describe())


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FlowEvent(Event):
    """Base of the events a flow asks the engine to journal (`Emit`)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Unknown(Event):
    """A stored kind this version does not know; kept so that folds can count it."""

    unknown_kind: str = ""
    data: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": self.at,
            "kind": self.unknown_kind,
            "v": 0,
            "lane": self.lane,
            "actor": self.actor,
            "payload": dict(self.data),
        }

    def describe(self) -> str:
        """The kind in words and its payload's first fields: what is known without its flow."""
        from flamechase.events.present import clip

        fields = [
            f"{k}={clip(v, 40)}"
            for k, v in list(self.data.items())[:4]
            if isinstance(v, str | int | float | bool) or v is None
        ]
        who = " ".join(x for x in (self.lane, self.actor) if x)
        head = (f"{who}: " if who else "") + self.unknown_kind.replace("_", " ")
        return head + (f" ({', '.join(fields)})" if fields else "") + "."


def parse(row: Mapping[str, Any]) -> Event:
    """The event a stored row holds (see the module docstring for what is tolerated)."""
    kind = str(row.get("kind") or "")
    payload = row.get("payload") or {}
    base: dict[str, Any] = {
        "lane": row.get("lane") or None,
        "actor": row.get("actor") or None,
        "seq": int(row.get("seq") or 0),
        "at": str(row.get("at") or ""),
    }
    cls = REGISTRY.get(kind)
    if cls is None:
        return Unknown(unknown_kind=kind, data=dict(payload), **base)
    names = _field_names(cls)
    try:
        return cls(**base, **{k: v for k, v in payload.items() if k in names})
    except TypeError:  # a payload written by hand or by a broken writer
        return Unknown(unknown_kind=kind, data=dict(payload), **base)


_NAMES: dict[type[Event], frozenset[str]] = {}


def _field_names(cls: type[Event]) -> frozenset[str]:
    names = _NAMES.get(cls)
    if names is None:
        names = frozenset(f.name for f in dataclasses.fields(cls)) - _BASE_FIELDS
        _NAMES[cls] = names
    return names
