"""Garbage-collector settings for the batch stages (backtest workers, the extractor)."""

from __future__ import annotations

import gc

__all__ = ["relax_for_batches"]


def relax_for_batches() -> None:
    """A batch allocates a few hundred thousand short-lived objects and no reference cycles:
    the default thresholds would run the cycle collector hundreds of times per batch over
    everything alive (rules, models, client buffers), which costs about a fifth of the
    extractor's time. Objects alive at startup are frozen out of the collector's scans."""
    gc.freeze()
    gc.set_threshold(200_000, 50, 100)
