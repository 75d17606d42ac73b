"""A query document turned, once, into a tree of closures that resolve and complete its fields.

graphql-core's executor re-derives per request and per field what a document already fixes:
which fields a selection set collects on a type, each field's definition, resolver, response key
and return type, how its value completes. A plan derives them once per query text and keeps, per
field, a closure that calls the resolver and completes its value the way graphql-core does
(non-null, lists, objects, leaves through `coerce_output_value`), leaving per request only the
resolver calls themselves and the argument coercion of fields that take arguments.

A plan covers the successful execution of query operations over concrete object types: fields,
arguments, variables, aliases, `__typename`, fragments and inline fragments. Anything else
(mutations, subscriptions, interfaces and unions as return types, introspection, directives) is
not planned (`Unsupported`), and any error while running (a resolver's exception, a null in a
non-null field, a value that does not complete) stops the plan (schema/compiled/run.py), so the
request is answered by graphql-core instead: errors, their paths and formatting are never produced
here, only answers without errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from inspect import isawaitable
from types import CoroutineType
from typing import Any, TypeGuard

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    get_named_type,
    get_operation_ast,
    is_leaf_type,
)
from graphql.execution.values import get_argument_values
from graphql.pyutils import Path, Undefined

from schema.compiled.request import PlanRequest, Stopped
from schema.compiled.strawberry_call import DirectCall, direct_call

# Completes a resolved value: the response value, or an awaitable of it.
Complete = Callable[[Any, PlanRequest, Path], Any]
# Resolves one field of a source object and completes it.
Resolve = Callable[[Any, PlanRequest, Path], Any]


# Values no resolver result of these types can be awaited: checked first, since
# inspect.isawaitable's ABC check is the costliest step of completing a leaf.
_PLAIN = frozenset({str, int, float, bool, type(None), dict, list, tuple, datetime})


def _awaitable(value: Any) -> bool:
    """Whether a resolver's value must be awaited (a coroutine, a DataLoader's future)."""
    return type(value) not in _PLAIN and not isinstance(value, Enum) and isawaitable(value)


def _is_awaitable(value: Any) -> TypeGuard[Awaitable[Any]]:
    """`info.is_awaitable`, as graphql-core gives it."""
    return isawaitable(value)


def _pending(value: Any) -> bool:
    """Whether a completed value is still to be awaited: completions only ever return the
    coroutines of this module's own async functions."""
    return type(value) is CoroutineType


class Unsupported(Exception):
    """A document the plan does not cover: it runs through graphql-core."""


@dataclass(frozen=True)
class QueryPlan:
    """The root fields of one query operation, as (response key, resolve) pairs in order."""

    operation: OperationDefinitionNode
    fragments: dict[str, FragmentDefinitionNode]
    root_type: GraphQLObjectType
    fields: tuple[tuple[str, Resolve], ...]


def build_plan(
    schema: GraphQLSchema, document: DocumentNode, operation_name: str | None
) -> QueryPlan:
    """The plan of a validated document's query operation; raises Unsupported otherwise."""
    operation = get_operation_ast(document, operation_name)
    if operation is None or operation.operation is not OperationType.QUERY:
        raise Unsupported("not a query operation")
    if operation.directives:
        raise Unsupported("directives on the operation")
    root_type = schema.query_type
    if root_type is None:
        raise Unsupported("no query type")
    fragments = {
        definition.name.value: definition
        for definition in document.definitions
        if isinstance(definition, FragmentDefinitionNode)
    }
    builder = _Builder(schema, fragments)
    fields = builder.fields_of(root_type, [operation.selection_set])
    return QueryPlan(operation, fragments, root_type, fields)


