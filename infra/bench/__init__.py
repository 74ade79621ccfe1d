"""The `postel bench` commands: the bus, the AI loop, GASL, the web and the chaos drill."""
