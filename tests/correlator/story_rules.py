"""A small inline ruleset for correlator tests: enough rules to tell stories, nothing more."""

RULE = """schema: symptom-rule/v1
id: {id}
title: {title}
status: experimental
description: test rule
why: test rule
domain: {domain}
symptom: {symptom}
role: {role}
priority: {priority}
tags: {tags}
sources: {sources}
patterns: ['{pattern}']
{extra}
examples: {{match: ['{example}']}}
"""

RULES = {
    "symptoms/t/t.xid79.yaml": dict(
        id="t.xid79",
        title="GPU fell off the bus",
        domain="hardware",
        symptom="gpu_fallen_off_bus",
        role="cause",
        priority=95,
        tags="[xid]",
        sources="[dmesg, syslog]",
        pattern=r"NVRM: Xid \(PCI:(?P<pci>[0-9a-f:]+)\): 79,",
        extra="entity: [pci]",
        example="NVRM: Xid (PCI:0000:01:00): 79, x",
    ),
    "symptoms/t/t.cuda-oom.yaml": dict(
        id="t.cuda-oom",
        title="CUDA out of memory",
        domain="user",
        symptom="cuda_out_of_memory",
        role="cause",
        priority=85,
        tags="[]",
        sources="[applog]",
        pattern="CUDA out of memory",
        extra="",
        example="CUDA out of memory",
    ),
    "symptoms/t/t.nccl-closed.yaml": dict(
        id="t.nccl-closed",
        title="NCCL connection closed",
        domain="infrastructure",
        symptom="nccl_connection_closed",
        role="echo",
        priority=15,
        tags="[transport]",
        sources="[applog]",
        pattern="Connection closed by remote peer",
        extra="",
        example="Connection closed by remote peer",
    ),
    "symptoms/t/t.ib-error.yaml": dict(
        id="t.ib-error",
        title="IB completion error",
        domain="infrastructure",
        symptom="nccl_ib_completion_error",
        role="cause",
        priority=60,
        tags="[transport]",
        sources="[applog]",
        pattern="Got completion from peer",
        extra="",
        example="Got completion from peer",
    ),
    "symptoms/t/t.watchdog.yaml": dict(
        id="t.watchdog",
        title="NCCL watchdog timeout",
        domain="infrastructure",
        symptom="nccl_watchdog_timeout",
        role="echo",
        priority=30,
        tags="[collective_hang]",
        sources="[applog]",
        pattern="Watchdog caught collective operation timeout",
        extra="",
        example="Watchdog caught collective operation timeout",
    ),
    "symptoms/t/t.reboot.yaml": dict(
        id="t.reboot",
        title="Node booted",
        domain="none",
        symptom="node_boot",
        role="context",
        priority=10,
        tags="[reboot]",
        sources="[dmesg, syslog]",
        pattern="Linux version",
        extra="",
        example="Linux version 6.1",
    ),
}

REFINERS = {
    "refiners/r.transport.yaml": """schema: refiner/v1
id: r.transport
title: transport after fault
description: test
why: test
target: {tags: [transport], roles: [cause, companion, echo]}
cause: {exclude_tags: [transport, collective_hang], min_priority: 50}
relation: after
within_s: 900
set_role: downstream
""",
    "refiners/r.hang.yaml": """schema: refiner/v1
id: r.hang
title: hang after error
description: test
why: test
target: {tags: [collective_hang], roles: [cause, companion, echo]}
cause: {exclude_tags: [collective_hang]}
relation: after
set_role: downstream
""",
}


def story_ruleset_files() -> dict[str, str]:
    files = {path: RULE.format(**fields) for path, fields in RULES.items()}
    files.update(REFINERS)
    files["ruleset.yaml"] = "name: story-rules\nversion: 0.0.1\n"
    return files
