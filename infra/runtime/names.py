"""The worker kinds, by name: a module of their own, so the command line can offer them
(`postel worker NAME`) without loading settings and pydantic."""

WORKER_NAMES: tuple[str, ...] = ("intent", "planner", "gasl", "generator", "validator")
