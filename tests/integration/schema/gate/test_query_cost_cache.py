"""Costs remembered per query text (schema/gate/query_cost.QueryCosts) are the costs the
estimate gives: a text asked again with other values of the variables it reads is estimated
again, and a value is never taken for another that only compares equal to it."""

from __future__ import annotations

from typing import Any

from graphql import OperationDefinitionNode, parse

from schema import build_schema
from schema.gate.query_cost import QueryCosts, field_weights, query_cost

PAGE = "query Page($n: Int) { digests(first: $n) { edges { node { id title } } } }"
POLL = "query Poll($id: ID!) { job(id: $id) { id status } }"


def _cost(costs: QueryCosts, query: str, variables: dict[str, object]) -> tuple[int, int]:
    """(remembered cost, cost estimated afresh) of `query` with `variables`."""
    schema = build_schema()._schema
    operation = parse(query).definitions[0]
    assert isinstance(operation, OperationDefinitionNode) and schema.query_type is not None
    weights = field_weights()
    arguments: tuple[Any, ...] = (
        schema,
        schema.query_type,
        operation.selection_set,
        {},
        variables,
        weights,
    )
    return costs.cost(query, *arguments), query_cost(*arguments)


def test_a_page_costs_what_its_first_asks_each_time() -> None:
    costs = QueryCosts()
    small, small_fresh = _cost(costs, PAGE, {"n": 2})
    large, large_fresh = _cost(costs, PAGE, {"n": 90})
    again, _ = _cost(costs, PAGE, {"n": 2})
    assert (small, large, again) == (small_fresh, large_fresh, small_fresh)
    assert large > small


def test_true_is_not_taken_for_one() -> None:
    costs = QueryCosts()
    one, one_fresh = _cost(costs, PAGE, {"n": 1})
    true, true_fresh = _cost(costs, PAGE, {"n": True})
    assert (one, true) == (one_fresh, true_fresh)
    assert one != true


def test_a_poll_costs_the_same_for_every_id() -> None:
    costs = QueryCosts()
    first, fresh = _cost(costs, POLL, {"id": "1"})
    assert _cost(costs, POLL, {"id": "2"}) == (first, fresh)
