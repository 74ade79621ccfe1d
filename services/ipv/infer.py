"""IPV INFER: the intent worker's service. ONE model call returns all nine intent fields
from the call context; a malformed answer gets one
repair turn carrying the validation error, then the job fails as `intent_failed`."""

from __future__ import annotations

from postel.messages import (
    Intent,
    IntentAnalyzed,
    JobFailed,
    JobProgress,
    JobSubmitted,
    ids,
)
from postel.services.ipv.context import build_call_context, render_call_context
from postel.services.ipv.profiles import effective_settings
from postel.services.llm.ask import JsonQuestion, ask_json, reads_as
from postel.services.prompts import TEMPLATES, build_prompt
from postel.services.step import ModelDeps, Step

INTENT_MAX_TOKENS = 768


async def handle(message: JobSubmitted, deps: ModelDeps) -> Step:
    """`job.submitted` -> `intent.analyzed`, or the job fails `intent_failed`."""
    llm, capability = deps.llm, deps.capability
    request = message.request
    profile = effective_settings(request)
    context = build_call_context(request)
    question = JsonQuestion(
        prompt=lambda repair: build_prompt(
            TEMPLATES.get("intent_analysis"),
            capability,
            user_text=render_call_context(context),
            context=repair,
        ),
        read=reads_as(Intent),
        max_tokens=min(profile.max_tokens, INTENT_MAX_TOKENS),
        temperature=profile.temperature,
        schema=Intent.model_json_schema(by_alias=True),
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
    progress = JobProgress(intent=answer.value)
    return Step([message.derive(IntentAnalyzed, ids.INTENT, request=request, progress=progress)])
