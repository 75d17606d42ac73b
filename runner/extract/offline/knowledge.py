"""Knowledge items and link descriptions built from what the patterns found.

Verbatim items point at a snippet (`content_pointer`); synthesized ones (a question with its
answer, a tip) quote their sentences in `content` and cite the messages, so the validator's
support check sees their words in the sources.
"""

from __future__ import annotations

import re

from runner.core.contract import ArtifactKind, ContentPointer, KnowledgeItem, KnowledgeKind
from runner.core.window import WindowMessage
from runner.extract.offline import patterns
from runner.extract.offline.artifacts import Snippet, find_snippets, snippet_title
from runner.extract.offline.text import (
    PartView,
    Span,
    content_words,
    squash,
    truncate_words,
    view_message,
    without_urls,
)
from runner.extract.offline.threads import Answer, Participants, strip_address
from runner.extract.offline.versions import context_version

_KIND_OF_SNIPPET = {
    ArtifactKind.CODE: KnowledgeKind.CODE,
    ArtifactKind.CONFIG: KnowledgeKind.CONFIG,
    ArtifactKind.COMMAND: KnowledgeKind.COMMAND,
}
_TOOL_WORD = re.compile(r"^(?:\$\s+)?(?:sudo\s+)?([\w.\-]+)")
_ANSWER_LIMIT = 700


def _entities(snippet: Snippet) -> list[str]:
    refs: list[str] = []
    if snippet.kind == ArtifactKind.COMMAND:
        match = _TOOL_WORD.match(snippet.span.text.strip())
        if match and not match.group(1).startswith("."):
            refs.append(match.group(1).casefold())
    if snippet.language and snippet.language not in ("shell",) and snippet.language not in refs:
        refs.append(snippet.language)
    return refs[:10]


def snippet_knowledge(snippet: Snippet, view: PartView, previous_text: str) -> KnowledgeItem:
    """A verbatim knowledge item for a reusable snippet; its version comes from the snippet,
    else from the message's prose, else from the author's previous message."""
    return KnowledgeItem(
        key="K0",
        kind=_KIND_OF_SNIPPET[snippet.kind],
        title=snippet_title(snippet, view),
        content_pointer=ContentPointer(
            message_id=view.message_id,
            char_start=snippet.span.start,
            char_end=snippet.span.end,
            quote=snippet.span.text,
        ),
        message_ids=[view.message_id],
        context_version=context_version(snippet.span.text, view.prose, previous_text),
        entity_refs=_entities(snippet),
    )


def _answer_text(message: WindowMessage, participants: Participants) -> str:
    """What an answer says: its opening prose, else its first snippet's first line."""
    view = view_message(message)
    prose = " ".join(s.text for s in view.sentences[:4])
    prose = strip_address(squash(prose), participants)
    if len(content_words(prose)) >= 3:
        return truncate_words(prose, _ANSWER_LIMIT)
    snippets = find_snippets(view)
    if snippets:
        first = snippets[0].span.text.strip().split("\n", 1)[0]
        return truncate_words(f"{prose} {first}".strip(), _ANSWER_LIMIT)
    return truncate_words(prose, _ANSWER_LIMIT)


def answer_item(
    question: WindowMessage, question_text: str, answer: Answer, participants: Participants
) -> KnowledgeItem | None:
    """A troubleshooting / how-to item from a question and its answer, or None when the answer
    says too little to be worth keeping ("thanks", "yes", a question back)."""
    if answer.rule == "resolved_by_asker" or patterns.is_second_person(question_text):
        return None
    addressed = participants.addressee(question.normalized_text) is not None
    if addressed and len(set(content_words(question_text))) < 6:
        return None  # a short question to one person is a follow-up, not reusable knowledge
    reply = _answer_text(answer.message, participants)
    if len(set(content_words(reply))) < 3 or patterns.is_non_answer(reply):
        return None
    if patterns.is_problem(question_text) or patterns.is_problem(reply):
        kind = KnowledgeKind.TROUBLESHOOTING
    elif patterns.is_howto(question_text):
        kind = KnowledgeKind.HOWTO
    else:
        kind = KnowledgeKind.FACT
    content = f"Q: {question_text}\nA: {reply}"
    return KnowledgeItem(
        key="K0",
        kind=kind,
        title=truncate_words(question_text, 200),
        content=content[:2000],
        message_ids=[question.message_id, answer.message.message_id],
        context_version=context_version(question_text, reply),
    )


def tip_item(sentence: str, view: PartView, participants: Participants) -> KnowledgeItem | None:
    """A recommendation ("Tip: ...", "always ...") or a fact flagged with `#info`/"FYI:"."""
    claim = patterns.tip(sentence, participants)
    kind = KnowledgeKind.RECOMMENDATION
    if claim is None:
        claim = patterns.info(sentence)
        kind = KnowledgeKind.FACT
    if claim is None:
        return None
    return KnowledgeItem(
        key="K0",
        kind=kind,
        title=truncate_words(claim.text, 200),
        content=truncate_words(claim.text, 2000),
        message_ids=[view.message_id],
        context_version=context_version(sentence, view.prose),
    )


def link_description(view: PartView, url: Span, participants: Participants) -> str:
    """What a link is about, from its own sentence (URL removed), else the sentence before it,
    else who shared it."""
    sentences = view.sentences
    own = next((s for s in sentences if s.start <= url.start < s.end), None)
    if own is not None:
        # The sentence around the URL, joined where the URL was: "PR is up: <url> — it adds X"
        # reads "PR is up: it adds X".
        before = without_urls(own.text[: url.start - own.start]).rstrip(" :\u2013\u2014-(")
        after = without_urls(own.text[url.end - own.start :]).lstrip(" :\u2013\u2014-).,")
        joined = f"{before}: {after}" if before and after else before or after
        text = strip_address(squash(joined), participants).strip(" :\u2013\u2014-()")
        if len(content_words(text)) >= 2:
            return truncate_words(text, 300)
        position = sentences.index(own)
        if position > 0:
            previous = squash(sentences[position - 1].text).strip(" :")
            if len(content_words(previous)) >= 2:
                return truncate_words(previous, 300)
    return truncate_words(f"Shared by {view.author}", 300)
