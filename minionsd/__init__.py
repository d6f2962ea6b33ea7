"""minionsd: a local memory service for a fleet of coding agents."""

__version__ = "0.1.0"
