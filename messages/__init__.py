"""postel's contract: pydantic v2 models of every message, the envelope, job requests, ids
(ids.py writes and reads every message id) and errors (errors.py: the branches of PostelError
and what each answers).

Layer rule (tests/contract/test_layers.py): imports nothing of postel; imported by services,
workers, infra.store, infra.runtime, infra.client, infra.web, infra.cli, postel.testing, the
benchmarks.
"""

from postel.messages.document import Section, SectionsDocument
from postel.messages.envelope import SCHEMA_VERSION, Envelope, new_job_id, utc_now
from postel.messages.gasl import ExecutionRecord, GaslPlan, PlanConfig
from postel.messages.ids import JOB_ID_PATTERN
from postel.messages.intent import Intent, QualityRequirements, TaskIntentOverride
from postel.messages.job import AmbientContext, CodeSiteContext, JobOptions, JobRequest
from postel.messages.pipeline import (
    MESSAGE_ADAPTER,
    MESSAGE_TYPES,
    TERMINAL_TYPES,
    CarriesJob,
    CarriesRound,
    FailureStatus,
    GaslPlanExecuted,
    GaslPlanRequested,
    GenerationCompleted,
    GenerationContinued,
    GenerationRequested,
    IntentAnalyzed,
    JobCompleted,
    JobFailed,
    JobSubmitted,
    Message,
    RoundNote,
    TaskPlanned,
    ValidationFailed,
    ValidationRequested,
    decode_message,
)
from postel.messages.task import JobProgress, Task, TaskOutcome, TaskPlan
from postel.messages.types import TypeSpec

__all__ = [
    "JOB_ID_PATTERN",
    "MESSAGE_ADAPTER",
    "MESSAGE_TYPES",
    "SCHEMA_VERSION",
    "TERMINAL_TYPES",
    "AmbientContext",
    "CarriesJob",
    "CarriesRound",
    "CodeSiteContext",
    "Envelope",
    "ExecutionRecord",
    "FailureStatus",
    "GaslPlan",
    "GaslPlanExecuted",
    "GaslPlanRequested",
    "GenerationCompleted",
    "GenerationContinued",
    "GenerationRequested",
    "Intent",
    "IntentAnalyzed",
    "JobCompleted",
    "JobFailed",
    "JobOptions",
    "JobProgress",
    "JobRequest",
    "JobSubmitted",
    "Message",
    "PlanConfig",
    "QualityRequirements",
    "RoundNote",
    "Section",
    "SectionsDocument",
    "Task",
    "TaskIntentOverride",
    "TaskOutcome",
    "TaskPlan",
    "TaskPlanned",
    "TypeSpec",
    "ValidationFailed",
    "ValidationRequested",
    "decode_message",
    "new_job_id",
    "utc_now",
]
