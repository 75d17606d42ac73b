"""The API's global id of a row, base64 of `Type:id`, spelt as schema.types.ids.global_id spells
it, for the runner's outputs that name nodes (exported JSON, console links) without importing the
schema layer."""

from __future__ import annotations

import base64


def global_id(type_name: str, row_id: int) -> str:
    return base64.b64encode(f"{type_name}:{row_id}".encode()).decode("ascii")
