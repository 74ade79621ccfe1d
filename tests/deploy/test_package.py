"""The distribution installs one import package, `postel`: nothing generic such as
`services` or `infra` lands in a user's site-packages, and an application with packages of
those names imports both its own and postel's. The benchmarks are a distribution of their
own (postel-bench, benchmarks/): the runtime's wheel holds none of their code, `postel bench`
says how to get them where they are missing, and their wheel installs beside postel's and
adds the command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

# one xdist worker builds the wheel, once: two pip builds of the source tree at a time would
# share its build/ folder
pytestmark = pytest.mark.xdist_group("wheel")

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("messages", "services", "workers", "infra")


def _pyproject() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


# what a build must not see: the checkout's own build and install leftovers
_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sources: setuptools builds in the tree's build/ folder, which an
    install of the checkout (`pip install -e .`) may have left half full."""
    copy = tmp_path_factory.mktemp("sources") / "postel"
    shutil.copytree(ROOT, copy, ignore=_NOT_SOURCES)
    return copy


def _build_wheel(source: Path, out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        cwd=out,
    )


@pytest.fixture(scope="module")
def wheel(sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _build_wheel(sources, out)
    return next(out.glob("postel-*.whl"))


@pytest.fixture(scope="module")
def bench_wheel(sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench-wheel")
    _build_wheel(sources / "benchmarks", out)
    return next(out.glob("postel_bench-*.whl"))


def _dependency_dirs(view: Path) -> list[str]:
    """Where the running interpreter finds postel's dependencies: its own site-packages, and
    the base interpreter's when it runs in a virtualenv that sees them. Each is passed on as a
    folder of links to its entries but postel's own (the checkout's editable installs of
    postel and postel-bench, their metadata and .pth files), so neither the source tree nor
    the installed entry points of the benchmarks come along."""
    dirs = []
    for number, entry in enumerate(sys.path):
        if Path(entry).name not in {"site-packages", "dist-packages"} or not Path(entry).is_dir():
            continue
        linked = view / str(number)
        linked.mkdir(parents=True)
        for item in Path(entry).iterdir():
            if "postel" not in item.name.lower():
                (linked / item.name).symlink_to(item)
        dirs.append(str(linked))
    return dirs


def _venv_with(wheel: Path, env_dir: Path) -> Path:
    """A fresh virtual environment with the wheel installed. It sees the packages this
    interpreter sees for postel's dependencies (whether the tests run in a virtualenv or
    not), but not the project's source tree."""
    subprocess.run([sys.executable, "-m", "venv", str(env_dir / "env")], check=True)
    python = env_dir / "env" / "bin" / "python"
    site_dir = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dependencies = _dependency_dirs(env_dir / "dependencies")
    (Path(site_dir) / "postel_test_dependencies.pth").write_text("\n".join(dependencies))
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
    )
    return python


@pytest.fixture(scope="module")
def venv_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runtime alone, as a user installs it."""
    return _venv_with(wheel, tmp_path_factory.mktemp("venv"))


@pytest.fixture(scope="module")
def bench_venv_python(
    wheel: Path, bench_wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The runtime, then the benchmarks' wheel as pip installs it: its pinned dependency on
    postel met by the runtime already there, nothing fetched."""
    python = _venv_with(wheel, tmp_path_factory.mktemp("bench-venv"))
    found = (str(bench_wheel.parent), "postel-bench")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links", *found],
        check=True,
    )
    return python


def test_every_source_package_is_listed_for_installation() -> None:
    bench = tomllib.loads((ROOT / "benchmarks" / "pyproject.toml").read_text())
    assert set(bench["tool"]["setuptools"]["packages"]) == {
        ".".join(init.parent.relative_to(ROOT / "benchmarks").parts)
        for init in (ROOT / "benchmarks").rglob("__init__.py")
    }
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = {"postel"} | {
        "postel." + ".".join(init.parent.relative_to(ROOT).parts)
        for layer in LAYERS
        for init in (ROOT / layer).rglob("__init__.py")
    }
    # modules that live under postel/ itself (postel.testing)
    found |= {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "postel").glob("*/__init__.py")
    }
    assert listed == found


def test_the_wheel_holds_one_top_level_package_with_its_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith("-info")}
    assert tops == {"postel"}
    assert "postel/services/gasl/grammar.lark" in names
    assert "postel/services/gasl/data/mmwr_nano_graphrag.graphml" in names
    # the dashboard ships its templates and assets: no CDN, no build step
    for asset in (
        "templates/base.html",
        "templates/_job.html",
        "static/app.js",
        "static/style.css",
    ):
        assert f"postel/infra/web/{asset}" in names


