"""Checks of input values where they enter: the JSON variables and the literals of a document.

They catch what would otherwise fail deep inside (the codec, the database, a recursive walk)
with an internal message:
- a lone surrogate (`"\\ud800"` in JSON) is not a Unicode scalar value, so not a GraphQL String,
  and cannot be encoded as UTF-8;
- a NUL character cannot be stored in a PostgreSQL text;
- a value nested deeper than MAX_INPUT_DEPTH (no argument of the schema needs more) would exhaust
  the recursion limit of the code that copies or stores it.
The fields of ingested messages are the exception for the first two: like imported records, they
are repaired (NULs removed, surrogates replaced by U+FFFD) record by record, so one odd character
does not cost the request. Their nesting is checked all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from graphql import (
    ArgumentNode,
    ListValueNode,
    ObjectValueNode,
    StringValueNode,
    ValueNode,
    VariableNode,
)

MAX_INPUT_DEPTH = 32


class InputProblem(ValueError):
    """An input value refused, with where it is (`variables.filter.kind`) and why."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where


def text_problem(text: str) -> str | None:
    """Why `text` cannot be accepted, or None."""
    if "\x00" in text:
        return "contains a NUL character (U+0000), which cannot be stored"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone UTF-16 surrogate, which is not a Unicode character"
    return None


def check_variables(variables: Mapping[str, Any], repaired: Iterable[str] = ()) -> None:
    """Raises InputProblem for the first bad value in the JSON variables; the texts of the
    `repaired` variables are left to the record repair."""
    exempt = set(repaired)
    for name, value in variables.items():
        _check_json(value, f"variables.{name}", check_text=name not in exempt)


def _check_json(value: Any, where: str, *, check_text: bool) -> None:
    # Iterative: the value may be nested as deep as the JSON decoder allowed.
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        current, path, depth = stack.pop()
        if isinstance(current, str):
            problem = text_problem(current) if check_text else None
            if problem:
                raise InputProblem(path, problem)
        elif isinstance(current, dict | list):
            if depth >= MAX_INPUT_DEPTH:
                raise InputProblem(path, f"nested deeper than {MAX_INPUT_DEPTH} levels")
            if isinstance(current, dict):
                for key, item in current.items():
                    key_problem = text_problem(str(key)) if check_text else None
                    if key_problem:
                        raise InputProblem(path, f"a key {key_problem}")
                    stack.append((item, f"{path}.{key}"[:200], depth + 1))
            else:
                stack.extend(
                    (item, f"{path}[{index}]"[:200], depth + 1)
                    for index, item in enumerate(current)
                )


def check_literal(argument: ArgumentNode, where: str, *, check_text: bool) -> None:
    """Raises InputProblem for the first bad value written in the document itself."""
    stack: list[tuple[ValueNode, str, int]] = [(argument.value, where, 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, StringValueNode):
            problem = text_problem(node.value) if check_text else None
            if problem:
                raise InputProblem(path, problem)
        elif isinstance(node, ListValueNode | ObjectValueNode):
            if depth >= MAX_INPUT_DEPTH:
                raise InputProblem(path, f"nested deeper than {MAX_INPUT_DEPTH} levels")
            if isinstance(node, ObjectValueNode):
                stack.extend((f.value, f"{path}.{f.name.value}", depth + 1) for f in node.fields)
            else:
                stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node.values))


def variables_in(value: ValueNode) -> set[str]:
    """The names of the variables used inside a literal."""
    names: set[str] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, VariableNode):
            names.add(node.name.value)
        elif isinstance(node, ObjectValueNode):
            stack.extend(f.value for f in node.fields)
        elif isinstance(node, ListValueNode):
            stack.extend(node.values)
    return names
