"""The generator's AI loop, pure: complete JSON = stop, cut-off JSON = continue. See `loop`
for the decisions and `merge` for the continuation contract; postel/testing/oracle.py is the
perfect model of that contract used by tests and `postel bench loop`."""
