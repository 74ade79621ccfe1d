"""`postel schema DIR`: one JSON Schema per message, for producers in other languages, and
one for the file `postel export` writes (`job_export`)."""

from __future__ import annotations

import json
from pathlib import Path

from postel.infra.client.replay import JobExport
from postel.messages import MESSAGE_ADAPTER, MESSAGE_TYPES, JobRequest


def write_schemas(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    documents = {name: cls.model_json_schema() for name, cls in MESSAGE_TYPES.items()}
    documents["message"] = MESSAGE_ADAPTER.json_schema()
    documents["job_request"] = JobRequest.model_json_schema()
    documents["job_export"] = JobExport.model_json_schema()
    for name, schema in documents.items():
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
