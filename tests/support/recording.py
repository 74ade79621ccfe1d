"""Relay workers that record every message they handle and may hold one stage until the
test lets it go (proof of which messages were handled, and when), or that fail at one
stage while it is broken (dead letters to redrive)."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.messages import Envelope

from postel.testing.relay import RELAY_WORKERS


@dataclass
class Recorder:
    """`handled` lists (worker, message_id) of every handler call; a held stage waits in its
    handler (`entered` is set) until `release` is set."""

    held: str | None = None
    handled: list[tuple[str, str]] = field(default_factory=list)
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def specs(self) -> list[WorkerSpec]:
        return [self._recording(spec) for spec in RELAY_WORKERS]

    def workers(self) -> list[str]:
        return [worker for worker, _ in self.handled]

    def _recording(self, spec: WorkerSpec) -> WorkerSpec:
        async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
            self.handled.append((spec.name, message.message_id))
            if spec.name == self.held:
                self.entered.set()
                await self.release.wait()
            return await spec.handle(message, runtime)

        return dataclasses.replace(spec, handle=handle)


@dataclass
class Breakable:
    """The relay workers with one stage failing while `broken`."""

    stage: str = "planner"
    broken: bool = True

    def specs(self) -> list[WorkerSpec]:
        return [self._breakable(s) if s.name == self.stage else s for s in RELAY_WORKERS]

    def _breakable(self, spec: WorkerSpec) -> WorkerSpec:
        async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
            if self.broken:
                raise ConnectionError(f"the {spec.name}'s backend is down")
            return await spec.handle(message, runtime)

        return dataclasses.replace(spec, handle=handle)
