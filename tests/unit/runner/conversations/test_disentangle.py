"""The disentanglement core on plain data: explicit structure first, then the link model on
small made-up channels whose answer a person sees at once (names from the authors seen, not
from any list), and the conversations as connected components."""

from __future__ import annotations

from datetime import UTC, datetime

from runner.conversations.disentangle import (
    Message,
    disentangle,
    explicit_parents,
    link,
    link_records,
)
from runner.conversations.disentangle.api import components
from runner.conversations.disentangle.baselines import lowe_links, previous_links
from runner.conversations.disentangle.features import (
    NAMES,
    ChannelState,
    candidates,
    option_features,
)
from runner.conversations.disentangle.model import HiddenLayer, LinkModel, default_model
from runner.conversations.threads import ThreadedMessage, thread_messages


def say(author: str, minute: float, text: str, reply_to: int | None = None) -> Message:
    return Message(author=author, ts=minute * 60, text=text, reply_to=reply_to)


def join(minute: float) -> Message:
    return Message(author="", ts=minute * 60, text="carol has joined", system=True)


# Two conversations interleaved: alice/bob on printers, dave/erin on a build.
INTERLEAVED = [
    say("alice", 0, "my printer stopped working after the upgrade, any idea?"),
    say("dave", 0.5, "does anyone know why the nightly build fails on arm64?"),
    say("bob", 1, "alice: which driver does the printer use?"),
    say("erin", 1.5, "dave: the arm64 runners ran out of disk, I'm cleaning them"),
    say("alice", 2, "bob: the cups driver, the generic one"),
    say("dave", 2.5, "erin: thanks, I'll retry the build later"),
    say("bob", 3, "alice: try the vendor driver instead of the generic cups one"),
]


def test_addressing_by_name_untangles_two_conversations() -> None:
    result = disentangle(INTERLEAVED)
    assert result.parents[2] == 0 and result.parents[4] == 2 and result.parents[6] == 4
    assert result.parents[3] == 1 and result.parents[5] == 3
    assert result.conversations == [[0, 2, 4, 6], [1, 3, 5]]
    assert result.conversation_of == [0, 1, 0, 1, 0, 1, 0]


def test_slack_style_mentions_and_abbreviated_nicks_address_an_earlier_author() -> None:
    channel = [
        say("Nafallo", 0, "hdparm -S sets the spin-down timeout"),
        say("blocke", 0.2, "is anyone else seeing the disk spin down after one second?"),
        say("someone", 0.4, "good morning all"),
        say("blocke", 1, "nafa: where does ubuntu set that by default?"),
        say("maria", 1.2, "@someone: morning!"),
    ]
    state = ChannelState()
    addressed = []
    for message in channel:
        addressed.append(state.read(message).addressed)
        state.commit(None)
    assert addressed == [None, None, None, "nafallo", "someone"]
    parents = link(channel)
    assert parents[3] == 0 and parents[4] == 2


def test_a_sigil_before_a_name_still_names_the_author() -> None:
    state = ChannelState()
    for message in [
        say("halgeir", 0, "how do I install a .deb I downloaded?"),
        say("bitmastro", 1, "#halgeir sudo dpkg -i package.deb"),
    ]:
        seen = state.read(message)
        state.commit(None)
    assert seen.mentions == {"halgeir"}


def test_thanks_goes_to_the_helper_not_to_the_latest_message() -> None:
    channel = [
        say("alice", 0, "how do I mount an iso image from the terminal?"),
        say("bob", 0.3, "anyone tried the new gnome release yet?"),
        say("carol", 1, "alice: sudo mount -o loop image.iso /mnt"),
        say("dave", 1.2, "bob: yes, it is fast"),
        say("alice", 2, "thanks, that worked"),
    ]
    assert link(channel)[4] == 2


def test_explicit_reply_wins_over_the_model() -> None:
    channel = [*INTERLEAVED, say("erin", 4, "alice: unrelated, but see the wiki", reply_to=1)]
    assert link(channel)[-1] == 1


def test_system_notices_answer_nothing_and_are_never_answered() -> None:
    channel = [
        say("alice", 0, "anyone around?"),
        join(0.1),
        say("bob", 0.2, "alice: yes, what is up?"),
    ]
    parents = link(channel)
    assert parents[1] is None and parents[2] == 0


def test_a_long_silence_starts_a_new_conversation() -> None:
    channel = [
        say("alice", 0, "how do I list open ports?"),
        say("bob", 0.5, "alice: ss -tlnp"),
        say("carol", 600, "has anyone tried the new kernel on a thinkpad x230?"),
    ]
    assert link(channel)[2] is None


