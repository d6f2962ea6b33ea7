"""Public client for agent processes: `from minionsd.client import Client`."""

from minionsd.rpc.client import Client, DaemonUnavailable, RpcError, socket_for_home

__all__ = ["Client", "DaemonUnavailable", "RpcError", "socket_for_home"]
