"""What the gateway's endpoints share, handed to each explicitly (the web view gets it as
`routes(ctx)`): the settings, the daemon link, the scope-checked call, the token verifier and
authenticator, the metrics."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from minionsd.gateway.auth import Authenticator
from minionsd.gateway.daemon_link import DaemonLink
from minionsd.gateway.identity import Identity
from minionsd.gateway.metrics import GatewayMetrics
from minionsd.gateway.settings import GatewaySettings
from minionsd.gateway.tokens import TokenVerifier

# call(method, params, identity) -> the daemon's result; raises RpcError (-32004 forbidden
# when the identity's scopes do not allow the method), DaemonUnavailable.
Call = Callable[[str, dict[str, Any] | None, Identity], Awaitable[Any]]


@dataclass(frozen=True)
class GatewayContext:
    settings: GatewaySettings
    call: Call
    verifier: TokenVerifier
    auth: Authenticator
    link: DaemonLink
    metrics: GatewayMetrics
