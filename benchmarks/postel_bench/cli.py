"""`postel bench`: the click group postel-bench registers under the entry-point group
`postel.commands` (name `bench`), and the benchmark commands in it. The `postel` command line
adds the group when it is named or listed; it never imports this package by name.

A command's options parse and check here, and its benchmark module does the work; the chaos
drill's command lives with its benchmark (chaos.py) and is imported only when named. What a
command needs of the command line (exit codes, `fail`, `run_async`, `settings`) it imports
from postel.infra.cli.support, inside the command: `postel --help` loads this module, so it
imports nothing beyond click at load.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path
from typing import ClassVar

import click
from click.core import ParameterSource


class _BenchGroup(click.Group):
    """`postel bench`: a command defined with its benchmark is imported only when named or
    listed, so the other bench commands do not pay for loading that benchmark."""

    defined_elsewhere: ClassVar[dict[str, tuple[str, str]]] = {
        "chaos": ("postel_bench.chaos", "bench_chaos"),
        "fuzz": ("postel_bench.fuzz", "bench_fuzz"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.defined_elsewhere])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.defined_elsewhere:
            return super().get_command(ctx, cmd_name)
        module, name = self.defined_elsewhere[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), name)
        return command


@click.group(cls=_BenchGroup)
def bench() -> None:
    """Benchmarks that print figures against a baseline measured in the same run."""


@bench.command("bus")
@click.option(
    "--jobs",
    type=click.IntRange(1, 100_000),
    default=200,
    show_default=True,
    help="Jobs submitted at once for hops/s.",
)
@click.option(
    "--processes",
    default="1,2,4",
    show_default=True,
    help="Worker processes per stage, comma-separated: one run each.",
)
@click.option(
    "--idle-s",
    type=click.FloatRange(1, 600),
    default=10.0,
    show_default=True,
    help="Window over which the cost of idle workers is measured.",
)
@click.option(
    "--latency-jobs",
    type=click.IntRange(5, 100_000),
    default=100,
    show_default=True,
    help="Jobs run one at a time for the hop latency (bare arq at its defaults: a tenth).",
)
@click.option(
    "--sides",
    default="postel,postel_poll,arq_5ms,arq_default",
    show_default=True,
    help="Which sides run, separated by commas.",
)
@click.option(
    "--recording/--no-recording",
    default=True,
    show_default=True,
    help="Also measure what recording model calls costs a hop.",
)
@click.option(
    "--cluster",
    type=click.IntRange(1, 16),
    default=None,
    help="Instead: postel on a Redis Cluster made on loopback, of 1, 2 … N primaries "
    "(hops/s and each primary's Redis CPU per hop; one --processes count, no --sides, "
    "--idle-s or --no-recording).",
)
@click.option("--json", "as_json", is_flag=True)
def bench_bus(
    jobs: int,
    processes: str,
    idle_s: float,
    latency_jobs: int,
    sides: str,
    recording: bool,
    cluster: int | None,
    as_json: bool,
) -> None:
    """Hop latency, hops/s and the cost of idle workers (no LLM), each stage in its own
    processes: postel against its former 5 ms poll and bare arq (5 ms poll, defaults)."""
    from postel.infra.cli.support import EXIT_INPUT, fail, run_async, settings

    from postel_bench.bus import (
        SIDES,
        format_bus_bench,
        format_cluster_bench,
        run_bus_bench,
        run_cluster_bench,
    )

    try:
        counts = tuple(int(n) for n in processes.split(","))
    except ValueError:
        fail(f"--processes takes numbers separated by commas, not {processes!r}", EXIT_INPUT)
    if not counts or min(counts) < 1 or max(counts) > 32:
        fail(f"--processes takes counts from 1 to 32, not {processes!r}", EXIT_INPUT)
    known = [side.key for side in SIDES]
    chosen = tuple(side for side in sides.split(",") if side)
    if not chosen or set(chosen) - set(known):
        fail(f"--sides takes some of {', '.join(known)}, not {sides!r}", EXIT_INPUT)
    current = settings()
    if cluster is not None:
        context = click.get_current_context()
        extra = [
            option
            for name, option in (
                ("sides", "--sides"),
                ("idle_s", "--idle-s"),
                ("recording", "--no-recording"),
            )
            if context.get_parameter_source(name) != ParameterSource.DEFAULT
        ]
        if len(counts) > 1:
            extra.append(f"--processes {processes}")
        if extra:
            fail(
                "--cluster runs postel alone, at one --processes count, not with "
                + ", ".join(extra),
                EXIT_INPUT,
            )
        figures = run_async(run_cluster_bench)(current, cluster, jobs, counts[0], latency_jobs)
        click.echo(json.dumps(figures, indent=2) if as_json else format_cluster_bench(figures))
        return
    figures = run_async(run_bus_bench)(
        current, jobs, counts, idle_s, latency_jobs, chosen, recording and "postel" in chosen
    )
    click.echo(json.dumps(figures, indent=2) if as_json else format_bus_bench(figures))


@bench.command("fair")
@click.option("--backlog", type=click.IntRange(10, 100_000), default=2000, show_default=True)
@click.option("--urgent", type=click.IntRange(2, 1000), default=20, show_default=True)
@click.option(
    "--aging-s",
    type=click.FloatRange(2, 600),
    default=14.0,
    show_default=True,
    help="How long the aging scenario keeps interactive load on.",
)
@click.option("--json", "as_json", is_flag=True)
def bench_fair(backlog: int, urgent: int, aging_s: float, as_json: bool) -> None:
    """Priorities, tenants' turns, aging, cancel and callbacks, each beside the plain
    arrival-order run measured in the same run (docs/JOB_CONTROL.md)."""
    from postel.infra.cli.support import run_async, settings

    from postel_bench.fair import format_fair, run_fair_bench

    figures = run_async(run_fair_bench)(settings(), backlog, urgent, aging_s)
    click.echo(json.dumps(figures, indent=2) if as_json else format_fair(figures))


@bench.command("web")
@click.option("--jobs", type=click.IntRange(10, 1_000_000), default=10_000, show_default=True)
@click.option("--events", type=click.IntRange(100, 10_000_000), default=100_000, show_default=True)
@click.option(
    "--requests", type=click.IntRange(1, 1000), default=20, show_default=True, help="Per page."
)
@click.option("--json", "as_json", is_flag=True)
def bench_web(jobs: int, events: int, requests: int, as_json: bool) -> None:
    """The dashboard's and the API's server time per page with JOBS jobs and EVENTS events
    (on a scratch Redis), against the same pages with a hundredth of the jobs."""
    from postel.infra.cli.support import run_async, settings

    from postel_bench.web import format_web_bench, run_web_bench

    current = settings()
    figures = run_async(run_web_bench)(current, jobs, events, requests)
    click.echo(json.dumps(figures, indent=2) if as_json else format_web_bench(figures))


@bench.command("loop")
@click.option(
    "--document",
    "document_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A sections document (JSON) the oracle model will write.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(16, 100_000),
    required=True,
    help="Completion tokens per model call: the cut that forces continuations.",
)
@click.option(
    "--scale",
    default=None,
    help="Also run the document repeated N times for each N of a comma list, e.g. "
    "1,2,5,10,20: prompt tokens per continuation against document length.",
)
@click.option("--json", "as_json", is_flag=True)
def bench_loop(document_path: Path, max_tokens: int, scale: str | None, as_json: bool) -> None:
    """The AI loop over the bus with an oracle model: iterations, tokens per iteration, LLM
    calls against the minimum, the time to read each answer against a naive re-parse."""
    from postel.infra.cli.support import EXIT_FAILED, EXIT_INPUT, fail, run_async, settings
    from postel.messages import SectionsDocument
    from pydantic import ValidationError

    from postel_bench.loop import format_loop_bench
    from postel_bench.loop_bus import run_loop_bus_bench, run_loop_bus_scale

    current = settings()
    try:
        document = SectionsDocument.model_validate_json(document_path.read_text())
    except (ValidationError, ValueError) as exc:
        fail(f"{document_path} is not a sections document: {exc}", EXIT_INPUT)
    target = document.model_dump(mode="json", exclude_none=True)
    try:
        factors = [int(n) for n in scale.split(",")] if scale else []
    except ValueError:
        fail(f"--scale takes a comma list of whole numbers, not {scale!r}", EXIT_INPUT)
    figures = run_async(run_loop_bus_bench)(current, target, max_tokens)
    equal = figures["document_equal"]
    if factors:
        study = run_async(run_loop_bus_scale)(current, target, factors, max_tokens)
        equal = equal and all(row["document_equal"] for row in study["factors"])
    if as_json:  # one document: the run, with the scale study under `scale`
        click.echo(json.dumps({**figures, "scale": study} if factors else figures, indent=2))
    else:
        click.echo(format_loop_bench(figures))
        if factors:
            click.echo(format_loop_bench(study))
    if not equal:
        fail("the loop did not reassemble the document", EXIT_FAILED)


@bench.command("qa")
@click.option(
    "--triples",
    type=click.IntRange(50, 10_000_000),
    default=100_000,
    show_default=True,
    help="Relations in the generated movie knowledge graph.",
)
@click.option(
    "--questions",
    type=click.IntRange(1, 10_000),
    default=60,
    show_default=True,
    help="Questions, taking 1, 2 and 3 hops in turn.",
)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option(
    "--planners",
    default="right,realistic",
    show_default=True,
    help="Scripted planners to run, a comma list of: right, realistic.",
)
@click.option(
    "--local",
    type=click.IntRange(0, 10_000),
    default=0,
    show_default=True,
    help="Also ask the first N questions with the bundled local model planning (slow).",
)
@click.option(
    "--job-timeout",
    type=click.FloatRange(1, 3600),
    default=300.0,
    show_default=True,
    help="Seconds to wait for one job.",
)
@click.option(
    "--keep",
    "keep_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the graph, the questions and the worker's logs here.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65533),
    default=None,
    help="Embedded Redis port (the scripted endpoint takes the next, the local model the one "
    "after); default: free ports.",
)
@click.option(
    "--local-phases",
    default="local,local-plain",
    show_default=True,
    help="With --local, a comma list of: local (linking and the schema grammar), local-plain "
    "(the same questions without them).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.option(
    "--engine",
    type=click.Choice(["networkx", "ladybug", "both"]),
    default=None,
    help="Instead of the run through the bus: each question's right GASL chain on this "
    "engine (both: on each, answers compared), p50 per question (postel_bench/engines.py).",
)
def bench_qa(
    triples: int,
    questions: int,
    seed: int,
    planners: str,
    local: int,
    job_timeout: float,
    keep_dir: Path | None,
    port: int | None,
    local_phases: str,
    as_json: bool,
    engine: str | None,
) -> None:
    """Knowledge-graph question answering through `postel up`: a generated movie graph
    loaded with `postel graph add`, 1-3-hop questions answered by scripted planners over the
    whole bus, accuracy against a networkx oracle, rounds, hops and time per job, and the
    graph's load time and RSS. Exit 1 if a planner misses its target."""
    from postel.infra.cli.support import EXIT_FAILED, EXIT_INPUT, fail, run_async, settings

    from postel_bench.qa import QaConfig, format_qa, run_qa

    if engine is not None:
        from postel_bench.engines import chosen_engines, format_engine_qa, run_engine_qa

        compared = run_engine_qa(triples, questions, chosen_engines(engine), seed)
        click.echo(json.dumps(compared, indent=2) if as_json else format_engine_qa(compared))
        if not compared["same_answers"]:
            fail("the engines gave different answers", EXIT_FAILED)
        return
    settings()
    chosen = [p.strip() for p in planners.split(",") if p.strip()]
    unknown = sorted(set(chosen) - {"right", "realistic"})
    if unknown or not (chosen or local):
        fail(f"--planners takes a comma list of right, realistic; got {planners!r}", EXIT_INPUT)
    config = QaConfig.model_validate(
        {
            "triples": triples,
            "questions": questions,
            "seed": seed,
            "planners": chosen,
            "local": local,
            "job_timeout_s": job_timeout,
            "keep_dir": keep_dir,
            "port": port,
            "local_phases": [p.strip() for p in local_phases.split(",") if p.strip()],
        }
    )
    figures = run_async(run_qa)(config)
    click.echo(json.dumps(figures, indent=2) if as_json else format_qa(figures))
    if not all(target["holds"] for target in figures["targets"].values()):
        fail("a planner missed its target", EXIT_FAILED)


