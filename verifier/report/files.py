"""verdict.json on disk: versioned, checked on read."""

from __future__ import annotations

from pathlib import Path

import orjson

from verifier.judge.verdict import VERDICT_FORMAT
from verifier.rundata.formats import RunFormatError, check_header


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
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise RunFormatError(path, f"not valid JSON ({exc})") from None
    check_header(path, doc, VERDICT_FORMAT)
    if not isinstance(doc.get("columns"), list) or "exit_code" not in doc:
        raise RunFormatError(path, "verdict document lacks columns or exit_code")
    return doc
