"""The API docs page: Swagger UI from the vendored copy in static/vendor/swagger-ui (no CDN)."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.responses import Response

from app.web.templating import route_path, templates_of

router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
def api_docs(request: Request) -> Response:
    """Swagger UI for this app's OpenAPI schema, served from this host only."""
    context = {"title": request.app.title, "openapi_url": route_path(request, "openapi")}
    return templates_of(request).TemplateResponse(request, "api_docs.html", context)
