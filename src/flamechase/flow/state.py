"""Typed flow state: a frozen model whose updates are checked where they are made.

`model_copy(update={...})` checks neither names nor values: a misspelled key is dropped
without a word and a wrong value is stored, to surface (if ever) events later, or only when
a resumed run reads the state back. `FlowState.replace(name=value, ...)` refuses both at once,
with the field named, and validates only the values it is given (the rest are valid
already), so it is cheap enough for every event. `flamechase.mypy` (a mypy plugin) checks the
same names and types before anything runs.
"""

from __future__ import annotations

import difflib
import operator
import typing
from collections.abc import Callable
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

__all__ = ["FlowState", "FlowStateError"]


class FlowStateError(ValueError):
    """A state update named a field the state does not have, or gave a value its field
    refuses: a bug in the flow's code, raised where it is made."""


class FlowState(BaseModel):
    """Base of a flow's state and of the models inside it: frozen, no unknown fields (at
    construction too), updated with `replace`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes`. Each name must be a field, and each value is validated
        strictly against it (its type and constraints, no coercion: `"3"` is not an int, a
        list is not a tuple); anything else raises `FlowStateError`. Only the values given
        are validated, each as deep as it goes (a dict of models: every model), except a
        tuple grown by appending, whose old items were validated when they went in."""
        cls = type(self)
        checks = _CHECKS.get(cls) or _checks_of(cls)
        valid: dict[str, Any] = {}
        for name, value in changes.items():
            check = checks.get(name)
            if check is None:
                raise FlowStateError(_unknown(cls, name))
            if check is _by_model:
                return _assigned(self, changes)
            try:
                valid[name] = check(value, self.__dict__[name])
            except ValidationError as exc:
                raise FlowStateError(_refused(cls, name, value, exc)) from None
        return self.model_copy(update=valid)

    # `copy.replace(state, ...)` (Python 3.13) is the same checked update.
    __replace__ = replace


Check = Callable[[Any, Any], Any]  # (new value, old value) -> the value validated


def _by_model(value: Any, old: Any) -> Any:
    """Marks a field that only the model's own validation can check (see `_checks_of`)."""
    return value


# Per state class: field name -> the field's own strict validator (its type and constraints),
# built at the first update. A class with validators of its own (field or model validators)
# has every update validated as an assignment by the model instead, so that they run.
_CHECKS: dict[type[BaseModel], dict[str, Check]] = {}


def _checks_of(cls: type[BaseModel]) -> dict[str, Check]:
    d = cls.__pydantic_decorators__
    own = d.field_validators or d.model_validators or d.validators or d.root_validators
    fields = cls.__pydantic_fields__
    checks = {name: _by_model if own else _check(f) for name, f in fields.items()}
    _CHECKS[cls] = checks
    return checks


def _check(field: FieldInfo) -> Check:
    try:
        shape: Any = Annotated[field.annotation, field]  # a type made at run time
        validate = TypeAdapter(shape).validator.validate_python
    except Exception:  # a type only the model's own config admits (arbitrary types)
        return _by_model
    args = typing.get_args(field.annotation)
    if typing.get_origin(field.annotation) is tuple and args[1:] == (...,) and not field.metadata:
        return _appended_check(validate)

    def check(value: Any, old: Any) -> Any:
        return old if value is old else validate(value, strict=True)

    return check


def _appended_check(validate: Callable[..., Any]) -> Check:
    """A `tuple[X, ...]` grown by appending (`(*state.items, item)`) has only its new items
    validated: the old ones, the same objects, were when they went in. A history a run keeps
    this way (candidates, rounds) is not validated again at each update."""

    def check(value: Any, old: Any) -> Any:
        if (
            type(value) is tuple
            and type(old) is tuple
            and len(value) >= len(old)
            and all(map(operator.is_, old, value))
        ):
            try:
                return old + validate(value[len(old) :], strict=True)
            except ValidationError:
                pass  # validated whole below, so that the error says where in it
        return validate(value, strict=True)

    return check


_S = typing.TypeVar("_S", bound=FlowState)


def _assigned(state: _S, changes: dict[str, Any]) -> _S:
    """`changes` validated by the model, as assignments to a copy (its validators run)."""
    cls = type(state)
    new = state.model_copy()
    for name, value in changes.items():
        if name not in cls.__pydantic_fields__:
            raise FlowStateError(_unknown(cls, name))
        try:
            cls.__pydantic_validator__.validate_assignment(new, name, value, strict=True)
        except ValidationError as exc:
            raise FlowStateError(_refused(cls, name, value, exc)) from None
    return new


def _unknown(cls: type[BaseModel], name: str) -> str:
    fields = list(cls.__pydantic_fields__)
    near = difflib.get_close_matches(name, fields, n=1)
    hint = f"did you mean {near[0]!r}?" if near else "its fields: " + ", ".join(fields)
    return f"{cls.__qualname__} has no field {name!r} ({hint})"


def _refused(cls: type[BaseModel], name: str, value: Any, exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    loc = [str(p) for p in first["loc"]]
    where = "".join(f"[{p}]" for p in (loc[1:] if loc[:1] == [name] else loc))
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return (
        f"{cls.__qualname__}.{name}{where} refuses {type(value).__name__} {shown}: {first['msg']}"
    )
