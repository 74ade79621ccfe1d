"""The distribution installs one import package, `postel`: nothing generic such as
`services` or `infra` lands in a user's site-packages, and an application with packages of
those names imports both its own and postel's."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
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
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources: setuptools builds in the tree's build/
    folder, which an install of the checkout (`pip install -e .`) may have left half full."""
    out = tmp_path_factory.mktemp("wheel")
    sources = tmp_path_factory.mktemp("sources") / "postel"
    shutil.copytree(ROOT, sources, ignore=_NOT_SOURCES)
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
            str(sources),
        ],
        check=True,
        cwd=out,
    )
    return next(out.glob("postel-*.whl"))


def _dependency_dirs() -> list[str]:
    """Where the running interpreter finds postel's dependencies: its own site-packages, and
    the base interpreter's when it runs in a virtualenv that sees them. Only the folders are
    passed on, not their .pth files, so the source tree's editable install stays behind."""
    return [entry for entry in sys.path if Path(entry).name in {"site-packages", "dist-packages"}]


@pytest.fixture(scope="module")
def venv_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtual environment with the wheel installed. It sees the packages this
    interpreter sees for postel's dependencies (whether the tests run in a virtualenv or
    not), but not the project's source tree."""
    env_dir = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site_dir = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site_dir) / "postel_test_dependencies.pth").write_text("\n".join(_dependency_dirs()))
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
    )
    yield python


def test_every_source_package_is_listed_for_installation() -> None:
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
