"""The two heuristic baselines of the Ubuntu IRC disentanglement paper (Kummerfeld and others,
ACL 2019, Section 5), reimplemented so the evaluator runs them beside the link model:

- `previous_links`: every message answers the most recent non-system message before it (the
  paper's "Previous"); the channel becomes one conversation.
- `lowe_links`: the heuristic Lowe et al. (2015, 2017) used to extract the Ubuntu Dialogue
  Corpus: a message that starts with a recent author's name answers that author's latest
  message; an unaddressed one continues its author's latest exchange if that exchange was active
  within `LOWE_TIMEOUT` seconds, else starts a conversation. (Our reading of their description;
  their code is not in this repository.)

System notices start their own (one-message) conversation in both, as in the gold annotation.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.conversations.disentangle.features import ChannelState
from runner.conversations.disentangle.message import Message

LOWE_TIMEOUT = 180.0  # seconds an undirected message may continue its author's exchange


def previous_links(messages: Sequence[Message]) -> list[int | None]:
    parents: list[int | None] = []
    last: int | None = None
    for index, message in enumerate(messages):
        if message.system or not message.author:
            parents.append(None)
            continue
        parents.append(last)
        last = index
    return parents


def lowe_links(messages: Sequence[Message]) -> list[int | None]:
    state = ChannelState()
    parents: list[int | None] = []
    # author -> (latest message of their latest directed exchange, its time)
    exchange: dict[str, tuple[int, float]] = {}
    for index, message in enumerate(messages):
        seen = state.read(message)
        parent: int | None = None
        if not seen.system:
            addressed = seen.addressed
            if addressed is not None and addressed in state.last_by_author:
                parent = state.last_by_author[addressed]
                exchange[seen.key] = (index, seen.ts)
                exchange[addressed] = (index, seen.ts)
            elif seen.key in exchange and seen.ts - exchange[seen.key][1] <= LOWE_TIMEOUT:
                parent = exchange[seen.key][0]
                exchange[seen.key] = (index, seen.ts)
        parents.append(parent)
        state.commit(parent)
    return parents
