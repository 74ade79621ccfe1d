# Shared by scripts/install, scripts/demo and scripts/test: which Python to use, and a
# heartbeat for long steps. Sourced, not run.

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# The interpreter: an active virtualenv's; else python3 when pip may install into it; else
# (Debian's system Python is "externally managed") a virtualenv at .venv, made once.
choose_python() {
    if [[ -n "${VIRTUAL_ENV:-}" ]]; then
        PYTHON="$VIRTUAL_ENV/bin/python"
    elif [[ -x .venv/bin/python ]]; then
        PYTHON=.venv/bin/python
    elif python3 -c 'import sys, sysconfig, pathlib; sys.exit(pathlib.Path(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED").exists())'; then
        PYTHON=python3
    else
        say "python3 is managed by the system: making a virtualenv at .venv"
        python3 -m venv .venv 2>/dev/null || { apt_install python3-venv && python3 -m venv .venv; }
        PYTHON=.venv/bin/python
    fi
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || { echo "postel needs Python 3.11 or newer ($PYTHON is older)" >&2; exit 1; }
}

# Debian packages, as root or through sudo; a clear message where neither is possible.
apt_install() {
    local run=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null || { echo "need root (or sudo) to install: $*" >&2; exit 1; }
        run=(sudo)
    fi
    say "installing Debian packages: $*"
    "${run[@]}" apt-get update -qq && "${run[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq "$@" >/dev/null
}

# Run a long command with its output in a log, printing a line every 30 s so a person sees
# it is alive; on failure, the log's tail.
with_heartbeat() {
    local label=$1 log
    shift
    log=$(mktemp -t postel-step.XXXXXX)
    local started=$SECONDS
    "$@" >"$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if (( (SECONDS - started) % 30 == 0 )); then
            say "$label: still going, $((SECONDS - started)) s ($(tail -c 200 "$log" | tr '\r\n' '  ' | tail -c 90))"
        fi
    done
    if ! wait "$pid"; then
        tail -n 40 "$log" >&2
        echo "$label failed (full log: $log)" >&2
        exit 1
    fi
    say "$label: done in $((SECONDS - started)) s"
    rm -f "$log"
}

# The package with the given extras; with `dev` among them, the benchmarks too (the
# postel-bench distribution in benchmarks/, which the tests use: an extra cannot name a
# folder, so it is a second requirement of the same pip run). The `local` extra builds
# llama-cpp-python from source: about 5 minutes on 2 quiet cores, up to half an hour on a
# loaded machine, once (pip keeps the wheel in its cache). A native build crashes on CPUs
# unlike the build machine's.
install_postel() {
    local extras=$1
    local requirements=(-e ".[$extras]")
    if [[ ",$extras," == *,dev,* ]]; then
        requirements+=(-e ./benchmarks)
    fi
    command -v cc >/dev/null || apt_install build-essential
    say "installing postel[$extras]${requirements[2]:+ and the benchmarks} with $PYTHON (building llama-cpp-python takes about 5 minutes on 2 cores the first time; up to 30 under load)"
    with_heartbeat "pip install" env CMAKE_ARGS="-DGGML_NATIVE=OFF" \
        "$PYTHON" -m pip install --progress-bar off "${requirements[@]}"
}
