"""postel on a real Redis Cluster (three primaries on loopback, tests/conftest.py): jobs
spread over every lane and every shard, and each completes through every worker kind."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis
from click.testing import Result
from postel.infra.client.client import Client
from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.store import lanes
from postel.infra.store.access import ACL_RULE, CLUSTER_ACL_RULE
from postel.infra.store.connect import (
    RedisRefused,
    RedisURLError,
    cluster_of,
    keyspace_of,
    primary_of,
)
from postel.infra.store.keys import CLUSTER_LANES, Keyspace, message_of, split_lane
from postel.infra.store.lanes import LaneCursor, id_order
from postel.infra.store.wire import connect_arq
from postel.infra.web.app import create_app
from postel.messages import Envelope, JobRequest
from redis.crc import key_slot
from support.recording import Breakable

from postel.testing.cluster import LoopbackCluster
from postel.testing.relay import RELAY_WORKERS

JOBS = 40
STOPPED_JOBS = 150


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def test_a_cluster_url_names_its_nodes_credentials_and_lanes() -> None:
    cluster = cluster_of("redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2:7001?lanes=8")
    assert [(s.host, s.port) for s in cluster.seeds] == [("10.0.0.1", 7000), ("10.0.0.2", 7001)]
    assert {(s.username, s.password) for s in cluster.seeds} == {("u", "p@ss")}
    assert cluster.lanes == 8
    assert cluster_of("redis+cluster://10.0.0.1:7000").lanes == CLUSTER_LANES
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
    one, cluster = Keyspace(), Keyspace(16)
    assert one.job("j1") == "postel:job:j1"
    assert one.arq_id("j1:intent") == "j1:intent"
    lane = cluster.lane_of("j1")
    assert lane.startswith("{p")
    job_keys = [
        cluster.job("j1"),
        cluster.done("j1:intent"),
        cluster.job_events("j1"),
        cluster.submission("j1"),
        cluster.gasl_rounds("j1"),
        "arq:job:" + cluster.arq_id("j1:intent"),
        cluster.queue("intent", lane),
        cluster.events(lane),
    ]
    assert {key_slot(key.encode()) for key in job_keys} == {key_slot(lane.encode())}
    assert message_of(cluster.arq_id("j1:intent")) == "j1:intent"
    route = [cluster.route_budget("openai/gpt"), cluster.route_slots("openai/gpt")]
    assert len({key_slot(key.encode()) for key in route}) == 1
    assert one.job("j1") == "postel:job:j1", "naming a cluster's keys changed no other layout"


def test_a_keyspace_is_made_from_its_url() -> None:
    assert keyspace_of("redis://127.0.0.1:6379/2") == Keyspace()
    assert keyspace_of("redis+sentinel://127.0.0.1:26379/main") == Keyspace()
    assert keyspace_of("redis+cluster://127.0.0.1:7000") == Keyspace(CLUSTER_LANES)
    assert keyspace_of("redis+cluster://127.0.0.1:7000?lanes=4").lanes() == [
        "{p0}",
        "{p1}",
        "{p2}",
        "{p3}",
    ]
    with pytest.raises(ValueError, match="at least one lane"):
        Keyspace(0)


async def test_a_one_redis_system_and_a_cluster_system_run_side_by_side_in_one_process(
    cluster_url: str, embedded_redis_url: str, settings: Settings
) -> None:
    """Each client and each system names keys by its own layout, whichever connected last:
    jobs submitted in turn to both complete, each under its own layout's keys."""
    single = Keyspace()
    async with (
        LocalSystem(settings, redis_url=embedded_redis_url, specs=RELAY_WORKERS),
        Client(embedded_redis_url, settings) as one,
        LocalSystem(settings, redis_url=cluster_url, specs=RELAY_WORKERS),
        Client(cluster_url, settings) as clustered,
    ):
        assert (one.keyspace, clustered.keyspace) == (single, keyspace_of(cluster_url))
        pairs = [
            (await one.submit(f"one {n}"), await clustered.submit(f"cluster {n}")) for n in range(4)
        ]
        for n, (on_one, on_cluster) in enumerate(pairs):
            assert await one.result(on_one, timeout=30) == f"one {n}"
            assert await clustered.result(on_cluster, timeout=30) == f"cluster {n}"
            assert await one.pool.exists(f"postel:job:{on_one}")
            tagged = f"postel:{clustered.keyspace.lane_of(on_cluster)}:job:{on_cluster}"
            assert await clustered.pool.exists(tagged)
        assert not await one.pool.exists(clustered.keyspace.job(pairs[0][0]))


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
    lanes = {keyspace_of(cluster_url).lane_of(job_id) for job_id in job_ids}
    assert len(lanes) > len(loopback_cluster.primary_ports())
    shards = {(await primary_of(cluster_url, lane)).port for lane in lanes}
    assert shards == set(loopback_cluster.primary_ports())


