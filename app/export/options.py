"""The embed's options: what GET /embed, the self-contained file and `valuegraph export` show.
static/js/share.js writes the same defaults into links."""

from dataclasses import dataclass
from typing import Mapping

from ..schemas import DEFAULT_SPEED, PLAYER_SPEEDS

STAGES = ("both", "sort", "propagate")
CONTROLS = ("full", "minimal", "none")
EDITORS = ("shown", "read-only", "hidden")
THEMES = ("auto", "light", "dark")
TABLES = ("hidden", "shown")


@dataclass(frozen=True)
class EmbedOptions:
    """What the embed shows; defaults first in each tuple above. Unknown values take the default."""

    stage: str = "both"
    step: int | None = None
    autoplay: bool = False
    speed: str = f"{DEFAULT_SPEED:g}"
    controls: str = "full"
    editor: str = "shown"
    theme: str = "auto"
    table: str = "hidden"
    variables: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> "EmbedOptions":
        def choice(name, allowed):
            value = query.get(name, "")
            return value if value in allowed else allowed[0]

        step = query.get("step", "")
        try:
            speed = float(query.get("speed", DEFAULT_SPEED))
        except ValueError:
            speed = DEFAULT_SPEED
        return cls(
            stage=choice("stage", STAGES),
            step=int(step) if step.isascii() and step.isdigit() and len(step) < 10 else None,
            autoplay=query.get("autoplay", "").lower() in ("1", "true", "yes", "on"),
            speed=f"{speed:g}" if speed in PLAYER_SPEEDS else f"{DEFAULT_SPEED:g}",
            controls=choice("controls", CONTROLS),
            editor=choice("editor", EDITORS),
            theme=choice("theme", THEMES),
            table=choice("table", TABLES),
            variables=query.get("variables", "")[:10_000],
        )
