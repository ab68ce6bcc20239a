"""Adapters around the engine: record models, ingest normalizers, topics, CLI and workers."""