async def test_a_job_whose_record_was_lost_runs_afresh_when_submitted_again(
    cluster_url: str, settings: Settings
) -> None:
    """The resubmission clears what the lost job left (its events and the done markers they
    name) in the job's own lane: markers left set would make every hop a no-op."""
    job_id = "lost-on-a-cluster"
    async with (
        LocalSystem(settings, redis_url=cluster_url, specs=RELAY_WORKERS),
        Client(cluster_url, settings) as client,
    ):
        lane_of = client.keyspace.lane_of
        assert lane_of(job_id) not in ("", lane_of("")), "not the empty id's lane"
        assert await client.submit("again", job_id=job_id) == job_id
        assert await client.result(job_id, timeout=30) == "again"
        await client.pool.delete(client.keyspace.job(job_id))  # lost, as in a failover's window
        assert await client.submit("again", job_id=job_id) == job_id
        assert await client.result(job_id, timeout=30) == "again"
        statuses = [e.status for e in await client.events.read(job_id)]
    assert statuses.count("submitted") == 1 and statuses.count("completed") == 6


async def test_an_acl_user_on_a_cluster_is_told_what_it_lacks_and_runs_jobs_once_given_it(
    cluster_url: str, loopback_cluster: LoopbackCluster, settings: Settings
) -> None:
    """The minimal ACL is not enough on a cluster: the client's own start-up commands are
    named (redis-py would say "Cluster mode is not enabled"); with them, jobs run."""

    def set_user(*rule: str) -> None:
        for port in loopback_cluster.ports:  # a cluster does not copy users between nodes
            node = redis.Redis(port=port)
            node.execute_command("ACL", "SETUSER", "postel-acl", "reset", "on", ">pw", *rule)
            node.close()

    url = cluster_url.replace("redis+cluster://", "redis+cluster://postel-acl:pw@")
    try:
        set_user(*ACL_RULE.split())
        with pytest.raises(
            RedisRefused, match=r"lacks permissions .*: \+cluster\|slots \+command "
        ):
            await connect_arq(url)
        set_user(*CLUSTER_ACL_RULE.split())
        async with (
            LocalSystem(settings, redis_url=url, specs=RELAY_WORKERS),
            Client(url, settings) as client,
        ):
            job_ids = [await client.submit(f"acl {n}") for n in range(6)]
            assert [await client.result(job_id, timeout=30) for job_id in job_ids] == [
                f"acl {n}" for n in range(6)
            ]
    finally:
        for port in loopback_cluster.ports:
            node = redis.Redis(port=port)
            node.execute_command("ACL", "DELUSER", "postel-acl")
            node.close()


