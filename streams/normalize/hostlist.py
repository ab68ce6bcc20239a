"""Slurm hostlist expressions: the parser lives in the engine (``extractors.hostlist``), which
also expands the node lists scheduler lines name; the normalizers use the same one."""

from __future__ import annotations

from extractors.hostlist import MAX_HOSTS, expand_hostlist

__all__ = ["MAX_HOSTS", "expand_hostlist"]
