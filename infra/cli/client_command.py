"""`with_client`: how a command that talks to the running system runs. It imports only click's
neighbours from the standard library, so the command modules apply it while `postel --help`
loads them; the settings, the client and the exit codes are imported when a command runs."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import wraps
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

if TYPE_CHECKING:
    from postel.infra.client.client import Client

P = ParamSpec("P")
T = TypeVar("T")


def with_client(body: Callable[Concatenate[Client, P], Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The coroutine `body`, run as a command against the system at POSTEL_REDIS_URL (or the
    `postel up` on this machine): build the settings (which configures logging), open a
    `Client` on them, await `body(client, ...)` with the command's arguments, close the
    client, and exit with the code of a known failure (infra/cli/support.py's `run_async`).
    `client.settings` are the settings. It goes under click's decorators:

        @click.command()
        @click.argument("job_id")
        @with_client
        async def status(client: Client, job_id: str) -> None:
            click.echo((await client.status(job_id)).model_dump_json(indent=2))

    A command that checks its arguments before it touches the settings or Redis calls the
    function `with_client` returns once they are checked (`postel dead redrive`)."""

    @wraps(body)
    def command(*args: P.args, **kwargs: P.kwargs) -> T:
        from postel.infra.cli.support import run_async, settings
        from postel.infra.client.client import Client

        current = settings()

        async def run() -> T:
            async with Client(settings=current) as client:
                return await body(client, *args, **kwargs)

        return run_async(run)()

    return command