@bench.command("link")
@click.option(
    "--triples",
    default="100000,1000000",
    show_default=True,
    help="Graph sizes, a comma list of triple counts.",
)
@click.option("--questions", type=click.IntRange(1, 10_000), default=60, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def bench_link(triples: str, questions: int, seed: int, as_json: bool) -> None:
    """The entity linker on the QA bench's questions (gold start entity in the top 1 and 3)
    and the name index's build time and stored size per graph size. Exit 1 if recall@3 is
    under 95 % at a size."""
    from postel.infra.cli.support import EXIT_FAILED, EXIT_INPUT, fail

    from postel_bench.link import format_link, run_link

    try:
        sizes = [int(part) for part in triples.split(",") if part.strip()]
    except ValueError:
        fail(f"--triples takes a comma list of numbers; got {triples!r}", EXIT_INPUT)
    figures = run_link(sizes, questions, seed)
    click.echo(json.dumps(figures, indent=2) if as_json else format_link(figures))
    if not figures["holds"]:
        fail("the linker missed its recall@3 target", EXIT_FAILED)


def _write_sizes(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[int, ...] | None:
    """`--write-sizes`: node counts, comma-separated, each at least 1,000 (every change of
    the section groups 100 new members) and in increasing order (the section compares the
    largest with the smallest)."""
    if value is None:
        return None
    try:
        sizes = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"node counts separated by commas, got {value!r}") from None
    if any(n < 1000 for n in sizes) or list(sizes) != sorted(set(sizes)):
        raise click.BadParameter(f"increasing node counts of at least 1000, got {value!r}")
    return sizes


@bench.command("gasl")
@click.option(
    "--nodes",
    type=click.IntRange(100, 50_000_000),
    default=1_000_000,
    show_default=True,
    help="Nodes of the attribute graph for the FIND questions.",
)
@click.option(
    "--path-nodes",
    type=click.IntRange(100, 10_000_000),
    default=100_000,
    show_default=True,
    help="Nodes of the scale-free graph for the path question.",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, 100),
    default=3,
    show_default=True,
    help="GASL runs per question; the best time counts.",
)
@click.option("--no-cypher", is_flag=True, help="Skip the GrandCypher baseline.")
@click.option(
    "--plan-questions",
    type=click.IntRange(0, 200),
    default=20,
    show_default=True,
    help="Round plans the local model writes with and without the GASL grammar (twice as "
    "many answers, some seconds each); 0 skips them.",
)
@click.option(
    "--write-sizes",
    callback=_write_sizes,
    help="Graph sizes (nodes, comma-separated) of the writes section, smallest first "
    "[default: 10000,100000,1000000]; an empty value skips the section.",
)
@click.option("--json", "as_json", is_flag=True, help="The figures as JSON.")
def bench_gasl(
    nodes: int,
    path_nodes: int,
    repeat: int,
    no_cypher: bool,
    plan_questions: int,
    write_sizes: tuple[int, ...] | None,
    as_json: bool,
) -> None:
    """GASL FIND (index and scan) and path queries against GrandCypher on generated graphs,
    and how often the local model's round plans parse with and without the GASL grammar."""
    from postel.infra.cli import support as cli_support
    from postel.infra.runtime.local_model import LocalModelError

    from postel_bench.gasl import format_gasl_bench, run_gasl_bench
    from postel_bench.plan_parse import format_plan_parse_rates, plan_parse_rates

    if not no_cypher:
        try:
            import grandcypher  # noqa: F401
        except ImportError:
            cli_support.fail(
                "the GrandCypher baseline needs `pip install 'postel[dev]'`; or pass --no-cypher",
                cli_support.EXIT_INPUT,
            )
    sizes = {} if write_sizes is None else {"write_sizes": write_sizes}
    figures = run_gasl_bench(
        nodes=nodes, path_nodes=path_nodes, repeat=repeat, cypher=not no_cypher, **sizes
    )
    text = format_gasl_bench(figures)
    if plan_questions:
        try:
            figures["plan_parse"] = asyncio.run(plan_parse_rates(plan_questions))
        except LocalModelError as error:
            cli_support.fail(f"{error}; or pass --plan-questions 0", cli_support.EXIT_INPUT)
        text += "\n" + format_plan_parse_rates(figures["plan_parse"])
    click.echo(json.dumps(figures, indent=2) if as_json else text)


