"""The offline extractor's rules one by one, its edge cases (empty window, small talk, tiny
chunks, odd Unicode), and a property test: whatever the text, pointers slice exactly."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.core.chunks import ChunkPart, chunk_messages
from runner.core.contract import ArtifactKind, SignalLevel
from runner.core.vocabulary import MappedChunk
from runner.core.window import Window, WindowMessage
from runner.extract.offline import patterns
from runner.extract.offline.artifacts import command_like, find_snippets
from runner.extract.offline.chunk import summarize_chunk
from runner.extract.offline.digest import build_digest
from runner.extract.offline.text import clean_url, truncate_words, view_part
from runner.extract.offline.threads import Answer, Participants, find_answer
from runner.extract.offline.versions import find_versions
from runner.grounding.normalize import normalize_text
from runner.grounding.pointers import MatchKind
from runner.grounding.validate import validate_output
from tests.support.offline import (
    PEOPLE,
    T0,
    _message,
    _window,
    load_sample,
    run_offline,
)


def rule_of(answer: Answer | None) -> str:
    """The rule that found `answer`; there must be one."""
    assert answer is not None
    return answer.rule


def test_decision_phrasing() -> None:
    marked = patterns.decision("[agreed] Ship v2 on Friday after the freeze", PEOPLE)
    assert marked is not None and marked.text == "Ship v2 on Friday after the freeze"
    assert patterns.decision("#agreed use Postgres 16 for staging", PEOPLE) is not None
    assert patterns.decision("We decided to move the cron jobs to the worker pool.", PEOPLE)
    assert patterns.decision("Let's go with the managed Redis offering.", PEOPLE)
    assert patterns.decision("We haven't decided on the Redis offering yet.", PEOPLE) is None
    assert patterns.decision("Maybe we agreed to ship Friday, not sure.", PEOPLE) is None
    assert patterns.decision("Did we decide to ship on Friday?", PEOPLE) is None
    assert patterns.decision("any charging decision is going to be something", PEOPLE) is None
    assert patterns.proposal("Let's move the standup to 10:00 from next week.", PEOPLE)


def test_action_phrasing() -> None:
    mine = patterns.action("Sure, I'll update the deploy docs tomorrow.", "bob", PEOPLE)
    assert mine is not None and mine.owner == "bob" and mine.text.startswith("Update the deploy")
    assert patterns.action("I'll be late for standup", "bob", PEOPLE) is None
    assert patterns.action("guess I'll have to wait then", "bob", PEOPLE) is None
    asked = patterns.action("@bob can you rotate the staging keys before Thursday?", "gos", PEOPLE)
    assert asked is not None and asked.owner == "bob" and asked.text.startswith("Rotate")
    todo = patterns.action("TODO(ana): fix the flaky export test", "bob", PEOPLE)
    assert (
        todo is not None and todo.owner == "Ana Souza" and todo.text == "Fix the flaky export test"
    )
    meeting = patterns.action("#action bob to update the on-call runbook", "gos", PEOPLE)
    assert meeting is not None and meeting.owner == "bob"
    assert patterns.commitment_only("on it 👍") and patterns.commitment_only("I'll take it")
    assert not patterns.commitment_only("I'll take it after lunch and fix the tests")


def test_question_phrasing() -> None:
    assert patterns.question("anyone here?", PEOPLE) is None
    assert patterns.question("anyone want to grab lunch at noon?", PEOPLE) is None
    found = patterns.question("gos: where is xorg.conf in ubuntu 10.10?", PEOPLE)
    assert found is not None and found.text == "Where is xorg.conf in ubuntu 10.10?"
    # IRC users skip the "?"; relative clauses that merely start with "when" are no question.
    assert patterns.question("how to define links in docker-compose file for swarm", PEOPLE)
    assert patterns.question("When starting a silo it writes the membership table", PEOPLE) is None
    assert patterns.is_second_person("did you try restarting the daemon?")


def test_answer_rule() -> None:
    messages = [
        _message(0, "gos", "how can I remove the adware tracking cookie on linux?"),
        _message(1, "bob", "lol"),
        _message(2, "carl", "gos: clear cookies from the browser options"),
        _message(3, "ana", "Is the staging database still on Postgres 15?"),
        _message(4, "bob", "yes, until Thursday", reply_to="x3"),
        _message(5, "dora", "Which port does the metrics exporter listen on?"),
        _message(6, "eve", "dora: why do you ask?"),
        _message(7, "fay", "the weather is lovely"),
    ]
    people = Participants.of(messages)
    assert rule_of(find_answer(messages, 0, people, messages[0].normalized_text)) == "addressed"
    assert rule_of(find_answer(messages, 3, people, messages[3].normalized_text)) == "reply"
    # A question back is not an answer.
    assert find_answer(messages, 5, people, messages[5].normalized_text) is None
    adjacent = [
        _message(0, "ana", "Why does the nightly backup job fail on the replica?"),
        _message(1, "bob", "the nightly backup job fails there because the replica is read-only"),
    ]
    assert (
        rule_of(find_answer(adjacent, 0, Participants.of(adjacent), adjacent[0].normalized_text))
        == "adjacent"
    )


def test_versions_and_commands() -> None:
    assert find_versions("Tip: on Python 3.12 use TaskGroup") == ["Python 3.12"]
    assert find_versions("image: postgres:16.2-alpine") == ["postgres:16.2-alpine"]
    assert find_versions("released v1.2.3 today") == ["v1.2.3"]
    assert find_versions("bind 0.0.0.0:80 and bet 20.00000000 at odds 1:1, port 8080") == []
    assert command_like("docker run -p 8080:80 nginx")
    assert command_like("sudo apt-get install vim")
    assert command_like("$ make test")
    assert not command_like("docker run in vbox is slow")
    assert not command_like("git is great for that")
    assert not command_like("pg_upgrade with --link, it's much faster. Rough steps below:")


def test_text_spans_are_exact() -> None:
    text = normalize_text(
        "see https://example.com/a_(b)). and (https://example.org/x?y=1)\n"
        'rawtx```./komodo-cli -ac_name=AT3 diceinfo abc{\n  "result": "success"\n}```'
    )
    message = WindowMessage("m", "a", T0, text)
    view = view_part(ChunkPart(message, 0, len(text)))
    assert [u.text for u in view.urls] == ["https://example.com/a_(b)", "https://example.org/x?y=1"]
    for span in [*view.urls, *view.sentences, *(b.content for b in view.blocks)]:
        assert text[span.start : span.end] == span.text
    (snippet,) = find_snippets(view)
    assert snippet.kind == ArtifactKind.COMMAND  # code glued to the fence is content, not a tag
    assert snippet.span.text.startswith("./komodo-cli") and snippet.span.text.endswith("}")
    assert clean_url("https://a.example/b).") == "https://a.example/b"
    for limit in (1, 5, 17, 40):
        assert len(truncate_words("word " * 30, limit)) <= limit


async def test_empty_window() -> None:
    result = await run_offline(Window(channel_name="quiet", messages=()))
    digest = result.digest
    assert digest.signal_quality.level == SignalLevel.EMPTY
    assert digest.coverage.messages_total == 0
    assert not (digest.decisions or digest.topics or digest.knowledge_items or digest.links)
    assert result.validation.rejections == [] and result.validation.output_flags == []


async def test_small_talk_only() -> None:
    window = _window(
        ("ana", "good morning everyone ☀️"),
        ("bob", "morning!"),
        ("carl", "anyone want to grab lunch at the ramen place?"),
        ("ana", "yes please 🍜"),
        ("bob", "count me in"),
        ("carl", "how was your weekend?"),
        ("ana", "great, went hiking with the kids 🏔️"),
        ("bob", "lol nice"),
        ("carl", "the coffee machine is broken again ☕"),
        ("ana", "noooo"),
        ("bob", "have a good evening all 👋"),
    )
    result = await run_offline(window)
    digest = result.digest
    assert digest.signal_quality.level in (SignalLevel.EMPTY, SignalLevel.LOW)
    assert result.validation.output_flags == []  # never "empty" with items
    assert not (digest.decisions or digest.action_items or digest.open_questions)
    if digest.signal_quality.level == SignalLevel.EMPTY:
        assert not (digest.topics or digest.links or digest.artifacts or digest.knowledge_items)
        assert digest.overview == []  # small talk is not dressed up as an overview
        assert digest.notable_message_ids == [] and digest.highlights == []


async def test_tiny_chunks_split_messages_and_stay_exact() -> None:
    window = load_sample()
    result = await run_offline(window, chunk_tokens=120)
    assert result.chunk_count > 20
    assert result.map_rejections == [] and result.validation.rejections == []
    for kinds in result.validation.pointer_matches.values():
        assert all(kind in (None, MatchKind.OFFSETS) for kind in kinds)
    assert result.digest.coverage.messages_covered == len(window.messages)


async def test_unicode_offsets() -> None:
    text = (
        "Zoë 👩🏽‍💻 says: e\u0301 run this\n```bash\n$ echo 'naïve ☕'\n```\n"
        "then https://exämple.org/ü ok"
    )
    window = _window(("Zoë", text), ("bob", "works, thanks"))
    result = await run_offline(window)
    digest = result.digest
    normalized = window.messages[0].normalized_text
    (artifact,) = digest.artifacts
    assert (
        normalized[artifact.pointer.char_start : artifact.pointer.char_end] == "$ echo 'naïve ☕'"
    )
    assert [link.url for link in digest.links] == ["https://exämple.org/ü"]
    assert result.validation.rejections == []


_CHAT_TEXT = st.lists(
    st.sampled_from(
        [
            "```",
            "```yaml\n",
            "\n",
            " ",
            "`",
            "$ docker ps -a",
            "https://x.example/a?b=(1)",
            "?",
            "I'll fix it.",
            "[agreed] ship it",
            "TODO: tests",
            "key: value\n",
            "é",
            "👍",
            "@bob ",
            "bob: ",
            "why does it fail?",
            "\t",
            ">",
            "0xdeadbeef",
            "v1.2.3",
            "Python 3.11",
        ]
    )
    | st.text(max_size=12),
    max_size=25,
).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_CHAT_TEXT, min_size=1, max_size=6), st.integers(min_value=60, max_value=400))
def test_any_text_gives_exact_pointers(texts: list[str], budget: int) -> None:
    messages = [_message(i, ["ana", "bob"][i % 2], t) for i, t in enumerate(texts)]
    messages = [m for m in messages if m.normalized_text]
    lookup = {m.message_id: m.normalized_text for m in messages}
    mapped = []
    for chunk in chunk_messages(messages, budget):
        summary = summarize_chunk(chunk)
        checked = validate_output(summary, {mid: lookup[mid] for mid in chunk.message_ids})
        assert checked.rejections == [] and checked.output_flags == []
        for artifact in summary.artifacts:
            pointer = artifact.pointer
            assert (
                lookup[pointer.message_id][pointer.char_start : pointer.char_end] == pointer.quote
            )
        mapped.append(MappedChunk(checked.output, tuple(chunk.message_ids)))
    window = Window(channel_name="fuzz", messages=tuple(messages))
    digest = build_digest(mapped, window, [])
    checked_digest = validate_output(digest, lookup, channel_name="fuzz")
    assert checked_digest.rejections == [] and checked_digest.output_flags == []
    assert digest.coverage.messages_covered == len(messages)


def test_coverage_comes_from_the_chunks_not_from_the_summary_text() -> None:
    window = load_sample()
    chunks = list(chunk_messages(list(window.messages), 300))
    mapped = [
        MappedChunk(
            summarize_chunk(chunk).model_copy(update={"chunk_summary": ""}),
            tuple(chunk.message_ids),
        )
        for chunk in chunks
    ]
    kept = mapped[:1] + mapped[2:]  # the second chunk failed
    digest = build_digest(kept, window, [])
    covered = {message_id for chunk in kept for message_id in chunk.message_ids}
    assert len(covered) < len(window.messages)
    assert digest.coverage.messages_covered == len(covered)
    assert "not covered" in digest.coverage.notes
    assert "Coverage assumed" not in digest.coverage.notes
