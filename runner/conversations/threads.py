"""Conversations of a channel: which earlier message each message answers, the connected components
that makes, and what is stored of each.

Plain data in and out, no database: `thread_messages` takes a channel's messages in time
order, the ones already threaded by an earlier digest (with their stored conversation) first
as context, and threads the others with a linker (for each message, the index of the earlier
message it answers, or None: it opens a conversation): by default the disentanglement model
(`runner.conversations.disentangle.link_records`: explicit replies first, then the learned link model). A message answering a threaded one
joins that stored conversation (`continues`); the others make new conversations, identified by
their first message. A message is threaded once: a catch-up digest that reads it again changes
nothing, so a conversation's members and counts never depend on how windows were cut.

Each new conversation gets a cited one-line title (`conversation_title`: the first question
asked in it, else its first informative sentence, cut at a word to `MAX_TITLE_CHARS`), an exact
span of that message (so it is checked like any pointer); "answered" means someone other than its
opener wrote in it (the `ongoing` state is added when it is read: db/migrations/0006).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from runner.conversations.disentangle import link_records
from runner.core.window import Window, WindowMessage
from runner.grounding.citations import cut_span, sentence_spans
from runner.grounding.claim_support import prose_tokens

MAX_TITLE_CHARS = 100
MIN_TITLE_WORDS = 3
TITLE_LOOKAHEAD = 5
# A leading addressee ("ann: ", "@bob, "): it names a reader, not the subject.
_ATTENTION_WORDS = frozenset(
    "anyone anybody someone somebody something anything everyone help helps helping helped "
    "question questions ask asking asked answer answers answered willing please thanks thank "
    "hello hi hey here know knows idea ideas thoughts suggestion suggestions".split()
)
_ADDRESS = re.compile(r"^\s*@?([^\s:,]{2,32})[:,]\s")


@dataclass(frozen=True)
class ThreadedMessage:
    """A message as the threader sees it; `conversation_id` is set when an earlier digest
    threaded it (context), None when it is to be threaded now."""

    message_id: str  # external id
    author: str
    ts: datetime
    text: str  # normalized text of the revision read
    reply_to: str | None = None  # an explicit reply (Slack thread, Discord reply, JSONL)
    revision: int = 1
    conversation_id: int | None = None


@dataclass(frozen=True)
class StoredConversation:
    """What a stored conversation that new messages may extend already holds."""

    id: int
    participants: tuple[str, ...]  # by first appearance: the opener first
    message_count: int
    first_ts: datetime
    last_ts: datetime
    answered: bool


@dataclass(frozen=True)
class ConversationTitle:
    message_id: str
    revision: int
    char_start: int
    char_end: int
    text: str  # exactly the message's text[char_start:char_end]


@dataclass(frozen=True)
class ThreadedConversation:
    """A conversation new messages were added to: a new one (`continues` None, with its title)
    or a stored one they extend (its totals after them; its title stays)."""

    continues: int | None
    root_message_id: str | None  # external id of a new one's first message
    message_ids: tuple[str, ...]  # the messages threaded now, in time order
    participants: tuple[str, ...]
    message_count: int
    first_ts: datetime
    last_ts: datetime
    answered: bool
    title: ConversationTitle | None


@dataclass(frozen=True)
class Threading:
    parents: dict[str, str | None]  # each message threaded now → the message it answers
    conversations: list[ThreadedConversation]


Linker = Callable[[Sequence[ThreadedMessage]], list[int | None]]


def _subject_words(text: str) -> list[str]:
    """The content words of a sentence that can name a subject: not a link, and not the words
    every chat uses to ask for attention ("anyone willing to help me with something?")."""
    return [w for w in prose_tokens(text) if w not in _ATTENTION_WORDS]


def _title_candidates(message: ThreadedMessage) -> list[ConversationTitle]:
    """The sentences of a message as titles: cut at a word to `MAX_TITLE_CHARS`, without a
    leading addressee ("ann: ", "@bob, "), which names a reader, not the subject."""
    address = _ADDRESS.match(message.text)
    skip = address.end() if address else 0
    titles: list[ConversationTitle] = []
    for start, end in sentence_spans(message.text):
        if start < skip <= end:
            start = skip
        start, end = cut_span(message.text, start, end, MAX_TITLE_CHARS)
        if end > start:
            text = message.text[start:end]
            titles.append(ConversationTitle(message.message_id, message.revision, start, end, text))
    return titles


def conversation_title(messages: Sequence[ThreadedMessage]) -> ConversationTitle | None:
    """What a conversation is about, quoted: the first question (ends with "?") with
    `MIN_TITLE_WORDS` content words that its opener asked in its first `TITLE_LOOKAHEAD`
    messages, since a help thread is named by what was asked (not by a helper's clarifying
    question); else the first sentence with that many content words;
    else the first non-empty sentence; None when all are empty.

    Read lazily, message by message: a long conversation is decided by its first messages (a
    conversation's title costs no pass over all its sentences, the bulk of threading a window
    outside the link model)."""
    opener = messages[0].author if messages else None
    first: ConversationTitle | None = None
    informative: ConversationTitle | None = None
    for position, message in enumerate(messages):
        early = position < TITLE_LOOKAHEAD and message.author == opener
        if informative is not None and position >= TITLE_LOOKAHEAD:
            break  # no later message can hold the opener's early question
        for title in _title_candidates(message):
            if first is None:
                first = title
            if informative is not None and not early:
                break  # only an early question could still win
            if len(_subject_words(title.text)) < MIN_TITLE_WORDS:
                continue
            if early and title.text.rstrip().endswith("?"):
                return title
            if informative is None:
                informative = title
    return informative or first


def _root(parent_of: list[int], index: int) -> int:
    while parent_of[index] != index:
        parent_of[index] = parent_of[parent_of[index]]
        index = parent_of[index]
    return index


def thread_messages(
    messages: Sequence[ThreadedMessage],
    stored: Mapping[int, StoredConversation],
    link: Linker = link_records,
) -> Threading:
    """Thread the messages without a conversation (see the module's docstring)."""
    links = link(messages)
    parent_of = list(range(len(messages)))  # union-find over the messages threaded now
    joins: dict[int, int] = {}  # member index → stored conversation it answers into
    parents: dict[str, str | None] = {}
    for index, message in enumerate(messages):
        if message.conversation_id is not None:
            continue
        parent = links[index]
        if parent is not None and not 0 <= parent < index:
            parent = None  # a linker may only point back
        parents[message.message_id] = None if parent is None else messages[parent].message_id
        if parent is None:
            continue
        stored_id = messages[parent].conversation_id
        if stored_id is None:
            parent_of[_root(parent_of, index)] = _root(parent_of, parent)
        elif stored_id in stored:
            joins[index] = stored_id
    members: dict[int, list[int]] = {}
    for index, message in enumerate(messages):
        if message.conversation_id is None:
            members.setdefault(_root(parent_of, index), []).append(index)
    conversations: list[ThreadedConversation] = []
    for indexes in members.values():
        threaded = [messages[i] for i in indexes]
        continued = next((joins[i] for i in indexes if i in joins), None)
        authors = dict.fromkeys(m.author for m in threaded)
        if continued is None:
            participants = tuple(authors)
            conversations.append(
                ThreadedConversation(
                    None,
                    threaded[0].message_id,
                    tuple(m.message_id for m in threaded),
                    participants,
                    len(threaded),
                    threaded[0].ts,
                    threaded[-1].ts,
                    len(participants) > 1,
                    conversation_title(threaded),
                )
            )
            continue
        before = stored[continued]
        participants = tuple(dict.fromkeys((*before.participants, *authors)))
        conversations.append(
            ThreadedConversation(
                continued,
                None,
                tuple(m.message_id for m in threaded),
                participants,
                before.message_count + len(threaded),
                min(before.first_ts, threaded[0].ts),
                max(before.last_ts, threaded[-1].ts),
                before.answered or len(participants) > 1,
                None,
            )
        )
    return Threading(parents, conversations)


def order_window(
    window: Window, messages: Sequence[ThreadedMessage], threading: Threading
) -> Window:
    """The window's messages conversation by conversation (conversations in the order of their
    first message here, each in time order), each marked with its conversation, so chunks hold
    whole threads rather than time slices of several. `messages` is what was threaded (with
    the conversation of those threaded before)."""
    keys: dict[str, str] = {
        m.message_id: f"stored:{m.conversation_id}"
        for m in messages
        if m.conversation_id is not None
    }
    for conversation in threading.conversations:
        key = (
            f"stored:{conversation.continues}"
            if conversation.continues is not None
            else f"new:{conversation.root_message_id}"
        )
        keys.update(dict.fromkeys(conversation.message_ids, key))
    groups: dict[str, list[WindowMessage]] = {}
    for message in window.messages:
        key = keys.get(message.message_id, f"alone:{message.message_id}")
        groups.setdefault(key, []).append(replace(message, conversation=key))
    return Window(window.channel_name, tuple(m for group in groups.values() for m in group))


def thread_window(window: Window, link: Linker = link_records) -> Window:
    """A window threaded on its own (no earlier digest) and ordered by conversation: what a
    digest of exactly these messages chunks, for the evaluator and benchmarks."""
    messages = [
        ThreadedMessage(m.message_id, m.author, m.ts, m.normalized_text, m.reply_to)
        for m in window.messages
    ]
    return order_window(window, messages, thread_messages(messages, {}, link))