def test_a_candidate_has_the_same_features_asked_alone_or_with_the_others() -> None:
    # Per-message and per-conversation facts are looked up once for all candidates: none may
    # leak from one candidate into another's list (the model sums each list in its order).
    channel = [
        *INTERLEAVED,
        join(3.2),
        say("alice", 3.5, "bob: thanks, the vendor driver works"),
        say("erin", 4, "dave: disk is clean, retry the arm64 build?"),
        say("bob", 4.2, "alice: great"),
        say("frank", 5, "is the nightly build for arm64 green again?"),
        say("dave", 5.5, "frank: yes, erin cleaned the runners"),
        say("erin", 6, "thanks dave"),
    ]
    parents = link(channel)
    state = ChannelState()
    compared = 0
    for index, message in enumerate(channel):
        state.read(message)
        found = candidates(state, index)
        together = option_features(state, index, found)
        assert together == [option_features(state, index, [c])[0] for c in found]
        compared += len(found)
        state.commit(parents[index])
    assert compared > 50


def test_explicit_parents_follow_threads_and_replies() -> None:
    ids = ["t1", "m2", "r3", "r4", "d5", "r6"]
    # r3 and r4 reply in thread t1 (Slack thread_ts names the root); d5 replies to m2 (Discord);
    # r6 replies to a thread whose root is outside the window ("t0").
    reply_to = [None, None, "t1", "t1", "m2", "t0"]
    assert explicit_parents(ids, reply_to) == [None, None, 0, 2, 1, None]


def test_components_follow_parents() -> None:
    groups, conversation_of = components([None, None, 0, 1, 2, None])
    assert groups == [[0, 2, 4], [1, 3], [5]]
    assert conversation_of == [0, 1, 0, 1, 0, 2]


def test_an_empty_model_starts_a_conversation_at_every_message() -> None:
    assert link(INTERLEAVED, LinkModel({})) == [None] * len(INTERLEAVED)


def test_a_silent_hidden_layer_links_as_the_linear_part_alone() -> None:
    linear = default_model().weights
    weights = dict(zip(NAMES, linear, strict=True))
    silent = HiddenLayer({name: [0.3, -0.2] for name in NAMES}, [0.1, 0.0], [0.0, 0.0])
    assert link(INTERLEAVED, LinkModel(weights, silent)) == link(INTERLEAVED, LinkModel(weights))


def test_a_hidden_unit_can_overrule_the_linear_part() -> None:
    # Linear part empty (every option scores 0: all start conversations); one unit that fires on
    # "self" with a negative output makes every candidate beat "starts a conversation".
    unit = HiddenLayer({"self": [5.0]}, [0.0], [-1.0])
    parents = link(INTERLEAVED, LinkModel({}, unit))
    assert parents[0] is None  # no candidate at all
    assert all(parent == index - 1 for index, parent in enumerate(parents) if index)


def test_the_shipped_weights_are_learned() -> None:
    model = default_model()
    assert model.hidden is not None and len(model.hidden.biases) == 32  # the feed-forward model

    def score(*names: str) -> float:
        return float(model.scores([[NAMES.index(name) for name in names]])[0])

    # What a reader expects from the training data, through the whole (nonlinear) score: naming
    # the candidate's author weighs more than naming someone else, and nearer candidates weigh
    # more than far ones.
    named = score("dist1", "gap0", "addresses_cand_latest", "addresses_cand_latest@1")
    other = score("dist1", "gap0", "addresses_other", "addresses_other@1")
    assert named > other + 1
    assert score("dist1", "gap0") > score("dist5", "gap0") > score("dist10", "gap0")


def test_baselines() -> None:
    channel = [say("a", 0, "x"), join(0.1), say("b", 0.2, "y"), say("a", 0.3, "b: z")]
    assert previous_links(channel) == [None, None, 0, 2]
    # Lowe: "b: z" answers b's latest; b's "y" was unaddressed with no exchange: a start.
    assert lowe_links(channel) == [None, None, None, 2]


def test_link_records_is_a_linker_for_stored_conversations() -> None:
    threaded = [
        ThreadedMessage(f"m{i}", m.author, datetime.fromtimestamp(m.ts, UTC), m.text)
        for i, m in enumerate(INTERLEAVED)
    ]
    threaded.append(ThreadedMessage("m7", "erin", threaded[-1].ts, "see the wiki", reply_to="m1"))
    assert link_records(threaded) == [*link(INTERLEAVED), 1]
    threading = thread_messages(threaded, {}, link_records)
    assert len(threading.conversations) == 2
