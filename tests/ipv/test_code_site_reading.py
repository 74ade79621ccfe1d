"""Code-site reading on real frames: modules are written to disk, imported and run."""

from __future__ import annotations

import importlib.util
import linecache
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from postel.messages.job import CodeSiteContext
from postel.messages.types import TypeSpec
from postel.services.ipv import infer_desired_type, read_code_site

# Each module gets this stand-in for the client's reason(): it reads its caller's frame,
# exactly as infra/client/client.py will.
CLIENT = """\
import sys
from postel.services.ipv import read_code_site


def reason(prompt, **kwargs):
    return read_code_site(sys._getframe(1))
"""


def _load(tmp_path: Path, name: str, body: str) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(CLIENT + "\n\n" + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_annotated_assignment_with_comments_above(tmp_path: Path) -> None:
    module = _load(
        tmp_path,
        "invoice_a",
        """
        def total(invoice):
            lines = invoice.splitlines()
            # Extract the total price from a medical invoice.
            # Prices are in euros.
            price: float = reason("get price", text=invoice)  # before tax
            return price
        """,
    )
    site = module.total("x")
    assert site.variable_name == "price"
    assert site.annotation == "float"
    assert site.function_name == "total"
    assert site.comments == [
        "Extract the total price from a medical invoice.",
        "Prices are in euros.",
        "before tax",
    ]
    assert site.file == str(tmp_path / "invoice_a.py")
    assert site.surrounding_code == [  # relative indentation kept
        "def total(invoice):",
        "    lines = invoice.splitlines()",
        '    price: float = reason("get price", text=invoice)  # before tax',
        "    return price",
    ]
    assert infer_desired_type(site) == TypeSpec.parse("float")


def test_multi_line_call_in_a_method(tmp_path: Path) -> None:
    module = _load(
        tmp_path,
        "names_b",
        """
        class Directory:
            def people(self, text):
                # every person named in the text
                names: list[str] = reason(
                    "list the names",
                    text=text,
                )
                return names
        """,
    )
    site = module.Directory().people("Ann and Bo")
    assert (site.variable_name, site.annotation) == ("names", "list[str]")
    assert site.function_name == "Directory.people"
    assert site.comments == ["every person named in the text"]
    code = [line.strip() for line in site.surrounding_code]
    assert code[-5:] == [
        "names: list[str] = reason(",
        '"list the names",',
        "text=text,",
        ")",
        "return names",
    ]
    assert infer_desired_type(site) == TypeSpec.parse("list[str]")


def test_no_annotation_gives_no_desired_type(tmp_path: Path) -> None:
    module = _load(
        tmp_path,
        "plain_c",
        """
        def summary():
            answer = reason("summarise")
            return answer
        """,
    )
    site = module.summary()
    assert (site.variable_name, site.annotation, site.comments) == ("answer", None, [])
    assert infer_desired_type(site) is None


def test_earlier_declaration_and_return_annotation(tmp_path: Path) -> None:
    module = _load(
        tmp_path,
        "declared_d",
        """
        def count():
            n: int
            n = reason("how many")
            return n


        def ready() -> bool | None:
            return reason("is it ready?")
        """,
    )
    assert (module.count().variable_name, module.count().annotation) == ("n", "int")
    site = module.ready()
    assert (site.variable_name, site.annotation) == (None, "bool | None")
    assert infer_desired_type(site) == TypeSpec.parse("bool")


def test_module_level_call_inside_a_block(tmp_path: Path) -> None:
    module = _load(
        tmp_path,
        "toplevel_e",
        """
        if True:
            # a yes/no question
            ok: bool = reason("fine?")
        """,
    )
    site = module.ok
    assert site.function_name is None
    assert (site.variable_name, site.annotation, site.comments) == (
        "ok",
        "bool",
        ["a yes/no question"],
    )


def test_comment_lines_are_bounded(tmp_path: Path) -> None:
    comments = "\n".join(f"    # note {i}" for i in range(8))
    module = _load(
        tmp_path, "many_f", f"def f():\n{comments}\n    x: str = reason('x')\n    return x\n"
    )
    assert module.f().comments == [f"note {i}" for i in range(3, 8)]


def test_source_unavailable_gives_an_empty_context() -> None:
    namespace: dict[str, object] = {}
    code = CLIENT + "\nsite = reason('typed at a REPL')\n"
    exec(compile(code, "<stdin>", "exec"), namespace)
    site = namespace["site"]
    assert isinstance(site, CodeSiteContext)
    assert (site.variable_name, site.annotation, site.comments, site.surrounding_code) == (
        None,
        None,
        [],
        [],
    )
    assert infer_desired_type(site) is None


def test_source_changed_since_import_does_not_raise(tmp_path: Path) -> None:
    module = _load(tmp_path, "edited_g", "def f():\n    v: float = reason('x')\n    return v\n")
    (tmp_path / "edited_g.py").write_text(CLIENT + "def broken(:\n" * 20)
    linecache.checkcache(str(tmp_path / "edited_g.py"))
    site = module.f()
    assert site.annotation is None
    assert site.function_name == "f"


@pytest.mark.parametrize("line", [None, 0, 999])
def test_filename_and_bad_lines(tmp_path: Path, line: int | None) -> None:
    path = tmp_path / "h.py"
    path.write_text("x = 1\n")
    assert read_code_site(path, line).variable_name is None
    assert read_code_site(tmp_path / "missing.py", 1) == CodeSiteContext(
        file=str(tmp_path / "missing.py"), line=1
    )


def test_filename_and_line(tmp_path: Path) -> None:
    path = tmp_path / "i.py"
    path.write_text("# the rate\nrate: float = compute()\n")
    site = read_code_site(str(path), 2)
    assert (site.variable_name, site.annotation, site.comments) == ("rate", "float", ["the rate"])


@pytest.mark.parametrize(
    ("annotation", "spelling"),
    [
        ("float", "float"),
        ("Optional[int]", "int"),
        ("float | None", "float"),
        ("typing.List[float]", "list[float]"),
        ("list[list[int]]", "list[list[int]]"),
        ("'str'", "str"),
        ("dict[str, Any]", "dict"),
        ("Decimal", "float"),
        ("list", "list[str]"),
        ("Invoice", None),
        ("int | str", None),
        ("tuple[int, int]", None),
        ("not valid python(", None),
        (None, None),
    ],
)
def test_infer_desired_type(annotation: str | None, spelling: str | None) -> None:
    expected = TypeSpec.parse(spelling) if spelling else None
    assert infer_desired_type(CodeSiteContext(annotation=annotation)) == expected
