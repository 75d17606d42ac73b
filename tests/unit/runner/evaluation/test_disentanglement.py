"""The disentanglement metrics on hand-made examples whose values are worked out by hand, and
the `digestd eval` section on the real dev split (skipped when ../shared/data is absent)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.evaluation import disentanglement_metrics as metrics
from runner.evaluation.disentanglement import TITLE, evaluate_disentanglement, score_dev
from runner.evaluation.disentanglement_metrics import Prf
from server.cli_eval import OPTIONAL_SECTIONS
from tests.support.paths import shared_data


def test_link_precision_and_recall_count_every_gold_parent() -> None:
    gold = {5: {5}, 6: {5}, 7: {5, 6}}  # 7 answers both 5 and 6
    predicted = {5: {5}, 6: {5}, 7: {6}}
    counts = metrics.link_prf(gold, predicted)
    assert counts == Prf(matched=3, predicted=3, gold=4)
    assert counts.precision == 1.0 and counts.recall == 0.75
    assert counts.f1 == pytest.approx(2 * 0.75 / 1.75)


def test_links_from_parents_self_links_starts_and_skips_context() -> None:
    links = metrics.links_from_parents([None, 0, None, 1, 3], first_scored=2)
    assert links == {2: {2}, 3: {1}, 4: {3}}


def test_conversations_join_through_context_but_keep_only_scored_messages() -> None:
    # 10 and 12 both answer context message 3, so they share a conversation; 3 is not scored.
    links = {10: {3}, 11: {11}, 12: {3}, 13: {11}}
    assert metrics.conversations(links) == [frozenset({10, 12}), frozenset({11, 13})]


def test_merged_conversations_score_half_on_vi_and_one_to_one() -> None:
    gold = [frozenset({1, 2}), frozenset({3, 4})]
    predicted = [frozenset({1, 2, 3, 4})]
    # H(G) = 1 bit, H(P) = 0, H(G, P) = 1: VI = 2*1 - 1 - 0 = 1; scaled by log2(4) = 2.
    assert metrics.variation_of_information([(gold, predicted)]) == pytest.approx(0.5)
    assert metrics.one_to_one_overlap(gold, predicted) == 2
    assert metrics.exact_match(gold, predicted) == Prf(0, 1, 2)


def test_identical_clusterings_score_one() -> None:
    gold = [frozenset({1, 2, 3}), frozenset({4}), frozenset({5, 6})]
    assert metrics.variation_of_information([(gold, list(gold))]) == pytest.approx(1.0)
    assert metrics.one_to_one_overlap(gold, list(gold)) == 6
    # The single-message conversation is left out of exact match, as in the paper.
    assert metrics.exact_match(gold, list(gold)) == Prf(2, 2, 2)


def test_vi_pools_logs() -> None:
    # Two logs, each a perfect split of 2 into 1+1 predicted as one: pooled n = 4.
    log = ([frozenset({1}), frozenset({2})], [frozenset({1, 2})])
    # Pooled: H(G) = 2 bits, H(P) = 1 bit, H(G, P) = 2 bits: VI = 4 - 2 - 1 = 1.
    assert metrics.variation_of_information([log, log]) == pytest.approx(1 - 1 / math.log2(4))


def test_one_to_one_is_optimal_where_greedy_is_not() -> None:
    gold = [frozenset({1, 2, 3, 4, 5}), frozenset({6, 7})]
    predicted = [frozenset({1, 2, 3, 6, 7}), frozenset({4, 5})]
    # Greedy takes the 3-message overlap first and ends with 3; pairing crosswise gives 2 + 2.
    assert metrics.one_to_one_overlap(gold, predicted) == 4


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 9), min_size=3, max_size=3), min_size=1, max_size=3))
def test_assignment_matches_brute_force(rows: list[list[int]]) -> None:
    best = max(
        sum(rows[r][c] for r, c in enumerate(columns))
        for columns in itertools.permutations(range(3), len(rows))
    )
    assert metrics._max_assignment(rows) == best


def test_eval_wires_the_section() -> None:
    assert ("runner.evaluation.disentanglement", "evaluate_disentanglement") in OPTIONAL_SECTIONS


def test_dev_section_and_the_model_beats_both_baselines() -> None:
    data_dir = shared_data("chat/ubuntu_irc_disentanglement/dev").parents[2]
    section = evaluate_disentanglement(data_dir)  # the product path: tests/integration
    assert section.title == TITLE
    records = [dict(zip(section.columns, row, strict=True)) for row in section.rows]
    assert [(r["logs"], r["system"]) for r in records][:3] == [
        ("dev", "link model"),
        ("dev", "previous (baseline)"),
        ("dev", "Lowe et al. 2017 (baseline)"),
    ]
    model, *baselines = score_dev(data_dir)
    assert model.links.gold == 2607  # 10 logs x 250 annotated messages, some with 2 parents
    # The disentanglement goals: link F1 >= 0.70 (met: 0.709, the feed-forward model, see
    # docs/quality.md) and exact F1 >= 0.30 (met: 0.363).
    assert model.links.f1 >= 0.70 and model.exact.f1 >= 0.30
    for baseline in baselines:
        assert model.links.f1 > baseline.links.f1
        assert model.vi > baseline.vi and model.one_to_one > baseline.one_to_one
        assert model.exact.f1 > baseline.exact.f1
    # The paper's "previous" baseline makes one conversation of the channel (test split: VI
    # 66.1, 1-1 27.6, exact 0); our reimplementation agrees on dev.
    previous = baselines[0]
    assert previous.exact.matched == 0 and 0.6 < previous.vi < 0.7
