"""GASL: a small language for LLM-driven graph analysis, its executor and state store.

Entry points: `GaslExecutor.execute_plan` (executor), `NetworkXAdapter.from_graphml`
(graphs), `StateStore` with a `StateBackend` (state), `parse` (syntax), `TimeBudget` (how
long a plan may run). See docs/GASL.md.
"""

from postel.services.gasl.budget import TimeBudget
from postel.services.gasl.engines.caps import HARD_MAXIMA, Caps
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.engines.protocol import GraphAdapter
from postel.services.gasl.errors import GaslError, GaslSyntaxError
from postel.services.gasl.executor import GaslExecutor, replay
from postel.services.gasl.llm_steps import GaslModel
from postel.services.gasl.parser import parse
from postel.services.gasl.state import JsonFileStateBackend, StateBackend, StateStore

__all__ = [
    "HARD_MAXIMA",
    "Caps",
    "GaslError",
    "GaslExecutor",
    "GaslModel",
    "GaslSyntaxError",
    "GraphAdapter",
    "JsonFileStateBackend",
    "NetworkXAdapter",
    "StateBackend",
    "StateStore",
    "TimeBudget",
    "parse",
    "replay",
]
