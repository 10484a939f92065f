"""Where the page's own files are: the static/ and templates/ folders.

In the repository they sit at the top level, beside app/ (the design card's layout). A wheel
carries them inside the app package (pyproject.toml maps app.static and app.templates onto
them), so an installed copy finds them through the package, wherever pip put it, with no
checkout around.
"""

from importlib.resources import files
from pathlib import Path

from jinja2 import Environment

from .schemas import DEFAULT_SPEED, PLAYER_SPEEDS


def _folder(name: str) -> Path:
    package = files("app")
    installed = package / name
    if installed.is_dir():
        return Path(str(installed))
    return Path(str(package)).parent / name  # a checkout or an editable install


STATIC_DIR = _folder("static")
TEMPLATES_DIR = _folder("templates")


def add_template_globals(environment: Environment) -> None:
    """What every template may read, in both of the app's environments (the server's pages, and
    app.export.standalone's self-contained file): the player's speeds come from the wire format's module."""
    environment.globals.update(player_speeds=PLAYER_SPEEDS, default_speed=DEFAULT_SPEED)
