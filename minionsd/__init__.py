"""minionsd: a local memory service for a fleet of coding agents."""

from functools import cache


@cache
def _version() -> str:
    # The one source of the version is pyproject.toml, read from the installed metadata; looked
    # up on first use, so importing the package (minionsctl's start) does not pay for it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("minionsd")
    except PackageNotFoundError:  # a source tree used without installing it
        return "0+unknown"


def __getattr__(name: str) -> str:
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'minionsd' has no attribute {name!r}")
