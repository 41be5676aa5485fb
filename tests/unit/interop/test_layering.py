"""The floors of the harness: the result model at the bottom, the reports on it, never on the run."""
from __future__ import annotations

import ast
from pathlib import Path

import acemq_interop

PACKAGE = Path(acemq_interop.__file__).parent
REPORTS = ("console_report", "html_report", "results_files", "markdown_report")


def _imports(module: str) -> set[str]:
    """The acemq_interop modules `module` imports (at any depth of its code)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(a.name for a in node.names)
            elif node.module and node.module.startswith("acemq_interop."):
                found.add(node.module.split(".")[1])
            elif node.module == "acemq_interop":
                found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("acemq_interop."))
    return {m for m in found if (PACKAGE / f"{m}.py").exists()}


def _closure(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:
        for dep in _imports(todo.pop()) - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def test_the_model_imports_nothing_of_the_harness_but_the_catalogue() -> None:
    assert _imports("model") <= {"catalogue"}
    assert _closure("model") <= {"catalogue", "paths"}


def test_no_report_module_imports_the_runner_or_the_engine() -> None:
    for report in REPORTS:
        assert (PACKAGE / f"{report}.py").exists(), report
        reached = _closure(report)
        assert not reached & {"runner", "engine", "peer_client", "peer_process", "broker"}, (report, sorted(reached))
