"""The page GET /sandbox serves: the frame a learner's TypeScript or JavaScript runs in, in their own
browser (never on the server).

The page frames it with sandbox="allow-scripts" (an opaque origin: none of this site's cookies,
storage or DOM), and this policy allows no network at all: connect-src 'none' and friends, and
scripts only the frame's own (by hash). Each program runs in a Web Worker made from a blob, which
inherits the policy, so fetch, XMLHttpRequest, WebSocket and importScripts reach nothing.
frame-ancestors *: the embed, framed by any site, frames it too; it takes code from whoever frames
it, and can do nothing with it but compute.

The frame's script (static/js/sandbox/frame.js) is inlined so that its hash can allow it; the
worker's runtime (static/js/sandbox/runtime.js) travels as a data block (type text/plain) that the
frame puts in front of each program.
"""

import base64
import hashlib
from functools import cache

from .assets import STATIC_DIR

SANDBOX_PATH = "/sandbox"
SANDBOX_DIR = STATIC_DIR / "js" / "sandbox"


@cache
def sandbox_page() -> tuple[str, str]:
    """(the HTML of the frame, its Content-Security-Policy)."""
    frame = (SANDBOX_DIR / "frame.js").read_text(encoding="utf-8")
    runtime = (SANDBOX_DIR / "runtime.js").read_text(encoding="utf-8")
    if "</script" in frame.lower() or "</script" in runtime.lower():
        raise ValueError("the sandbox's scripts may not contain </script")
    digest = base64.b64encode(hashlib.sha256(frame.encode("utf-8")).digest()).decode("ascii")
    html = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>valuegraph sandbox</title></head><body>\n'
        f'<script type="text/plain" id="vg-runtime">{runtime}</script>\n<script>{frame}</script>\n</body></html>\n'
    )
    policy = (
        f"default-src 'none'; script-src 'sha256-{digest}'; worker-src blob:; connect-src 'none'; img-src 'none'; "
        "style-src 'none'; font-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; "
        "manifest-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors *"
    )
    return html, policy
