"""Who may do what: readers query, writers may also ingest, trigger and cancel, admins may
also delete."""

from __future__ import annotations

from typing import Any

from strawberry.permission import BasePermission
from strawberry.types import Info

from schema.context import Context, Role


class IsWriter(BasePermission):
    message = "permission denied: this operation needs a writer token"
    error_extensions = {"code": "FORBIDDEN"}

    def has_permission(self, source: Any, info: Info[Context, None], **kwargs: Any) -> bool:
        return info.context.role.may_write


class IsAdmin(BasePermission):
    message = "permission denied: this operation needs an admin token"
    error_extensions = {"code": "FORBIDDEN"}

    def has_permission(self, source: Any, info: Info[Context, None], **kwargs: Any) -> bool:
        return info.context.role is Role.ADMIN
