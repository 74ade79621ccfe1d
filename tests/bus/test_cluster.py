"""postel on a real Redis Cluster (three primaries on loopback, tests/conftest.py): jobs
spread over every lane and every shard, and each completes through every worker kind."""

from __future__ import annotations

import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store import keys
from postel.infra.store.connect import RedisURLError, cluster_of, primary_of
from postel.messages import JobRequest
from redis.crc import key_slot

from postel.testing.cluster import LoopbackCluster
from postel.testing.relay import RELAY_WORKERS

JOBS = 40


def test_a_cluster_url_names_its_nodes_credentials_and_lanes() -> None:
    cluster = cluster_of("redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2:7001?lanes=8")
    assert [(s.host, s.port) for s in cluster.seeds] == [("10.0.0.1", 7000), ("10.0.0.2", 7001)]
    assert {(s.username, s.password) for s in cluster.seeds} == {("u", "p@ss")}
    assert cluster.lanes == 8
    assert cluster_of("redis+cluster://10.0.0.1:7000").lanes == keys.CLUSTER_LANES
    assert cluster_of("rediss+cluster://10.0.0.1:7000").seeds[0].tls


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("redis+cluster://h:1?lanes=1", "lanes=1"),
        ("redis+cluster://h:1?lanes=x", "lanes=x"),
        ("redis+cluster://h:1/3", "one database"),
        ("redis+cluster://h:1?colour=red", "colour"),
    ],
)
def test_a_bad_cluster_url_is_refused_naming_what_is_wrong(url: str, named: str) -> None:
    with pytest.raises(RedisURLError, match=named):
        cluster_of(url)


def test_a_job_keeps_every_key_in_its_lane_and_one_redis_keeps_todays_names() -> None:
    assert keys.job("j1") == "postel:job:j1"
    assert keys.arq_id("j1:intent") == "j1:intent"
    keys.use_lanes(16)
    try:
        lane = keys.lane_of("j1")
        assert lane.startswith("{p")
        job_keys = [
            keys.job("j1"),
            keys.done("j1:intent"),
            keys.job_events("j1"),
            keys.submission("j1"),
            keys.gasl_rounds("j1"),
            "arq:job:" + keys.arq_id("j1:intent"),
            keys.queue("intent", lane),
            keys.events(lane),
        ]
        assert {key_slot(key.encode()) for key in job_keys} == {key_slot(lane.encode())}
        assert keys.message_of(keys.arq_id("j1:intent")) == "j1:intent"
        route = [keys.route_budget("openai/gpt"), keys.route_slots("openai/gpt")]
        assert len({key_slot(key.encode()) for key in route}) == 1
    finally:
        keys.use_lanes(1)


async def test_relay_jobs_complete_across_every_lane_and_shard(
    cluster_url: str, loopback_cluster: LoopbackCluster, settings: Settings
) -> None:
    async with (
        LocalSystem(settings, redis_url=cluster_url, specs=RELAY_WORKERS),
        Client(cluster_url, settings) as client,
    ):
        job_ids = [await client.submit_request(JobRequest(prompt=f"q{i}")) for i in range(JOBS)]
        records = [await client.wait(job_id, timeout=60) for job_id in job_ids]
    assert {record.status for record in records} == {"completed"}
    lanes = {keys.lane_of(job_id) for job_id in job_ids}
    assert len(lanes) > len(loopback_cluster.primary_ports())
    shards = {(await primary_of(cluster_url, lane)).port for lane in lanes}
    assert shards == set(loopback_cluster.primary_ports())
