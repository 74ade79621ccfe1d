# One image for every postel process: the five workers, the web server and the bundled local
# model server.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY postel postel
COPY messages messages
COPY services services
COPY workers workers
COPY infra infra
# The native llama.cpp build crashes on CPUs unlike the build machine's; build portably.
ENV CMAKE_ARGS="-DGGML_NATIVE=OFF"
RUN pip install --no-cache-dir ".[local]"
ENV POSTEL_LOG_FORMAT=json
CMD ["postel", "--help"]
