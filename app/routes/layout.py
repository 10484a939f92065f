"""POST /layout: the server's layered layout (app/layout.py) for a graph the page builds itself,
the view with some scopes collapsed into boxes, so every picture is laid out by the same code."""

from fastapi import APIRouter
from fastapi.responses import Response

from .. import schemas
from ..dependencies import ServiceDep
from ..errors import json_error
from ..layout import layout_graph
from ..serialize import to_json

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
    return Response(await service.run(_layout_json, request.children, nodes - 1), media_type="application/json")


def _layout_json(children, output: int) -> bytes:
    """Written in the worker thread too: a large layout's JSON, written on the event loop, held every
    other request (and the time budget's own 503) for a quarter of the time the layout took."""
    return to_json(layout_graph(children, output))
