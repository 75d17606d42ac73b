"""Credibility and relevance of a report's sources: the weights by kind, the facts of the
channels read, relevance from the research's rankings, and the scores kept through the stored
JSON and shown in the Markdown's `## Sources` list."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from runner.documents.ingest import ingest_text
from runner.reports.evidence import ChannelMessage, DigestClaim, DocumentText
from runner.reports.records import report_from_json, report_json
from runner.reports.report import report_markdown
from runner.reports.research import run_extractive_report
from runner.reports.source_scores import (
    DocumentFacts,
    channel_facts,
    document_credibility,
    message_credibility,
    score_sources,
)
from runner.reports.sources import DocumentAttribution, MessageSource, SourceScores

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
QUESTION = "Who approves a database migration rollback?"
OPS = [
    ("ann", "Morning all, the coffee machine on floor three is broken again today."),
    ("bob", "The database migration runs on Friday evening after the freeze."),
    ("cid", "Rollbacks of the database migration need approval from the on-call lead."),
    ("bob", "I will post the migration checklist in the wiki before Friday."),
    ("dee", "Who approves rollbacks when the on-call lead is away?"),
    ("bob", "The freeze starts Thursday noon, so merge before that."),
]
RUNBOOK = (
    "Runbook for database changes\n\n"
    "Every database migration ships with a rollback plan. A rollback of a database migration "
    "is approved by the on-call lead, who records the approval in the incident log.\n\n"
    "Backups are taken nightly and kept for thirty days."
)


def ops_messages() -> list[ChannelMessage]:
    return [
        ChannelMessage("ops", f"m{i}", 1, author, T0 + timedelta(minutes=i), text, i)
        for i, (author, text) in enumerate(OPS, start=1)
    ]


def runbook(attribution: DocumentAttribution) -> DocumentText:
    document = ingest_text(RUNBOOK, title="Runbook")
    return DocumentText(
        "7",
        "Runbook",
        document.canonical_text,
        document.source_text_hash,
        attribution=attribution,
    )


def test_document_credibility_counts_what_it_states_and_how_it_was_extracted() -> None:
    stated = {"titled": True, "author": True, "publisher": True, "published_at": True}
    assert document_credibility(**stated, degraded=False, confirmed=False) == 0.9
    assert document_credibility(**stated, degraded=False, confirmed=True) == 1.0
    assert document_credibility(**stated, degraded=True, confirmed=False) == 0.7
    bare = {"titled": False, "author": False, "publisher": False, "published_at": False}
    assert document_credibility(**bare, degraded=False, confirmed=False) == 0.5
    assert document_credibility(**bare, degraded=True, confirmed=False) == 0.3
    # An attributed, cleanly extracted document outweighs any chat message.
    assert message_credibility(regular_author=True, settled=True) == 0.7
    assert message_credibility(regular_author=False, settled=False) == 0.4
    assert message_credibility(regular_author=True, settled=False) == 0.55


def test_channel_facts_name_the_regulars_and_the_messages_a_digest_settled_on() -> None:
    claims = [
        DigestClaim("decision", "Rollbacks need the on-call lead's approval.", ("m3",)),
        DigestClaim("open_question", "Who approves when the lead is away?", ("m5",)),
    ]
    facts = channel_facts([ops_messages()], [claims])
    # bob wrote 3 of 6 messages; everyone else one (below the 3-message minimum).
    assert facts.regular_authors == {("ops", "bob")}
    # Only a decision or an action item settles a message: an open question does not.
    assert facts.settled_messages == {("ops", "m3")}
    assert channel_facts([[]], [claims]).regular_authors == frozenset()


def test_the_source_answering_the_question_is_more_relevant_and_every_score_is_in_range() -> None:
    attribution = DocumentAttribution("Ann Lee", "Ops Guild", date(2024, 4, 30), "7")
    channels, documents = [ops_messages()], [runbook(attribution)]
    claims = [[DigestClaim("decision", OPS[2][1], ("m3",))]]
    run = run_extractive_report(QUESTION, channels, documents, claims=claims)
    registry = run.report.registry()
    ranked = [item for ranking in run.research.gathered.rankings for item in ranking]
    scores = score_sources(
        registry,
        [*ranked, *run.research.added],
        {"7": DocumentFacts(titled=True, degraded=False)},
        channel_facts(channels, claims),
    )
    assert set(scores) == {entry.key for entry in registry.entries()}
    assert all(0.0 <= s.relevance <= 1.0 and 0.0 <= s.credibility <= 1.0 for s in scores.values())
    by_quote = {
        entry.first.quote if isinstance(entry.first, MessageSource) else "runbook": entry
        for entry in registry.entries()
    }
    document_scores = scores[by_quote["runbook"].key]
    assert document_scores.credibility == 0.9  # titled, attributed, clean, not confirmed
    # The runbook names approval, rollback and database migration: the best passage there is.
    assert document_scores.relevance == 1.0
    settled = by_quote.get(OPS[2][1])
    assert settled is not None and scores[settled.key].credibility == 0.55  # cid, settled
    others = [
        scores[e.key].relevance for e in registry.entries() if e.key != by_quote["runbook"].key
    ]
    assert others and max(others) <= document_scores.relevance


def test_scores_survive_the_stored_json_and_show_in_the_sources_list() -> None:
    run = run_extractive_report(QUESTION, [ops_messages()], [runbook(DocumentAttribution())])
    report = run.report
    scored = {
        entry.key: SourceScores(credibility=0.5, relevance=0.816 if i == 0 else 0.25)
        for i, entry in enumerate(report.registry().entries())
    }
    report = report.__class__(report.question, report.title, report.sections, scored)
    sections, sources = report_json(report)
    assert sources[0]["relevance_score"] == 0.816 and sources[0]["credibility_score"] == 0.5
    texts = {(m.row_id or 0, 1): m.text for m in ops_messages()}
    rebuilt = report_from_json(report.question, report.title, sections, sources, texts)
    assert rebuilt.scores == scored
    markdown = report_markdown(rebuilt)
    assert markdown == report_markdown(report)
    first_line = next(line for line in markdown.splitlines() if line.startswith("- S1 "))
    assert first_line.endswith("; relevance 0.82, credibility 0.50")

    # A report stored before scores: its sources read back unscored, listed without numbers.
    for source in sources:
        del source["relevance_score"], source["credibility_score"]
    old = report_from_json(report.question, report.title, sections, sources, texts)
    assert old.scores == {} and "relevance" not in report_markdown(old)
