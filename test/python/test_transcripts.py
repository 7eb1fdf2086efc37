"""The shared transcripts (test/transcripts/*.json): the frames a runner's core must send for the
frames the coordinator sends it, with a scripted handler, replayed against the Python core as
vitest replays them against the TypeScript one, so the two clients cannot drift apart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from transcript_replay import replay

TRANSCRIPTS = sorted((Path(__file__).resolve().parents[1] / "transcripts").glob("*.json"))


def test_the_shared_transcripts_are_there():
    assert len(TRANSCRIPTS) >= 10, TRANSCRIPTS


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_transcript(path: Path):
    transcript = json.loads(path.read_text("utf-8"))
    calls = asyncio.run(replay(transcript))
    assert calls == transcript["calls"], f"{transcript['name']}: calls {calls} != {transcript['calls']}"
