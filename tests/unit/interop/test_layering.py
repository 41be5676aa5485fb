"""The floors of the harness, by package: each imports only the floors under it.

    commands                      the `acemq-interop` command and its subcommands
    reports      run              the views of a result / the session, the engine, the cells
    results      peers            the result model and its files / manifests, builds, processes
    spec                          catalogue, scenario language, step definitions, known failures
    broker                        where the broker comes from, its API, its conditions
    amqp                          one codec, the probe, the raw client, the transcript
    core                          errors, signals, redaction, paths, ownership

Two packages on one floor never import each other.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import acemq_interop

PACKAGE = Path(acemq_interop.__file__).parent
FLOOR = {"core": 1, "amqp": 2, "broker": 3, "spec": 4, "results": 5, "peers": 5, "reports": 6, "run": 6, "commands": 7}


def _imports(path: Path) -> set[str]:
    """The acemq_interop modules (dotted, below the package) a file imports, at any depth of its code."""
    rel = path.relative_to(PACKAGE).with_suffix("").parts
    here = rel[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[:len(here) - node.level + 1])
                module = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith("acemq_interop"):
                module = node.module.split(".")[1:]
            else:
                continue
            if node.module is None or (module and (PACKAGE.joinpath(*module)).is_dir()):
                found.update(".".join(module + [a.name]) for a in node.names)
            else:
                found.add(".".join(module))
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".", 1)[1] for a in node.names if a.name.startswith("acemq_interop."))
    return {m for m in found if m}


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE).with_suffix("").parts): p for p in PACKAGE.rglob("*.py")}


def test_every_module_lives_in_a_package_of_a_floor() -> None:
    for name in _modules():
        if name in ("__init__", "__main__"):
            continue
        assert name.split(".")[0] in FLOOR, f"acemq_interop/{name}.py: put it in one of {sorted(FLOOR)}"


def test_each_package_imports_only_the_floors_under_it() -> None:
    for name, path in _modules().items():
        package = name.split(".")[0]
        if package not in FLOOR:
            continue
        for imported in _imports(path):
            other = imported.split(".")[0]
            if other == package or other not in FLOOR:
                continue
            assert FLOOR[other] < FLOOR[package], f"{name} imports {imported}: {other} is not under {package}"


def test_the_views_render_the_model_only() -> None:
    """A report reads a result; it never runs a cell, a peer or a broker."""
    for name, path in _modules().items():
        if name.startswith(("reports.", "results.")):
            reached = {m.split(".")[0] for m in _imports(path)}
            assert not reached & {"run", "peers", "broker", "amqp", "commands"}, (name, sorted(reached))


def test_the_model_imports_nothing_of_the_harness_but_the_catalogue() -> None:
    # results.foreign derives the foreign-interop matrix from the model's cells, reading only
    # the model and the catalogue itself.
    assert {m for m in _imports(PACKAGE / "results" / "model.py")} <= {"spec.catalogue", "results.foreign"}
    assert {m for m in _imports(PACKAGE / "results" / "foreign.py")} <= {"spec.catalogue", "results.model"}


def test_reading_a_scenario_touches_neither_the_probe_nor_pika() -> None:
    """The loader reads step definitions; how a step runs (the probe, the peers) is the engine's."""
    import subprocess

    code = ("import sys; from acemq_interop.spec import scenarios; scenarios.load_all(); "
            "print(sorted(m for m in sys.modules if m == 'pika' or m.startswith(('acemq_interop.run', 'acemq_interop.peers', "
            "'acemq_interop.amqp.probe'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


def test_only_the_amqp_package_imports_pika() -> None:
    """One AMQP floor: every other package reaches the broker's protocol through amqp/ (its
    codec, probe, raw client, handshake), never through pika, and nothing patches pika."""
    found = []
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            if any(n == "pika" or n.startswith("pika.") for n in names) and not name.startswith("amqp."):
                found.append(f"acemq_interop/{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"pika imported outside acemq_interop/amqp/: {found}"


def test_nothing_replaces_what_pika_defines() -> None:
    """The codec writes and reads what pika would get wrong; no module assigns to pika's own
    names (as the probe and the tracer once replaced pika.data's encode_value and decode_value)."""
    patched = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                root = target
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(target, ast.Attribute) and isinstance(root, ast.Name) and root.id == "pika":
                    patched.append(f"acemq_interop/{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not patched, f"pika patched: {patched}"
