"""The one template environment: built from the app's settings by create_app, its globals
registered in one place, autoescape on, and no module of app/ reading settings at import."""

import ast
import shutil
from pathlib import Path

import jinja2
import pytest
from fastapi.testclient import TestClient
from starlette.routing import Mount

from app.main import create_app
from app.settings import Settings
from app.web.templating import create_templates
from tests.test_architecture import MODULES
from tests.test_course import course_folder

ROOT = Path(__file__).resolve().parent.parent


def test_the_templates_come_from_the_settings_given_to_create_app(tmp_path: Path) -> None:
    """An app built with its own templates folder renders from it (a module that read the
    settings at import would still use the folder of the environment it was imported in)."""
    folder = tmp_path / "templates"
    shutil.copytree(ROOT / "templates", folder)
    base = folder / "base.html"
    base.write_text(base.read_text().replace("<body", "<body data-marker=own-templates", 1))
    settings = Settings(templates_dir=folder, confirm_enabled=False)
    with TestClient(create_app(settings)) as client:
        page = client.get("/")
    assert page.status_code == 200
    assert "data-marker=own-templates" in page.text


def test_one_app_serves_every_lesson(tmp_path: Path) -> None:
    """A course's lessons are routers of the one app (rendered by its one template
    environment), not apps of their own: the only mount is the static files."""
    settings = Settings(lesson_path=course_folder(tmp_path), confirm_enabled=False)
    app = create_app(settings)
    assert [route.path for route in app.routes if isinstance(route, Mount)] == ["/static"]
    with TestClient(app) as client:
        assert client.get("/learn/sharded-matmul-ownership/").status_code == 200


def test_globals_are_registered_in_one_place_and_no_filters_of_our_own(
    settings: Settings,
) -> None:
    env = create_templates(settings).env
    assert {"url_for", "static_url"} <= set(env.globals)
    assert set(env.filters) == set(jinja2.Environment().filters)


def test_every_app_of_a_process_shares_one_environment_per_templates_folder(
    tmp_path: Path,
) -> None:
    """Each template is compiled once per process, not once per app built (a test suite builds
    hundreds); another templates folder has its own."""
    one = create_app(Settings(data_dir=tmp_path / "one", confirm_enabled=False))
    two = create_app(Settings(data_dir=tmp_path / "two", confirm_enabled=False))
    assert one.state.templates.env is two.state.templates.env
    (tmp_path / "echo.html").write_text("{{ text }}")
    other = create_templates(Settings(templates_dir=tmp_path)).env
    assert other is not one.state.templates.env
    assert other.get_template("echo.html").render(text="x") == "x"


def test_autoescape_is_on_for_html_templates(tmp_path: Path) -> None:
    (tmp_path / "echo.html").write_text("{{ text }}")
    env = create_templates(Settings(templates_dir=tmp_path)).env
    rendered = env.get_template("echo.html").render(text="<b>&\"'")
    assert rendered == "&lt;b&gt;&amp;&#34;&#39;"


class _ImportTime(ast.NodeVisitor):
    """Every call run as the module loads: function bodies are left out, not their decorators
    or default values (a class body runs at import too)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in (
            "get_settings",
            "Settings",
            "create_app",
        ):
            self.calls.append(ast.unparse(node))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for part in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
            if part is not None:
                self.visit(part)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.visit_FunctionDef(node)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_reads_the_settings_at_import(name: str) -> None:
    """Settings are read when an app is built, never as a module loads: module-level
    statements call neither get_settings() nor Settings() (nor create_app(), which reads
    them: uvicorn builds the app with ``--factory``)."""
    tree = ast.parse(MODULES[name].read_text())
    for statement in tree.body:
        found = _ImportTime()
        found.visit(statement)
        assert not found.calls, f"app/{name}.py reads the settings at import: {found.calls}"
