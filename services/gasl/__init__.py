"""GASL: a small language for LLM-driven graph analysis, its executor and state store.

Entry points: `GaslExecutor.execute_plan` (executor), `NetworkXAdapter.from_graphml`
(graphs), `StateStore` with a `StateBackend` (state), `parse` (syntax). See docs/GASL.md.
"""

from postel.services.gasl.adapters import Caps, GraphAdapter, NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor, replay
from postel.services.gasl.llm_steps import GaslModel
from postel.services.gasl.parser import GaslSyntaxError, parse
from postel.services.gasl.state import JsonFileStateBackend, StateBackend, StateStore

__all__ = [
    "Caps",
    "GaslExecutor",
    "GaslModel",
    "GaslSyntaxError",
    "GraphAdapter",
    "JsonFileStateBackend",
    "NetworkXAdapter",
    "StateBackend",
    "StateStore",
    "parse",
    "replay",
]
