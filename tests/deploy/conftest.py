"""The live-pipeline fixtures (real Kafka and Redis, worker processes) for the deploy tests."""

from tests.pipeline.conftest import pipeline, services

__all__ = ["pipeline", "services"]
