import gc

import pytest

from bench_pipeline.bulk import gc_paused


def test_gc_paused_disables_inside_and_restores_after():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # only the outermost block re-enables
    assert gc.isenabled()


def test_gc_paused_restores_after_an_exception_and_keeps_a_disabled_collector_disabled():
    with pytest.raises(ValueError):
        with gc_paused():
            raise ValueError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_gc_paused_works_as_a_decorator():
    @gc_paused()
    def state() -> bool:
        return gc.isenabled()

    assert state() is False
    assert gc.isenabled()