class _Builder:
    def __init__(self, schema: GraphQLSchema, fragments: dict[str, FragmentDefinitionNode]):
        self.schema = schema
        self.fragments = fragments

    def collect(
        self,
        object_type: GraphQLObjectType,
        selection_sets: list[SelectionSetNode],
        into: dict[str, list[FieldNode]],
        visited: set[str],
    ) -> None:
        """Fields grouped by response key, in document order, as graphql-core collects them."""
        for selection_set in selection_sets:
            for selection in selection_set.selections:
                if selection.directives:
                    raise Unsupported("directives on a selection")
                if isinstance(selection, FieldNode):
                    key = selection.alias.value if selection.alias else selection.name.value
                    into.setdefault(key, []).append(selection)
                elif isinstance(selection, InlineFragmentNode):
                    if self.applies(selection.type_condition, object_type):
                        self.collect(object_type, [selection.selection_set], into, visited)
                elif isinstance(selection, FragmentSpreadNode):
                    name = selection.name.value
                    if name in visited:
                        continue
                    visited.add(name)
                    fragment = self.fragments.get(name)
                    if fragment is None or fragment.variable_definitions:
                        raise Unsupported("unknown or parametrised fragment")
                    if self.applies(fragment.type_condition, object_type):
                        self.collect(object_type, [fragment.selection_set], into, visited)
                else:  # pragma: no cover - the AST has no other selection
                    raise Unsupported(type(selection).__name__)

    def applies(self, condition: Any, object_type: GraphQLObjectType) -> bool:
        if condition is None:
            return True
        named = self.schema.get_type(condition.name.value)
        if named is object_type:
            return True
        if isinstance(named, GraphQLObjectType) or named is None:
            return False
        return self.schema.is_sub_type(named, object_type)  # type: ignore[arg-type]

    def fields_of(
        self, object_type: GraphQLObjectType, selection_sets: list[SelectionSetNode]
    ) -> tuple[tuple[str, Resolve], ...]:
        grouped: dict[str, list[FieldNode]] = {}
        self.collect(object_type, selection_sets, grouped, set())
        return tuple((key, self.field(object_type, key, nodes)) for key, nodes in grouped.items())

    def field(self, parent: GraphQLObjectType, key: str, nodes: list[FieldNode]) -> Resolve:
        name = nodes[0].name.value
        if name == "__typename":
            typename = parent.name
            charge = _leaf_charge

            def resolve_typename(source: Any, request: PlanRequest, path: Path) -> Any:
                return charge(typename, request)

            return resolve_typename
        if name.startswith("__"):
            raise Unsupported("introspection")
        definition = parent.fields.get(name)
        if definition is None:
            raise Unsupported(f"no field {parent.name}.{name}")
        complete = self.completion(definition.type, nodes)
        call = direct_call(self.schema, definition)
        return _resolver_of(parent, key, definition, nodes, complete, call)

    def completion(self, type_: GraphQLOutputType, nodes: list[FieldNode]) -> Complete:
        if isinstance(type_, GraphQLNonNull):
            if is_leaf_type(type_.of_type):
                return _leaf(type_.of_type, non_null=True)
            return _non_null(self.completion(type_.of_type, nodes))
        if isinstance(type_, GraphQLList):
            return _list(self.completion(type_.of_type, nodes))
        if is_leaf_type(type_):
            return _leaf(type_)
        if isinstance(type_, GraphQLObjectType):
            subsets = [node.selection_set for node in nodes if node.selection_set]
            return _object(type_, self.fields_of(type_, subsets))
        raise Unsupported(f"abstract type {type_}")


def _resolver_of(
    parent: GraphQLObjectType,
    key: str,
    definition: GraphQLField,
    nodes: list[FieldNode],
    complete: Complete,
    call: DirectCall | None = None,
) -> Resolve:
    resolve = definition.resolve
    if resolve is None:
        raise Unsupported("a field without a resolver")  # Strawberry gives every field one
    strawberry_field = (definition.extensions or {}).get("strawberry-definition")
    name = nodes[0].name.value
    parent_name = parent.name
    # A leaf's completion never reads its path: only objects and lists get one.
    needs_path = not is_leaf_type(get_named_type(definition.type))
    if getattr(resolve, "_is_default", False):
        # A basic field of Strawberry (no resolver, no extension): its value is an attribute,
        # read as Strawberry's default resolver reads it, with no info to build.
        default = getattr(strawberry_field, "default_resolver", None)
        python_name = getattr(strawberry_field, "python_name", None)
        nullable = (
            definition.type.of_type
            if isinstance(definition.type, GraphQLNonNull)
            else definition.type
        )
        if default is getattr and isinstance(python_name, str) and is_leaf_type(nullable):
            return _leaf_attribute(python_name, definition.type, complete)
        if default is getattr and isinstance(python_name, str):
            attribute = python_name

            def resolve_attribute(source: Any, request: PlanRequest, path: Path) -> Any:
                value = getattr(source, attribute)
                if needs_path:
                    path = Path(path, key, parent_name)
                if _awaitable(value):
                    return _later(value, complete, request, path)
                return complete(value, request, path)

            return resolve_attribute

        def resolve_basic(source: Any, request: PlanRequest, path: Path) -> Any:
            value = resolve(source, None)
            if needs_path:
                path = Path(path, key, parent_name)
            if _awaitable(value):
                return _later(value, complete, request, path)
            return complete(value, request, path)

        return resolve_basic

    node = nodes[0]
    has_arguments = bool(definition.args)
    return_type = definition.type

    def resolve_field(source: Any, request: PlanRequest, path: Path) -> Any:
        field_path = Path(path, key, parent_name)
        info = GraphQLResolveInfo(
            name,
            nodes,
            return_type,
            parent,
            field_path,
            request.schema,
            request.fragments,
            None,
            request.operation,
            request.variables,
            request.context,
            _is_awaitable,
            None,
            request.helpers,
        )
        arguments = (
            get_argument_values(definition, node, request.variables) if has_arguments else {}
        )
        # Strawberry's resolver without its wrapper when the field allows (see direct_call).
        value = (
            resolve(source, info, **arguments) if call is None else call(source, info, arguments)
        )
        if _awaitable(value):
            return _later(value, complete, request, field_path)
        return complete(value, request, field_path)

    return resolve_field


