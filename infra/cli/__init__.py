"""The `postel` command line, one module per command group: jobs.py, dead.py, graph.py,
gasl.py, serve.py, replay.py; main.py holds the `main` group (and demo, schema) and adds the
others' commands. client_command.py has `with_client`, which runs a command against the
system; support.py the exit codes and settings every command shares."""
