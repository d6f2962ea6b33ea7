"""A small blocking JSON-RPC client for a minionsd gateway's `POST /rpc` (SPEC §5.2), with the
same interface and errors as the socket client: `call(method, params)` returns the result or
raises RpcError for an error answer, DaemonUnavailable when the gateway or the daemon behind
it cannot be reached, TimeoutError when no answer comes in time, and GatewayRefused for an
HTTP refusal (401 bad token, 403, 429...), which carries the gateway's reason.

Standard library only (http.client, imported on first use, so plain socket commands that
import this module pay nothing for it). The token is sent in the Authorization header only
and never appears in an error.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from minionsd.rpc.client import DaemonUnavailable, GatewayRefused, RpcError

if TYPE_CHECKING:
    import http.client


def endpoint_url(base: str, path: str) -> str:
    """`base` with `path` (`/rpc`, `/mcp`) as its path unless it names an endpoint already."""
    parts = urlsplit(base.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{base!r} is not an http(s) URL of a minionsd gateway")
    trimmed = parts.path.rstrip("/")
    if trimmed.endswith(("/rpc", "/mcp")):
        trimmed = trimmed[:-4]
    return f"{parts.scheme}://{parts.netloc}{trimmed}{path}"


def _header_safe(token: str) -> bool:
    """Whether `token` can go into an Authorization header as it is: visible ASCII only (a
    space, a control character or a newline would break the header, and http.client's error
    about it quotes the whole header, token included)."""
    return bool(token) and all("!" <= ch <= "~" for ch in token)


class HttpClient:
    def __init__(self, url: str, token: str | None, timeout: float = 60.0) -> None:
        if token is not None and not _header_safe(token):
            raise ValueError("the gateway token holds a space, a line break or another "
                             "character a token never has (not shown here); set it again "
                             "without them")
        self.url = endpoint_url(url, "/rpc")
        self.where = self.url
        self.token = token
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        import http.client
        import ssl

        if self._conn is None:
            parts = urlsplit(self.url)
            if parts.scheme == "https":
                self._conn = http.client.HTTPSConnection(
                    parts.netloc, timeout=self.timeout, context=ssl.create_default_context())
            else:
                self._conn = http.client.HTTPConnection(parts.netloc, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        import http.client

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        conn = self._connection()
        try:
            conn.request("POST", urlsplit(self.url).path or "/rpc", body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except TimeoutError:
            self.close()
            raise TimeoutError(f"no answer from the gateway at {self.url} within "
                               f"{self.timeout:g} s") from None
        except (ConnectionRefusedError, FileNotFoundError, OSError,
                http.client.HTTPException) as exc:
            self.close()
            raise DaemonUnavailable(f"the gateway at {self.url} is not reachable: "
                                    f"{type(exc).__name__}: {exc}") from exc
        except ValueError as exc:  # after OSError: an SSL error is both
            # http.client refusing a header or the request line: its message quotes the
            # header, so it is never passed on.
            self.close()
            raise ValueError(f"the request to {self.url} could not be sent: "
                             f"{type(exc).__name__} in its request line or headers (the "
                             "Authorization header is not shown)") from None
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def call(self, method: str, params: dict[str, Any] | None = None, /,
             **kwargs: Any) -> Any:
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method,
                   "params": dict(params or {}) | kwargs}
        status, headers, data = self._post(json.dumps(message, separators=(",", ":"),
                                                      ensure_ascii=False).encode("utf-8"))
        try:
            decoded = json.loads(data) if data else None
        except ValueError:
            decoded = None
        if status == 200 and isinstance(decoded, dict) and ("result" in decoded
                                                             or "error" in decoded):
            if "error" in decoded:
                error = decoded["error"]
                raise RpcError(error.get("code", 0), error.get("message", ""), error.get("data"))
            return decoded["result"]
        detail = ""
        if isinstance(decoded, dict):
            err = decoded.get("error")
            if isinstance(err, dict):
                detail = str((err.get("data") or {}).get("detail") or err.get("detail") or "")
        if status == 503:
            raise DaemonUnavailable(detail or f"the daemon behind {self.url} is not reachable")
        if status == 504:  # the daemon took the request and did not answer in time
            raise TimeoutError(detail or f"no answer through {self.url} in time")
        reason = ""
        if isinstance(decoded, dict) and isinstance(decoded.get("error"), dict):
            reason = str(decoded["error"].get("reason") or "")
        if status == 401 and not self.token:
            detail = (f"{detail or 'no bearer token'}: no token was sent; put the gateway "
                      "token in $MINIONS_TOKEN, or name its variable with --token-env VAR")
        if status == 429 and headers.get("retry-after"):
            detail = f"{detail} (retry after {headers['retry-after']} s)".strip()
        raise GatewayRefused(status, reason or f"http_{status}",
                             detail or f"unexpected answer from {self.url}",
                             headers.get("retry-after") if status == 429 else None)

__all__ = ["GatewayRefused", "HttpClient", "endpoint_url"]
