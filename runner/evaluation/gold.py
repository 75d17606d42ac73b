"""Gold files: the hand annotations of one chat window (format in docs/gold-set/GUIDELINE.md).

A gold file names its window (a file and the first and last message ids, in the importer's
order) and lists what a careful reader marks in it. The data itself is never copied into the
repository: real windows point into ../shared/data by path and message id.
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runner.core.contract import ArtifactKind

GOLD_FORMAT = "digestd-gold/1"
FULL_QUOTE_LIMIT = 160  # longer spans are stored as head + tail + sha256
QUOTE_EDGE = 40


class GoldModel(BaseModel):
    """Unknown keys are an error: a typo in an annotation must fail loudly, not be ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class WindowRoot(str, Enum):
    REPO = "repo"  # a file in this repository (the sample channel)
    DATA = "data"  # a file under the shared data directory (../shared/data)


class GoldWindow(GoldModel):
    root: WindowRoot
    path: str = Field(min_length=1, description="Relative to the root.")
    channel: str = Field(min_length=1)
    first_message_id: str = Field(min_length=1)
    last_message_id: str = Field(min_length=1)
    message_count: int = Field(ge=1, description="Checked on load: catches a changed importer.")


class GoldTopic(GoldModel):
    title: str = Field(min_length=1, max_length=120)
    message_ids: list[str] = Field(min_length=1)


class GoldDecision(GoldModel):
    text: str = Field(min_length=1)
    message_ids: list[str] = Field(min_length=1)


class GoldActionItem(GoldModel):
    text: str = Field(min_length=1)
    owner: str | None = None
    message_ids: list[str] = Field(min_length=1)


class GoldQuestion(GoldModel):
    text: str = Field(min_length=1)
    asked_by: str | None = None
    message_ids: list[str] = Field(min_length=1)


class GoldLink(GoldModel):
    url: str = Field(min_length=1)
    message_ids: list[str] = Field(min_length=1)


class GoldArtifact(GoldModel):
    """A verbatim span of one message's normalized text, checkable against the data.

    Short spans carry the whole `quote`. Long ones (over `FULL_QUOTE_LIMIT` characters) carry
    only `quote_head`, `quote_tail` and the `quote_sha256` of the exact slice: still checked
    character for character, without copying large parts of third-party logs (some have no
    licence to redistribute) into this repository."""

    kind: ArtifactKind
    title: str = Field(min_length=1)
    message_id: str = Field(min_length=1)
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=1)
    quote: str | None = Field(default=None, min_length=1, max_length=FULL_QUOTE_LIMIT)
    quote_head: str | None = Field(default=None, min_length=1, max_length=QUOTE_EDGE)
    quote_tail: str | None = Field(default=None, min_length=1, max_length=QUOTE_EDGE)
    quote_sha256: str | None = Field(default=None, pattern="^[0-9a-f]{64}$")

    @model_validator(mode="after")
    def _one_quote_form(self) -> Self:
        if self.char_end <= self.char_start:
            raise ValueError("char_end must be greater than char_start")
        digest_form = (self.quote_head, self.quote_tail, self.quote_sha256)
        if self.quote is not None:
            if any(part is not None for part in digest_form):
                raise ValueError("give either quote or quote_head/quote_tail/quote_sha256")
            if self.char_end - self.char_start != len(self.quote):
                raise ValueError("char_end - char_start must equal len(quote)")
        elif any(part is None for part in digest_form):
            raise ValueError("give quote, or all of quote_head, quote_tail and quote_sha256")
        return self

    def quotes(self, sliced: str) -> bool:
        """Is `sliced` (normalized_text[char_start:char_end]) exactly this span's text?"""
        if self.quote is not None:
            return sliced == self.quote
        assert self.quote_head and self.quote_tail and self.quote_sha256
        return (
            sliced.startswith(self.quote_head)
            and sliced.endswith(self.quote_tail)
            and hashlib.sha256(sliced.encode("utf-8")).hexdigest() == self.quote_sha256
        )

    @property
    def label(self) -> str:
        """The quote, or its head and tail around an ellipsis."""
        return self.quote or f"{self.quote_head}…{self.quote_tail}"


class GoldFile(GoldModel):
    format: str
    name: str = Field(min_length=1)
    window: GoldWindow
    annotator: str = Field(min_length=1)
    notes: str = ""
    topics: list[GoldTopic] = Field(default_factory=list)
    decisions: list[GoldDecision] = Field(default_factory=list)
    action_items: list[GoldActionItem] = Field(default_factory=list)
    open_questions: list[GoldQuestion] = Field(default_factory=list)
    links: list[GoldLink] = Field(default_factory=list)
    artifacts: list[GoldArtifact] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_format(self) -> Self:
        if self.format != GOLD_FORMAT:
            raise ValueError(f"format must be {GOLD_FORMAT!r}, not {self.format!r}")
        return self

    def cited_message_ids(self) -> set[str]:
        """Every message id the annotations cite (each must exist in the window)."""
        cited: set[str] = set()
        for decision in self.decisions:
            cited.update(decision.message_ids)
        for action in self.action_items:
            cited.update(action.message_ids)
        for question in self.open_questions:
            cited.update(question.message_ids)
        for topic in self.topics:
            cited.update(topic.message_ids)
        for link in self.links:
            cited.update(link.message_ids)
        cited.update(artifact.message_id for artifact in self.artifacts)
        return cited


class GoldFileError(ValueError):
    """A gold file that cannot be read or does not follow the format; names the file."""


def load_gold_file(path: Path) -> GoldFile:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return GoldFile.model_validate(data)
    except (OSError, json.JSONDecodeError, ValidationError) as error:
        raise GoldFileError(f"{path}: {error}") from None


def load_gold_dir(directory: Path) -> list[tuple[Path, GoldFile]]:
    """Every `*.json` gold file of `directory`, sorted by file name (a stable report order)."""
    if not directory.is_dir():
        raise GoldFileError(f"{directory} is not a directory")
    files = sorted(directory.glob("*.json"))
    if not files:
        raise GoldFileError(f"{directory} holds no *.json gold file")
    return [(path, load_gold_file(path)) for path in files]
