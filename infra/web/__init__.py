"""`postel web`: the HTTP API (OpenAPI at /api/docs) and the live dashboard.

- app.py: the application behind its guard (security.py: loopback or a token of 16
  characters at least, wrong tokens throttled, bounded and strict JSON bodies, no
  cross-site writes); errors.py: errors and invalid requests as answers that can be written;
- api.py: the API under /api; pages.py and templates/: the dashboard; static/app.js keeps
  the pages live over Server-Sent Events; dead_letters.py: every dead-letter action, in the
  API and on the pages; operations.py: requeue and cancel many, in both;
- what both read from Redis, one read model each: job_list.py (the jobs list, paged and
  filtered), job_story.py (one job's timeline, rounds and calls), system_view.py (worker
  processes and queues); charts.py the jobs page's charts, metrics.py `/metrics`;
- server.py: uvicorn in postel's loop.

Layer rule (tests/contract/test_layers.py): imports messages, services, infra.store,
infra.runtime, infra.client; imported by infra.cli, the benchmarks. infra's rooms import only
down their order: store < runtime < client < web < cli.
"""
