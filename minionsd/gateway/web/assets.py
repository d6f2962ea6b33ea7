"""The view's own assets (SPEC §5.3: nothing comes from another host): one stylesheet and
one small script, read from the package once and served with the view's headers."""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from minionsd.gateway.web import guard

ASSETS = {"style.css": "text/css; charset=utf-8",
          "live.js": "text/javascript; charset=utf-8"}


@cache
def _read(name: str) -> bytes:
    return resources.files("minionsd.gateway.web").joinpath("static", name).read_bytes()


async def static_file(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:
        return guard.secure_headers(PlainTextResponse("not found", status_code=404))
    response = Response(_read(name), media_type=ASSETS[name])
    response.headers["Cache-Control"] = "max-age=300"
    return guard.secure_headers(response, cache=True)