def test_the_cli_lists_shows_and_redrives_dead_letters_and_exports_jobs_across_shards(
    cluster_url: str,
    settings: Settings,
    tmp_path: Path,
    in_process: Callable[..., Result],
) -> None:
    """`postel dead`, `status`, `events` and `export` from the user's side, unchanged on a
    cluster: a dead letter's id carries its lane, so each command finds it from the id."""
    quick = settings.model_copy(update={"planner": QueueSettings(job_timeout=30, max_tries=1)})
    breakable = Breakable()
    env = {"POSTEL_REDIS_URL": cluster_url}

    async def run_jobs(submit: int, then_wait: list[str]) -> list[str]:
        async with (
            LocalSystem(quick, redis_url=cluster_url, specs=breakable.specs()),
            Client(cluster_url, quick) as client,
        ):
            submitted = [await client.submit(f"dead {n}") for n in range(submit)]
            await client.wait_all([*submitted, *then_wait], timeout=60)
            return submitted

    failed = asyncio.run(run_jobs(6, []))
    listed = in_process("dead", "list", "--json", env=env)
    assert listed.exit_code == 0, listed.stderr
    letters = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(letter["job_id"] for letter in letters) == sorted(failed)
    assert len({split_lane(letter["id"])[0] for letter in letters}) > 1, "several lanes"
    shown = in_process("dead", "show", letters[-1]["id"], env=env)
    assert shown.exit_code == 0 and json.loads(shown.stdout)["job_id"] == letters[-1]["job_id"]
    redriven = in_process("dead", "redrive", "--all", env=env)
    assert redriven.exit_code == 0, redriven.stdout + redriven.stderr
    breakable.broken = False
    asyncio.run(run_jobs(0, failed))
    for job_id in failed:
        status = in_process("status", job_id, env=env)
        assert status.exit_code == 0 and json.loads(status.stdout)["status"] == "completed"
    assert "redriven" in in_process("events", failed[0], env=env).stdout
    out = tmp_path / "job.json"
    exported = in_process("export", failed[0], "-o", str(out), env=env)
    assert exported.exit_code == 0, exported.stderr
    assert json.loads(out.read_text())["record"]["status"] == "completed"
    assert in_process("dead", "list", "--json", env=env).stdout.strip() == ""


@pytest.fixture
def replicated_cluster(tmp_path: Path) -> Iterator[LoopbackCluster]:
    """Three primaries, each with a replica that takes over when it dies."""
    with LoopbackCluster(tmp_path, primaries=3, replicas=1) as cluster:
        yield cluster


def slow_relay() -> list[WorkerSpec]:
    """The relay stages, the planner taking 0.3 s a hop: jobs are in flight at the kill."""
    intent, planner, *rest = RELAY_WORKERS

    async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
        await asyncio.sleep(0.3)
        return await planner.handle(message, runtime)

    return [intent, WorkerSpec("planner", planner.accepts, handle), *rest]


async def test_a_primary_killed_mid_run_fails_over_with_no_job_lost_or_run_twice(
    replicated_cluster: LoopbackCluster, settings: Settings
) -> None:
    url = replicated_cluster.url
    victim = replicated_cluster.primary_ports()[0]
    submitted: list[str] = []
    retried = 0
    async with (
        LocalSystem(settings, redis_url=url, specs=slow_relay()),
        Client(url, settings) as client,
    ):
        victim_lanes = {
            lane for lane in client.keyspace.lanes() if (await primary_of(url, lane)).port == victim
        }
        for n in range(JOBS):
            if n == JOBS // 2:
                replicated_cluster.kill_synced(victim)
            while True:  # a producer retries a refused submission under the same id
                try:
                    submitted.append(await client.submit(f"job {n}", job_id=f"failover-{n}"))
                    break
                except (redis.RedisError, OSError):
                    retried += 1
                    await asyncio.sleep(0.2)
        records = await client.wait_all(submitted, timeout=120)
        histories = {job_id: await client.events.read(job_id) for job_id in submitted}
    assert victim not in replicated_cluster.primary_ports(), "a replica took over"
    assert {record.status for record in records.values()} == {"completed"}
    assert len(records) == len(submitted) == JOBS
    for job_id, events in histories.items():
        committed = [e.message_id for e in events if e.status == "completed"]
        assert len(committed) == len(set(committed)) == 6, f"{job_id} ran a hop twice: {events}"
    on_victim_lanes = {
        job_id for job_id in submitted if client.keyspace.lane_of(job_id) in victim_lanes
    }
    print(
        f"\ncluster failover: {len(on_victim_lanes)} of {JOBS} jobs on the killed shard, "
        f"{retried} submissions retried"
    )
    assert on_victim_lanes, "some jobs lived on the killed shard"


