"""Reading the caller's source at a `reason(...)` call site.

`price: float = reason("get the total")` tells us the desired type (float), the variable
(price), and, through the comments just above it and the lines around it, what the caller
means. Reading is a courtesy: when the source is missing (a REPL, a zipapp without sources,
a file edited since import) the result is an empty context, never an error.
"""

from __future__ import annotations

import ast
import io
import linecache
import os
import textwrap
import tokenize
from types import FrameType
from typing import Any

from postel.messages.job import CodeSiteContext

MAX_COMMENTS = 5
LINES_AROUND = 3
MAX_STATEMENT_LINES = 5

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def read_code_site(
    frame_or_filename: FrameType | str | os.PathLike[str], lineno: int | None = None
) -> CodeSiteContext:
    """The code-site context of the statement at `lineno` (default: the frame's current line).

    Pass `sys._getframe(1)` from inside the client function to read its caller."""
    if isinstance(frame_or_filename, FrameType):
        frame = frame_or_filename
        filename = frame.f_code.co_filename
        line = lineno or frame.f_lineno
        scope = None if frame.f_code.co_name == "<module>" else frame.f_code.co_qualname
        lines = linecache.getlines(filename, frame.f_globals)
    else:
        filename, line, scope = os.fspath(frame_or_filename), lineno, None
        lines = linecache.getlines(filename)
    if line is None or line < 1:
        return CodeSiteContext(function_name=scope, file=filename)
    fallback = CodeSiteContext(function_name=scope, file=filename, line=line)
    if line > len(lines):
        return fallback
    try:
        return _analyse(lines, line, filename) or fallback
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # a source file that no longer parses (edited since import) reads as unknown
        return fallback


def _analyse(lines: list[str], line: int, filename: str) -> CodeSiteContext | None:
    tree = ast.parse("".join(lines), filename)
    found = _locate(tree.body, line, [])
    if found is None:
        return None
    statement, scopes = found
    start, end = statement.lineno, statement.end_lineno or statement.lineno
    variable, annotation = _target(statement, scopes, tree)
    above = _comments_above(lines, start)
    inline = _inline_comments(lines[start - 1 : end])
    room = MAX_COMMENTS - min(len(inline), MAX_COMMENTS)
    comments = (above[-room:] if room else []) + inline[:MAX_COMMENTS]
    before = lines[max(0, start - 1 - len(above) - LINES_AROUND) : start - 1 - len(above)]
    code = before + lines[start - 1 : end][:MAX_STATEMENT_LINES] + lines[end : end + LINES_AROUND]
    functions = [s.name for s in scopes]
    return CodeSiteContext(
        function_name=".".join(functions) or None,
        variable_name=variable,
        annotation=annotation,
        file=filename,
        line=start,
        comments=comments,
        surrounding_code=[c for c in textwrap.dedent("".join(code)).splitlines() if c.strip()],
    )


def _locate(
    body: list[ast.stmt], line: int, scopes: list[Any]
) -> tuple[ast.stmt, list[Any]] | None:
    """The innermost statement spanning `line`, and the defs and classes around it."""
    for node in body:
        if not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        inner_scopes = [*scopes, node] if isinstance(node, _SCOPES) else scopes
        blocks = [getattr(node, field, []) for field in ("body", "orelse", "finalbody")]
        blocks += [
            part.body for part in [*getattr(node, "handlers", []), *getattr(node, "cases", [])]
        ]
        for block in blocks:
            found = _locate(block, line, inner_scopes)
            if found:
                return found
        return node, scopes
    return None


def _target(
    statement: ast.stmt, scopes: list[Any], tree: ast.Module
) -> tuple[str | None, str | None]:
    """Variable name and annotation the call's result goes to."""
    if isinstance(statement, ast.AnnAssign):
        return ast.unparse(statement.target), ast.unparse(statement.annotation)
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        name = ast.unparse(statement.targets[0])
        return name, _declared_annotation(name, scopes[-1] if scopes else tree, statement.lineno)
    if isinstance(statement, ast.Return):
        function = next((s for s in reversed(scopes) if not isinstance(s, ast.ClassDef)), None)
        if function is not None and function.returns is not None:
            return None, ast.unparse(function.returns)
    return None, None


def _declared_annotation(name: str, scope: ast.AST, before: int) -> str | None:
    """The annotation of an earlier bare declaration `name: T` in the same scope."""
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.AnnAssign)
            and node.lineno < before
            and ast.unparse(node.target) == name
        ):
            return ast.unparse(node.annotation)
    return None


def _comments_above(lines: list[str], start: int) -> list[str]:
    """The contiguous block of full-line comments directly above line `start`, nearest kept."""
    block: list[str] = []
    index = start - 2
    while index >= 0 and lines[index].lstrip().startswith("#") and len(block) < MAX_COMMENTS:
        block.insert(0, lines[index].strip().lstrip("#").strip())
        index -= 1
    return [c for c in block if c]


def _inline_comments(statement_lines: list[str]) -> list[str]:
    source = textwrap.dedent("".join(statement_lines))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    return [t.string.lstrip("#").strip() for t in tokens if t.type == tokenize.COMMENT]
