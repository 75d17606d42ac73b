"""The citation audit of document digests: `DocumentDigest.claims` (each summary sentence and key
point with the evidence snippets that support it) and `citationAudit` (the channel digest's type:
kept, dropped and why, cited), on a real PDF digested offline and on a real HTML page digested by a
fake OpenAI-compatible model that invents a key point."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import httpx

from runner.documents.claim_audit import (
    document_citation_audit,
    document_claims,
    summary_sentences,
)
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP, support_share
from runner.llm.fake import FakeLLM, completion
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql
from tests.support.documents import (
    INGEST,
    PDF_FILE,
    digest_for,
    quoting_digest,
    run_job,
    upload,
)
from tests.support.paths import shared_data
from tests.support.servers import running_server

AUDITED = """query($id: ID!) { documentDigest(id: $id) {
  summary keyPoints evidenceSnippets { text } warnings { code }
  claims { field text evidence support }
  citationAudit { sentencesKept sentencesDropped overviewCitedShare titleReplaced
    fields { field proposed kept cited } reasons { reason count } } } }"""
INVENTED = "Quarterly banana tariffs doubled submarine ticket prices across Antarctica."


def test_a_claim_cites_the_snippets_that_hold_its_words_and_drops_come_from_warnings() -> None:
    snippets = [
        "The worker retries the batch fetch three times with exponential backoff.",
        "Alerts fire when the p99 latency of the upstream API exceeds 30 seconds.",
    ]
    summary = "The worker retries the batch fetch three times. Nobody mentioned lunch menus today."
    claims = document_claims(
        summary, ["Alerts fire above 30 seconds of p99 latency.", "the"], snippets
    )
    assert [(c.field, c.text, c.evidence) for c in claims] == [
        ("summary", "The worker retries the batch fetch three times.", (0,)),
        ("summary", "Nobody mentioned lunch menus today.", ()),
        ("key_points", "Alerts fire above 30 seconds of p99 latency.", (1,)),
        ("key_points", "the", ()),
    ]
    assert claims[0].support == 1.0 and claims[1].support == 0.0 and claims[3].support is None
    warnings = [{"code": "unsupported_key_point", "message": "..."}] * 2 + [
        {"code": "no_query_match"}
    ]
    audit = document_citation_audit(claims, warnings)
    assert audit == {
        "fields": {
            "summary": {"proposed": 2, "kept": 2, "cited": 1},
            "key_points": {"proposed": 4, "kept": 2, "cited": 1},
        },
        "overview_cited_share": 0.5,
        "reasons": {"unsupported_key_point": 2},
        "title_replaced": False,
    }
    empty = document_citation_audit(document_claims("", [], snippets), [])
    assert empty["overview_cited_share"] is None and empty["fields"]["summary"]["kept"] == 0


def assert_claims_match(digest: dict[str, Any]) -> None:
    """The claims are the summary's sentences then the key points; each cited snippet holds at
    least half of the claim's words, and no uncited snippet does."""
    claims = digest["claims"]
    expected = [("summary", s) for s in summary_sentences(digest["summary"])]
    expected += [("key_points", p) for p in digest["keyPoints"]]
    assert [(c["field"], c["text"]) for c in claims] == expected
    snippets = [s["text"] for s in digest["evidenceSnippets"]]
    for claim in claims:
        shares = [support_share(claim["text"], [text]) for text in snippets]
        supporting = [
            i
            for i, share in enumerate(shares)
            if share is not None and share >= DEFAULT_MIN_OVERLAP
        ]
        assert claim["evidence"] == supporting, claim


async def test_offline_digest_of_a_real_pdf_shows_which_claims_cite_evidence(
    client: httpx.AsyncClient,
) -> None:
    pdf = (await gql(client, INGEST, {"input": upload(shared_data(PDF_FILE))}))["ingestDocument"]
    _job, read = await digest_for(client, pdf["id"], "How are IRC conversations disentangled?")
    digest = (await gql(client, AUDITED, {"id": read["id"]}))["documentDigest"]
    assert_claims_match(digest)
    claims, audit = digest["claims"], digest["citationAudit"]
    by_field = {f["field"]: f for f in audit["fields"]}
    sentences = [c for c in claims if c["field"] == "summary"]
    points = [c for c in claims if c["field"] == "key_points"]
    assert by_field["summary"] == {
        "field": "summary",
        "proposed": len(sentences),
        "kept": len(sentences),
        "cited": sum(1 for c in sentences if c["evidence"]),
    }
    assert by_field["key_points"] == {
        "field": "key_points",
        "proposed": len(points),
        "kept": len(points),
        "cited": sum(1 for c in points if c["evidence"]),
    }
    # The offline summarizer copies sentences verbatim and drops nothing.
    assert audit["sentencesKept"] == len(claims) and audit["sentencesDropped"] == 0
    assert audit["reasons"] == [] and audit["titleReplaced"] is False
    assert audit["overviewCitedShare"] == round(by_field["summary"]["cited"] / len(sentences), 4)
    # The query's best sentences are in the evidence: some claims cite it (not necessarily all:
    # the offline summary opens with the document's first sentence, wherever the evidence is).
    assert points and any(c["evidence"] for c in claims), claims
    print(f"offline acl19irc digest audit: {audit}")


async def test_a_key_point_the_model_invented_is_dropped_and_counted_with_its_reason(
    db: asyncpg.Pool, settings: Settings
) -> None:
    def respond(body: dict[str, Any]) -> Any:
        """The quoting answer with one invented key point added."""
        (call,) = quoting_digest(body)["choices"][0]["message"]["tool_calls"]
        arguments = json.loads(call["function"]["arguments"])
        arguments["key_points"].append(INVENTED)
        return completion(tool="emit_document_digest", arguments=arguments)

    fake = FakeLLM(respond)
    async with fake.serve() as base_url:
        llm = settings.model_copy(
            update={
                "digest_extractor": "llm",
                "digest_llm_base_url": base_url,
                "digest_llm_max_retries": 0,
            }
        )
        app = create_app(llm, AppOptions(run_workers=1))
        async with running_server(app) as api, httpx.AsyncClient(base_url=api, timeout=60) as http:
            source = upload(shared_data("docs/html/readability/wikipedia/source.html"), "text/html")
            document = (await gql(http, INGEST, {"input": source}))["ingestDocument"]
            job = await run_job(http, document["id"], "Which products does Mozilla make?")
            assert job["status"] == "SUCCEEDED" and len(fake.requests) == 1, job
            digest = (await gql(http, AUDITED, {"id": job["documentDigestId"]}))["documentDigest"]
    assert INVENTED not in digest["keyPoints"]
    assert [w["code"] for w in digest["warnings"]].count("unsupported_key_point") == 1
    assert_claims_match(digest)
    audit = digest["citationAudit"]
    by_field = {f["field"]: f for f in audit["fields"]}
    kept = len(digest["keyPoints"])
    assert by_field["key_points"]["proposed"] == kept + 1 and by_field["key_points"]["kept"] == kept
    assert audit["reasons"] == [{"reason": "unsupported_key_point", "count": 1}]
    assert audit["sentencesDropped"] == 1
