"""The live-pipeline fixtures (real Kafka and Redis, worker processes with their own namespace)
for the tests of the shippers, the Slurm integration and remediation."""

from tests.pipeline.conftest import Pipeline, pipeline, services

__all__ = ["Pipeline", "pipeline", "services"]
