"""An offline report across two real channels and one real PDF (../shared/data): contiguous
footnotes, each quote the exact characters at its locator, every sentence citing and supported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_offline_helpers import DATA, parse_gitter, parse_irc

from runner.claim_support import DEFAULT_MIN_OVERLAP, support_share
from runner.documents.ingest import ingest_bytes
from runner.documents.locators import resolve_locator
from runner.reports.audit import accept_sentences, audit_marked
from runner.reports.evidence import ChannelMessage, DocumentText, gather_evidence, rank_evidence
from runner.reports.extractive import write_extractive_report
from runner.reports.report import marked_sentence, report_markdown
from runner.reports.sources import DocumentSource, MessageSource
from runner.window import Window

QUESTION = (
    "How do people get help with Docker containers and Ubuntu, and how are chat conversations "
    "disentangled?"
)


def _require(relative: str) -> Path:
    path = DATA / relative
    if not path.exists():
        pytest.skip(f"../shared/data/{relative} is absent (real data lives beside the repo)")
    return path


def _messages(window: Window) -> list[ChannelMessage]:
    return [
        ChannelMessage(window.channel_name, m.message_id, 1, m.author, m.ts, m.normalized_text)
        for m in window.messages
    ]


def test_offline_report_across_two_channels_and_a_pdf() -> None:
    docker = parse_gitter(_require("chat/gitter/manual_docker.txt"), "docker")
    ubuntu = parse_irc(_require("chat/ubuntu_irc/2010-08-17_18.raw.txt"))
    pdf = ingest_bytes(_require("docs/pdf/acl19irc.pdf").read_bytes(), "application/pdf")
    document = DocumentText(
        "1", "acl19irc.pdf", pdf.canonical_text, pdf.source_text_hash, pdf.page_spans
    )
    units = gather_evidence([_messages(docker), _messages(ubuntu)], [document])
    draft = write_extractive_report(QUESTION, rank_evidence(QUESTION, units))
    report, audit = accept_sentences(draft)

    assert audit.dropped == 0 and audit.coverage == 1.0 and audit.problems == []
    assert report.sections[0].heading == "Answer" and report.sections[0].sentences
    registry = report.registry()
    origins = {
        f"#{s.channel}" if isinstance(s, MessageSource) else s.document_id for _, s in registry
    }
    assert origins == {"#docker", f"#{ubuntu.channel_name}", "1"}

    # Every stored sentence: at least one citation, resolving and supporting it.
    for sentence in report.sentences():
        assert sentence.sources
        share = support_share(sentence.sentence, [s.supporting_text for s in sentence.sources])
        assert share is not None and share >= DEFAULT_MIN_OVERLAP
    marked = [marked_sentence(s, registry) for s in report.sentences()]
    assert audit_marked(marked, registry) == []

    # Footnotes: contiguous from 1, in order of first reference, each source once.
    markdown = report_markdown(report)
    definitions = re.findall(r"^\[\^(\d+)\]: ", markdown, re.M)
    assert definitions == [str(n) for n in range(1, len(registry) + 1)]
    body = markdown.split("\n[^1]: ", 1)[0]
    first_seen = list(dict.fromkeys(re.findall(r"\[\^(\d+)\]", body)))
    assert first_seen == definitions

    # Each quote is exactly the characters at its locator (or message span).
    for _, source in registry:
        if isinstance(source, DocumentSource):
            start, end = resolve_locator(source.locator, pdf.canonical_text, pdf.page_spans)
            assert pdf.canonical_text[start:end] == source.quote
        else:
            assert source.text[source.char_start : source.char_end] == source.quote
        assert source.quote.strip() and f'"{" ".join(source.quote.splitlines())}"' in markdown
