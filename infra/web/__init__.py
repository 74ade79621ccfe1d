"""`postel web`: the HTTP API (OpenAPI at /api/docs) and the live dashboard.

- app.py: the application behind its guard (security.py: loopback or token, bounded
  bodies, no cross-site writes);
- api.py: the API under /api; pages.py and templates/: the dashboard; static/app.js keeps
  the pages live over Server-Sent Events;
- queries.py: what both read from Redis, paged; server.py: uvicorn in postel's loop.
"""
