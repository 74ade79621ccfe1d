"""The shape of a command handler and of a family's table of them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from postel.services.gasl import ast
from postel.services.gasl.outcome import CommandOutcome
from postel.services.gasl.scope import Scope

# A handler runs one kind of command in a scope; those that ask a model are async.
Handler = Callable[[Scope, Any], CommandOutcome | Awaitable[CommandOutcome]]
# Each family module's table: the command type each of its handlers runs.
Handlers = dict[type[ast.Command], Handler]
