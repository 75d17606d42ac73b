"""Entity tags of answers: one per body, and If-None-Match read as RFC 9110 reads it."""

from __future__ import annotations

from server.etag import entity_tag, none_match


def test_a_tag_is_the_bodys_own() -> None:
    tag = entity_tag(b'{"data":{"job":{"progress":1}}}')
    assert tag.startswith('"') and tag.endswith('"') and len(tag) == 34
    assert tag == entity_tag(b'{"data":{"job":{"progress":1}}}')
    assert tag != entity_tag(b'{"data":{"job":{"progress":2}}}')


def test_if_none_match_lists_weak_tags_and_star() -> None:
    tag = entity_tag(b"body")
    assert none_match(tag, tag)
    assert none_match(f'"other", W/{tag}', tag)
    assert none_match("*", tag)
    assert not none_match('"other"', tag)
    assert not none_match(None, tag) and not none_match("", tag)
