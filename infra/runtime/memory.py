"""The worker process's memory policy: the one place that decides when a graph version is
loaded and dropped, what the garbage collector does meanwhile, and how many versions a
process keeps. Nothing else in postel calls `gc` (services/ never does: tests/contract
checks it).

- A graph version is opened on a job's first use of it (infra/store/graphs.py) and kept in
  the process's AdapterCache, at most `versions` of them (POSTEL_GRAPH_VERSIONS); the least
  recently used is dropped first, a removed or replaced one on the next use of any graph.
- While a version is built in memory the collector is paused (`building`): the build makes
  millions of containers, none of them garbage, and collections would walk the growing
  heap again and again (4x the build's time on a 10^5-relation graph). Threads building at
  once share one pause.
- Once a version is held, everything the process holds is frozen (`settled`): a held graph
  changes no more, and left in the collector's generations every full collection (set off
  at a moment no budget controls) would walk all of it, seconds on 10^6 nodes.
- When versions are dropped (`released`), the frozen objects are unfrozen and collected,
  so a dropped version's cycles are freed, and what is still held is frozen again; then the
  C allocator is asked to give its free pages back (glibc's `malloc_trim`), so the process's
  resident memory, not only its heap, comes back down (a dropped version's pages sit between
  the next one's and would otherwise stay resident).
- A GASL command that makes rows in bulk (a JOIN's pairs, ADD_FIELD's rows: dicts holding
  dicts) reports every services.gasl.budget.BULK_ROWS of them (`rows_made`): they are
  frozen as they come, so no full collection, a pause no deadline check interrupts, walks
  them all; rows without cycles are still freed by their reference counts.

Giving graph work its own process (the review's proposal) is left: the gasl worker is that
process when it runs as `postel worker gasl`, and this policy makes its memory follow the
graphs it holds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from postel.infra.store.graphs import AdapterCache


def _give_back_free_pages() -> None:
    """glibc's malloc_trim(0); elsewhere (musl, macOS) there is none and nothing to do."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


class MemoryPolicy:
    """One per worker process (Runtime.memory): its graph versions and its collector."""

    def __init__(self, versions: int = 2) -> None:
        self.graphs = AdapterCache(versions, collector=self)
        self._lock = threading.Lock()
        self._pausers = 0
        self._was_enabled = False

    @contextmanager
    def building(self) -> Iterator[None]:
        """The collector paused while a graph version is built (threads share one pause)."""
        with self._lock:
            if self._pausers == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._pausers += 1
        try:
            yield
        finally:
            with self._lock:
                self._pausers -= 1
                if self._pausers == 0 and self._was_enabled:
                    gc.enable()

    def settled(self) -> None:
        """A version is held: freeze what the process holds out of the collector's walks."""
        gc.freeze()

    def released(self) -> None:
        """Versions were dropped: collect what they left, then freeze what is still held."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _give_back_free_pages()

    def done(self) -> None:
        """The process is done with its graphs (a one-off `postel gasl run`): everything
        back in the collector's sight."""
        gc.unfreeze()

    def rows_made(self) -> None:
        """A command made another batch of rows: keep them out of full collections."""
        gc.freeze()
