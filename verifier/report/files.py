"""verdict.json on disk: versioned, checked on read."""

from __future__ import annotations

from pathlib import Path

import orjson

from verifier.judge.verdict import VERDICT_FORMAT
from verifier.rundata.formats import RunFormatError, read_json


def write_verdict(doc: dict, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
    )
    return path


def read_verdict(path: Path | str) -> dict:
    """A verdict document; :class:`RunFormatError` (exit 2) if missing, corrupt or unknown."""
    path = Path(path)
    if not path.is_file():
        raise RunFormatError(path, "missing (run `verifier analyze` first)")
    doc = read_json(path, VERDICT_FORMAT)
    if not isinstance(doc.get("columns"), list) or "exit_code" not in doc:
        raise RunFormatError(path, "verdict document lacks columns or exit_code")
    return doc
