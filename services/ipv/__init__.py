"""IPV INFER and its settings: the call context, profiles, executors, code-site reading.

Public API:
    build_call_context(request, *, function_name="reason", executor_type="llm") -> CallContext
    render_call_context(ctx, *, max_argument_chars=2000) -> str
    get_profile(name) -> Profile;  effective_settings(request) -> Profile
    register_executor(name, executor, *, replace=False);  get_executor(name);  run_executor(ctx)
    read_code_site(frame_or_filename, lineno=None) -> CodeSiteContext
    infer_desired_type(code_site) -> TypeSpec | None
"""

from postel.services.ipv.annotations import infer_desired_type
from postel.services.ipv.code_site import read_code_site
from postel.services.ipv.context import CallContext, build_call_context, render_call_context
from postel.services.ipv.executors import (
    DEFAULT_EXECUTOR,
    Executor,
    UnknownExecutorError,
    executor_names,
    get_executor,
    register_executor,
    run_executor,
    unregister_executor,
)
from postel.services.ipv.profiles import PROFILES, Profile, effective_settings, get_profile

__all__ = [
    "DEFAULT_EXECUTOR",
    "PROFILES",
    "CallContext",
    "Executor",
    "Profile",
    "UnknownExecutorError",
    "build_call_context",
    "effective_settings",
    "executor_names",
    "get_executor",
    "get_profile",
    "infer_desired_type",
    "read_code_site",
    "register_executor",
    "render_call_context",
    "run_executor",
    "unregister_executor",
]
