"""IPV INFER: the intent worker's service. ONE model call returns all nine intent fields
from the call context; a malformed answer gets one
repair turn carrying the validation error, then the job fails as `intent_failed`."""

from __future__ import annotations

from collections.abc import Sequence

from postel.messages import (
    Intent,
    IntentAnalyzed,
    JobFailed,
    JobProgress,
    JobSubmitted,
    ids,
)
from postel.messages.intent import LinkedEntity
from postel.services.ipv.context import build_call_context, render_call_context
from postel.services.ipv.profiles import effective_settings
from postel.services.llm.ask import JsonQuestion, ask_json, reads_as
from postel.services.prompts import TEMPLATES, build_prompt
from postel.services.step import ModelDeps, Step

INTENT_MAX_TOKENS = 768
# What the model is asked for: the intent without the linked entities, which are not its to say.
MODEL_SCHEMA = Intent.model_json_schema(by_alias=True)
MODEL_SCHEMA["properties"].pop("linkedEntities")
MODEL_SCHEMA.get("$defs", {}).pop("LinkedEntity", None)


def _linked_context(linked: Sequence[LinkedEntity]) -> dict[str, str]:
    if not linked:
        return {}
    lines = [f"{e.mention!r} is {e.id!r} ({e.entity_type or 'no type'})" for e in linked]
    return {"GRAPH ENTITIES NAMED": "\n".join(lines)}


async def handle(
    message: JobSubmitted, deps: ModelDeps, linked: Sequence[LinkedEntity] = ()
) -> Step:
    """`job.submitted` -> `intent.analyzed`, or the job fails `intent_failed`. `linked` are
    the graph's nodes the request names (services.linking, found before the call): shown to
    the model as context and kept in the intent as found, whatever the model wrote."""
    llm, capability = deps.llm, deps.capability
    request = message.request
    profile = effective_settings(request)
    context = build_call_context(request)
    question = JsonQuestion(
        prompt=lambda repair: build_prompt(
            TEMPLATES.get("intent_analysis"),
            capability,
            user_text=render_call_context(context),
            context={**_linked_context(linked), **repair},
        ),
        read=reads_as(Intent),
        max_tokens=min(profile.max_tokens, INTENT_MAX_TOKENS),
        temperature=profile.temperature,
        schema=MODEL_SCHEMA,
    )
    answer = await ask_json(llm, question)
    if answer.value is None:
        failed = message.derive(
            JobFailed,
            ids.FAILED,
            status="intent_failed",
            error=f"the intent analysis did not validate after one repair: {answer.error}",
            partial=answer.responses[-1].text if answer.responses else None,
        )
        return Step([failed])
    intent = answer.value.model_copy(update={"linked_entities": list(linked)})
    progress = JobProgress(intent=intent)
    return Step([message.derive(IntentAnalyzed, ids.INTENT, request=request, progress=progress)])
