"""units: sizes, floats and durations as logs print them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minrepro.diagnose.extract.units import parse_duration_ms, parse_float, parse_size


@pytest.mark.parametrize("text, expected", [
    ("2.51 GiB", round(2.51 * 2**30)),
    ("283.44 MiB", round(283.44 * 2**20)),
    ("6.69 MiB", round(6.69 * 2**20)),
    ("20.00 MiB", 20 * 2**20),
    ("1024.00 KiB", 2**20),
    ("0 bytes", 0),
    ("512 B", 512),
    ("8.00G", 8 * 2**30),
    ("2 GB", 2 * 10**9),
    ("300MB", 300 * 10**6),
    ("no size here", None),
])
def test_parse_size(text: str, expected: int | None) -> None:
    assert parse_size(text) == expected


@given(st.integers(min_value=0, max_value=10**6))
def test_parse_size_mib_roundtrip(mib: int) -> None:
    assert parse_size(f"{mib}.00 MiB") == mib * 2**20


@pytest.mark.parametrize("text, expected", [("1e-4", 1e-4), ("2.30", 2.30), ("inf", math.inf),
                                            ("-inf", -math.inf), ("x", None)])
def test_parse_float(text: str, expected: float | None) -> None:
    assert parse_float(text) == expected


def test_parse_float_nan() -> None:
    assert math.isnan(parse_float("nan")) and math.isnan(parse_float("NaN"))


@pytest.mark.parametrize("text, expected", [("0:30:00", 1_800_000), ("1 day, 2:00:00", 93_600_000),
                                            ("0:00:01.5", 1500), ("soon", None)])
def test_parse_duration_ms(text: str, expected: int | None) -> None:
    assert parse_duration_ms(text) == expected
