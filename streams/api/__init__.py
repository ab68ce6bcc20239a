"""The NVIDIA Attribution v2 API on top of Faultstream's engine, and a read-only dashboard.

``faultstream api`` serves both (docs/api.md). Attributors live in Redis; an attribution runs
the same pure engine as ``faultstream backtest`` on the attributor's evidence.
"""
