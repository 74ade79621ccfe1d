"""The private part of arq that infra/runtime/wake.py relies on, pinned: PushWorker overrides
`main`, `_release_sem_dec_counter_on_complete` and `finish_job`/`finish_failed_job` (without
arq's abort set, which a cluster keeps in another slot), does the work of `run_job` itself,
and reads Worker attributes set in `Worker.__init__`. The
pyproject pin (<0.29) keeps arq where this holds; this test names what breaks if a release
changes any of it, instead of a worker that fails at run time."""

from __future__ import annotations

import inspect
import re

from arq import Retry
from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix
from arq.jobs import deserialize_job_raw
from arq.worker import Function, Worker
from postel.infra.runtime import wake
from postel.infra.runtime.wake import RETRY_KEY_EXPIRY_S, PushWorker

# name -> (parameters after self, coroutine?)
WORKER_METHODS = {
    "main": ([], True),
    "_release_sem_dec_counter_on_complete": ([], False),
    "finish_job": (
        [
            "job_id",
            "finish",
            "result_data",
            "result_timeout_s",
            "keep_result_forever",
            "incr_score",
            "keep_in_progress",
        ],
        True,
    ),
    "finish_failed_job": (["job_id", "result_data"], True),
    "heart_beat": ([], True),
    "run_job": (["job_id", "score"], True),  # what run_taken stands in for
}
WORKER_ATTRIBUTES = (
    "tasks",
    "job_counter",
    "jobs_complete",
    "jobs_retried",
    "jobs_failed",
    "sem",
    "max_jobs",
    "_pool",
    "ctx",
    "functions",
    "job_deserializer",
    "job_serializer",
    "max_tries",
    "job_timeout_s",
    "in_progress_timeout_s",
    "expires_extra_ms",
    "queue_name",
    "redis_settings",
)


def test_the_worker_methods_wake_overrides_or_calls_keep_their_signatures() -> None:
    for name, (parameters, is_coroutine) in WORKER_METHODS.items():
        method = getattr(Worker, name)
        assert list(inspect.signature(method).parameters)[1:] == parameters, name
        assert inspect.iscoroutinefunction(method) == is_coroutine, name
    assert isinstance(inspect.getattr_static(Worker, "pool"), property)
    overridden = {
        name for name in WORKER_METHODS if name in vars(PushWorker) and name in vars(Worker)
    }
    assert overridden == {
        "main",
        "_release_sem_dec_counter_on_complete",
        "finish_job",
        "finish_failed_job",
    }


def test_the_worker_attributes_wake_reads_are_set_by_arq() -> None:
    init = inspect.getsource(Worker.__init__)
    missing = [a for a in WORKER_ATTRIBUTES if not re.search(rf"self\.{a}\s*[:=]", init)]
    assert missing == []
    poll = inspect.signature(Worker.__init__).parameters["poll_delay"]
    assert poll.kind is inspect.Parameter.KEYWORD_ONLY


def test_the_job_format_keys_and_retry_expiry_are_arqs() -> None:
    assert (in_progress_key_prefix, job_key_prefix, retry_key_prefix) == (
        "arq:in-progress:",
        "arq:job:",
        "arq:retry:",
    )
    assert list(inspect.signature(deserialize_job_raw).parameters) == ["r", "deserializer"]
    assert {"coroutine", "timeout_s", "max_tries"} <= set(Function.__dataclass_fields__)
    assert Retry(defer=1).defer_score == 1000
    # wake.py inlines the try-count expiry arq's run_job writes
    assert f"retry_key_prefix + job_id, {RETRY_KEY_EXPIRY_S}" in inspect.getsource(Worker.run_job)


def test_wake_uses_only_the_pinned_private_names() -> None:
    used = set(re.findall(r"(?:self|super\(\))\.(_[a-z_]+)", inspect.getsource(wake)))
    own = {name for name in vars(PushWorker) if name.startswith("_")}
    own |= set(re.findall(r"self\.(_[a-z_]+)\s*[:=]", inspect.getsource(PushWorker.__init__)))
    # arq's own, pinned above: the pool attribute and the overridden slot release
    assert used - own == {"_pool"}
    assert "_pool" in WORKER_ATTRIBUTES and "_release_sem_dec_counter_on_complete" in own
