"""The `postel bench` commands and what only they and the tests use: the oracle model of the
continuation contract, the relay stages that route without service work, and the benchmarks
of the bus, the AI loop, GASL, the web and chaos."""
