"""What a query may cost before it runs: a static estimate of the work and response size.

Depth, alias and token limits bound the shape of a query, not what it returns: 30 aliases of
`document { canonicalText }` are a shallow query of 30 fields that returned 282 MB. The cost
counts every selected field once per row it can return (a page's `first` multiplies what is
selected under it, and a list of ids given a `first` counts its ids; other lists count as
LIST_ROWS rows) and weighs the fields that can hold a large text by how large they can be (a
message's text by DIGESTD_MAX_MESSAGE_CHARS), and the fields that run a statement of their own
for every row of the list around them (nested connections, counts) by STATEMENT_COST. Variables
are known, so `first: $n` counts as its value.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping
from functools import lru_cache
from typing import Any, Final

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    InlineFragmentNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    value_from_ast_untyped,
)

from schema.types.input_values import variables_in

MAX_QUERY_COST = 20_000
# Rows assumed for a list that has no `first` (the items of one digest, a document's digests).
LIST_ROWS = 10
MAX_PAGE_SIZE = 100
# Rows counted for a bounded list whose `first` is not a number (its largest maximum).
MAX_BOUNDED_ROWS = 1000
# Rows counted for a connection asked for without first or last: the largest default page size.
DEFAULT_PAGE_ROWS = 50

# One unit of cost is an ordinary field, or this many characters of a field that can hold a
# longer text: a text field weighs what its longest value can hold.
CHARS_PER_COST = 4_000
# Fields holding a message's text or one revision of it: up to DIGESTD_MAX_MESSAGE_CHARS each
# (200,000 by default: 50 units). Nine aliases of `messages(first: 100) { nodes { text
# normalizedText } }` (351 MB of text at 195,000 characters a message) cost 90,909.
MESSAGE_TEXT_FIELDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("Message", "text"),
        ("Message", "normalizedText"),
        ("Pointer", "revisionText"),
        ("Citation", "revisionText"),
        ("ReportSource", "revisionText"),
    }
)
# Other large texts, by (type, field). A document's canonical text can be 10 MB: a query may ask
# for at most 3 of them. A stored payload is weighed as 10 ordinary fields.
# A statement: what one more SQL statement per row of the list around it weighs. A field that
# batches (a DataLoader: one statement for the whole page) is an ordinary field; a list nested
# in each row of a page (a channel's digests, tracked items, ...: schema/types/channel.py) runs
# its own page query per row, and a `totalCount` or `totalCountEstimate` its own count per
# connection. Weighing them as statements bounds how many a query can make run: 20 aliases of
# `digests(first: 1) { totalCount }` under `channels(first: 100)` (4,000 statements) cost
# 100,100, while a page of 20 channels with 10 tracked items each (3 fields) costs 1,341.
STATEMENT_COST = 25
PER_ROW_STATEMENT_FIELDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("Channel", "digests"),
        ("Channel", "trackedItems"),
        ("Channel", "conversations"),
        ("Channel", "schedules"),
        ("Channel", "entities"),
    }
)
COUNT_FIELDS = frozenset({"totalCount", "totalCountEstimate"})
FIXED_WEIGHTS: Mapping[tuple[str, str], int] = {
    ("Document", "canonicalText"): 5_000,
    ("DocumentDigest", "payload"): 10,
    **dict.fromkeys(PER_ROW_STATEMENT_FIELDS, STATEMENT_COST),
}
DEFAULT_MAX_MESSAGE_CHARS = 200_000


@lru_cache(maxsize=8)
def field_weights(
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
) -> Mapping[tuple[str, str], int]:
    """Every weighed field's weight, a message text's from the largest message allowed."""
    message_text = max(1, -(-max_message_chars // CHARS_PER_COST))
    return {**FIXED_WEIGHTS, **dict.fromkeys(MESSAGE_TEXT_FIELDS, message_text)}


class _Estimator:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        weights: Mapping[tuple[str, str], int],
    ) -> None:
        self.schema = schema
        self.weights = weights
        self.fragments = fragments
        self.variables = variables
        # A fragment costs the same wherever it is spread: remembered, so a fragment spread
        # twice in a fragment spread twice in ... is counted in linear time.
        self.fragment_costs: dict[str, int] = {}
        # The variables the estimate read (which depends on the text alone, not on the values).
        self.read: set[str] = set()

    def selection_set(
        self,
        parent: GraphQLNamedType | None,
        selections: SelectionSetNode,
        visiting: frozenset[str],
    ) -> int:
        total = 0
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                total += self.field(parent, selection, visiting)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                target = self.schema.get_type(condition.name.value) if condition else parent
                total += self.selection_set(target, selection.selection_set, visiting)
            elif isinstance(selection, FragmentSpreadNode):
                total += self.fragment(selection.name.value, visiting)
        return total

    def fragment(self, name: str, visiting: frozenset[str]) -> int:
        if name in self.fragment_costs:
            return self.fragment_costs[name]
        definition = self.fragments.get(name)
        if definition is None or name in visiting:  # unknown or cyclic: validation refuses it
            return 0
        target = self.schema.get_type(definition.type_condition.name.value)
        cost = self.selection_set(target, definition.selection_set, visiting | {name})
        self.fragment_costs[name] = cost
        return cost

    def field(
        self, parent: GraphQLNamedType | None, node: FieldNode, visiting: frozenset[str]
    ) -> int:
        name = node.name.value
        fields: dict[str, Any] | None = (
            parent.fields if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) else None
        )
        definition = fields.get(name) if fields else None
        if fields is None or definition is None:  # __typename, introspection, or a refused field
            return 1
        own = self.weights.get((parent.name, name), 1) if parent is not None else 1
        if name in COUNT_FIELDS and "pageInfo" in fields:  # a connection's count: a statement
            own = max(own, STATEMENT_COST)
        if node.selection_set is None:
            # A list of scalars given a `first` (a bounded list of ids) weighs each of its rows.
            bounded = "first" in definition.args
            return (
                own * self.rows(fields, node, definition.type, definition.args) if bounded else own
            )
        below = self.selection_set(get_named_type(definition.type), node.selection_set, visiting)
        return own + self.rows(fields, node, definition.type, definition.args) * below

    def rows(
        self,
        siblings: Mapping[str, Any],
        node: FieldNode,
        output: GraphQLOutputType,
        args: Mapping[str, Any],
    ) -> int:
        """How many rows the field can return: its `first` or `last` (the argument's default if
        it has neither, else DEFAULT_PAGE_ROWS), the length of `nodes(ids:)`, or LIST_ROWS for a
        plain list. The `edges` and `nodes` of a connection are the page its `first`/`last`
        already counted."""
        if "pageInfo" in siblings:
            return 1
        if "first" in args or "last" in args:
            sizes = [self.argument(node, name) for name in ("first", "last")]
            given = [size for size in sizes if size is not None]
            if not given:
                defaults = [args[name].default_value for name in ("first", "last") if name in args]
                default = next((d for d in defaults if isinstance(d, int) and d > 0), None)
                return default if default is not None else DEFAULT_PAGE_ROWS
            # A page's size over MAX_PAGE_SIZE is refused when it runs (PAGE_SIZE); a bounded list
            # (schema/gate/bounded_lists.py) may be longer, up to its own maximum.
            named = get_named_type(output)
            is_page = isinstance(named, GraphQLObjectType) and "pageInfo" in named.fields
            if all(isinstance(size, int) and not isinstance(size, bool) for size in given):
                asked = max(1, int(max(given)))
                return min(asked, MAX_PAGE_SIZE) if is_page else asked
            return MAX_PAGE_SIZE if is_page else MAX_BOUNDED_ROWS
        if "ids" in args:
            ids = self.argument(node, "ids")
            return len(ids) if isinstance(ids, list) else MAX_PAGE_SIZE
        unwrapped = output.of_type if isinstance(output, GraphQLNonNull) else output
        return LIST_ROWS if isinstance(unwrapped, GraphQLList) else 1

    def argument(self, node: FieldNode, name: str) -> Any:
        """The argument's value where the query or its variables give it, else None."""
        for argument in node.arguments or ():
            if argument.name.value != name:
                continue
            if isinstance(argument.value, VariableNode):
                self.read.add(argument.value.name.value)
                return self.variables.get(argument.value.name.value)
            self.read |= variables_in(argument.value)
            return value_from_ast_untyped(argument.value, dict(self.variables))
        return None


