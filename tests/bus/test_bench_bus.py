"""`postel bench bus` runs every side end to end and prints its figures (the figures
themselves are the benchmark's business: no test asserts a speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, cast

import pytest


def bench_bus(command: list[str]) -> dict[str, Any]:
    """A `postel bench bus` run's --json figures, in a process of its own, with no POSTEL_
    setting of this shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env["POSTEL_LOG_LEVEL"] = "WARNING"
    done = subprocess.run(
        [sys.executable, "-m", "postel", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    return cast(dict[str, Any], json.loads(done.stdout))


@pytest.mark.bench
def test_bench_bus_measures_every_side_at_rest_and_in_flight() -> None:
    # an idle postel worker looks at Redis once per 1 s fallback (BLPOP's timeout fires up to
    # ~0.1 s late): a 2 s window always sees it
    command = ["bench", "bus", "--jobs", "5", "--processes", "1", "--idle-s", "2"]
    command += ["--latency-jobs", "10", "--json"]
    figures = bench_bus(command)
    assert set(figures["sides"]) == {"postel", "postel_poll", "arq_5ms", "arq_default"}
    for side in figures["sides"].values():
        run = side["by_processes"]["1"]
        assert run["latency_samples"] >= 5 * 5 and run["hops_per_s"] > 0
        assert side["idle_commands_per_s_per_process"] > 0
        assert run["redis_cpu_us_per_hop"] > 0 and run["redis_command_us_per_hop"] > 0
        assert run["redis_commands_per_hop"] > 0
        assert "info" not in run["redis_by_command"], "the INFO calls are left out"
    # a hop of each side is at least its queue's write and its take
    assert "evalsha" in figures["sides"]["postel"]["by_processes"]["1"]["redis_by_command"]
    assert "zadd" in figures["sides"]["arq_5ms"]["by_processes"]["1"]["redis_by_command"]
    assert set(figures["postel_vs_arq_5ms"]["1"]) == {"hops_per_s", "redis_cpu_us_per_hop"}
    assert set(figures["targets"]) == {
        "hop_p50_le_1ms",
        "hop_p99_le_5ms",
        "idle_le_5_commands_per_s",
        "idle_cpu_lt_1pct",
        "hops_per_s_ge_before",
        "redis_cpu_per_hop_le_arq",
        "hops_per_s_ge_arq",
        "recording_costs_lt_5pct",
    }
    recording = figures["recording"]
    assert recording["hops_per_s_recorded"] > 0 and recording["hops_per_s_unrecorded"] > 0
    assert recording["batch_spread_pct"] >= 0


def test_bench_bus_refuses_a_bad_process_list() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "postel", "bench", "bus", "--processes", "1,two"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--processes takes numbers separated by commas, not '1,two'" in done.stderr


@pytest.mark.bench
def test_bench_bus_runs_only_the_sides_asked_for() -> None:
    command = ["bench", "bus", "--jobs", "5", "--processes", "1", "--idle-s", "1"]
    command += ["--latency-jobs", "5", "--sides", "postel,arq_5ms", "--no-recording", "--json"]
    figures = bench_bus(command)
    assert set(figures["sides"]) == {"postel", "arq_5ms"}
    assert "recording" not in figures
    assert set(figures["postel_vs_arq_5ms"]) == {"1"}
    assert "redis_cpu_per_hop_le_arq" in figures["targets"]
    assert "hops_per_s_ge_before" not in figures["targets"]


def test_bench_bus_refuses_an_unknown_side() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "postel", "bench", "bus", "--sides", "postel,nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--sides takes some of postel, postel_poll, arq_5ms, arq_default, not 'postel,nope'" in (
        done.stderr
    )


@pytest.mark.bench
def test_bench_bus_on_a_cluster_measures_each_primary_for_one_and_two_shards() -> None:
    command = ["bench", "bus", "--cluster", "2", "--jobs", "5", "--processes", "1"]
    command += ["--latency-jobs", "10", "--json"]
    figures = bench_bus(command)
    assert set(figures["by_shards"]) == {"1", "2"}
    for shards, run in figures["by_shards"].items():
        by_shard = run["redis_cpu_us_per_hop_by_shard"]
        assert len(by_shard) == int(shards) and all(cpu > 0 for cpu in by_shard)
        assert run["hops_per_s"] > 0 and run["latency_samples"] >= 5 * 5
        assert run["redis_cpu_us_per_hop_all_shards"] == pytest.approx(sum(by_shard), abs=0.2)


def test_bench_bus_on_a_cluster_refuses_the_options_it_would_ignore() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "postel", "bench", "bus", "--cluster", "2", "--idle-s", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--cluster runs postel alone, at one --processes count, not with --idle-s" in (
        done.stderr
    )
