"""Redis Sentinel (infra/store/connect.py): with a primary, a replica and three Sentinels on
loopback, jobs keep running through a failover. The primary is SIGKILLed mid-run; the
Sentinels promote the replica; workers, ingress and the client reach the new primary by
themselves."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.connect import RedisURLError, arq_settings, redis_client
from postel.infra.store.redis_server import free_port

from postel.testing.relay import RELAY_WORKERS

MASTER = "postel-primary"


def start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["redis-server", *args], stdout=subprocess.DEVNULL)


def wait_until(check: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():  # type: ignore[operator]
                return
        except redis.RedisError:
            pass
        assert time.monotonic() < deadline, f"timed out waiting for {check}"
        time.sleep(0.1)


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
