"""Commands other distributions add to `postel`: each registers a click command under the
entry-point group `postel.commands` (postel-bench registers `bench`, the benchmarks).

The command line never imports such a package by name. It reads the installed entry points
when a command is named or listed (`postel --help`), and loads only the one asked for; its
own commands come first, so an entry point cannot replace one of them. A command postel knows
ships apart (`SHIPPED_APART`) and that is not installed, or whose package does not load,
stands in as a command that says so and how to get it, exiting 2.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points

import click

ENTRY_POINT_GROUP = "postel.commands"

# the commands that ship apart from the runtime, and how to install each
SHIPPED_APART = {
    "bench": (
        "the benchmarks are not installed: they are the postel-bench distribution, in the "
        "benchmarks/ folder of a postel checkout (pip install -e ./benchmarks, or "
        "scripts/install dev)"
    ),
}


@functools.cache
def installed() -> dict[str, EntryPoint]:
    """The commands installed distributions add, by name (read once per process)."""
    return {found.name: found for found in entry_points(group=ENTRY_POINT_GROUP)}


def _unavailable(name: str, reason: str) -> click.Command:
    """A stand-in for `postel NAME`: it takes any arguments and exits 2 with `reason`."""

    def refuse(args: tuple[str, ...]) -> None:
        from postel.infra.cli.support import EXIT_INPUT, fail

        fail(f"`postel {name}`: {reason}", EXIT_INPUT)

    return click.Command(
        name,
        callback=refuse,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        help=f"Not available: {reason}.",
        short_help="Not available here (`postel " + name + "` says why).",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
    )


class CommandsWithEntryPoints(click.Group):
    """A group of postel's own commands and those installed distributions add."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *installed(), *SHIPPED_APART})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        own = super().get_command(ctx, cmd_name)
        if own is not None:
            return own
        found = installed().get(cmd_name)
        if found is None:
            reason = SHIPPED_APART.get(cmd_name)
            return None if reason is None else _unavailable(cmd_name, reason)
        try:
            command = found.load()
        except ImportError as exc:
            return _unavailable(cmd_name, f"{found.value} did not load ({exc})")
        if not isinstance(command, click.Command):
            return _unavailable(cmd_name, f"{found.value} is not a click command")
        return command
