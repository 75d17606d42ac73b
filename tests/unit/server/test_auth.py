"""DIGESTD_API_TOKENS parsing: the three roles, and a bad role named without its token."""

from __future__ import annotations

import pytest

from schema.context import Role
from server.auth import TokenConfigError, parse_tokens, role_for


def test_admin_tokens_are_a_role_of_their_own() -> None:
    tokens = parse_tokens("reader:reader-token-1, writer:writer-token-1,ADMIN:admin-token-1")
    assert [token.role for token in tokens] == [Role.READER, Role.WRITER, Role.ADMIN]
    assert role_for(tokens, "Bearer admin-token-1") is Role.ADMIN
    assert [role.may_write for role in Role] == [False, True, True]


def test_an_unknown_role_is_refused_without_showing_the_token() -> None:
    with pytest.raises(TokenConfigError) as refused:
        parse_tokens("reader:reader-token-1,owner:secret-token-9")
    assert str(refused.value) == (
        "DIGESTD_API_TOKENS entry 2: role must be reader, writer or admin"
    )
    assert "secret" not in str(refused.value)