@bench.command("graphs")
@click.option(
    "--triples",
    type=click.IntRange(100, 10_000_000),
    default=100_000,
    show_default=True,
    help="Relations of the generated movie knowledge graph.",
)
@click.option("--json", "as_json", is_flag=True, help="The figures as one JSON document.")
@click.option(
    "--engine",
    type=click.Choice(["networkx", "ladybug", "both"]),
    default=None,
    help="Compare the graph engines instead: each one's worker RSS holding the graph, open "
    "time, and FIND / NEIGHBORS / 2-hop GRAPHWALK p50, side by side (postel_bench/engines.py).",
)
@click.option(
    "--edges",
    type=click.IntRange(100, 10_000_000),
    default=1_000_000,
    show_default=True,
    help="With --engine: relations of the generated movie graph.",
)
@click.option(
    "--scratch",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="With --engine: keep the generated graph and its store here, reused by later runs.",
)
def bench_graphs(
    triples: int, as_json: bool, engine: str | None, edges: int, scratch: Path | None
) -> None:
    """`postel graph add` and a worker's cold load of a generated movie knowledge graph
    (time, and the loading process's memory) against the former GraphML-parsing path, in
    fresh processes on a scratch Redis; with --engine, the engines compared. Exit 1 if a
    target is missed."""
    from postel.infra.cli import support as cli_support

    from postel_bench.graphs import format_graphs_bench, run_graphs_bench

    if engine is not None:
        from postel_bench.engines import chosen_engines, format_engine_graphs, run_engine_graphs

        compared = run_engine_graphs(edges, chosen_engines(engine), scratch=scratch)
        click.echo(json.dumps(compared, indent=2) if as_json else format_engine_graphs(compared))
        met = all(t["met"] for t in compared["targets"].values())
        if not (met and compared["same_answers"]):
            raise SystemExit(cli_support.EXIT_FAILED)
        return
    cli_support.settings()
    figures = asyncio.run(run_graphs_bench(triples))
    click.echo(json.dumps(figures, indent=2) if as_json else format_graphs_bench(figures))
    if not all(target["met"] for target in figures["targets"].values()):
        raise SystemExit(cli_support.EXIT_FAILED)


