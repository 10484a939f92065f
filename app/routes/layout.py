"""POST /layout: the server's layered layout (app/layout.py) for a graph the page builds itself,
the view with some scopes collapsed into boxes, so every picture is laid out by the same code."""

from fastapi import APIRouter

from .. import schemas
from ..dependencies import ServiceDep
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
async def post_layout(request: schemas.LayoutRequest, service: ServiceDep):
    """Lay out a graph given as children lists (the same layout as `"layout": true` of /backward)."""
    nodes = len(request.children)
    limits = service.limits
    if nodes > limits.max_nodes:
        return json_error(
            400,
            {
                "message": f"the graph has {nodes:,} nodes, more than the limit of {limits.max_nodes:,} "
                "(VALUEGRAPH_MAX_NODES)"
            },
        )
    return await service.run(layout_graph, request.children, nodes - 1)
