"""The running daemon: components, consolidation service, watcher, scheduler, health, systemd.
"""
