"""`postel schema DIR`: one JSON Schema per message, for producers in other languages, and
one for the file `postel export` writes (`job_export`). Each declares its dialect
(`$schema`, draft 2020-12, the one pydantic writes) and describes every form postel accepts:
a desired type as a spelling ("float", "list[str]"), a bare JSON Schema or the TypeSpec
object (messages/types.py)."""

from __future__ import annotations

import json
from pathlib import Path

from postel.infra.client.replay import JobExport
from postel.messages import MESSAGE_ADAPTER, MESSAGE_TYPES, JobRequest

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def write_schemas(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    documents = {name: cls.model_json_schema() for name, cls in MESSAGE_TYPES.items()}
    documents["message"] = MESSAGE_ADAPTER.json_schema()
    documents["job_request"] = JobRequest.model_json_schema()
    documents["job_export"] = JobExport.model_json_schema()
    for name, schema in documents.items():
        schema = {"$schema": DIALECT, **schema}
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
