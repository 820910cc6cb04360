"""The package's layering: privacy ← models ← evaluation ← figures ← app, then the CLI and
Dask at the top. A subpackage may import only itself and the ones below it."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpviz"
LAYERS = ("privacy", "models", "evaluation", "figures", "app")
TOP = len(LAYERS)  # __init__, __main__, cli, distributed


def layer_of(module: str) -> int | None:
    """Layer of a dotted dpviz module name (None outside dpviz)."""
    parts = module.split(".")
    if parts[0] != "dpviz":
        return None
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return TOP


def imported_modules(source: str) -> set[str]:
    """Every module an import statement names, lazy (in-function) imports included."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                raise AssertionError(f"relative import of {node.module!r}: use dpviz.<layer>")
            if node.module == "dpviz" and all(a.name == "__version__" for a in node.names):
                continue  # the version string, set before __init__ imports anything
            found.add(node.module)
            # ``from dpviz import app`` names a subpackage, not a public name.
            found.update(f"{node.module}.{a.name}" for a in node.names if a.name in LAYERS)
    return found


def violations(module: str, source: str) -> list[str]:
    own = layer_of(module)
    bad = []
    for name in sorted(imported_modules(source)):
        layer = layer_of(name)
        if layer is not None and layer > own:
            bad.append(f"{module} ({LAYERS[own]}) imports {name}")
        if name.split(".")[0] == "streamlit":
            bad.append(f"{module} imports streamlit: dpviz never does")
    return bad


def package_modules() -> dict[str, str]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        dotted = ".".join(("dpviz", *path.relative_to(PACKAGE).with_suffix("").parts))
        modules[dotted.removesuffix(".__init__")] = path.read_text(encoding="utf-8")
    return modules


def test_every_module_sits_in_a_layer_or_at_the_top():
    top = {m for m in package_modules() if layer_of(m) == TOP}
    # The CLI is a package at the top: its command groups sit where it sits.
    cli = {m for m in top if m.startswith("dpviz.cli.")}
    assert top - cli == {"dpviz", "dpviz.__main__", "dpviz.cli", "dpviz.distributed"}
    assert {"dpviz.cli.audit", "dpviz.cli.data", "dpviz.cli.evaluate", "dpviz.cli.train"} <= cli


def cli_circles(modules: dict[str, str]) -> list[str]:
    """The CLI's modules that import its package face back (``dpviz.cli``)."""
    return [
        module
        for module, source in sorted(modules.items())
        if module.startswith("dpviz.cli.") and "dpviz.cli" in imported_modules(source)
    ]


def test_no_cli_module_imports_the_cli_package_back():
    """``dpviz.cli`` builds its parser from the command groups; none imports it back."""
    assert cli_circles(package_modules()) == []
    # The check itself can fail.
    assert cli_circles({"dpviz.cli.train": "from dpviz.cli import main"}) == ["dpviz.cli.train"]


@pytest.mark.parametrize("module", sorted(package_modules()))
def test_no_module_imports_a_higher_layer(module):
    assert violations(module, package_modules()[module]) == []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("dpviz.privacy.ledger", "from dpviz.models.forest import DPRandomForestClassifier"),
        ("dpviz.models.forest", "def f():\n    import dpviz.app.train\n"),
        ("dpviz.evaluation.sweep", "from dpviz import figures"),
        ("dpviz.figures.curves", "import streamlit as st"),
    ],
)
def test_the_check_catches_an_upward_import(module, source):
    """The layering check itself can fail: each of these breaks the rule."""
    assert violations(module, source)


def test_every_subpackage_says_what_it_owns_and_may_import():
    for layer in LAYERS:
        doc = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text()))
        assert doc and "imports" in doc.lower(), layer