def query_cost(
    schema: GraphQLSchema,
    root: GraphQLObjectType,
    selections: SelectionSetNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
    weights: Mapping[tuple[str, str], int] | None = None,
) -> int:
    """The estimated cost of the operation whose root selections are given (`weights`: those of
    field_weights() with the largest message allowed; the default's when not given)."""
    estimator = _Estimator(
        schema, fragments, variables, weights if weights is not None else field_weights()
    )
    return estimator.selection_set(root, selections, frozenset())


# Distinct texts whose costs are remembered, and values of their variables per text.
COST_CACHE_SIZE: Final = 256
COSTS_PER_TEXT: Final = 16
# Values of the variables a cost may be remembered by: hashable, and compared with their type
# (True == 1 in Python, but `first: true` is not `first: 1` to the estimate).
_KEY_TYPES = frozenset({int, float, str, bool, type(None)})


class QueryCosts:
    """Costs remembered per query text. An estimate depends on the text (with the schema and
    the weights) and on the values of the variables it read, a page's `first: $n`, nothing
    else: so a text asked again with the same values of those (a poll's `job(id: $id)` reads
    none) costs what it cost the first time, and is not walked again."""

    def __init__(self, size: int = COST_CACHE_SIZE) -> None:
        self.size = size
        self._known: OrderedDict[Hashable, tuple[tuple[str, ...], dict[Hashable, int]]] = (
            OrderedDict()
        )

    def cost(
        self,
        key: Hashable,
        schema: GraphQLSchema,
        root: GraphQLObjectType,
        selections: SelectionSetNode,
        fragments: dict[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        weights: Mapping[tuple[str, str], int],
    ) -> int:
        """query_cost() of the operation, from memory when `key` (which must name the text,
        the operation, the schema and the weights) was estimated with the same values."""
        known = self._known.get(key)
        if known is not None:
            names, costs = known
            values = _values_of(variables, names)
            if values is not None and values in costs:
                self._known.move_to_end(key)
                return costs[values]
        estimator = _Estimator(schema, fragments, variables, weights)
        cost = estimator.selection_set(root, selections, frozenset())
        names = tuple(sorted(estimator.read))
        values = _values_of(variables, names)
        if values is not None:
            entry = self._known.get(key)
            if entry is None or entry[0] != names:
                entry = (names, {})
                self._known[key] = entry
            self._known.move_to_end(key)
            if len(entry[1]) >= COSTS_PER_TEXT:
                entry[1].pop(next(iter(entry[1])))
            entry[1][values] = cost
            while len(self._known) > self.size:
                self._known.popitem(last=False)
        return cost


def _values_of(variables: Mapping[str, Any], names: tuple[str, ...]) -> Hashable | None:
    """The values of `names` as a key (each with its type), or None if one cannot be a key."""
    values = tuple(variables.get(name) for name in names)
    if any(type(value) not in _KEY_TYPES for value in values):
        return None
    return tuple((type(value), value) for value in values)
