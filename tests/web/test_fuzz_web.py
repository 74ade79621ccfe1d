"""Hostile bytes at every HTTP route: a 4xx each, never a 500, a reset or a traceback. The
named cases first (each was a 500 or a reset once), then the fuzzer of `postel bench fuzz`
(benchmarks/postel_bench/fuzz.py) at a small size: every family of hostile values at every
route, twice. Real uvicorn on loopback, real Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from postel.infra.web.server import WebServer
from postel_bench.fuzz import FAMILIES, fuzz_server, targets

HOSTILE_JOBS = {
    "a lone surrogate": b'{"prompt": "\\ud800"}',
    "a reversed pair": b'{"prompt": "x", "ambient": {"locale": "\\udc00\\ud800"}}',
    "NaN": b'{"prompt": NaN}',
    "NaN in options": b'{"prompt": "x", "options": {"max_tokens": NaN}}',
    "Infinity": b'{"prompt": "x", "code_site": {"function_name": -Infinity}}',
    "1e999": b'{"prompt": 1e999}',
    "invalid UTF-8 in a string": b'{"prompt": "\xff\xfe"}',
    "an encoded surrogate": b'{"prompt": "\xed\xa0\x80"}',
}


async def test_hostile_json_bodies_are_422_naming_why(
    web: WebServer, api: httpx.AsyncClient
) -> None:
    for case, body in HOSTILE_JOBS.items():
        for path, wrapped in (
            ("/api/jobs", body),
            ("/api/jobs/cancel", body.replace(b'{"prompt": ', b'{"job_ids": [', 1) + b"]"),
        ):
            answer = await api.post(
                path, content=wrapped, headers={"content-type": "application/json"}
            )
            assert answer.status_code == 422, (case, path, answer.text)
            [error] = answer.json()["detail"]
            assert error["loc"][0] == "body", (case, error)
    unlabelled = await api.post("/api/jobs", content=HOSTILE_JOBS["a reversed pair"])
    assert unlabelled.status_code == 422, "a body without a content type is still JSON to FastAPI"
    legal = await api.post("/api/jobs", json={"prompt": "\\ud800 is text, and so is 😀"})
    assert legal.status_code == 201, legal.text


async def test_bad_ids_and_cursors_are_422_on_every_route(
    web: WebServer, api: httpx.AsyncClient
) -> None:
    for path in (
        "/api/dead?before=a:b",
        "/dead?before=a:b",
        "/api/jobs?before=a:b",
        "/jobs?before=1:a:b",
    ):
        answer = await api.get(path)
        assert answer.status_code == 422, (path, answer.text)
        assert answer.json()["detail"][0]["loc"] == ["query", "before"], path
    for job in ("a:b:gen:0", "x" * 101, "-inf"):
        answer = await api.post("/jobs/cancel", data={"job": job, "back": "/jobs"})
        assert answer.status_code == 422, (job, answer.text)
        assert answer.json()["detail"][0]["loc"][:2] == ["body", "job"]
        refused = await api.post("/api/jobs/cancel", json={"job_ids": [job]})
        assert refused.status_code == 422, job
    newest = (await api.get("/api/jobs", params={"limit": 1})).json()
    assert newest["next"] is None
    await api.post("/api/jobs", json={"prompt": "one"})
    await api.post("/api/jobs", json={"prompt": "two"})
    first = (await api.get("/api/jobs", params={"limit": 1})).json()
    following = await api.get("/api/jobs", params={"limit": 1, "before": first["next"]})
    assert following.status_code == 200, "a cursor the server wrote reads back"
    assert (await api.get("/jobs", params={"before": first["next"]})).status_code == 200


async def test_every_route_meets_every_family_without_a_500_reset_or_traceback(
    web: WebServer,
) -> None:
    figures = await fuzz_server(web.url.rstrip("/"), bodies=2 * len(FAMILIES))
    assert len(figures["routes"]) == len(targets()) > 40
    broken = {
        name: counts["examples"]
        for name, counts in figures["routes"].items()
        if counts["500s"] or counts["resets"] or counts["timeouts"]
    }
    assert broken == {}
    assert figures["tracebacks"] == 0, figures["first_traceback"]
    assert figures["sent"] == len(targets()) * 2 * len(FAMILIES)


@pytest.mark.bench
def test_bench_fuzz_prints_the_counts(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env.update(POSTEL_LOG_LEVEL="INFO", POSTEL_STATE_DIR=str(tmp_path))
    run = subprocess.run(
        [sys.executable, "-m", "postel", "bench", "fuzz", "--bodies", str(len(FAMILIES)), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    figures = json.loads(run.stdout)
    assert figures["sent"] == len(targets()) * len(FAMILIES)
    assert (figures["500s"], figures["resets"], figures["timeouts"], figures["tracebacks"]) == (
        0,
        0,
        0,
        0,
    )
    assert {counts["sent"] for counts in figures["routes"].values()} == {len(FAMILIES)}
    # progress on stderr, one line per route as it ends
    progress = [line for line in run.stderr.splitlines() if "route fuzzed" in line]
    assert len(progress) == len(targets()), run.stderr[-2000:]
    assert f'"routes_done": "{len(targets())}/{len(targets())}"' in progress[-1]
