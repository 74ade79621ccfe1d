"""StateStore: the persistent findings of an analysis, changed only by DECLARE and UPDATE.

Every change makes a new immutable snapshot (copy-on-write: only the dicts along the changed
key are copied, the rest is shared), numbered by version and hashed by content. The store
also keeps the execution history and a replay artifact: the plans in order, with the caps
they started under, enough to re-run the session and arrive at the same state. It carries
the job's caps too (`caps`, as SET left them) and its overlay (`overlay`, what CREATE_*
added), so they hold for the job's later plans and for no other job.

Layout of a declared key (what a plan's commands read and write):
  LIST    {"_meta": {"type": "LIST", "description": ...}, "items": [...]}
  DICT    {"_meta": {...}, <declared sub-keys>, <data keys>}
  COUNTER {"_meta": {...}, "counts": {<key>: <number>}}
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Protocol

from postel.messages.gasl import StateKeySummary, StateSummary
from postel.services.gasl.context import shorten
from postel.services.gasl.errors import StateError

StateType = Literal["LIST", "DICT", "COUNTER"]
FORMAT = "postel.gasl.state/1"


class StateBackend(Protocol):
    """Where the state document lives. One JSON-serialisable dict, read and written whole."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, doc: dict[str, Any]) -> None: ...


class MemoryStateBackend:
    """Keeps the document in memory (tests, replays, one-shot CLI runs)."""

    def __init__(self) -> None:
        self._doc: str | None = None

    def load(self) -> dict[str, Any] | None:
        return None if self._doc is None else json.loads(self._doc)

    def save(self, doc: dict[str, Any]) -> None:
        self._doc = json.dumps(doc)


class JsonFileStateBackend:
    """One JSON file, replaced atomically so a crash never leaves half a state."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, Any] | None:
        if not self.path.exists():
            return None
        loaded: dict[str, Any] = json.loads(self.path.read_text("utf-8"))
        return loaded

    def save(self, doc: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".state-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(doc, handle, ensure_ascii=False, indent=1)
        os.replace(tmp, self.path)


@dataclass(frozen=True)
class Snapshot:
    """One version of the variables. Treat `variables` as read-only: later versions share it.

    The content hash is computed when first asked for (a summary, a save), not per write:
    hashing reads the whole state, and a write should cost what it changes."""

    version: int
    variables: dict[str, Any]

    @cached_property
    def hash(self) -> str:
        return content_hash(self.variables)


def content_hash(variables: dict[str, Any]) -> str:
    canonical = json.dumps(variables, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _jsonable(value: Any) -> Any:
    # State is persisted as JSON, so it only ever holds what JSON can say.
    return json.loads(json.dumps(value, default=str))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _is_declared(node: Any) -> bool:
    return isinstance(node, dict) and "_meta" in node


def _mark(item: Any) -> str:
    """An item's identity in a LIST: equal JSON is the same item."""
    return json.dumps(item, sort_keys=True)


def _counter_key(item: Any) -> str:
    if isinstance(item, dict) and "id" in item:
        return str(item["id"])
    if isinstance(item, str):
        return item
    return json.dumps(item, sort_keys=True, default=str)


