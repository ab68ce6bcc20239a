"""Slurm hostlist expressions: ``gpu[001-004,010]``, ``dev[0-8,18-25],edev[0-25]``, ``n[1-3] n5``.

Names are separated by commas outside brackets or by whitespace. A bracket group is a
comma-separated list of numbers and ``lo-hi`` ranges; the low bound's width (leading zeros)
fixes the width of every number it yields. Several groups in one name expand as a product,
left to right. As in slurm.conf, a name with brackets must end with one (``unit[0-31]rack`` is
invalid). Order is kept and duplicates are not removed, as ``scontrol show hostnames`` does.
"""

from __future__ import annotations

from itertools import product

__all__ = ["MAX_HOSTS", "expand_hostlist"]

#: A larger expansion is a typo or an attack, not a cluster.
MAX_HOSTS = 100_000


def expand_hostlist(expr: str) -> list[str]:
    """Every host name ``expr`` denotes, in order. Raises ValueError on a malformed expression."""
    hosts: list[str] = []
    for name in _split_names(expr):
        hosts.extend(_expand_name(name))
        if len(hosts) > MAX_HOSTS:
            raise ValueError(f"expands to more than {MAX_HOSTS} hosts")
    return hosts


def _split_names(expr: str) -> list[str]:
    """Split on commas and whitespace that are outside brackets."""
    names: list[str] = []
    start, depth = 0, 0
    for index, char in enumerate(expr):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"nested '[' at position {index}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"']' without '[' at position {index}")
        elif depth == 0 and (char == "," or char.isspace()):
            names.append(expr[start:index])
            start = index + 1
    if depth:
        raise ValueError("'[' without a closing ']'")
    names.append(expr[start:])
    return [name for name in names if name]


def _expand_name(name: str) -> list[str]:
    if "[" not in name:
        return [name]
    if not name.endswith("]"):
        raise ValueError(f"{name!r}: text after the last bracket group")
    parts: list[list[str]] = []
    rest = name
    while rest:
        literal, _, rest = rest.partition("[")
        group, _, rest = rest.partition("]")
        parts.append([literal])
        parts.append(_expand_group(group, name))
    if _product_size(parts) > MAX_HOSTS:
        raise ValueError(f"{name!r} expands to more than {MAX_HOSTS} hosts")
    return ["".join(pieces) for pieces in product(*parts)]


def _expand_group(group: str, name: str) -> list[str]:
    if not group.strip():
        raise ValueError(f"{name!r}: empty bracket group")
    values: list[str] = []
    for item in group.split(","):
        values.extend(_expand_item(item.strip(), name))
        if len(values) > MAX_HOSTS:
            raise ValueError(f"{name!r} expands to more than {MAX_HOSTS} hosts")
    return values


def _expand_item(item: str, name: str) -> list[str]:
    low, dash, high = item.partition("-")
    if not _is_number(low) or (dash and not _is_number(high)):
        raise ValueError(f"{name!r}: {item!r} is not a number or a lo-hi range")
    if not dash:
        return [low]
    first, last = int(low), int(high)
    if first > last:
        raise ValueError(f"{name!r}: range {item!r} runs backwards")
    if last - first >= MAX_HOSTS:
        raise ValueError(f"{name!r} expands to more than {MAX_HOSTS} hosts")
    width = len(low)
    return [str(number).zfill(width) for number in range(first, last + 1)]


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _product_size(parts: list[list[str]]) -> int:
    size = 1
    for options in parts:
        size *= len(options)
    return size