def test_generic_names_are_not_importable_after_install(venv_python: Path, tmp_path: Path) -> None:
    for name in LAYERS:
        result = subprocess.run(
            [str(venv_python), "-c", f"import {name}"], cwd=tmp_path, capture_output=True
        )
        assert result.returncode != 0, f"`import {name}` worked outside the source tree"
    public = subprocess.run(
        [
            str(venv_python),
            "-c",
            "import postel; from postel import reason, areason, Client; print(postel.__file__)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(ROOT) not in public.stdout, "the import came from the source tree"


def test_an_application_with_its_own_services_package_imports_both(
    venv_python: Path, tmp_path: Path
) -> None:
    app = tmp_path / "app"
    for name in ("services", "infra"):
        (app / name).mkdir(parents=True)
        (app / name / "__init__.py").write_text(f"OWNER = 'the application\\'s {name}'\n")
    (app / "main.py").write_text(
        "import services, infra\n"
        "from postel import reason, Client\n"
        "from postel.messages import TypeSpec\n"
        "from postel.services.validation import coerce\n"
        "print(services.OWNER, '|', infra.OWNER, '|', coerce('12', TypeSpec(kind='int')))\n"
    )
    result = subprocess.run(
        [str(venv_python), "main.py"], cwd=app, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ("the application's services | the application's infra | 12")


def test_python_dash_m_postel_is_the_cli(venv_python: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [str(venv_python), "-m", "postel", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Usage:" in result.stdout and "submit" in result.stdout


def test_the_runtime_wheel_holds_no_benchmark_code(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    benchmark_files = [
        name
        for name in archive.namelist()
        if "bench" in name.split("/")[:-1] or "postel_bench" in name or "loop_document" in name
    ]
    assert benchmark_files == []
    entry_points = next(n for n in archive.namelist() if n.endswith("entry_points.txt"))
    assert "postel.commands" not in archive.read(entry_points).decode()


def test_without_the_benchmarks_bench_says_how_to_get_them(
    venv_python: Path, tmp_path: Path
) -> None:
    result = subprocess.run(
        [str(venv_python), "-m", "postel", "bench", "qa", "--triples", "300"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "pip install -e ./benchmarks" in result.stderr
    imported = subprocess.run(
        [str(venv_python), "-c", "import postel_bench"], cwd=tmp_path, capture_output=True
    )
    assert imported.returncode != 0


def test_the_benchmarks_wheel_pins_postel_and_registers_bench(bench_wheel: Path) -> None:
    archive = zipfile.ZipFile(bench_wheel)
    names = archive.namelist()
    assert {name.split("/")[0] for name in names if "-info/" not in name} == {"postel_bench"}
    assert "postel_bench/data/loop_document.json" in names
    metadata = archive.read(next(n for n in names if n.endswith("-info/METADATA"))).decode()
    assert f"Requires-Dist: postel=={_pyproject()['project']['version']}" in metadata
    entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt")))
    assert "[postel.commands]\nbench = postel_bench.cli:bench" in entry_points.decode()


def test_installed_benchmarks_add_postel_bench_and_run(
    bench_venv_python: Path, tmp_path: Path
) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bench_venv_python), *args], cwd=tmp_path, capture_output=True, text=True
        )

    listed = run("-m", "postel", "bench", "--help")
    assert listed.returncode == 0, listed.stderr
    assert all(name in listed.stdout for name in ("bus", "chaos", "gasl", "loop", "qa", "web"))
    small = ("--nodes", "100", "--path-nodes", "100", "--repeat", "1", "--no-cypher")
    sections = ("--plan-questions", "0", "--write-sizes", "", "--json")
    gasl = run("-m", "postel", "bench", "gasl", *small, *sections)
    assert gasl.returncode == 0, gasl.stderr
    assert json.loads(gasl.stdout)["questions"]
    shipped = run(
        "-c",
        "import postel_bench.data.documents as d; print(d.LOOP_DOCUMENT.is_file(), d.__file__)",
    )
    assert shipped.stdout.startswith("True ") and str(ROOT) not in shipped.stdout


def test_the_image_installs_the_runtime_alone() -> None:
    copied = {
        source
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ")
        for source in line.split()[1:-1]
    }
    assert copied == {"pyproject.toml", "README.md", "postel", *LAYERS}
