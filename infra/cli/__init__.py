"""The `postel` command line: main.py holds the commands, support.py the exit codes and
settings they share, gasl.py the graph and GASL commands, demo.py `postel demo`, schema.py
`postel schema`."""
