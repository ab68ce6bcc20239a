"""Event-time correlation: node windows, cascades, verdicts. Pure; no Kafka here."""

from correlator.engine import AttributionEngine, EngineStats
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict

__all__ = ["AttributionEngine", "CorrelatorSettings", "EngineStats", "Verdict"]