def _leaf_attribute(attribute: str, type_: GraphQLOutputType, complete: Complete) -> Resolve:
    """An attribute read and completed as a leaf in one step: most fields of a page are these,
    so the common case (a plain value) skips the calls and checks it cannot need."""
    non_null = isinstance(type_, GraphQLNonNull)
    leaf: GraphQLLeafType = get_named_type(type_)  # type: ignore[assignment]
    coerce = leaf.coerce_output_value

    def resolve_leaf(source: Any, request: PlanRequest, path: Path) -> Any:
        value = getattr(source, attribute)
        if value is None:
            if non_null:
                raise Stopped("null in a non-null field")
            return None
        if type(value) not in _PLAIN:  # an awaitable, an error, an enum: the general way
            if _awaitable(value):
                return _later(value, complete, request, path)
            return complete(value, request, path)
        coerced = coerce(value)
        if coerced is Undefined or coerced is None:
            raise Stopped("a leaf that does not serialize")
        budget = request.budget
        if budget is not None:
            budget.spend(coerced)
        return coerced

    return resolve_leaf


async def _later(
    value: Awaitable[Any], complete: Complete, request: PlanRequest, path: Path
) -> Any:
    completed = complete(await value, request, path)
    if _pending(completed):
        return await completed
    return completed


def _leaf_charge(value: Any, request: PlanRequest) -> Any:
    if request.budget is not None:
        request.budget.spend(value)
    return value


def _leaf(type_: GraphQLLeafType, non_null: bool = False) -> Complete:
    coerce = type_.coerce_output_value

    def complete_leaf(value: Any, request: PlanRequest, path: Path) -> Any:
        if value is None:
            if non_null:
                raise Stopped("null in a non-null field")
            return None
        if isinstance(value, Exception):
            raise Stopped("a resolver returned an error")
        coerced = coerce(value)
        if coerced is Undefined or coerced is None:
            raise Stopped("a leaf that does not serialize")
        if request.budget is not None:
            request.budget.spend(coerced)
        return coerced

    return complete_leaf


def _non_null(inner: Complete) -> Complete:
    def complete_non_null(value: Any, request: PlanRequest, path: Path) -> Any:
        completed = inner(value, request, path)
        if completed is None:
            raise Stopped("null in a non-null field")
        if _pending(completed):
            return _checked(completed)
        return completed

    return complete_non_null


def _close(values: Iterable[Any]) -> None:
    """Closes the coroutines of a run that stopped before awaiting them (no warning that they
    were never awaited, no resolver started for nothing)."""
    for value in values:
        if _pending(value):
            value.close()


async def _checked(completed: Awaitable[Any]) -> Any:
    value = await completed
    if value is None:
        raise Stopped("null in a non-null field")
    return value


def _list(item: Complete) -> Complete:
    def complete_list(value: Any, request: PlanRequest, path: Path) -> Any:
        if value is None:
            return None
        if isinstance(value, Exception):
            raise Stopped("a resolver returned an error")
        if isinstance(value, str | bytes | dict) or not hasattr(value, "__iter__"):
            raise Stopped("a list field whose value is no list")
        results: list[Any] = []
        try:
            for index, element in enumerate(value):
                results.append(item(element, request, Path(path, index, None)))
        except Exception:
            _close(results)
            raise
        pending = [index for index, result in enumerate(results) if _pending(result)]
        if not pending:
            return results
        return _gathered(results, pending, request)

    return complete_list


async def _gathered(results: list[Any], pending: list[int], request: PlanRequest) -> list[Any]:
    # Together, as graphql-core does, so the DataLoader loads of all the items batch.
    values = await request.gather(*(results[index] for index in pending))
    for index, value in zip(pending, values, strict=True):
        results[index] = value
    return results


def _object(type_: GraphQLObjectType, fields: tuple[tuple[str, Resolve], ...]) -> Complete:
    is_type_of = type_.is_type_of

    def complete_object(value: Any, request: PlanRequest, path: Path) -> Any:
        if value is None:
            return None
        if isinstance(value, Exception):
            raise Stopped("a resolver returned an error")
        if is_type_of is not None:
            matches = is_type_of(value, None)  # type: ignore[arg-type]
            if matches is not True:
                raise Stopped("a value of another type")
        return execute_fields(fields, value, request, path)

    return complete_object


def execute_fields(
    fields: tuple[tuple[str, Resolve], ...], source: Any, request: PlanRequest, path: Path | None
) -> Any:
    """The response object of `fields` on `source`, or an awaitable of it."""
    result: dict[str, Any] = {}
    pending: list[str] = []
    try:
        for key, resolve in fields:
            value = resolve(source, request, path)  # type: ignore[arg-type]
            result[key] = value
            if _pending(value):
                pending.append(key)
    except Exception:
        _close(result.values())
        raise
    if not pending:
        return result
    return _filled(result, pending, request)


async def _filled(result: dict[str, Any], pending: list[str], request: PlanRequest) -> Any:
    if len(pending) == 1:
        result[pending[0]] = await result[pending[0]]
        return result
    values = await request.gather(*(result[key] for key in pending))
    result.update(zip(pending, values, strict=True))
    return result
