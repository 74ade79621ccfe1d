"""The IPV call context: everything known about a call before it is processed.

Built once by the intent worker from the JobRequest (INFER), carried to the generator
(PROCESS) and the validator (VALIDATE). `inferred_details` starts with what can be read off
the request deterministically; the intent worker adds what its LLM call infers.
"""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

from postel.messages.job import AmbientContext, CodeSiteContext, JobRequest
from postel.messages.task import JobProgress
from postel.messages.types import TypeSpec
from postel.services.ipv.annotations import infer_desired_type
from postel.services.validation import describe_type
from pydantic import BaseModel, ConfigDict, Field

MAX_ARGUMENT_CHARS = 2000

_SHAPES = {"list": "list", "dict": "object", "json_schema": "object", "document": "document"}
_SCALAR_HINT = "answer with the value alone: no units, labels or explanation"


class CallContext(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    function_name: str = "reason"
    arguments: dict[str, Any] = Field(description="the call's arguments, the prompt included")
    desired_type: TypeSpec
    code_site: CodeSiteContext | None = None
    ambient: AmbientContext = Field(default_factory=AmbientContext)
    optimization_hints: list[str] = Field(default_factory=list)
    inferred_details: dict[str, Any] = Field(default_factory=dict)


def build_call_context(request: JobRequest, *, function_name: str = "reason") -> CallContext:
    """The call context of a request.

    When the request leaves `desired_type` unset but its code site carries a readable
    annotation (`price: float = reason(...)`), the annotation decides the desired type."""
    desired = request.desired_type
    if "desired_type" not in request.model_fields_set:
        desired = infer_desired_type(request.code_site) or desired
    arguments = {**request.arguments, "prompt": request.prompt}
    if request.graph:
        arguments["graph"] = request.graph
    details: dict[str, Any] = {"result_shape": _SHAPES.get(desired.kind, "scalar")}
    if request.graph:
        details["task"] = "graph_analysis"
    return CallContext(
        function_name=function_name,
        arguments=arguments,
        desired_type=desired,
        code_site=request.code_site,
        ambient=request.ambient,
        optimization_hints=_hints(desired, request.code_site),
        inferred_details=details,
    )


def _hints(desired: TypeSpec, code_site: CodeSiteContext | None) -> list[str]:
    hints = [f"return {describe_type(desired)}"]
    if desired.kind in ("float", "int", "bool"):
        hints.append(_SCALAR_HINT)
    if code_site and code_site.variable_name:
        hints.append(f"the caller stores the result in `{code_site.variable_name}`")
    return hints


def desired_type_for(request: JobRequest, progress: JobProgress) -> TypeSpec:
    """What the current task's answer must be: the job's desired type for its last task (or
    a job without a plan); text for a task whose answer only feeds the next one."""
    if is_last_task(progress):
        return build_call_context(request).desired_type
    return TypeSpec(kind="str")


def is_last_task(progress: JobProgress) -> bool:
    plan = progress.plan
    return plan is None or progress.task_index >= len(plan.tasks) - 1


def render_call_context(ctx: CallContext, *, max_argument_chars: int = MAX_ARGUMENT_CHARS) -> str:
    """Compact text for prompts; empty parts are left out. Only labels start a line: a
    value's own line breaks (a prompt, an argument, a comment) are indented under its label,
    so no value can pose as another label (a prompt holding "desired type: ...")."""
    out = [f"request: {ctx.arguments.get('prompt', '')}"]
    others = {k: v for k, v in ctx.arguments.items() if k != "prompt"}
    if others:
        out.append("arguments:")
        out += [f"  {k}: {_bounded(v, max_argument_chars)}" for k, v in others.items()]
    out.append(f"desired type: {describe_type(ctx.desired_type)}")
    out += _render_code_site(ctx.code_site)
    ambient = ctx.ambient.model_dump(exclude_defaults=True)
    ambient["profile"] = ctx.ambient.profile
    out.append("ambient: " + ", ".join(f"{k}={_flat(v)}" for k, v in ambient.items()))
    if ctx.optimization_hints:
        out.append("hints:")
        out += [f"  - {hint}" for hint in ctx.optimization_hints]
    if ctx.inferred_details:
        inferred = ", ".join(f"{k}={_flat(v)}" for k, v in ctx.inferred_details.items())
        out.append(f"inferred: {inferred}")
    return "\n".join(line for entry in out for line in _under_its_label(entry))


def _under_its_label(entry: str) -> list[str]:
    """An entry's lines: its first as written, the rest (any kind of line break) indented
    deeper than the entry itself and any sub-item."""
    first, *rest = entry.splitlines() or [""]
    indent = " " * (len(first) - len(first.lstrip(" ")) + 4)
    return [first, *(indent + line for line in rest)]


def _render_code_site(site: CodeSiteContext | None) -> list[str]:
    if site is None:
        return []
    out: list[str] = []
    target = site.variable_name or ""
    if site.annotation:
        target = f"{target}: {site.annotation}" if target else f"returns {site.annotation}"
    where = f"{PurePath(site.file).name}:{site.line}" if site.file and site.line else ""
    parts = [
        f"result goes to {target}" if target else "",
        f"in {site.function_name}" if site.function_name else "",
        f"({where})" if where else "",
    ]
    if any(parts):
        out.append("code site: " + " ".join(p for p in parts if p))
    if site.comments:
        out.append("comments:")
        out += [f"  # {comment}" for comment in site.comments]
    if site.surrounding_code:
        out.append("nearby code:")
        out += [f"  | {line}" for line in site.surrounding_code]
    return out


def _bounded(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def _flat(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
