"""ListSink: the in-memory sink pure tests use."""

from __future__ import annotations

from sinks import ListSink, Sink
from tests.sinks.verdicts import make_verdict, run


def test_list_sink_keeps_verdicts_until_flush_then_moves_them_to_flushed():
    sink = ListSink()
    first, second = make_verdict("job-1"), make_verdict("job-2")

    async def story() -> None:
        await sink.add(first)
        await sink.add(second)
        assert sink.flushed == []
        await sink.flush()
        await sink.close()

    run(story())
    assert isinstance(sink, Sink)
    assert sink.added == []
    assert sink.flushed == [first, second]
    assert sink.closed
