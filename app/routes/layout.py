"""POST /layout: the server's layered layout (app/layout.py) for a graph the page builds itself,
the view with some scopes collapsed into boxes, so every picture is laid out by the same code."""

from typing import Annotated

import anyio
from fastapi import APIRouter, Depends

from .. import schemas
from ..budget import run_within_budget
from ..config import Settings
from ..dependencies import get_settings, get_work_limiter
from ..errors import json_error
from ..layout import layout_graph

router = APIRouter(tags=["api"])


@router.post(
    "/layout",
    response_model=schemas.Layout,
    responses={
        400: {"model": schemas.MessageResponse, "description": "More nodes than the node limit"},
        503: {"model": schemas.MessageResponse, "description": "The request ran past its time budget"},
    },
)
async def post_layout(
    request: schemas.LayoutRequest,
    settings: Annotated[Settings, Depends(get_settings)],
    limiter: Annotated[anyio.CapacityLimiter, Depends(get_work_limiter)],
):
    """Lay out a graph given as children lists (the same layout as `"layout": true` of /backward)."""
    nodes = len(request.children)
    if nodes > settings.limits.max_nodes:
        return json_error(
            400,
            {
                "message": f"the graph has {nodes:,} nodes, more than the limit of {settings.limits.max_nodes:,} "
                "(VALUEGRAPH_MAX_NODES)"
            },
        )
    return await run_within_budget(
        layout_graph, request.children, nodes - 1, seconds=settings.time_budget, limiter=limiter
    )
