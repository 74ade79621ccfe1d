"""`reason()`: ask in plain words for a typed value, from Python.

    # the total the customer owes, VAT included
    price: float = reason("get the total price", text=invoice)

The caller's own code is read (services.ipv.read_code_site): the annotated assignment gives
the desired type, comments above the call and the lines around it travel as code-site
context. `type=` overrides the annotation. It runs on the running system, or starts one for
the call (see infra.session); inside an event loop use `await areason(...)`.
"""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any

from postel.infra.client.client import JobFailedError
from postel.infra.client.session import connected, run_job
from postel.infra.runtime.settings import Settings
from postel.messages import AmbientContext, JobOptions, JobRequest, TypeSpec
from postel.services.ipv import infer_desired_type, read_code_site


def build_reason_request(
    prompt: str,
    frame: FrameType | None,
    type: str | TypeSpec | dict[str, Any] | None,
    profile: str,
    options: JobOptions | None,
    arguments: dict[str, Any],
) -> JobRequest:
    code_site = read_code_site(frame) if frame is not None else None
    if type is not None:
        spec = type if isinstance(type, TypeSpec) else TypeSpec.model_validate(type)
    else:
        spec = infer_desired_type(code_site) or TypeSpec(kind="str")
    return JobRequest(
        prompt=prompt,
        desired_type=spec,
        arguments=arguments,
        code_site=code_site,
        ambient=AmbientContext(profile=profile),  # type: ignore[arg-type]
        options=options or JobOptions(),
    )


async def areason(
    prompt: str,
    *,
    type: str | TypeSpec | dict[str, Any] | None = None,
    profile: str = "default",
    options: JobOptions | None = None,
    timeout: float = 300.0,
    settings: Settings | None = None,
    _frame: FrameType | None = None,
    **arguments: Any,
) -> Any:
    request = build_reason_request(
        prompt, _frame or sys._getframe(1), type, profile, options, arguments
    )
    async with connected(settings or Settings()) as client:
        record = await run_job(client, request, timeout=timeout)
    if record.status == "failed":
        raise JobFailedError(
            record.job_id, record.failure or "failed", record.error or "", record.result
        )
    return record.result


def reason(
    prompt: str,
    *,
    type: str | TypeSpec | dict[str, Any] | None = None,
    profile: str = "default",
    options: JobOptions | None = None,
    timeout: float = 300.0,
    settings: Settings | None = None,
    **arguments: Any,
) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(
            areason(
                prompt,
                type=type,
                profile=profile,
                options=options,
                timeout=timeout,
                settings=settings,
                _frame=sys._getframe(1),
                **arguments,
            )
        )
    raise RuntimeError("reason() was called inside a running event loop: use `await areason(...)`")
