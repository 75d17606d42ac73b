"""The API's enums, in one place: each maps the lowercase value stored in the database (the
member's value) to the UPPER_CASE name clients see in outputs and filters (the member's name).

A resolver builds the enum from the stored text (`KnowledgeKind(row.kind)`) and a filter passes
`member.value` to the SQL, so no other code converts between the two spellings. An unknown name
in a query or its variables is refused by GraphQL validation, which names the allowed values.
"""

from __future__ import annotations

import strawberry

from db import jobs
from db.deliveries import DeliveryState
from runner.core.contract import KnowledgeKind, SignalLevel
from runner.core.fidelity import FidelityLevel
from runner.core.progress import JobPhase
from runner.delivery.contract import DeliveryEvent, DestinationKind

__all__ = [
    "DeliveryEvent",
    "DeliveryState",
    "DestinationKind",
    "FidelityLevel",
    "JobPhase",
    "JobStatus",
    "KnowledgeKind",
    "SignalLevel",
]

# The enums of the job lifecycle (db/jobs.py, runner/core/progress.py) and of the digest
# contract (runner/core/contract.py), registered as GraphQL enums (the decorator marks the class
# itself), so the values clients see are those the pipeline produces and the database stores.
JobStatus = jobs.JobStatus
strawberry.enum(JobStatus, name="JobStatus", description="Where a job is in its lifecycle.")
strawberry.enum(
    JobPhase,
    name="JobPhase",
    description="The step a job is at: QUEUED until a worker claims it, then READING, "
    "THREADING, MAP, REDUCE, VALIDATE and STORE (a kind skips the steps it does not have; a "
    "report splits its question into sub-questions in THREADING, gathers evidence for each and "
    "refines once in MAP, and writes its answer in REDUCE).",
)
strawberry.enum(
    FidelityLevel,
    name="FidelityLevel",
    description="What one evidence unit became in the writer model's request, from whole to "
    "left out: FULL, TRUNCATED (a prefix), CONDENSED (its headline sentence), HEADLINE (a few "
    "leading words: protected evidence that did not fit otherwise), DROPPED (not sent).",
)
strawberry.enum(KnowledgeKind, name="KnowledgeItemKind", description="What a knowledge item holds.")
strawberry.enum(
    SignalLevel, name="SignalLevel", description="How much a digest's window had to say."
)
strawberry.enum(
    DestinationKind, name="DestinationKind", description="Where a destination's deliveries go."
)
strawberry.enum(
    DeliveryEvent, name="DeliveryEvent", description="What a delivery tells its destination."
)
strawberry.enum(
    DeliveryState,
    name="DeliveryState",
    description="Where a delivery is: PENDING (due at nextAttemptAt), DELIVERING (a worker is "
    "sending it), DELIVERED, or DEAD (refused by the receiver, or out of attempts: "
    "retryDelivery queues it again).",
)
