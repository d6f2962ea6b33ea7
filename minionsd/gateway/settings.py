"""The gateway's settings, read once at start from the home's config ([gateway] and
server.max_request_bytes), and the start-up refusals of SPEC §5.2: a listen address that is
not loopback without TLS or `behind_proxy`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from minionsd.config import split_host_port


class SettingsError(ValueError):
    """The gateway cannot start with these settings; the message says why."""


def split_listen(listen: str) -> tuple[str, int]:
    """`host:port` or `[v6]:port` -> (host, port)."""
    try:
        return split_host_port(listen)
    except ValueError as exc:
        raise SettingsError(f"gateway.listen {listen!r} {exc}") from None


def is_wildcard(host: str) -> bool:
    """0.0.0.0 or ::, every address of the machine (loopback among them)."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_only(value: str) -> str:
    """A Host header or URL netloc without its port, lowercased, IPv6 brackets removed."""
    value = value.strip().lower()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        return host if _port_or_nothing(rest) else value
    if value.count(":") != 1:
        return value
    host, _, port = value.partition(":")
    # Anything after the colon but a port (`localhost:80@evil.example`) leaves the value as
    # it is, so it matches no accepted host.
    return host if port.isdigit() else value


def _port_or_nothing(rest: str) -> bool:
    return rest == "" or (rest.startswith(":") and rest[1:].isdigit())


@dataclass(frozen=True)
class GatewaySettings:
    host: str
    port: int
    socket: Path
    public_url: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    behind_proxy: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    rate_per_s: float = 20.0
    rate_burst: int = 40
    session_hours: int = 12
    max_request_bytes: int = 1048576
    home: Path | None = None
    # The socket came from the home (no --socket): follow the daemon if it moves (DaemonLink).
    follow_home: bool = False
    # A client must send its whole request (headers and body) within this many seconds.
    read_timeout_s: float = 30.0

    @classmethod
    def from_config(cls, config: Any, socket: Path, *, home: Path | None = None,
                    listen: str | None = None, follow_home: bool = False) -> GatewaySettings:
        host, port = split_listen(listen or config["gateway.listen"])
        return cls(host=host, port=port, socket=socket,
                   public_url=config["gateway.public_url"].rstrip("/"),
                   tls_cert=config["gateway.tls_cert"], tls_key=config["gateway.tls_key"],
                   behind_proxy=config["gateway.behind_proxy"],
                   allowed_hosts=tuple(config["gateway.allowed_hosts"]),
                   allowed_origins=tuple(o.rstrip("/") for o in config["gateway.allowed_origins"]),
                   rate_per_s=float(config["gateway.rate_per_s"]),
                   rate_burst=config["gateway.rate_burst"],
                   session_hours=config["gateway.session_hours"],
                   max_request_bytes=config["server.max_request_bytes"], home=home,
                   follow_home=follow_home and home is not None,
                   read_timeout_s=float(config["gateway.read_timeout_s"]))

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert and self.tls_key)

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def refusal(self) -> str | None:
        """Why the gateway must not start with these settings, or None."""
        if bool(self.tls_cert) != bool(self.tls_key):
            return "gateway.tls_cert and gateway.tls_key must be set together"
        for name, path in (("tls_cert", self.tls_cert), ("tls_key", self.tls_key)):
            if path and not Path(path).expanduser().is_file():
                return f"gateway.{name} {path} is not a readable file"
        if not is_loopback(self.host) and not self.tls and not self.behind_proxy:
            return (f"refusing to listen on {self.host}:{self.port} without TLS: tokens would "
                    "cross the network in clear text. Set gateway.tls_cert and gateway.tls_key, "
                    "or gateway.behind_proxy = true when a reverse proxy ends TLS, or listen "
                    "on 127.0.0.1")
        if is_wildcard(self.host) and not self.public_url and not self.allowed_hosts:
            return (f"listening on every address ({self.host}:{self.port}), the gateway cannot "
                    "tell which names clients reach it by, and would refuse them all (421): set "
                    "gateway.public_url to the URL agents use (e.g. https://memory.example.com:"
                    f"{self.port}), or list those names in gateway.allowed_hosts")
        return None

    def accepted_hosts(self) -> frozenset[str]:
        hosts = {host_only(h) for h in self.allowed_hosts}
        hosts.add(host_only(self.host) if ":" not in self.host else self.host.lower())
        if is_loopback(self.host) or is_wildcard(self.host):
            hosts |= {"localhost", "127.0.0.1", "::1"}  # every address includes loopback
        if self.public_url:
            hosts.add(host_only(urlsplit(self.public_url).netloc))
        return frozenset(hosts)

    def accepted_origins(self) -> frozenset[str]:
        origins = set(self.allowed_origins)
        parts = urlsplit(self.base_url)
        origins.add(f"{parts.scheme}://{parts.netloc}".lower())
        if (is_loopback(self.host) and not self.public_url) or is_wildcard(self.host):
            scheme = "https" if self.tls else "http"
            origins |= {f"{scheme}://localhost:{self.port}", f"{scheme}://127.0.0.1:{self.port}",
                        f"{scheme}://[::1]:{self.port}"}
        return frozenset(o.lower() for o in origins)