@bench.command("graph-bomb")
@click.option(
    "--edges",
    type=click.IntRange(1_000, 10_000_000),
    default=1_100_000,
    show_default=True,
    help="Parallel edges between the bomb's two nodes (61 bytes of GraphML each).",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help="The port of the `postel web` it uploads to (default: a free one).",
)
@click.option(
    "--stored",
    type=click.Choice(["networkx", "ladybug"]),
    default=None,
    help="Also store the bomb with this engine, its limit lifted, and run a worker's job on it.",
)
@click.option("--json", "as_json", is_flag=True, help="The figures as one JSON document.")
def bench_graph_bomb(edges: int, port: int | None, stored: str | None, as_json: bool) -> None:
    """The graph bomb (64 MiB of GraphML, 1.1 M parallel edges between two nodes, a few
    hundred KB gzip) through `postel graph add`, the web upload and a gasl worker's job: each
    process's peak memory against 300 MB. Exit 1 if one passes it or does not do as
    expected (refused by the limit; with --stored, stored with the limit off and a job run
    on it)."""
    from postel.infra.cli import support as cli_support
    from postel.infra.store.redis_server import free_port

    from postel_bench.graph_bomb import format_graph_bomb, run_graph_bomb

    cli_support.settings()
    figures = asyncio.run(run_graph_bomb(edges, port or free_port(), stored))
    click.echo(json.dumps(figures, indent=2) if as_json else format_graph_bomb(figures))
    if not (all(figures["as_expected"].values()) and all(figures["within_bound"].values())):
        raise SystemExit(cli_support.EXIT_FAILED)
