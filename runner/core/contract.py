"""The extraction contract: what the map step (`emit_chunk_summary`) and the reduce step
(`emit_digest`) return. These Pydantic models are the single source of truth; the tool JSON
schemas sent to an LLM are generated from them (`tool_schema`), and every extractor's output is
parsed into them before validation.

Message ids are strings everywhere: Discord snowflakes overflow JavaScript numbers.
"""

from __future__ import annotations

import functools
import json
from enum import Enum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

CONTRACT_VERSION = "2.0"


class StrictModel(BaseModel):
    """Unknown fields are an error: a model that invents fields gets a re-ask, not silence."""

    model_config = ConfigDict(extra="forbid")


class SignalLevel(str, Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    EMPTY = "empty"


class SignalQuality(StrictModel):
    level: SignalLevel
    reason: str = Field(max_length=300, description="Why the window has this much signal.")


class ContentPointer(StrictModel):
    """Verbatim material: `normalized_text[char_start:char_end]` of one message.

    Offsets are 0-based, end-exclusive, in Unicode code points of the message's normalized text.
    `quote` repeats the text so a pointer whose offsets are off can be re-anchored or rejected.
    """

    message_id: str = Field(min_length=1, max_length=128)
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=1)
    quote: str | None = Field(default=None, max_length=20_000)


class Topic(StrictModel):
    title: str = Field(min_length=1, max_length=120, description="In words of the messages.")
    summary: str = Field(default="", max_length=500)
    message_ids: list[str] = Field(default_factory=list, max_length=30)


class CitedSentence(StrictModel):
    """One sentence of prose (overview, highlight) with the messages it rests on. Checked like a
    synthesized claim: an uncited, unknown or unsupported sentence is dropped, never stored."""

    sentence: str = Field(min_length=1, max_length=400)
    message_ids: list[str] = Field(default_factory=list, max_length=8)


class Decision(StrictModel):
    text: str = Field(min_length=1, max_length=500)
    message_ids: list[str] = Field(min_length=1, max_length=20)


class ActionItem(StrictModel):
    text: str = Field(min_length=1, max_length=500)
    owner: str | None = Field(default=None, max_length=120)
    message_ids: list[str] = Field(min_length=1, max_length=20)


class OpenQuestion(StrictModel):
    text: str = Field(min_length=1, max_length=500)
    asked_by: str | None = Field(default=None, max_length=120)
    message_ids: list[str] = Field(min_length=1, max_length=20)


class Link(StrictModel):
    url: str = Field(min_length=1, max_length=2048)
    description: str = Field(default="", max_length=300)
    message_ids: list[str] = Field(min_length=1, max_length=10)


class ArtifactKind(str, Enum):
    CODE = "code"
    CONFIG = "config"
    COMMAND = "command"
    FILE = "file"
    LOG = "log"
    OTHER = "other"


class Artifact(StrictModel):
    kind: ArtifactKind
    title: str = Field(min_length=1, max_length=200)
    language: str | None = Field(default=None, max_length=40)
    pointer: ContentPointer


class KnowledgeKind(str, Enum):
    PROMPT = "prompt"
    CONFIG = "config"
    CODE = "code"
    COMMAND = "command"
    RECOMMENDATION = "recommendation"
    TROUBLESHOOTING = "troubleshooting"
    HOWTO = "howto"
    FACT = "fact"
    REFERENCE = "reference"


# Kinds whose truth depends on which model, tool or release they apply to: stored without a
# `context_version` they are flagged, so a reader knows the advice may be stale.
VERSION_SENSITIVE_KINDS = frozenset(
    {KnowledgeKind.PROMPT, KnowledgeKind.CONFIG, KnowledgeKind.COMMAND, KnowledgeKind.CODE}
)


class KnowledgeItem(StrictModel):
    """Either verbatim (`content_pointer`) or synthesized (`content` + `message_ids`), never both."""

    key: str = Field(
        min_length=1, max_length=40, description="Short id unique in this output, e.g. K1."
    )
    kind: KnowledgeKind
    title: str = Field(min_length=1, max_length=200)
    content_pointer: ContentPointer | None = None
    content: str | None = Field(default=None, max_length=2000)
    message_ids: list[str] = Field(default_factory=list, max_length=20)
    context_version: str | None = Field(default=None, max_length=120)
    entity_refs: list[str] = Field(default_factory=list, max_length=10)
    supersedes_id: str | None = Field(default=None, max_length=40)
    conflicts_with_id: str | None = Field(default=None, max_length=40)

    @model_validator(mode="after")
    def _pointer_xor_content(self) -> Self:
        if (self.content_pointer is None) == (self.content is None):
            raise ValueError("a knowledge item has exactly one of content_pointer or content")
        if self.content is not None and not self.message_ids:
            raise ValueError("synthesized content must cite the message_ids it is based on")
        return self


class ChunkSummary(StrictModel):
    """Map output for one chunk (`emit_chunk_summary`)."""

    chunk_summary: str = Field(max_length=1200)
    signal_quality: SignalQuality
    topics: list[Topic] = Field(default_factory=list, max_length=6)
    decisions: list[Decision] = Field(default_factory=list, max_length=5)
    action_items: list[ActionItem] = Field(default_factory=list, max_length=8)
    open_questions: list[OpenQuestion] = Field(default_factory=list, max_length=6)
    links: list[Link] = Field(default_factory=list, max_length=15)
    artifacts: list[Artifact] = Field(default_factory=list, max_length=10)
    knowledge_items: list[KnowledgeItem] = Field(default_factory=list, max_length=15)
    notable_message_ids: list[str] = Field(default_factory=list, max_length=10)


