"""IPV INFER and its settings: the call context, profiles, code-site reading.

Public API:
    build_call_context(request, *, function_name="reason") -> CallContext
    render_call_context(ctx, *, max_argument_chars=2000) -> str
    get_profile(name) -> Profile;  effective_settings(request) -> Profile
    read_code_site(frame_or_filename, lineno=None) -> CodeSiteContext
    infer_desired_type(code_site) -> TypeSpec | None
"""

from postel.services.ipv.annotations import infer_desired_type
from postel.services.ipv.code_site import read_code_site
from postel.services.ipv.context import CallContext, build_call_context, render_call_context
from postel.services.ipv.profiles import PROFILES, Profile, effective_settings, get_profile

__all__ = [
    "PROFILES",
    "CallContext",
    "Profile",
    "build_call_context",
    "effective_settings",
    "get_profile",
    "infer_desired_type",
    "read_code_site",
    "render_call_context",
]