class StateStore:
    """Versioned state with history and a replay artifact.

    Every DECLARE and UPDATE makes a new version. Versions share what they did not change:
    a version handed out (`current`, a summary, a save) is frozen as a Snapshot, and the
    next write copies only the containers on its key's path, once; later writes change
    those copies in place. So a write costs what it changes (its key's path and its own
    items), not the size of the whole state, and every snapshot handed out stays as it was.
    """

    def __init__(self, backend: StateBackend | None = None, query: str = "") -> None:
        self.backend: StateBackend = backend or MemoryStateBackend()
        doc = self.backend.load() or {}
        self.created_at: str = doc.get("created_at", _now())
        self.query: str = doc.get("query", query)
        self.history: list[dict[str, Any]] = list(doc.get("history", []))
        self.replay: dict[str, Any] = doc.get("replay", {"seed": 0, "plans": []})
        # Empty until a plan ran: the executor then starts from the default caps.
        self.caps: dict[str, int] = dict(doc.get("caps", {}))
        # What the job's CREATE_* commands added to its view of the graph (services.gasl.overlay).
        self.overlay: dict[str, Any] = dict(doc.get("overlay", {}))
        self._version = int(doc.get("state_version", 0))
        self._root: dict[str, Any] = doc.get("variables", {})
        self.snapshots: list[Snapshot] = [Snapshot(self._version, self._root)]
        # Containers created since the last snapshot, by id (holding them keeps ids unique):
        # only these may change in place.
        self._owned: dict[int, Any] = {}
        # Per LIST items list being written: the marks of its items, so a MERGE compares only
        # what comes in.
        self._marks: dict[int, tuple[list[Any], set[str]]] = {}

    # --- reading
    @property
    def current(self) -> Snapshot:
        """The current version, frozen: later writes leave it as it is."""
        if self.snapshots[-1].version != self._version:
            self.snapshots.append(Snapshot(self._version, self._root))
            self._owned.clear()
        return self.snapshots[-1]

    @property
    def version(self) -> int:
        return self._version

    @property
    def variables(self) -> dict[str, Any]:
        """A private copy of the current variables."""
        return _jsonable(self._root)

    def snapshot(self, version: int) -> Snapshot:
        for snap in self.snapshots:
            if snap.version == version:
                return snap
        raise KeyError(f"no snapshot of version {version} in this session")

    def _node(self, key: str) -> Any:
        node: Any = self._root
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node or part == "_meta":
                return None
            node = node[part]
        return node if _is_declared(node) else None

    def has(self, key: str) -> bool:
        return self._node(key) is not None

    def get(self, key: str) -> Any:
        """The data of a declared key: LIST items, DICT entries, COUNTER counts."""
        node = self._node(key)
        if node is None:
            raise KeyError(key)
        kind = node["_meta"]["type"]
        if kind == "LIST":
            return _jsonable(node["items"])
        if kind == "COUNTER":
            return _jsonable(node["counts"])
        # Declared sub-keys are reached by their own dotted key, not as data.
        return _jsonable({k: v for k, v in node.items() if k != "_meta" and not _is_declared(v)})

    def keys(self) -> list[str]:
        """Every declared key, dotted, parents before children."""
        found: list[str] = []

        def walk(node: dict[str, Any], prefix: str) -> None:
            for name, child in node.items():
                if name != "_meta" and _is_declared(child):
                    found.append(prefix + name)
                    walk(child, prefix + name + ".")

        walk(self._root, "")
        return found

    # --- writing
    def _own(self, container: Any) -> Any:
        self._owned[id(container)] = container
        return container

    def _writable(self, parts: list[str]) -> dict[str, Any]:
        """The dict at `parts` (the root for none), safe to change: the containers on the
        path are copied the first time they are written after a snapshot."""
        if id(self._root) not in self._owned:
            self._root = self._own(dict(self._root))
        node = self._root
        for part in parts:
            child = node[part]
            if id(child) not in self._owned:
                child = self._own(dict(child))
                node[part] = child
            node = child
        return node

    def _writable_field(self, node: dict[str, Any], name: str) -> Any:
        """A node's items list or counts dict, safe to change (copied once per snapshot)."""
        value = node[name]
        if id(value) not in self._owned:
            value = self._own(copy.copy(value))
            node[name] = value
        return value

    def declare(self, key: str, kind: StateType, description: str | None = None) -> bool:
        """Create a key; True if the state changed (re-declaring the same type is a no-op)."""
        existing = self._node(key)
        if existing is not None:
            if existing["_meta"]["type"] != kind:
                raise StateError(
                    f"{key} is already declared as {existing['_meta']['type']}, not {kind}"
                )
            return False
        parts = key.split(".")
        if parts[-1].startswith("_"):
            raise StateError(f"state keys may not start with '_': {key}")
        if len(parts) > 1:
            parent = self._node(".".join(parts[:-1]))
            if parent is None or parent["_meta"]["type"] != "DICT":
                raise StateError(
                    f"cannot declare {key}: {'.'.join(parts[:-1])} must be a declared DICT"
                )
            if parts[-1] in parent:
                raise StateError(f"cannot declare {key}: the DICT already holds that data key")
        node: dict[str, Any] = {"_meta": {"type": kind, "description": description}}
        if kind == "LIST":
            node["items"] = self._own([])
        elif kind == "COUNTER":
            node["counts"] = self._own({})
        self._writable(parts[:-1])[parts[-1]] = self._own(node)
        self._version += 1
        return True

    def update(self, key: str, value: Any, mode: Literal["MERGE", "REPLACE"] = "MERGE") -> int:
        """Merge or replace a key's data; returns the key's size afterwards. A refused
        update changes nothing."""
        found = self._node(key)
        if found is None:
            raise StateError(f"state key {key!r} is not declared; DECLARE it first")
        value = _jsonable(value)
        kind = found["_meta"]["type"]
        if kind == "DICT":
            entries = _dict_entries(key, found, value)
        elif kind == "COUNTER":
            pairs = _counter_pairs(value)
        node = self._writable(key.split("."))
        if kind == "LIST":
            size = self._update_list(node, value, mode)
        elif kind == "DICT":
            if mode == "REPLACE":
                for name in [k for k, v in node.items() if k != "_meta" and not _is_declared(v)]:
                    del node[name]
            node.update(entries)
            size = sum(1 for k in node if k != "_meta")
        else:
            counts = self._writable_field(node, "counts")
            if mode == "REPLACE":
                counts.clear()
            for name, amount in pairs:
                counts[name] = counts.get(name, 0) + amount
            size = len(counts)
        self._version += 1
        return size

    def _update_list(self, node: dict[str, Any], value: Any, mode: str) -> int:
        incoming = value if isinstance(value, list) else [value]
        old = node["items"]
        known = self._marks.pop(id(old), None)  # only the list being written needs marks
        if mode == "REPLACE":
            items = self._own(list(incoming))
            node["items"] = items
            seen = {_mark(i) for i in items}
        else:
            seen = known[1] if known and known[0] is old else {_mark(i) for i in old}
            items = self._writable_field(node, "items")
            if items is not old:
                seen = set(seen)  # a snapshot may still hold the old list
            for item in incoming:
                mark = _mark(item)
                if mark not in seen:
                    seen.add(mark)
                    items.append(item)
        self._marks[id(items)] = (items, seen)
        return len(items)

    # --- history, replay, persistence
    def append_history(self, entry: dict[str, Any]) -> None:
        self.history.append({"step": len(self.history) + 1, **entry})

    def record_plan(self, plan: dict[str, Any], caps: dict[str, int]) -> None:
        self.replay["plans"].append({**plan, "caps": dict(caps)})

    def summary(self, keys: list[str] | None = None, max_items: int = 3) -> StateSummary:
        """Compact enough for a prompt: each key's type, size and a few sample items."""
        rows: list[StateKeySummary] = []
        for key in keys or self.keys():
            node = self._node(key)
            if node is None:
                continue
            data = self.get(key)
            sample = list(data.items())[:max_items] if isinstance(data, dict) else data
            rows.append(
                StateKeySummary(
                    key=key,
                    type=node["_meta"]["type"],
                    description=node["_meta"]["description"],
                    size=len(data),
                    sample=shorten(
                        [list(p) if isinstance(p, tuple) else p for p in sample][:max_items],
                        max_items,
                    ),
                )
            )
        return StateSummary(version=self.version, hash=self.current.hash, keys=rows)

    def document(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "created_at": self.created_at,
            "updated_at": _now(),
            "query": self.query,
            "state_version": self.version,
            "state_hash": self.current.hash,
            "variables": self.variables,
            "history": self.history,
            "replay": self.replay,
            "caps": self.caps,
            "overlay": self.overlay,
        }

    def persist(self) -> None:
        self.backend.save(self.document())