class Coverage(StrictModel):
    messages_total: int = Field(ge=0)
    messages_covered: int = Field(ge=0)
    first_message_id: str | None = None
    last_message_id: str | None = None
    notes: str = Field(default="", max_length=1000, description="What was not covered and why.")


class Digest(StrictModel):
    """Reduce output for one window (`emit_digest`): merged, de-duplicated items."""

    title: str = Field(min_length=1, max_length=120, description="In words of the messages.")
    overview: list[CitedSentence] = Field(
        default_factory=list,
        max_length=12,
        description="A few plain sentences, most important first: what was discussed, decided "
        "and left open. Each cites the message ids it rests on.",
    )
    highlights: list[CitedSentence] = Field(default_factory=list, max_length=5)
    coverage: Coverage
    search_keywords: list[str] = Field(
        default_factory=list, max_length=10, description="Words that occur in the messages."
    )
    signal_quality: SignalQuality
    topics: list[Topic] = Field(default_factory=list, max_length=12)
    decisions: list[Decision] = Field(default_factory=list, max_length=25)
    action_items: list[ActionItem] = Field(default_factory=list, max_length=40)
    open_questions: list[OpenQuestion] = Field(default_factory=list, max_length=30)
    links: list[Link] = Field(default_factory=list, max_length=60)
    artifacts: list[Artifact] = Field(default_factory=list, max_length=40)
    knowledge_items: list[KnowledgeItem] = Field(default_factory=list, max_length=60)
    notable_message_ids: list[str] = Field(default_factory=list, max_length=20)

    def overview_text(self) -> str:
        """The overview as one plain paragraph (the stored `overview` string)."""
        return " ".join(sentence.sentence for sentence in self.overview)


CHUNK_SUMMARY_TOOL = "emit_chunk_summary"
DIGEST_TOOL = "emit_digest"

TOOL_MODELS: dict[str, type[StrictModel]] = {
    CHUNK_SUMMARY_TOOL: ChunkSummary,
    DIGEST_TOOL: Digest,
}

_TOOL_DESCRIPTIONS = {
    CHUNK_SUMMARY_TOOL: "Report what one chunk of chat messages contains, citing message ids.",
    DIGEST_TOOL: "Merge chunk summaries into the digest of the whole window, citing message ids.",
}


def tool_schema(name: str) -> dict[str, Any]:
    """The OpenAI `tools` entry for `name`, generated from its Pydantic model.

    Generated once per tool (about 12 ms each; bench/pipeline.py saw it built three times a call,
    some 30% of a worker's CPU); each caller gets its own copy to change, decoded from the cached
    JSON (faster than a deepcopy of the nested dicts)."""
    schema: dict[str, Any] = json.loads(_tool_schema_json(name))
    return schema


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema as a model reads it in every request: what Pydantic generates,
    less what tells a model nothing (`compact_schema`), with the definitions used once
    written in place (`inline_single_use`)."""
    return inline_single_use(compact_schema(model.model_json_schema()))


def inline_single_use(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each `$defs` entry referenced once written where it is used: a `$ref`
    and the definition's name cost tokens and say nothing a nested schema does not."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    text = json.dumps(schema)
    shared = {name for name in definitions if text.count(f'"#/$defs/{name}"') > 1}

    def resolve(node: Any) -> Any:
        if isinstance(node, list):
            return [resolve(item) for item in node]
        if not isinstance(node, dict):
            return node
        reference = node.get("$ref", "")
        name = reference.removeprefix("#/$defs/")
        if reference.startswith("#/$defs/") and name not in shared:
            return resolve({**definitions[name], **{k: v for k, v in node.items() if k != "$ref"}})
        return {key: resolve(value) for key, value in node.items() if key != "$defs"}

    out: dict[str, Any] = resolve(schema)
    if shared:
        out["$defs"] = {name: resolve(definitions[name]) for name in sorted(shared)}
    return out


# Keywords of a schema node that cost tokens in every request and constrain nothing: titles
# derived from the field names, defaults (leaving a field out means the default), and the
# models' docstrings (written for this code's readers; what a model needs is in the field
# descriptions and the prompt).
_DROPPED_KEYWORDS = ("title", "default")


def compact_schema(node: dict[str, Any]) -> dict[str, Any]:
    """The same constraints in fewer tokens: no titles, defaults or model docstrings, and
    `anyOf: [{type: T, ...}, {type: null}]` as `type: [T, "null"]` (the same values valid)."""
    out = {key: value for key, value in node.items() if key not in _DROPPED_KEYWORDS}
    if "properties" in out:
        out.pop("description", None)  # a model's docstring, not a field's description
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        (other,) = [option for option in options if option != {"type": "null"}]
        if isinstance(other.get("type"), str):
            del out["anyOf"]
            out = {**compact_schema(other), **out, "type": [other["type"], "null"]}
    for key in ("properties", "$defs"):
        if key in out:
            out[key] = {name: compact_schema(child) for name, child in out[key].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = compact_schema(out["items"])
    if "anyOf" in out:
        out["anyOf"] = [compact_schema(option) for option in out["anyOf"]]
    return out


@functools.cache
def _tool_schema_json(name: str) -> str:
    model = TOOL_MODELS[name]
    return json.dumps(
        {
            "type": "function",
            "function": {
                "name": name,
                "description": _TOOL_DESCRIPTIONS[name],
                "parameters": model_schema(model),
            },
        }
    )
