"""Leave-one-source-out: source families from window paths, the split by source, the held-out
model seeing no window of its source, the per-kind aggregation, and the mode choice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runner.core.window import Window, WindowMessage
from runner.evaluation.gold import GoldFile
from runner.evaluation.item_data import (
    LabelledWindow,
    positive_ids,
    source_of,
    training_examples,
    window_examples,
)
from runner.evaluation.loso import (
    RULES,
    LosoEvaluation,
    WindowRuns,
    choose_modes,
    config_name,
    loso_rows,
    scope_counts,
    shipped_counts,
    split_by_source,
)
from runner.evaluation.matching import SCORED_FIELDS
from runner.evaluation.scoring import Counts
from runner.extract.offline.item_model import Example


def gold(root: str, path: str, **items: object) -> GoldFile:
    return GoldFile.model_validate(
        {
            "format": "digestd-gold/1",
            "name": path,
            "window": {
                "root": root,
                "path": path,
                "channel": "c",
                "first_message_id": "a",
                "last_message_id": "b",
                "message_count": 2,
            },
            "annotator": "t",
            **items,
        }
    )


def test_source_is_the_family_folder_of_the_path() -> None:
    assert source_of(gold("repo", "runner/samples/sample_channel.jsonl")) == "sample"
    assert source_of(gold("data", "chat/gitter/manual_docker.txt")) == "gitter"
    assert source_of(gold("data", "chat/discord/x.csv")) == "discord"
    # The same #ubuntu channel, two collections: one family, so neither trains the other.
    assert source_of(gold("data", "chat/ubuntu_irc/2010.txt")) == "ubuntu"
    assert source_of(gold("data", "chat/ubuntu_irc_disentanglement/train/a.txt")) == "ubuntu"
    assert source_of(gold("data", "meetings/qmsum/x.json")) == "qmsum"
    assert source_of(gold("data", "loose.txt")) == "loose.txt"


def test_split_by_source_keeps_first_seen_order() -> None:
    pairs = [("w1", "irc"), ("w2", "gitter"), ("w3", "irc")]
    assert split_by_source(pairs) == {"irc": ["w1", "w3"], "gitter": ["w2"]}


def example(*labels: str) -> Example:
    return Example({"x": 1.0}, frozenset(labels))


def test_training_examples_leave_the_held_out_source_out() -> None:
    windows = [
        LabelledWindow("a", "irc", [example("decisions")]),
        LabelledWindow("b", "gitter", [example(), example()]),
        LabelledWindow("c", "irc", [example()]),
    ]
    assert len(training_examples(windows, None)) == 4
    assert len(training_examples(windows, "irc")) == 2
    assert all(not e.labels for e in training_examples(windows, "irc"))
    assert len(training_examples(windows, "gitter")) == 2


def runs(
    name: str, source: str, real: bool, per_config: dict[str, dict[str, Counts]]
) -> WindowRuns:
    counts = {
        config: {f: per_config.get(config, {}).get(f, Counts()) for f in SCORED_FIELDS}
        for config in (RULES, "filter/in", "filter/out", "propose/in", "propose/out")
    }
    return WindowRuns(name, source, real, counts)


def test_shipped_counts_take_each_kind_from_its_mode() -> None:
    window = runs(
        "w",
        "irc",
        True,
        {
            RULES: {"decisions": Counts(2, 2, 0), "links": Counts(1, 1, 1)},
            "filter/in": {"decisions": Counts(2, 1, 1)},
            "filter/out": {"decisions": Counts(2, 1, 0)},
        },
    )
    modes = {"decisions": "filter"}
    assert shipped_counts(window, modes, False)["decisions"] == Counts(2, 1, 1)
    assert shipped_counts(window, modes, True)["decisions"] == Counts(2, 1, 0)
    assert shipped_counts(window, modes, True)["links"] == Counts(1, 1, 1)  # rules, untrained
    assert shipped_counts(window, {}, True)["decisions"] == Counts(2, 2, 0)
    assert config_name("rules", True) == RULES and config_name("propose", False) == "propose/in"


def test_scope_counts_micro_sum_and_overall() -> None:
    a = runs("a", "irc", True, {RULES: {"decisions": Counts(1, 1, 1), "links": Counts(2, 2, 2)}})
    b = runs("b", "gitter", True, {RULES: {"decisions": Counts(3, 1, 0)}})
    assert scope_counts([a, b], "decisions", lambda r: r.counts[RULES]) == Counts(4, 2, 1)
    assert scope_counts([a, b], "overall", lambda r: r.counts[RULES]) == Counts(6, 4, 3)


def test_rows_per_source_then_totals_and_untrained_kinds_say_so() -> None:
    a = runs(
        "a",
        "irc",
        True,
        {
            RULES: {"decisions": Counts(2, 2, 0), "links": Counts(1, 1, 1)},
            "filter/in": {"decisions": Counts(2, 2, 2)},
            "filter/out": {"decisions": Counts(2, 2, 1)},
        },
    )
    b = runs("b", "sample", False, {RULES: {"decisions": Counts(2, 2, 2)}})
    rows = loso_rows(LosoEvaluation([a, b], {"decisions": "filter"}))
    table = {(row[0], row[1]): row for row in rows}
    assert [row[0] for row in rows][:: len(SCORED_FIELDS) + 1] == [
        "irc",
        "sample",
        "all sources",
        "real-data sources",
    ]
    irc = table[("irc", "decisions")]
    assert irc[2:6] == [2, 0.0, 1.0, 0.5]  # gold, rules, filter in, filter out
    assert irc[8:] == ["filter", 1.0, 0.5]  # shipped mode, in-sample, held out
    links = table[("irc", "links")]
    assert links[4:8] == ["not trained", "= in-sample", "not trained", "= in-sample"]
    assert links[9] == links[10] == 1.0  # held-out equals in-sample for rule-based fields
    assert table[("real-data sources", "decisions")][2] == 2  # the sample is not real data
    assert table[("all sources", "overall")][8] == "per kind"


def test_choose_modes_needs_a_model_to_beat_the_rules_on_real_windows() -> None:
    real = runs(
        "a",
        "irc",
        True,
        {
            RULES: {
                "decisions": Counts(12, 12, 6),
                "open_questions": Counts(12, 12, 6),
                "action_items": Counts(4, 4, 1),
            },
            "filter/out": {
                "decisions": Counts(12, 8, 6),
                "open_questions": Counts(12, 12, 6),
                "action_items": Counts(4, 2, 2),  # far better, but on four items
            },
            "propose/out": {"decisions": Counts(12, 24, 6), "open_questions": Counts(12, 12, 5)},
        },
    )
    # The sample would favour proposing; it does not count while real windows exist.
    sample = runs("s", "sample", False, {"propose/out": {"decisions": Counts(50, 50, 50)}})
    modes = choose_modes([real, sample])
    assert modes["decisions"] == "filter"
    assert modes["open_questions"] == "rules"  # a tie keeps the rules
    assert modes["action_items"] == "rules"  # too few gold items to say


def test_positives_are_cited_messages_close_to_the_item() -> None:
    g = gold(
        "data",
        "chat/gitter/x.txt",
        decisions=[{"text": "use postgres 17 for staging", "message_ids": ["a", "b"]}],
        open_questions=[{"text": "why does the build hang", "message_ids": ["b"]}],
    )
    texts = {"a": "ok let's use postgres 17 on staging", "b": "+1"}
    positives = positive_ids(g, texts)
    assert positives["decisions"] == {"a"}  # "+1" agrees but could not match the text
    assert positives["open_questions"] == {"b"}  # no cited message is close: the closest
    assert positives["action_items"] == set()


def test_window_examples_label_each_message() -> None:
    g = gold(
        "data",
        "chat/gitter/x.txt",
        decisions=[{"text": "use postgres 17 for staging", "message_ids": ["a"]}],
    )
    start = datetime(2024, 1, 1, tzinfo=UTC)
    window = Window(
        "c",
        (
            WindowMessage("a", "ana", start, "ok let's use postgres 17 on staging"),
            WindowMessage("b", "bo", start + timedelta(seconds=5), "agreed"),
        ),
    )
    examples = window_examples(g, window)
    assert [sorted(e.labels) for e in examples] == [["decisions"], []]
    assert examples[1].features["agreement_after"] == 0.0
    assert examples[0].features["agreement_after"] == 1.0
