"""The Xid catalog's resolution bucket per code, for the ``collectors`` of an attribution.

Source: NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html),
as summarized in the project's reference (failure-signals.md §2). The catalog names one action
per code; actions that repair (restart the app, reset the GPU, reboot) are *recovery* actions,
those that send a person to look (a workflow, check the mechanicals, contact support) are
*investigatory*. A code the table does not hold gives "NA", never a guess.
"""

from __future__ import annotations

__all__ = ["INVESTIGATORY", "resolution_for"]

INVESTIGATORY = frozenset(
    {
        "WORKFLOW_XID_48",
        "WORKFLOW_NVLINK_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "CHECK_MECHANICALS",
        "CHECK_UVM",
        "CONTACT_SUPPORT",
        "XID_154",
    }
)


def _codes(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        out += range(int(low), int(high or low) + 1)
    return out


_TABLE = {
    "8,11,13,25,31,32,39-41,60,68-72,75-77,80,82-85,88,89,94,96-105,126-135,139": "RESTART_APP",
    "14,37,38,43,44,63,92,108,121,137,157": "IGNORE",
    "46,62,64,95,109,110,119,120,136,140,143,155,156,158": "RESET_GPU",
    "48": "WORKFLOW_XID_48",
    "54": "CHECK_MECHANICALS",
    "74": "WORKFLOW_NVLINK_ERR",
    "78": "UPDATE_SWFW",
    "79": "RESTART_BM",
    "144-150": "WORKFLOW_NVLINK5_ERR",
    "151": "RESTART_VM",
    "154": "XID_154",
    "159": "CHECK_UVM",
    "1-7,9,10,12,15-24,26-30,33-36,42,47,73,81,87": "CONTACT_SUPPORT",
}
CATALOG_ACTION = {code: action for spec, action in _TABLE.items() for code in _codes(spec)}


def resolution_for(catalog_id: str | None) -> tuple[list[str] | str, list[str] | str]:
    """(recovery_actions, investigatory_actions) for a root symptom's catalog id (``XID-79``)."""
    if not catalog_id or not catalog_id.startswith("XID-") or not catalog_id[4:].isdigit():
        return "NA", "NA"
    action = CATALOG_ACTION.get(int(catalog_id[4:]))
    if action is None:
        return "NA", "NA"
    if action in INVESTIGATORY:
        return "NA", [action]
    return [action], "NA"
