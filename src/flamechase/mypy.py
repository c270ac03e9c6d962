"""A mypy plugin: `FlowState.replace(...)` checked against the state's own fields.

    [tool.mypy]
    plugins = ["pydantic.mypy", "flamechase.mypy"]

`replace(**changes)` is checked at run time (flamechase.flow.state); with this plugin mypy also
reads it as taking each field of the state it is called on, by name and with the field's
type, so `state.replace(cuont=1)` or `state.replace(count="1")` is an error before anything
runs. Imported by mypy only; flamechase itself never imports it.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.expandtype import expand_type_by_instance
from mypy.maptype import map_instance_to_supertype
from mypy.nodes import ARG_NAMED_OPT, TypeInfo, Var
from mypy.plugin import MethodSigContext, Plugin
from mypy.types import FunctionLike, Instance, Type, get_proper_type

FLOW_STATE = "flamechase.flow.state.FlowState"
METHODS = ("replace", "__replace__")
# Bases whose attributes are not a state's fields.
NOT_FIELDS = {FLOW_STATE, "pydantic.main.BaseModel", "builtins.object"}


class FlowStatePlugin(Plugin):
    def get_method_signature_hook(
        self, fullname: str
    ) -> Callable[[MethodSigContext], FunctionLike] | None:
        owner, _, method = fullname.rpartition(".")
        if method not in METHODS:
            return None
        found = self.lookup_fully_qualified(owner)
        info = found.node if found is not None else None
        if isinstance(info, TypeInfo) and info.has_base(FLOW_STATE):
            return _replace_signature
        return None


def _replace_signature(ctx: MethodSigContext) -> FunctionLike:
    receiver = get_proper_type(ctx.type)
    if not isinstance(receiver, Instance):
        return ctx.default_signature
    fields = _fields(receiver)
    if fields is None:
        return ctx.default_signature
    return ctx.default_signature.copy_modified(
        arg_types=list(fields.values()),
        arg_kinds=[ARG_NAMED_OPT] * len(fields),
        arg_names=list(fields),
    )


def _fields(receiver: Instance) -> dict[str, Type] | None:
    """Each field of the model (an annotated attribute of its class or a base's, not a
    ClassVar, not private) with its type as seen from `receiver`; None if one is not known
    yet (mypy then checks the call as `**changes: Any`)."""
    out: dict[str, Type] = {}
    for base in reversed(receiver.type.mro):
        if base.fullname in NOT_FIELDS:
            continue
        seen_as = map_instance_to_supertype(receiver, base)
        for name, sym in base.names.items():
            node = sym.node
            if not isinstance(node, Var) or sym.plugin_generated or name.startswith("_"):
                continue
            # A ClassVar or `model_config = ...` is not a field. (Pydantic's plugin marks a
            # frozen model's fields as read-only properties: fields still.)
            if node.is_classvar or node.is_inferred:
                continue
            if node.type is None:
                return None
            out[name] = expand_type_by_instance(node.type, seen_as)
    return out


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point."""
    return FlowStatePlugin
