"""Redis Sentinel (infra/store/connect.py): with a primary, a replica and three Sentinels on
loopback, jobs keep running through a failover. The primary is SIGKILLed mid-run; the
Sentinels promote the replica; workers, ingress and the client reach the new primary by
themselves; ingress entries read before the kill are submitted as soon as the new primary
answers; the API answers 503 (never 500) in the gap; followers see every event once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
import redis
from postel.infra.client.client import Client
from postel.infra.runtime import runner
from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.ingress import IDLE_BLOCK_MS, IngressConsumer
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.connect import RedisURLError, arq_settings, redis_client
from postel.infra.store.keys import Keyspace
from postel.infra.store.redis_server import free_port
from postel.infra.store.wire import connect_arq
from postel.infra.web.app import create_app

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

MASTER = "postel-primary"


def start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["redis-server", *args], stdout=subprocess.DEVNULL)


def wait_until(check: object, polls: int = 200) -> None:
    """Until `check()` holds, asking every 0.1 s, at most `polls` times."""
    for _ in range(polls):
        try:
            if check():  # type: ignore[operator]
                return
        except redis.RedisError:
            pass
        time.sleep(0.1)
    pytest.fail(f"{check} did not hold after {polls} polls")


@pytest.fixture
def sentinel_cluster(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """(the Sentinel URL, the primary's process)."""
    primary_port, replica_port = free_port(), free_port()
    # --dir: a replica's full sync writes an RDB file, which belongs in the test's directory
    common = ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--dir", str(tmp_path)]
    primary = start(["--port", str(primary_port), *common])
    replica = start(
        ["--port", str(replica_port), *common, "--replicaof", "127.0.0.1", str(primary_port)]
    )
    processes = [primary, replica]
    sentinel_ports = [free_port() for _ in range(3)]
    try:
        wait_until(
            lambda: redis.Redis(port=replica_port).info("replication")["master_link_status"] == "up"
        )
        for port in sentinel_ports:
            conf = tmp_path / f"sentinel-{port}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\n"
                f"sentinel monitor {MASTER} 127.0.0.1 {primary_port} 2\n"
                f"sentinel down-after-milliseconds {MASTER} 1000\n"
                f"sentinel failover-timeout {MASTER} 5000\n"
            )
            processes.append(start([str(conf), "--sentinel"]))
        for port in sentinel_ports:
            wait_until(
                lambda port=port: redis.Redis(port=port).execute_command(
                    "SENTINEL", "REPLICAS", MASTER
                )
            )
        hosts = ",".join(f"127.0.0.1:{port}" for port in sentinel_ports)
        yield f"redis+sentinel://{hosts}/{MASTER}/0", primary
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait(10)


async def test_jobs_carry_on_through_a_failover(
    sentinel_cluster: tuple[str, subprocess.Popen[bytes]], settings: Settings
) -> None:
    url, primary = sentinel_cluster
    submitted: list[str] = []
    refused = 0
    async with (
        LocalSystem(settings, redis_url=url, specs=RELAY_WORKERS),
        Client(url, settings) as client,
    ):
        for n in range(40):
            job_id = f"failover-{n}"
            if n == 15:
                primary.kill()  # SIGKILL: the Sentinels must notice and promote the replica
                killed_at = time.monotonic()
            while True:  # a producer retries a refused submission under the same id
                try:
                    await client.submit(f"job {n}", job_id=job_id)
                    break
                except (redis.RedisError, OSError):
                    refused += 1
                    await asyncio.sleep(0.2)
            submitted.append(job_id)
            await asyncio.sleep(0.05)
        records = await client.wait_all(submitted, timeout=60)
        now_primary = redis_client(url)
        promoted = await now_primary.execute_command("ROLE")
        await now_primary.aclose()
    completed = sum(r.status == "completed" for r in records.values())
    print(
        f"\nfailover: {len(submitted)} jobs submitted, {completed} completed, "
        f"{len(submitted) - completed} not completed, {refused} submissions retried; "
        f"{time.monotonic() - killed_at:.1f} s from the kill to the last result"
    )
    assert promoted[0] == b"master"
    assert completed == len(submitted), "every job completed on the new primary"


def test_sentinel_urls_are_read_and_bad_ones_named() -> None:
    settings = arq_settings("redis+sentinel://:pw@10.0.0.1:26380,10.0.0.2/main/3")
    assert settings.sentinel and settings.sentinel_master == "main"
    assert settings.host == [("10.0.0.1", 26380), ("10.0.0.2", 26379)]
    assert settings.database == 3 and settings.password == "pw"
    for bad in ("redis+sentinel://h1:1/", "redis+sentinel:///main", "redis+sentinel://h:1/m/x"):
        with pytest.raises(RedisURLError, match=r"sentinel|database|host"):
            arq_settings(bad)


def switched(url: str, old_port: int) -> bool:
    """Whether a Sentinel of `url` names a primary other than the one on `old_port`."""
    hosts = url.split("://", 1)[1].split("/", 1)[0].split(",")
    for host in hosts:
        port = int(host.rsplit(":", 1)[1])
        with contextlib.suppress(redis.RedisError):
            address = redis.Redis(port=port).sentinel_get_master_addr_by_name(MASTER)
            if address and int(address[1]) != old_port:
                return True
    return False