async def test_a_primary_stopped_for_4_s_under_150_jobs_fails_none(
    replicated_cluster: LoopbackCluster, settings: Settings
) -> None:
    """While a stopped primary is failed over, every shard answers CLUSTERDOWN or TRYAGAIN
    for a moment, and the stopped one's clients MOVED once it is back as a replica: an
    outage each, ridden out, never a job's verdict."""
    url = replicated_cluster.url
    victim = replicated_cluster.primary_ports()[0]
    one_at_a_time = settings.model_copy(update={"concurrency": 1})  # the jobs queue up
    async with (
        LocalSystem(one_at_a_time, redis_url=url, specs=slow_relay()),
        Client(url, settings) as client,
    ):
        submitted = [
            await client.submit(f"job {n}", job_id=f"stopped-{n}") for n in range(STOPPED_JOBS)
        ]
        await asyncio.to_thread(replicated_cluster.freeze_synced, victim, 4.0, 2.5)
        records = await client.wait_all(submitted, timeout=180)
    assert victim not in replicated_cluster.primary_ports(), "a replica took over"
    failed = {job_id: r.error for job_id, r in records.items() if r.status != "completed"}
    assert not failed
    assert len(records) == STOPPED_JOBS


async def every_page(api: httpx.AsyncClient, path: str, limit: int, field: str) -> list[str]:
    """`field` of every item of a paged API list, walked `limit` at a time by its cursor."""
    found: list[str] = []
    before = None
    while True:
        after = {"before": before} if before else {}
        page = (await api.get(path, params={"limit": limit, **after})).json()
        found += [item[field] for item in page["items"]]
        if (before := page["next"]) is None:
            return found


