"""Commands other distributions add to `postel` through the entry-point group
`postel.commands`: the benchmarks' `bench` among them, a command that is missing or broken
saying so, and postel's own commands first."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from postel.infra.cli import entry_points
from postel.infra.cli.main import main


def _installed(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    found = {
        name: EntryPoint(name=name, value=value, group=entry_points.ENTRY_POINT_GROUP)
        for name, value in values.items()
    }
    monkeypatch.setattr(entry_points, "installed", lambda: found)


def test_the_benchmarks_register_bench_and_postel_lists_it() -> None:
    assert entry_points.installed()["bench"].value == "postel_bench.cli:bench"
    listing = CliRunner().invoke(main, ["--help"])
    assert listing.exit_code == 0
    assert "bench    Benchmarks that print figures against a baseline" in listing.output
    bench = CliRunner().invoke(main, ["bench", "--help"])
    assert bench.exit_code == 0 and "qa" in bench.output and "chaos" in bench.output


def test_without_the_benchmarks_bench_says_how_to_install_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _installed(monkeypatch)
    listing = CliRunner().invoke(main, ["--help"])
    assert "bench    Not available here" in listing.output
    for args in (["bench"], ["bench", "qa", "--triples", "300"], ["bench", "--help"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, args
        assert "the benchmarks are not installed" in result.stderr
        assert "pip install -e ./benchmarks" in result.stderr
        assert "scripts/install dev" in result.stderr


def test_a_distribution_adds_a_command_that_loads_only_when_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "hello_postel.py").write_text(
        "import click\n\n\n@click.command()\n@click.argument('who')\n"
        "def hello(who: str) -> None:\n    '''Greet WHO.'''\n    click.echo(f'hello {who}')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hello_postel", raising=False)
    _installed(monkeypatch, hello="hello_postel:hello", submit="hello_postel:hello")
    runner = CliRunner()
    assert runner.invoke(main, ["coerce", "--type", "int", "12"]).output == "12\n"
    assert "hello_postel" not in sys.modules
    assert runner.invoke(main, ["hello", "you"]).output == "hello you\n"
    assert "hello    Greet WHO." in runner.invoke(main, ["--help"]).output
    # an entry point cannot replace postel's own command of the same name
    context = click.Context(main)
    assert main.get_command(context, "submit").callback.__module__ == "postel.infra.cli.main"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("no_such_package.cli:group", "no_such_package.cli:group did not load"),
        ("click:echo", "click:echo is not a click command"),
    ],
)
def test_a_command_that_does_not_load_says_which_and_why(
    monkeypatch: pytest.MonkeyPatch, value: str, says: str
) -> None:
    _installed(monkeypatch, broken=value)
    result = CliRunner().invoke(main, ["broken", "--any", "thing"])
    assert result.exit_code == 2
    assert says in result.stderr
