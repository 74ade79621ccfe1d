"""postel's contract: pydantic v2 models of every message. Imports nothing else of ours."""

from messages.document import Section, SectionsDocument
from messages.envelope import SCHEMA_VERSION, Envelope, new_job_id, utc_now
from messages.gasl import ExecutionRecord, GaslPlan, PlanConfig
from messages.intent import Intent, QualityRequirements, TaskIntentOverride
from messages.job import AmbientContext, CodeSiteContext, JobOptions, JobRequest
from messages.pipeline import (
    MESSAGE_ADAPTER,
    MESSAGE_TYPES,
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
from messages.task import JobProgress, Task, TaskOutcome, TaskPlan
from messages.types import TypeSpec

__all__ = [
    "MESSAGE_ADAPTER",
    "MESSAGE_TYPES",
    "SCHEMA_VERSION",
    "AmbientContext",
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