async def test_dead_letters_redrive_cancel_ingress_and_the_views_merge_every_lane(
    cluster_url: str, settings: Settings
) -> None:
    quick = settings.model_copy(update={"planner": QueueSettings(job_timeout=30, max_tries=2)})
    breakable = Breakable()
    async with (
        LocalSystem(quick, redis_url=cluster_url, specs=breakable.specs()),
        Client(cluster_url, quick) as client,
    ):
        web_pool = await connect_arq(cluster_url)
        app, _state = create_app(web_pool, client.keyspace, quick, loopback_only=False)
        api = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1")
        failed = [await client.submit(f"dead {n}") for n in range(12)]
        records = await client.wait_all(failed, timeout=60)
        assert {r.failure for r in records.values()} == {"out_of_tries"}
        doomed = await client.submit("cancel me")
        assert (await api.post(f"/api/jobs/{doomed}/cancel")).status_code == 200

        letters = (await api.get("/api/dead", params={"limit": 50})).json()
        assert letters["total"] == 12
        ids = [letter["id"] for letter in letters["items"]]
        assert len({split_lane(i)[0] for i in ids}) > 1, "letters of several lanes"
        newest_first = sorted(
            ids,
            key=lambda i: (id_order(split_lane(i)[1]), split_lane(i)[0]),
            reverse=True,
        )
        assert ids == newest_first, "by entry id, ties (two shards, one millisecond) by lane"
        paged = await every_page(api, "/api/dead", 5, "id")
        assert paged == ids, "pages of 5 walk every lane's letters once, newest first"
        assert (await api.get(f"/api/dead/{ids[0]}")).json()["id"] == ids[0]

        breakable.broken = False
        one = (await api.post(f"/api/dead/{ids[0]}/redrive")).json()
        rest = (await api.post("/api/dead/redrive")).json()
        assert len(rest["redriven"]) == 11 and not rest["refused"]
        entries = [
            await client.pool.xadd(
                client.keyspace.ingress, {"job": json.dumps({"prompt": f"in {n}"})}
            )
            for n in range(5)
        ]
        ingested = [f"ingress-{_text(e).replace('-', '_')}" for e in entries]
        async with asyncio.timeout(30):
            while not all([await client.pool.exists(client.keyspace.job(i)) for i in ingested]):
                await asyncio.sleep(0.1)
        done = await client.wait_all([*failed, *ingested], timeout=60)
        assert {r.status for r in done.values()} == {"completed"}
        assert one["job_id"] in failed

        jobs = (await api.get("/api/jobs", params={"limit": 100})).json()
        every = {*failed, *ingested, doomed}
        assert jobs["total"] == len(every) and {j["job_id"] for j in jobs["items"]} == every
        paged_jobs = await every_page(api, "/api/jobs", 4, "job_id")
        assert paged_jobs == [j["job_id"] for j in jobs["items"]]
        assert (await api.get("/api/jobs/" + doomed)).json()["failure"] == "cancelled"
        queues = (await api.get("/api/queues")).json()
        assert (queues["jobs"], queues["dead_letters"]) == (len(every), 0)

        cursor = LaneCursor.parse("0-0", client.keyspace)
        merged = await lanes.read_after(client.pool, client.keyspace.events, cursor, count=10_000)
        # every event of every job but a quick hop's `received`, which is in its job's
        # stream only (its outcome carries its wait): the lanes' streams merged lose none
        in_lanes = [
            (e.message_id, e.status, e.attempt)
            for job_id in every
            for e in await client.events.read(job_id)
            if e.status != "received"
        ]
        merged_hops = [
            (
                e.fields[b"message_id"].decode(),
                e.fields[b"status"].decode(),
                int(e.fields[b"attempt"]),
            )
            for e in merged
            if e.fields[b"status"] != b"received"
        ]
        assert sorted(merged_hops) == sorted(in_lanes)
        assert [e.id for e in merged] == sorted((e.id for e in merged), key=id_order)
        metrics = (await api.get("/metrics")).text
        completed = 'postel_jobs_total{status="completed"} ' + f"{len(every) - 1}.0"
        assert completed in metrics
        await api.aclose()
        await web_pool.aclose()


async def test_the_cluster_client_falls_back_on_the_urls_nodes(cluster_url: str) -> None:
    """redis-py forgets a node it could not reach; having forgotten every one (a failover
    on a busy machine), it finds the cluster again from the URL's nodes."""
    client = cluster_of(cluster_url).client()
    try:
        await client.initialize()
        client.nodes_manager.startup_nodes.clear()
        await client.nodes_manager.initialize()
        assert await client.set(keyspace_of(cluster_url).job("seeded"), "1")
    finally:
        await client.aclose()


async def test_a_pipeline_finishing_while_another_task_refreshes_the_map_succeeds(
    cluster_url: str,
) -> None:
    """A CLUSTERDOWN in one task makes redis-py forget its default node; a pipeline of
    another task that then finishes with an error reply among its replies (an empty lane's
    stream read, say) still returns them all."""
    client = cluster_of(cluster_url).client()
    key = keyspace_of(cluster_url).job("not-a-stream")
    try:
        await client.initialize()
        await client.set(key, "1")
        async with client.pipeline() as pipe:
            pipe.get(key)
            pipe.xrevrange(key, count=1)
            await client.nodes_manager.aclose()  # what the other task's CLUSTERDOWN does
            first, second = await pipe.execute(raise_on_error=False)
        assert first == b"1" and isinstance(second, redis.ResponseError)
    finally:
        await client.aclose()
