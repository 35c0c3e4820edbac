"""Compiled hyperscan databases are kept between runs, and a bad cache file costs a compile."""

from __future__ import annotations

from pathlib import Path

import pytest

from minrepro.diagnose import hscache

hyperscan = pytest.importorskip("hyperscan", reason="hyperscan has no wheel on this platform")

EXPRESSIONS = [b"out of memory", b"traceback", rb"\bnan\b"]
FLAGS = [hyperscan.HS_FLAG_CASELESS] * 3
TEXT = b"step 9 loss nan\nTraceback (most recent call last):\nCUDA out of memory."


def _hits(db: object) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    db.scan(TEXT, match_event_handler=lambda pid, _s, end, _f, _c: found.append((pid, end)),
            scratch=hyperscan.Scratch(db))
    return sorted(found)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MINREPRO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_database_is_saved_once_then_loaded_with_the_same_matches(cache: Path) -> None:
    compiled = hscache.database(hyperscan, EXPRESSIONS, FLAGS)
    saved = list(cache.glob("hs-*.db"))
    assert len(saved) == 1 and not list(cache.glob(".hs-*"))  # no temporary left behind
    stamp = saved[0].stat().st_mtime_ns
    loaded = hscache.database(hyperscan, EXPRESSIONS, FLAGS)
    assert saved[0].stat().st_mtime_ns == stamp  # read, not written again
    assert _hits(loaded) == _hits(compiled) == [(0, 69), (1, 25), (2, 15)]


def test_other_expressions_or_flags_are_another_file(cache: Path) -> None:
    hscache.database(hyperscan, EXPRESSIONS, FLAGS)
    hscache.database(hyperscan, EXPRESSIONS[:2], FLAGS[:2])
    hscache.database(hyperscan, EXPRESSIONS, [hyperscan.HS_FLAG_SINGLEMATCH] * 3)
    assert len(list(cache.glob("hs-*.db"))) == 3


@pytest.mark.parametrize("content", [b"", b"not a database", b"\x00" * 4096],
                         ids=["empty", "text", "zeros"])
def test_a_corrupt_cache_file_is_compiled_again_and_replaced(cache: Path, content: bytes
                                                            ) -> None:
    hscache.database(hyperscan, EXPRESSIONS, FLAGS)
    (saved,) = cache.glob("hs-*.db")
    saved.write_bytes(content)
    assert _hits(hscache.database(hyperscan, EXPRESSIONS, FLAGS)) == [(0, 69), (1, 25), (2, 15)]
    assert saved.stat().st_size > 1000  # rewritten whole


def test_an_unwritable_cache_folder_still_gives_a_database(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder should be")
    monkeypatch.setenv("MINREPRO_CACHE", str(blocker / "cache"))
    assert _hits(hscache.database(hyperscan, EXPRESSIONS, FLAGS))[0] == (0, 69)


def test_off_reads_and_writes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MINREPRO_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert hscache.cache_dir() is None
    hscache.database(hyperscan, EXPRESSIONS, FLAGS)
    assert not any(tmp_path.iterdir())


def test_the_default_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MINREPRO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert hscache.cache_dir() == tmp_path / "minrepro"
