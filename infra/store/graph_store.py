"""Where a graph version's store lives, and how a worker gets it: chunks in Redis (or a file on
a shared volume), fetched once per machine into a local cache folder.

A version's store is one file: the packed tables (infra/store/graph_format.py) of a networkx
graph, or a LadybugDB folder packed as a tar archive. Its SHA-256 is its checksum.

- Redis (the default): the file in chunks of `chunk_bytes`, one key each,
  `Keyspace.graph_chunk(name, version, index)`, written before the graph's hash names the
  version, and deleted once a newer version (or `postel graph remove`) replaces it. On a
  cluster the chunks spread over the shards like any keys.
- A shared volume (`POSTEL_GRAPH_VOLUME`, a path every machine mounts): the file is
  `<volume>/<name>/<version>-<sha256>.store`, and Redis holds only the hash.

A worker fetches a version into `<cache_dir>/<server>/<name>/<version>-<sha256 prefix>/`
once per machine: one process takes a file lock and downloads (checking the SHA-256, then
renaming into place), the others wait on the lock and find it there. Every process on the
machine then opens the same file read-only (a networkx graph is read through mmap, a
LadybugDB store opened read-only), and versions the graph no longer has are deleted from
the cache when a process notices.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
import structlog
from postel.infra.store.graph_ingest import GraphLimits
from postel.infra.store.keys import Keyspace
from postel.messages.errors import Misconfigured

log = structlog.get_logger(__name__)

STORE_FILE = "graph.store"
"""The fetched store in a version's cache folder (a ladybug store: unpacked beside it)."""
LADYBUG_FOLDER = "ladybug"
_DONE = ".fetched"


class StoreChecksumError(Misconfigured):
    """A fetched store whose SHA-256 is not the one its version names (or a chunk missing)."""


@dataclass(frozen=True)
class GraphStorage:
    """How graph versions are stored and cached (settings: POSTEL_GRAPH_*)."""

    cache_dir: Path = field(default_factory=lambda: Path.home() / ".cache" / "postel" / "graphs")
    volume: Path | None = None
    chunk_bytes: int = 4 * 1_048_576
    limits: GraphLimits = field(default_factory=GraphLimits)
    buffer_pool_bytes: int | None = None
    """A worker's engine memory per open graph (ladybug's buffer pool); None: the engine's."""
    build_pool_bytes: int | None = None
    """The engine memory of one `graph add` building a ladybug store; None: the engine's."""
    spool_dir: Path | None = None


@dataclass(frozen=True)
class StoredVersion:
    """One version of a graph's store, as its hash names it."""

    name: str
    version: int
    sha256: str
    size: int
    chunks: int
    engine: str
    location: str  # "redis" or "volume"

    def folder(self, storage: GraphStorage, server: str) -> Path:
        return storage.cache_dir / server / self.name / f"{self.version}-{self.sha256[:16]}"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def pack_folder(folder: Path, archive: Path) -> None:
    """A store folder (LadybugDB's) as one uncompressed tar file."""
    with tarfile.open(archive, "w") as tar:
        for item in sorted(folder.iterdir()):
            tar.add(item, arcname=item.name)


def volume_file(storage: GraphStorage, name: str, version: int, sha256: str) -> Path:
    assert storage.volume is not None
    return storage.volume / name / f"{version}-{sha256}.store"


async def put_store(
    redis: aioredis.Redis,
    keyspace: Keyspace,
    storage: GraphStorage,
    name: str,
    version: int,
    path: Path,
    sha256: str,
) -> tuple[int, str]:
    """Write a version's store file where workers fetch it; (chunks, location)."""
    if storage.volume is not None:
        target = volume_file(storage, name, version, sha256)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        await asyncio.to_thread(shutil.copyfile, path, partial)
        partial.replace(target)
        return 0, "volume"
    chunks = 0
    with path.open("rb") as stream:
        while True:
            data = await asyncio.to_thread(stream.read, storage.chunk_bytes)
            if not data:
                break
            await redis.set(keyspace.graph_chunk(name, version, chunks), data)
            chunks += 1
    return chunks, "redis"


async def delete_store(
    redis: aioredis.Redis, keyspace: Keyspace, storage: GraphStorage, stored: StoredVersion
) -> None:
    """Free a version's store where it is kept (its chunks, or its file on the volume)."""
    if stored.location == "volume":
        if storage.volume is not None:
            volume_file(storage, stored.name, stored.version, stored.sha256).unlink(missing_ok=True)
        return
    keys = [keyspace.graph_chunk(stored.name, stored.version, i) for i in range(stored.chunks)]
    for start in range(0, len(keys), 256):
        for key in keys[start : start + 256]:  # one key per command: a cluster spreads them
            await redis.unlink(key)


async def fetch(
    redis: aioredis.Redis,
    keyspace: Keyspace,
    storage: GraphStorage,
    server: str,
    stored: StoredVersion,
) -> Path:
    """The version's cache folder on this machine, fetched and checked if it was not there
    yet (one process per machine downloads it; the others wait on its lock)."""
    folder = stored.folder(storage, server)
    if (folder / _DONE).exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock_path = folder.parent / f"{folder.name}.lock"
    with lock_path.open("a") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            if not (folder / _DONE).exists():
                await _download(redis, keyspace, storage, stored, folder)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder


async def _download(
    redis: aioredis.Redis,
    keyspace: Keyspace,
    storage: GraphStorage,
    stored: StoredVersion,
    folder: Path,
) -> None:
    scratch = folder.with_name(folder.name + ".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    target = scratch / STORE_FILE
    digest = hashlib.sha256()
    if stored.location == "volume":
        if storage.volume is None:
            raise StoreChecksumError(
                "its store is on a shared volume, and POSTEL_GRAPH_VOLUME is not set here"
            )
        source = volume_file(storage, stored.name, stored.version, stored.sha256)
        try:
            await asyncio.to_thread(shutil.copyfile, source, target)
        except FileNotFoundError as exc:
            raise StoreChecksumError(f"its store {source} is missing") from exc
        digest_hex = await asyncio.to_thread(file_sha256, target)
    else:
        with target.open("wb") as out:
            for index in range(stored.chunks):
                data = await redis.get(keyspace.graph_chunk(stored.name, stored.version, index))
                if data is None:
                    raise StoreChecksumError(f"chunk {index} of its store is missing")
                digest.update(data)
                out.write(data)
        digest_hex = digest.hexdigest()
    if digest_hex != stored.sha256:
        shutil.rmtree(scratch, ignore_errors=True)
        raise StoreChecksumError(
            f"its store fails its SHA-256 check (stored {stored.sha256[:16]}…, "
            f"fetched {digest_hex[:16]}…)"
        )
    if stored.engine == "ladybug":
        await asyncio.to_thread(_unpack, target, scratch / LADYBUG_FOLDER)
        target.unlink()
    (scratch / _DONE).touch()
    shutil.rmtree(folder, ignore_errors=True)
    scratch.replace(folder)
    log.info(
        "graph.fetched",
        graph=stored.name,
        version=stored.version,
        bytes=stored.size,
        to=str(folder),
    )


def _unpack(archive: Path, folder: Path) -> None:
    folder.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")


def prune_cache(storage: GraphStorage, server: str, name: str, keep: Any = None) -> None:
    """Delete this machine's cached versions of `name` other than `keep` (a folder), or all."""
    parent = storage.cache_dir / server / name
    if not parent.is_dir():
        return
    for item in parent.iterdir():
        if item == keep or item.suffix == ".lock":
            continue
        shutil.rmtree(item, ignore_errors=True)
    if keep is None:
        shutil.rmtree(parent, ignore_errors=True)