def slow_intent() -> WorkerSpec:
    """The intent relay taking 2 s for jobs named `slow-*`: they are in flight over the
    failover."""
    relay = RELAY_WORKERS[0]

    async def handle(message: object, runtime: Runtime) -> HopOutcome:
        if message.job_id.startswith("slow-"):  # type: ignore[attr-defined]
            await asyncio.sleep(2)
        return await relay.handle(message, runtime)  # type: ignore[arg-type]

    return WorkerSpec("intent", relay.accepts, handle)


def at(value: datetime | None) -> float:
    assert value is not None
    return value.timestamp()


async def ingress_never_reclaiming(runtime: Runtime) -> None:
    """The ingress consumer, its reclaim of entries left pending put off past any test."""
    await IngressConsumer(runtime, claim_idle_ms=3_600_000, block_ms=IDLE_BLOCK_MS).run()


async def test_a_failover_loses_no_ingress_entry_no_event_and_answers_503(
    sentinel_cluster: tuple[str, subprocess.Popen[bytes]],
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every ingress entry becomes a job though no entry can come back by a reclaim (after
    claim_idle_ms): the ones read before the kill are read again as soon as Redis is back."""
    monkeypatch.setattr(runner, "run_ingress", ingress_never_reclaiming)
    url, primary = sentinel_cluster
    primary_port = int(primary.args[2])  # type: ignore[index]
    specs = [slow_intent(), *RELAY_WORKERS[1:]]
    burst = 150
    async with (
        LocalSystem(settings, redis_url=url, specs=specs),
        Client(url, settings) as client,
    ):
        web_pool = await connect_arq(url)
        app, _state = create_app(web_pool, KEYS, settings, loopback_only=False)
        api = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1")
        followed = [await client.submit(f"slow {n}", job_id=f"slow-{n}") for n in range(3)]
        seen: dict[str, list[str]] = {job_id: [] for job_id in followed}

        async def follow(job_id: str) -> None:
            async for event in client.follow(job_id):
                assert event.id is not None
                seen[job_id].append(event.id)

        async def sse(job_id: str) -> list[str]:
            response = await api.get(f"/api/jobs/{job_id}/events/stream", timeout=120)
            lines = response.text.splitlines()
            return [line.removeprefix("id: ") for line in lines if line.startswith("id: ")]

        followers = [asyncio.create_task(follow(job_id)) for job_id in followed]
        streams = [asyncio.create_task(sse(job_id)) for job_id in followed]
        producer = redis_client(url)
        async with producer.pipeline(transaction=False) as pipe:
            for n in range(burst):
                pipe.xadd(KEYS.ingress, {"job": json.dumps({"prompt": f"entry {n}"})})
            entry_ids = [e.decode() for e in await pipe.execute()]
        await producer.execute_command("WAIT", 1, 2000)  # the burst is on the replica
        await producer.aclose()
        await asyncio.sleep(0.05)  # the consumer has read some of it, not all
        primary.kill()
        killed_at = time.time()
        codes: list[int] = []
        switched_at = None
        while switched_at is None or time.time() < switched_at + 1:
            codes.append((await api.get("/api/queues")).status_code)
            if switched_at is None and await asyncio.to_thread(switched, url, primary_port):
                switched_at = time.time()
            await asyncio.sleep(0.1)
        ingress_ids = [f"ingress-{entry_id.replace('-', '_')}" for entry_id in entry_ids]
        async with asyncio.timeout(90):  # every entry becomes a job (wait_all needs them)
            while not all(
                await asyncio.gather(*(client.pool.exists(KEYS.job(i)) for i in ingress_ids))
            ):
                await asyncio.sleep(0.2)
        records = await client.wait_all([*followed, *ingress_ids], timeout=90)
        await asyncio.wait_for(asyncio.gather(*followers), 30)
        streamed = await asyncio.wait_for(asyncio.gather(*streams), 30)
        stored = {job_id: [e.id for e in await client.events.read(job_id)] for job_id in followed}
        await api.aclose()
        await web_pool.aclose()
    assert all(r.status == "completed" for r in records.values())
    assert 500 not in codes and 503 in codes, codes
    for job_id, ids in [*seen.items(), *zip(followed, streamed, strict=True)]:
        assert len(ids) == len(set(ids)), f"{job_id}: an event was delivered twice"
        assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
        assert set(stored[job_id]) <= set(ids), f"{job_id}: a follower missed an event"
    submitted = [at(records[job_id].created_at) for job_id in ingress_ids]
    finished = [at(r.finished_at) for r in records.values() if at(r.finished_at) > killed_at]
    assert switched_at is not None
    last_entry_s = max(submitted) - switched_at
    after_kill = sum(t > killed_at for t in submitted)
    print(
        f"\nfailover: switch {switched_at - killed_at:.1f} s after the kill; first completion "
        f"{min(finished) - killed_at:.1f} s after it; {after_kill} of {burst} ingress entries "
        f"submitted after it, the last "
        f"{max(submitted) - killed_at:.1f} s after it ({last_entry_s:.1f} s after the "
        f"switch); API answers during the gap: {sorted(set(codes))}"
    )
