"""The one shape every evaluation returns (`EvalSection`), and its two renderings: a fixed-width
text table for people and plain JSON for scripts."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

Cell = str | float | int

# A ratio that is undefined (P with nothing extracted, R with nothing in gold): neither 0 nor 1.
NOT_DEFINED = "-"


@dataclass
class EvalSection:
    """One titled table of figures. Floats are ratios in [0, 1] (rendered with 3 decimals);
    `notes` carry what a reader needs to interpret the numbers (skips, thresholds, caveats)."""

    title: str
    columns: list[str]
    rows: list[list[Cell]]
    notes: list[str] = field(default_factory=list)


def format_cell(value: Cell) -> str:
    """Floats get a fixed precision so columns line up and runs diff cleanly."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def render_table(section: EvalSection) -> str:
    """A plain-text table: title, header, rule, rows (text left, numbers right), then notes."""
    cells = [[format_cell(value) for value in row] for row in section.rows]
    widths = [len(column) for column in section.columns]
    for row in cells:
        for index, text in enumerate(row[: len(widths)]):
            widths[index] = max(widths[index], len(text))
    # A column of numbers (and undefined ratios) is right-aligned so the digits line up.
    numeric = [
        bool(section.rows)
        and all(
            isinstance(row[i], (int, float)) or row[i] == NOT_DEFINED
            for row in section.rows
            if i < len(row)
        )
        for i in range(len(section.columns))
    ]

    def line(values: list[str]) -> str:
        parts = []
        for index, width in enumerate(widths):
            text = values[index] if index < len(values) else ""
            parts.append(text.rjust(width) if numeric[index] else text.ljust(width))
        return "  ".join(parts).rstrip()

    out = [section.title, "=" * len(section.title), line(section.columns)]
    out.append("  ".join("-" * width for width in widths))
    out.extend(line(row) for row in cells)
    out.extend(f"note: {note}" for note in section.notes)
    return "\n".join(out)


def section_to_dict(section: EvalSection) -> dict[str, Any]:
    """JSON-ready dict; also lists rows as records keyed by column for easy consumption."""
    data = asdict(section)
    data["records"] = [dict(zip(section.columns, row, strict=False)) for row in section.rows]
    return data


def section_from_dict(data: dict[str, Any]) -> EvalSection:
    """Inverse of `section_to_dict` (the derived `records` key is ignored)."""
    return EvalSection(
        title=str(data["title"]),
        columns=[str(column) for column in data["columns"]],
        rows=[list(row) for row in data["rows"]],
        notes=[str(note) for note in data.get("notes", [])],
    )


def sections_to_json(sections: list[EvalSection], indent: int | None = 2) -> str:
    """Several sections as one JSON document: {"sections": [...]}."""
    return json.dumps({"sections": [section_to_dict(s) for s in sections]}, indent=indent)
