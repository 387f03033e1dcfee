"""The qk_speed package's modules: no import loop among them (the experiment facade composes the parts, no
part imports it back), and each part's results are keyed by its own code, the facade's and the claims' left
out."""

import ast
from pathlib import Path

import pytest

from attnlab import codekeys
from attnlab.papers import qk_speed
from attnlab.papers.qk_speed import circuit_runs, dynamics_runs, fixed_attention_runs, squad_runs, sva_runs

PACKAGE = qk_speed.__name__
FOLDER = Path(qk_speed.__file__).parent


def package_imports(path: Path, annotations: bool = True) -> set[str]:
    """The modules of the package that the file at ``path`` imports anywhere, at the top or in functions,
    and with ``annotations`` in ``if TYPE_CHECKING:`` blocks too (an annotation-only import still ties the
    two modules together)."""
    found = set()
    todo: list[ast.AST] = [ast.parse(path.read_text())]
    while todo:
        node = todo.pop()
        if not annotations and isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            todo += node.orelse
            continue
        if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            found |= {alias.name for alias in node.names if (FOLDER / f"{alias.name}.py").is_file()}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"{PACKAGE}."):
            found.add(node.module.removeprefix(f"{PACKAGE}."))
        elif isinstance(node, ast.Import):
            found |= {
                a.name.removeprefix(f"{PACKAGE}.") for a in node.names if a.name.startswith(f"{PACKAGE}.")
            }
        todo += ast.iter_child_nodes(node)
    return found


def find_loop(graph: dict[str, set[str]]) -> list[str] | None:
    """An import loop of ``graph`` (module -> the modules it imports) as the modules along it, or None."""
    state: dict[str, str] = {}  # "open" while on the path, "done" once every module it reaches is checked

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = "open"
        for dep in sorted(graph.get(name, ())):
            if state.get(dep) == "open":
                return [*path[path.index(dep) :], dep]
            if dep not in state and (loop := visit(dep, [*path, dep])):
                return loop
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state and (loop := visit(name, [name])):
            return loop
    return None


def test_find_loop_finds_a_loop_and_only_a_loop():
    assert find_loop({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_loop({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def reachable(graph: dict[str, set[str]], start: set[str]) -> set[str]:
    """Every module that the modules ``start`` import, directly or through others, ``start`` included."""
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += graph.get(name, ())
    return seen


def test_no_module_of_the_package_imports_one_that_imports_it_back():
    paths = [path for path in FOLDER.glob("*.py") if path.stem != "__init__"]
    runtime = {path.stem: package_imports(path, annotations=False) for path in paths}
    assert find_loop(runtime) is None, f"import loop: {' -> '.join(find_loop(runtime) or [])}"
    # the facade composes the parts, and none of them, nor the claims, imports it back, even for annotations
    graph = {path.stem: package_imports(path) for path in paths}
    assert {"circuit_runs", "sva_runs", "squad_runs", "batched", "claims"} <= reachable(
        graph, graph["experiment"]
    )
    assert "experiment" not in reachable(graph, graph["experiment"])


@pytest.mark.parametrize("part", [circuit_runs, fixed_attention_runs, dynamics_runs, sva_runs, squad_runs])
def test_each_part_keys_its_results_by_its_own_code(part):
    keyed = codekeys.closure(part.CODE)
    assert part.__name__ in keyed
    assert not {f"{PACKAGE}.{m}" for m in ("experiment", "claims", "plots")} & keyed