def _dict_entries(key: str, node: dict[str, Any], value: Any) -> dict[str, Any]:
    """The entries an UPDATE writes into a DICT; rows of {"key", "value"} (what AGGREGATE
    returns) are a mapping. Refused: anything else, and a declared sub-key's name."""
    value = _rows_as_mapping(value)
    if not isinstance(value, dict):
        raise StateError(
            f"{key} is a DICT; UPDATE it with a mapping, not {type(value).__name__}",
            "schema_mismatch",
        )
    for name in value:
        if name == "_meta" or _is_declared(node.get(name)):
            raise StateError(
                f"{key}.{name} is a declared key; UPDATE {key}.{name} instead",
                "schema_mismatch",
            )
    return value


def _counter_pairs(value: Any) -> list[tuple[str, float]]:
    """What an UPDATE adds to a COUNTER: a mapping's (or AGGREGATE rows') counts, one per
    item of a list (counted by id), or a number as `total`."""
    value = _rows_as_mapping(value)
    if isinstance(value, dict) and "id" not in value:
        pairs = list(value.items())
    elif isinstance(value, list):
        pairs = [(_counter_key(item), 1) for item in value]
    elif isinstance(value, int | float) and not isinstance(value, bool):
        pairs = [("total", value)]
    else:
        pairs = [(_counter_key(value), 1)]
    for name, amount in pairs:
        if isinstance(amount, bool) or not isinstance(amount, int | float):
            raise StateError(f"a COUNTER adds numbers; {name!r} has {amount!r}", "schema_mismatch")
    return [(str(name), amount) for name, amount in pairs]


def _rows_as_mapping(value: Any) -> Any:
    if isinstance(value, list) and all(
        isinstance(r, dict) and set(r) == {"key", "value"} for r in value
    ):
        return {str(r["key"]): r["value"] for r in value}
    return value
