"""A Strawberry field's resolver called the way Strawberry's own wrapper calls it, without the
wrapper's layers, for the query plans (schema/compiled/plan.py).

Strawberry wraps every resolver in a chain built for features a field may use: field extensions
(permission classes are one), exception handlers, and an async shell awaiting whatever the
resolver returns. For a field with none of them, the chain comes down to: wrap graphql-core's
`info` in Strawberry's `Info`, convert the arguments (`get_arguments`: Python names, input
types, enums; `self`, `root`, `info` given to the resolvers that ask for them), and call the
resolver. That is what `direct_call` does, once per field of a request instead of through five
frames; a field with an extension or a handler keeps Strawberry's own chain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import GraphQLField, GraphQLResolveInfo, GraphQLSchema
from strawberry.schema.schema_converter import get_arguments
from strawberry.types.base import StrawberryOptional
from strawberry.types.field import StrawberryField

# The call: (source, graphql-core's info, the arguments by GraphQL name) -> the resolver's value.
DirectCall = Callable[[Any, GraphQLResolveInfo[Any], dict[str, Any]], Any]

# Argument types whose value Strawberry passes on as graphql-core coerced it (`convert_argument`
# returns a leaf's value unchanged, GlobalID aside): only a rename to the Python name is left.
_PLAIN_ARGUMENT_TYPES: frozenset[object] = frozenset({str, int, float, bool})
_STRAWBERRY_WRAPPERS = frozenset({"_resolver", "_async_resolver"})


def direct_call(schema: GraphQLSchema, definition: GraphQLField) -> DirectCall | None:
    """The direct call of `definition`'s resolver, or None when the field is not a Strawberry
    field with a resolver of its own and without field extensions or exception handlers."""
    strawberry_schema = getattr(schema, "_strawberry_schema", None)
    field = (definition.extensions or {}).get("strawberry-definition")
    resolve = definition.resolve
    if (
        strawberry_schema is None
        or not isinstance(field, StrawberryField)
        or field.base_resolver is None
        or field.extensions
        or getattr(resolve, "__module__", None) != "strawberry.schema.schema_converter"
        or getattr(resolve, "__name__", None) not in _STRAWBERRY_WRAPPERS
    ):
        return None
    converter = strawberry_schema.schema_converter
    handlers_of = getattr(converter, "_get_field_exception_handlers", None)
    if handlers_of is None or handlers_of(field):
        return None
    config = strawberry_schema.config
    registry = converter.scalar_registry
    info_class = config.info_class
    resolver = field.base_resolver
    renames = _plain_arguments(field, config)
    if renames is None:

        def call_converting(
            source: Any, info: GraphQLResolveInfo[Any], arguments: dict[str, Any]
        ) -> Any:
            strawberry_info = info_class(_raw_info=info, _field=field)
            args, kwargs = get_arguments(
                field=field,
                source=source,
                info=strawberry_info,
                kwargs=arguments,
                config=config,
                scalar_registry=registry,
            )
            return field.get_result(source, info=strawberry_info, args=args, kwargs=kwargs)

        return call_converting

    # The parameters Strawberry fills itself, as get_arguments fills them.
    wants_self = resolver.self_parameter is not None
    given_source = [
        parameter.name
        for parameter in (resolver.parent_parameter, resolver.root_parameter)
        if parameter is not None
    ]
    info_name = resolver.info_parameter.name if resolver.info_parameter is not None else None

    def call(source: Any, info: GraphQLResolveInfo[Any], arguments: dict[str, Any]) -> Any:
        kwargs = {python: arguments[name] for name, python in renames if name in arguments}
        for parameter in given_source:
            kwargs[parameter] = source
        if info_name is not None:
            kwargs[info_name] = info_class(_raw_info=info, _field=field)
        if wants_self:
            return resolver(source, **kwargs)
        return resolver(**kwargs)

    return call


def _plain_arguments(field: StrawberryField, config: Any) -> list[tuple[str, str]] | None:
    """(GraphQL name, Python name) of each argument when none needs converting (plain scalars,
    optional or not), else None."""
    renames: list[tuple[str, str]] = []
    for argument in field.arguments:
        type_ = argument.type
        if isinstance(type_, StrawberryOptional) and type(type_) is StrawberryOptional:
            type_ = type_.of_type
        if not _is_plain(type_) or argument.python_name is None:
            return None
        renames.append((config.name_converter.from_argument(argument), argument.python_name))
    return renames


def _is_plain(type_: object) -> bool:
    # strawberry.ID is a NewType of str: its values pass through like a str's.
    return type_ in _PLAIN_ARGUMENT_TYPES or getattr(type_, "__supertype__", None) is str
