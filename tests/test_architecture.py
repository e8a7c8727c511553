"""The layout shows the architecture: docs/architecture.md's import graph is the code's, every
arrow of it, and there is no import circle anywhere in ``app/`` (imports inside functions
included); every httpx client of the tests and benchmarks shares one SSL context. Read from the
source with ``ast``; nothing is imported."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"
DOC = ROOT / "docs" / "architecture.md"


def module_name(path: Path) -> str:
    """``app/lab/panel.py`` → ``lab/panel``; a package's ``__init__`` is the package."""
    parts = path.relative_to(APP).with_suffix("").parts
    return "/".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(APP.rglob("*.py"))}
MODULES.pop("", None)  # app/__init__.py


def _internal(dotted: str) -> str | None:
    """``app.lab.panel`` → ``lab/panel`` when that is a module of app/, else None."""
    if not dotted.startswith("app."):
        return None
    name = dotted[len("app.") :].replace(".", "/")
    return name if name in MODULES else None


def imports_of(name: str) -> set[str]:
    """The modules of app/ that ``name`` imports, anywhere in its source. ``from app.routes
    import api`` imports the module ``routes/api`` (its package's empty ``__init__`` is not
    counted); ``from app.engine import from_means`` imports the package ``engine``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import):
            found.update(m for alias in node.names if (m := _internal(alias.name)))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {_internal(f"{node.module}.{alias.name}") for alias in node.names}
            found.update(m for m in submodules if m)
            module = _internal(node.module)
            if module and None in submodules:  # some name is not a module: the package's own
                found.add(module)
    found.discard(name)
    return found


def _expand(text: str) -> list[str]:
    """``lab/{panel,view}, engine`` → ``["lab/panel", "lab/view", "engine"]``."""
    text = re.sub(r"\{([^}]*)\}", lambda m: "{" + m.group(1).replace(",", "|") + "}", text)
    names = []
    for item in (part.strip() for part in text.split(",")):
        brace = re.fullmatch(r"(.*)\{(.*)\}", item)
        if brace:
            names += [brace.group(1) + inner.strip() for inner in brace.group(2).split("|")]
        elif item:
            names.append(item)
    return names


def documented_graph() -> dict[str, list[str]]:
    """docs/architecture.md's first code block: ``nodes → deps`` lines (a line without an arrow
    goes on with the one above; ``nothing…`` for no arrow)."""
    block = DOC.read_text().split("```\n", 2)[1]
    entries: list[tuple[str, str]] = []
    for line in block.splitlines():
        if "→" in line:
            left, right = line.split("→")
            entries.append((left, right))
        else:
            left, right = entries.pop()
            entries.append((left, f"{right.rstrip()} {line.strip()}"))
    graph: dict[str, list[str]] = {}
    for left, right in entries:
        deps = [] if right.strip().startswith("nothing") else _expand(right)
        for node in _expand(left):
            assert node not in graph, f"{node} has two lines in docs/architecture.md"
            graph[node] = deps
    return graph


def members(node: str) -> list[str]:
    """The modules a graph node stands for: ``engine/*`` every module of engine/."""
    if node.endswith("/*"):
        package = node[:-2]
        return [m for m in MODULES if m == package or m.startswith(package + "/")]
    assert node in MODULES, f"docs/architecture.md names {node}, which is not a module of app/"
    return [node]


def covers(dep: str, module: str) -> bool:
    """A documented dependency ``engine`` stands for the package and all its modules."""
    return module == dep or module.startswith(dep + "/")


def test_the_documented_import_graph_is_the_codes() -> None:
    graph = documented_graph()
    placed: dict[str, str] = {}
    for node, deps in graph.items():
        inside = members(node)
        for module in inside:
            assert module not in placed, f"{module} is in both {placed[module]} and {node}"
            placed[module] = node
        actual = {dep for m in inside for dep in imports_of(m)} - set(inside)
        missing = sorted(a for a in actual if not any(covers(d, a) for d in deps))
        stale = sorted(d for d in deps if not any(covers(d, a) for a in actual))
        assert not missing, f"docs/architecture.md: {node} also imports {missing}"
        assert not stale, f"docs/architecture.md: {node} does not import {stale}"
    unplaced = sorted(set(MODULES) - set(placed) - {"lab", "routes", "confirm", "lesson"})
    assert not unplaced, f"modules of app/ missing from docs/architecture.md: {unplaced}"


def test_there_is_no_import_circle_in_app() -> None:
    graph = {name: imports_of(name) for name in MODULES}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            circle = [*path[path.index(name) :], name]
            raise AssertionError("import circle: " + " → ".join(circle))
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    # The check reads the code it guards: the server's entry imports down through the layers.
    assert {"routes/lab", "routes/pages", "settings"} <= graph["main"]


def layout_sections() -> dict[str, set[str]]:
    """The README's layout tree: the words on each package's lines of app/ ("" for app/'s own
    lines, "lab" for the lines from ``  lab/`` to the next package)."""
    readme = (ROOT / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1].split("```", 2)[1]
    sections: dict[str, set[str]] = {}
    current: str | None = None
    for line in layout.splitlines():
        if package := re.match(r"  ([a-z_]+)/\s", line):
            current = package.group(1)
        elif line.startswith("app/") or re.match(r"  [a-z_]+\.py\s", line):
            current = ""
        elif not line.startswith(" "):
            current = None  # templates/, static/, …: not app/
        if current is not None:
            sections.setdefault(current, set()).update(re.findall(r"[A-Za-z_]+", line))
    return sections


def test_the_readme_layout_names_every_module() -> None:
    """Each module of app/ is named in the README's layout tree, on its package's lines."""
    sections = layout_sections()
    unnamed = []
    for name in MODULES:
        package, _, stem = name.rpartition("/")
        if name in ("lab", "routes", "confirm", "lesson", "engine", "web", "live"):
            continue  # a package: its own line names it
        if stem not in sections.get(package, set()):
            unnamed.append(name)
    assert not unnamed, f"README's layout leaves out {unnamed}"


# httpx's calls that build a transport, and with it an SSL context, unless given one (bench/_http).
HTTPX_BUILDS_CONTEXT = {"Client", "AsyncClient", "HTTPTransport", "AsyncHTTPTransport"} | {
    "get",
    "post",
    "put",
    "patch",
    "delete",
    "head",
    "options",
    "request",
    "stream",
}


def contexts_built(path: Path) -> list[str]:
    """Where ``path`` calls httpx without ``verify=`` (a client given its ``transport`` builds
    none of its own)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner, name = node.func.value, node.func.attr
        if not (isinstance(owner, ast.Name) and owner.id == "httpx"):
            continue
        given = {keyword.arg for keyword in node.keywords}
        if name in HTTPX_BUILDS_CONTEXT and "verify" not in given and "transport" not in given:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} httpx.{name}")
    return found


def test_every_httpx_client_of_the_tests_and_benchmarks_shares_one_ssl_context() -> None:
    """Each one built its own, about 20 ms of CPU: 45 s of one `make test` (bench/_http.py)."""
    files = sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")])
    built = [place for path in files for place in contexts_built(path)]
    assert not built, "pass verify=TLS (from bench._http import TLS): " + ", ".join(built)
