"""Where verdicts go: the ``add()`` + ``flush()`` sink contract and its implementations.

Only the dependency-free parts are re-exported here; import :mod:`sinks.redis_verdicts` and
:mod:`sinks.redis_reader` directly (they need the ``stream`` extra, which brings ``redis``).
"""

from sinks.base import Sink, SinkError
from sinks.memory import ListSink

__all__ = ["ListSink", "Sink", "SinkError"]
