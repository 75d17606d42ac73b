"""Reports' pure core: the source registry (stable S1..Sn, deduplicated by canonical key, by first
appearance), the citation audit, the offline extractive writer and the footnoted Markdown."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from runner.grounding.footnotes import FootnotedSentence, Section
from runner.reports.audit import accept_sentences, audit_marked
from runner.reports.evidence import (
    ChannelMessage,
    DigestClaim,
    DocumentText,
    gather_evidence,
    rank_evidence,
)
from runner.reports.extractive import report_title, write_extractive_report
from runner.reports.report import Report, marked_sentence, report_markdown
from runner.reports.sources import (
    DocumentSource,
    MessageSource,
    SourceRegistry,
    registry_of,
)

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def message(
    message_id: str,
    text: str,
    *,
    channel: str = "ops",
    revision: int = 1,
    span: tuple[int, int] | None = None,
) -> MessageSource:
    start, end = span or (0, len(text))
    return MessageSource(channel, message_id, revision, "ann", T0, text, start, end)


def document(locator: str, quote: str, document_id: str = "7") -> DocumentSource:
    return DocumentSource(document_id, "Runbook", "hash1", locator, quote)


def test_registry_deduplicates_by_canonical_key_and_numbers_by_first_appearance() -> None:
    a = message("12", "The deploy window moved to Friday evening.", span=(0, 10))
    a_other_span = message("12", "The deploy window moved to Friday evening.", span=(4, 20))
    a_edited = message("12", "The deploy window moved to Monday.", revision=2)
    d = document("page:2:char:0-30", "Rollbacks need the on-call lead.")
    d_same = document("page:2:char:0-30", "Rollbacks need the on-call lead.")
    registry = SourceRegistry()
    assert [registry.register(s) for s in (d, a, a_other_span, d_same, a_edited)] == [
        "S1",
        "S2",
        "S2",
        "S1",
        "S3",
    ]
    assert registry.get("S2") == a and registry.get("S4") is None and registry.get("S0") is None
    assert registry.find_by_key(a_edited.key) == "S3" and len(registry) == 3


def test_uncited_sources_are_not_listed() -> None:
    cited = message("1", "Deploys happen on Friday.")
    registry = registry_of([[cited], []])
    assert [identifier for identifier, _ in registry] == ["S1"]


def _report(*sentences: FootnotedSentence[MessageSource | DocumentSource]) -> Report:
    return Report("q", "Q", (Section("Answer", tuple(sentences)),))


def test_audit_passes_supported_contiguous_citations_and_renders_matching_footnotes() -> None:
    a = message("12", "The deploy window moved to Friday evening after the outage.")
    b = document("char:0-40", "Rollbacks need approval from on-call lead")
    draft = _report(
        FootnotedSentence("The deploy window moved to Friday evening.", (a,)),
        FootnotedSentence("Rollbacks need approval from the on-call lead.", (b, a)),
        FootnotedSentence("After the outage the deploy window moved.", (a,)),
    )
    report, audit = accept_sentences(draft)
    assert audit.proposed == audit.kept == 3 and audit.coverage == 1.0 and not audit.problems
    registry = report.registry()
    marked = [marked_sentence(s, registry) for s in report.sentences()]
    assert marked[1] == "Rollbacks need approval from the on-call lead. [S2] [S1]"
    markdown = report_markdown(report)
    assert markdown.startswith("# Q\n\n## Answer\n")
    assert "lead.[^2][^1]" in markdown
    footnotes = re.findall(r"^\[\^(\d+)\]: (.*)$", markdown, re.M)
    assert [n for n, _ in footnotes] == ["1", "2"]
    assert footnotes[0][1].startswith('#ops, ann, 2024-05-01 10:00 UTC, "The deploy window')
    assert footnotes[1][1] == (
        'Runbook, char:0-40, "Rollbacks need approval from on-call lead" (document 7)'
    )


def test_sentences_without_citation_or_support_are_dropped_with_their_reason() -> None:
    a = message("12", "The deploy window moved to Friday evening.")
    draft = _report(
        FootnotedSentence("The deploy window moved to Friday.", (a,)),
        FootnotedSentence("Kubernetes upgrades are planned for March.", (a,)),
        FootnotedSentence("The deploy window moved.", ()),
    )
    report, audit = accept_sentences(draft)
    assert [s.sentence for s in report.sentences()] == ["The deploy window moved to Friday."]
    assert audit.dropped == 2 and dict(audit.reasons) == {"low_support": 1, "no_citation": 1}
    assert audit.as_json()["coverage"] == 1.0


def test_audit_of_marked_text_finds_each_seed_failure() -> None:
    a = message("1", "The deploy window moved to Friday evening.")
    b = message("2", "Rollbacks need approval from the on-call lead.")
    c = message("3", "Nobody owns the staging cluster yet.")
    registry = registry_of([[a, b, c]])

    def codes(marked: list[str]) -> list[str]:
        return [problem.code for problem in audit_marked(marked, registry)]

    good = [
        "The deploy window moved to Friday. [S1]",
        "Rollbacks need on-call approval. [S2]",
        "Nobody owns staging yet. [S3]",
    ]
    assert codes(good) == []
    # S2 never cited: an orphan, and S1, S3 is not contiguous numbering.
    assert codes([good[0], "Rollbacks need on-call approval.", good[2]]) == [
        "no_citation",
        "orphan_source",
        "numbering_gap",
    ]
    assert codes([*good, "Staging is owned by nobody. [S9]"]) == ["unknown_source"]
    assert codes([good[1], good[0], good[2]]) == ["numbering_gap"]
    assert codes([good[0], "Kubernetes upgrades happen in March. [S2]", good[2]]) == ["low_support"]


CHANNEL = [
    ("ann", "Morning all."),
    ("bob", "The deploy window moved to Friday evening because of the database migration."),
    ("ann", "Who approves rollbacks during the database migration?"),
    ("cid", "Rollbacks during the migration need approval from the on-call database lead."),
    ("bob", "The deploy window moved to Friday evening because of the database migration!"),
    ("dee", "Lunch is pizza today for the whole team upstairs."),
]
DOCUMENT = (
    "Migration runbook\n\nThe database migration runs in three steps with a rollback plan "
    "for each step.\nEach step is checked by the on-call lead before the next one starts.\n\n"
    "Appendix: the office coffee machine is cleaned every Monday by facilities."
)


def _evidence_report(question: str) -> Report:
    messages = [
        ChannelMessage("ops", str(i), 1, author, T0 + timedelta(minutes=i), text)
        for i, (author, text) in enumerate(CHANNEL, start=1)
    ]
    doc = DocumentText("7", "Runbook", DOCUMENT, "hash1")
    return write_extractive_report(
        question, rank_evidence(question, gather_evidence([messages], [doc]))
    )


def test_extractive_report_answers_first_cites_exact_quotes_and_skips_noise() -> None:
    report = _evidence_report("How does the database migration handle rollbacks?")
    assert report.title == "How does the database migration handle rollbacks"
    headings = [section.heading for section in report.sections]
    assert headings[0] == "Answer" and headings[-1] == "Open points"
    texts = [s.sentence for s in report.sentences()]
    assert not any("pizza" in t or "coffee" in t or t == "Morning all." for t in texts)
    # The repeated message is said once; the question asked in the channel is an open point.
    assert sum("deploy window moved" in t for t in texts) <= 1
    assert [s.sentence for s in report.sections[-1].sentences] == [
        "Who approves rollbacks during the database migration?"
    ]
    for sentence in report.sentences():
        (source,) = sentence.sources
        assert source.supporting_text.count(sentence.sentence) >= 1
        if isinstance(source, MessageSource):
            assert source.quote == sentence.sentence
        else:
            start, end = (int(n) for n in source.locator.split(":")[-1].split("-"))
            assert DOCUMENT[start:end] == source.quote == sentence.sentence
    checked, audit = accept_sentences(report)
    assert checked == report and audit.dropped == 0 and not audit.problems


def test_a_question_no_source_matches_gives_an_empty_report_not_an_invented_one() -> None:
    report = _evidence_report("quantum chromodynamics lattice")
    assert list(report.sentences()) == []
    assert report_markdown(report).endswith(
        "_No passage of the chosen sources matches the question._"
    )


def test_title_is_the_question_cut_at_a_word() -> None:
    assert report_title("  what   changed? ") == "What changed"
    long = report_title("why " * 60)
    assert len(long) <= 121 and long.endswith("…") and " …" not in long


def test_a_question_without_a_word_still_gives_a_title() -> None:
    assert report_title("???!!!") == "Report"
    assert report_title(" ?! \n ...") == "Report"
    assert report_title("¿Qué pasó?") == "¿Qué pasó"


def test_evidence_names_two_words_of_the_question_in_any_form() -> None:
    """One shared word is chance ("meta data" for a question about annotated data); two words of
    the question, in any of their forms ("approves" for "approved"), make a unit evidence."""
    question = "How is the chat data annotated and approved?"
    texts = {
        "chance": "a docker image is slices plus some meta data describing them",
        "forms": "the annotation of each chat is approves by a second annotator",
        "prefix_only": "the database holds the chat logs of last year",
    }
    units = gather_evidence(
        [
            [
                ChannelMessage("ops", key, 1, "ann", T0, text, index)
                for index, (key, text) in enumerate(texts.items())
            ]
        ],
        [],
    )
    sources = [item.evidence.source for item in rank_evidence(question, units)]
    kept = {source.message_id for source in sources if isinstance(source, MessageSource)}
    assert len(kept) == len(sources)
    assert kept == {"forms"}


def test_digest_claims_are_evidence_that_cites_the_messages_they_rest_on() -> None:
    messages = [
        ChannelMessage("ops", str(i), 1, author, T0 + timedelta(minutes=i), text)
        for i, (author, text) in enumerate(CHANNEL, start=1)
    ]
    claims = [
        # Rests on messages 3 and 4: one unit, citing both, in the place of message 3.
        DigestClaim(
            "decision",
            "Rollback approval during the database migration comes from the on-call lead.",
            ("3", "4", "99"),
        ),
        DigestClaim(
            "decision",
            "Rollback approval during the  database migration comes from the on-call lead.",
            ("4",),
        ),  # the same claim from an older digest
        DigestClaim("topic", "Database migration rollback approvals", ("404",)),  # unread
        DigestClaim("action_item", "Approve it.", ("4",)),  # says too little
    ]
    units = gather_evidence([messages], [], [claims])
    (claim,) = [unit for unit in units if unit.kind != "sentence"]
    assert claim.kind == "decision" and claim.origin == "#ops"
    assert [s.message_id for s in claim.sources if isinstance(s, MessageSource)] == ["3", "4"]
    assert claim.position == min(u.position for u in units if u.source.key == claim.source.key)
    question = "Who gives approval for rollbacks of the database migration?"
    report = write_extractive_report(question, rank_evidence(question, units))
    cited = [s for s in report.sentences() if s.sentence == claim.text]
    assert cited and cited[0].sources == claim.sources
    checked, audit = accept_sentences(report)
    assert claim.text in [s.sentence for s in checked.sentences()] and not audit.problems


def test_a_link_with_a_footnote_number_is_no_evidence() -> None:
    messages = [
        ChannelMessage(
            "ops", "1", 1, "ann", T0, "1 https://example.org/database-migration-rollback-approvals"
        ),
        ChannelMessage(
            "ops",
            "2",
            1,
            "bob",
            T0,
            "Rollbacks of the database migration need approval, "
            "see https://example.org/runbook for the steps.",
        ),
    ]
    units = gather_evidence([messages], [])
    assert [u.source.message_id for u in units if isinstance(u.source, MessageSource)] == ["2"]
