"""Slurm hostlist expansion: the golden cases of input-formats.md §5, and every way to get it wrong."""

from __future__ import annotations

import pytest

from streams.normalize.hostlist import MAX_HOSTS, expand_hostlist

GOLDEN = [
    ("gpu001", ["gpu001"]),
    ("gpu001,gpu007", ["gpu001", "gpu007"]),
    ("gpu[001-004,010]", ["gpu001", "gpu002", "gpu003", "gpu004", "gpu010"]),
    ("tux[0-5,12,20-25]", [f"tux{n}" for n in (0, 1, 2, 3, 4, 5, 12, 20, 21, 22, 23, 24, 25)]),
    (
        "dev[0-8,18-25],edev[0-25]",
        [f"dev{n}" for n in [*range(9), *range(18, 26)]] + [f"edev{n}" for n in range(26)],
    ),
    ("n[1-3] n5", ["n1", "n2", "n3", "n5"]),
    ("dgx-a100-[01-08]", [f"dgx-a100-0{n}" for n in range(1, 9)]),
    (
        "rack[0-1]_blade[0-2]",
        [
            "rack0_blade0",
            "rack0_blade1",
            "rack0_blade2",
            "rack1_blade0",
            "rack1_blade1",
            "rack1_blade2",
        ],
    ),
]


@pytest.mark.parametrize(("expr", "hosts"), GOLDEN, ids=[expr for expr, _ in GOLDEN])
def test_golden_expressions_expand_like_scontrol_show_hostnames(expr: str, hosts: list[str]) -> None:
    assert expand_hostlist(expr) == hosts


def test_leading_zeros_fix_the_width_of_every_number_in_the_range() -> None:
    hosts = expand_hostlist("linux[0000-1023]")
    assert (len(hosts), hosts[0], hosts[9], hosts[-1]) == (1024, "linux0000", "linux0009", "linux1023")


def test_a_range_crossing_a_power_of_ten_without_padding_grows_naturally() -> None:
    assert expand_hostlist("n[8-11]") == ["n8", "n9", "n10", "n11"]


def test_a_zero_padded_range_crossing_its_width_keeps_the_low_bound_width() -> None:
    assert expand_hostlist("n[098-101]") == ["n098", "n099", "n100", "n101"]


def test_names_with_dots_and_dashes_are_kept_whole() -> None:
    assert expand_hostlist("gpu01.example.org,dgx.a100-[1-2]") == [
        "gpu01.example.org",
        "dgx.a100-1",
        "dgx.a100-2",
    ]


def test_whitespace_runs_and_tabs_separate_names() -> None:
    assert expand_hostlist("  n1\tn2   n[3-4]\n") == ["n1", "n2", "n3", "n4"]


def test_spaces_around_items_inside_brackets_are_ignored() -> None:
    assert expand_hostlist("gpu[01, 03-04]") == ["gpu01", "gpu03", "gpu04"]


def test_empty_names_between_commas_are_skipped() -> None:
    assert expand_hostlist("gpu1,,gpu2,") == ["gpu1", "gpu2"]


def test_order_and_duplicates_are_kept() -> None:
    assert expand_hostlist("b2,a[1-2],b2") == ["b2", "a1", "a2", "b2"]


def test_a_bare_bracket_group_expands_to_numbers() -> None:
    assert expand_hostlist("[1-2]") == ["1", "2"]


def test_an_empty_expression_is_no_hosts() -> None:
    assert expand_hostlist("") == []
    assert expand_hostlist("   ") == []


MALFORMED = [
    ("unit[0-31]rack", "'unit[0-31]rack': text after the last bracket group"),
    ("gpu[1-3", "'[' without a closing ']'"),
    ("gpu1-3]", "']' without '[' at position 6"),
    ("gpu[[1-3]]", "nested '[' at position 4"),
    ("gpu[]", "'gpu[]': empty bracket group"),
    ("gpu[ ]", "'gpu[ ]': empty bracket group"),
    ("gpu[1,,3]", "'gpu[1,,3]': '' is not a number or a lo-hi range"),
    ("gpu[a-c]", "'gpu[a-c]': 'a-c' is not a number or a lo-hi range"),
    ("gpu[1-]", "'gpu[1-]': '1-' is not a number or a lo-hi range"),
    ("gpu[-3]", "'gpu[-3]': '-3' is not a number or a lo-hi range"),
    ("gpu[1-2-3]", "'gpu[1-2-3]': '1-2-3' is not a number or a lo-hi range"),
    ("gpu[5-3]", "'gpu[5-3]': range '5-3' runs backwards"),
    ("gpu[\u0663]", "'gpu[\u0663]': '\u0663' is not a number or a lo-hi range"),
]


@pytest.mark.parametrize(("expr", "message"), MALFORMED, ids=[expr for expr, _ in MALFORMED])
def test_malformed_expression_raises_value_error_saying_why(expr: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        expand_hostlist(expr)
    assert str(caught.value) == message


def test_a_range_larger_than_any_cluster_is_refused_before_expanding() -> None:
    with pytest.raises(ValueError) as caught:
        expand_hostlist("n[0-999999999]")
    assert str(caught.value) == f"'n[0-999999999]' expands to more than {MAX_HOSTS} hosts"


def test_a_product_larger_than_any_cluster_is_refused_before_expanding() -> None:
    with pytest.raises(ValueError) as caught:
        expand_hostlist("r[0-999]n[0-999]")
    assert str(caught.value) == f"'r[0-999]n[0-999]' expands to more than {MAX_HOSTS} hosts"
