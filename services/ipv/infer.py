"""IPV INFER: the intent worker's service. ONE model call returns all nine intent fields
from the call context; a malformed answer gets one
repair turn carrying the validation error, then the job fails as `intent_failed`."""

from __future__ import annotations

from postel.messages import Envelope, Intent, IntentAnalyzed, JobFailed, JobProgress, JobSubmitted
from postel.services.ipv.context import build_call_context, render_call_context
from postel.services.ipv.profiles import effective_settings
from postel.services.llm.ask import ask_json
from postel.services.llm.client import LLMClient
from postel.services.prompts import TEMPLATES, Capability, build_prompt

INTENT_MAX_TOKENS = 768


async def analyze_intent(
    message: JobSubmitted, llm: LLMClient, capability: Capability
) -> list[Envelope]:
    request = message.request
    profile = effective_settings(request)
    context = build_call_context(request)
    prompt = build_prompt(
        TEMPLATES.get("intent_analysis"), capability, user_text=render_call_context(context)
    )
    answer = await ask_json(
        llm,
        prompt,
        Intent,
        max_tokens=min(profile.max_tokens, INTENT_MAX_TOKENS),
        temperature=profile.temperature,
    )
    if answer.value is None:
        return [
            message.derive(
                JobFailed,
                "failed",
                status="intent_failed",
                error=f"the intent analysis did not validate after one repair: {answer.error}",
                partial=answer.responses[-1].text if answer.responses else None,
            )
        ]
    progress = JobProgress(intent=answer.value)
    return [message.derive(IntentAnalyzed, "intent", request=request, progress=progress)]
