"""junit.xml: a test case per scenario x mode, a failure per forbidden anomaly kind; per
scenario a ``connections`` case (a failure for each connection finding the scenario's
``fail_on`` forbids, the other findings in its output) and a ``selftest`` case when the
run was self-tested. A scenario run several times (``chaos --repeat N``) is one suite
with one case per column that holds the counts of each outcome (``FAIL 2/3 · PASS 1/3``)
and the elements of the runs that gave the worst of them.

Each verdict's element comes from the one table (``vocab.VERDICTS``): a NOT EXERCISED
column is a failure of type ``not-exercised``, so a CI dashboard shows a failure whenever
the run exits 3 (a skipped case there read as green beside a red job)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from verifier.judge.verdict import repeated_outcomes, tally, worst_of
from verifier.report.compare import outcome_text
from verifier.rundata.vocab import (
    JUNIT_NOT_EXERCISED,
    NOT_EXERCISED,
    SKIPPED,
    UNKNOWN,
    VERDICTS,
)

SAMPLE_LINES = 10
_PLURAL = {"failure": "failures", "error": "errors", "skipped": "skipped"}
#: a case's verdict -> the suite counter it adds to (PASS: none), from the one table
_COUNTER = {v.name: _PLURAL[v.junit] for v in VERDICTS if v.junit}


def render_junit(docs: list[dict]) -> str:
    """One testsuite per scenario; UNKNOWN columns are errors, not failures; SKIPPED
    columns (the scenario's faults did not run) are skipped test cases and NOT EXERCISED
    ones (a fault concerning the column did not touch it) failures of type
    ``not-exercised``, each with the reason."""
    root = ET.Element("testsuites", name="delivery-verifier")
    groups: dict[str, list[dict]] = {}
    for doc in docs:
        groups.setdefault(doc["scenario"], []).append(doc)
    for group in groups.values():
        if len(group) == 1:
            _run_suite(root, group[0])
        else:
            _repeated_suite(root, group)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite(root: ET.Element, name: str, verdicts: list[str]) -> ET.Element:
    counts = {k: sum(_COUNTER.get(v) == k for v in verdicts)
              for k in ("failures", "errors", "skipped")}
    return ET.SubElement(root, "testsuite", name=name, tests=str(len(verdicts)),
                         **{k: str(n) for k, n in counts.items()})


def _run_suite(root: ET.Element, doc: dict) -> None:
    cols = doc["columns"]
    suite = _suite(root, doc["scenario"], [c["verdict"] for c in cols])
    props = ET.SubElement(suite, "properties")
    for k in ("run", "sink"):
        ET.SubElement(props, "property", name=k, value=str(doc[k]))
    for c in cols:
        case = ET.SubElement(suite, "testcase", classname=doc["scenario"], name=c["name"])
        _verdict_elements(case, c)
        out = list(c.get("attempts") or [])  # a NOT EXERCISED cell re-run (cli/retry.py)
        if c.get("exposure") is not None:  # how hard the case was tested
            from verifier.judge.exposure import summary

            out.append(f"exposure: {summary(c['exposure'])}")
        out += [f"liveness: {x}" for x in c.get("liveness") or []]
        if out:
            ET.SubElement(case, "system-out").text = "\n".join(out)
    _extra_cases(suite, doc)


def _verdict_elements(case: ET.Element, c: dict, prefix: str = "") -> None:
    """What a column's verdict puts in its test case: a failure per forbidden kind, an
    error for UNKNOWN, a skipped element for SKIPPED, a ``not-exercised`` failure for NOT
    EXERCISED."""
    for kind in c["forbidden"]:
        a = c["anomalies"][kind]
        f = ET.SubElement(case, "failure", type=kind,
                          message=f"{prefix}{a['count']} {kind} (forbidden for {c['name']})")
        f.text = "\n".join(json.dumps(s, sort_keys=True) for s in a["sample"][:SAMPLE_LINES])
    if c["verdict"] == SKIPPED:  # its faults did not run: not a pass
        ET.SubElement(case, "skipped", message=prefix + c.get("skipped", "skipped"))
    if c["verdict"] == NOT_EXERCISED:  # a fault missed it: not a pass either (exit 3)
        why = "; ".join(c.get("not_exercised") or []) or "no fault concerning it touched it"
        f = ET.SubElement(case, "failure", type=JUNIT_NOT_EXERCISED,
                          message=f"{prefix}not exercised: {why}")
        f.text = (f"{NOT_EXERCISED}: {why}\nNothing forbidden was observed, but this case "
                  "was not tested by the fault; --retry-not-exercised N re-runs it (docs/ci.md)")
    if c["verdict"] == UNKNOWN:
        e = ET.SubElement(case, "error", type="unknown",
                          message=prefix + "; ".join(c["reasons"]))
        e.text = "\n".join(c["reasons"])


def _repeated_suite(root: ET.Element, group: list[dict]) -> None:
    """The runs of one scenario (``--repeat N``) as one suite: a case per column, its
    status the worst outcome, its properties the count of each, its elements those of the
    runs that gave the worst (each message says which run and seed), and one line per run
    in its output."""
    sc, n = group[0]["scenario"], len(group)
    outcomes = repeated_outcomes(group)[sc]
    suite = _suite(root, sc, [worst_of(v) for v in outcomes.values()])
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="repetitions", value=str(n))
    ET.SubElement(props, "property", name="run", value=" ".join(str(d["run"]) for d in group))
    ET.SubElement(props, "property", name="sink", value=str(group[0]["sink"]))
    for name, verdicts in outcomes.items():
        case = ET.SubElement(suite, "testcase", classname=sc, name=name)
        text, worst = outcome_text(verdicts), worst_of(verdicts)
        cprops = ET.SubElement(case, "properties")
        ET.SubElement(cprops, "property", name="outcomes", value=text)
        for v, count in tally(verdicts):
            ET.SubElement(cprops, "property", name=v, value=str(count))
        lines = []
        for i, (doc, v) in enumerate(zip(group, verdicts, strict=True), 1):
            which = f"run {i}/{n}{_seed(doc)}"
            col = next((c for c in doc["columns"] if c["name"] == name), None)
            lines.append(f"{which}: {v} ({doc.get('run_dir') or doc.get('run')})"
                         + _exposure(col))
            lines += [f"  {a}" for a in (col or {}).get("attempts") or []]
            if v != worst:
                continue
            if col is None:  # the run reported no such column: it could not establish it
                ET.SubElement(case, "error", type="unknown",
                              message=f"{text}: {which}: the run did not report this column")
            else:
                _verdict_elements(case, col, prefix=f"{text}: {which}: ")
        ET.SubElement(case, "system-out").text = "\n".join([text, *lines])
    for doc in group:
        _extra_cases(suite, doc, f" (run {group.index(doc) + 1}/{n})")


def _exposure(col: dict | None) -> str:
    """``; exposure: ...`` of a run's column (verdict.json ``exposure``), if it has one."""
    if col is None or col.get("exposure") is None:
        return ""
    from verifier.judge.exposure import summary

    return f"; exposure: {summary(col['exposure'])}"


def _seed(doc: dict) -> str:
    seed = (doc.get("repetition") or {}).get("seed")
    return "" if seed is None else f" (seed {seed})"


def _extra_cases(suite: ET.Element, doc: dict, suffix: str = "") -> None:
    if (doc.get("connections") or {}).get("available"):
        _connections_case(suite, doc, suffix)
    if doc.get("selftest"):  # chaos --selftest: would the checks have caught it here?
        _selftest_case(suite, doc, suffix)


def _connections_case(suite: ET.Element, doc: dict, suffix: str = "") -> None:
    """The connection checks (leak, reconnect storm, no reconnect after a heal) as one
    case: a finding fails it only if the scenario lists its check in ``fail_on``, as it
    fails the run; tolerated findings are in the case's output, so a CI page shows them."""
    sec = doc["connections"]
    findings = sec.get("findings") or []
    forbidden = [f for f in findings if f.get("expectation") == "forbidden"]
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))
    case = ET.SubElement(suite, "testcase", classname=doc["scenario"],
                         name="connections" + suffix)
    if forbidden:
        suite.set("failures", str(int(suite.get("failures", "0")) + 1))
        kinds = sorted({f["check"] for f in forbidden})
        f = ET.SubElement(case, "failure", type="connections",
                          message=f"{len(forbidden)} connection finding(s) the scenario "
                                  f"forbids: {', '.join(kinds)}")
        f.text = "\n".join(_finding_line(x) for x in forbidden[:SAMPLE_LINES])
    out = [f"{sec.get('total', 0)} connections opened"]
    out += [f"tolerated: {_finding_line(x)}" for x in findings if x not in forbidden]
    ET.SubElement(case, "system-out").text = "\n".join(out)


def _finding_line(f: dict) -> str:
    return f"{f['check']} {f['subject']}: {f['detail']}"


def _selftest_case(suite: ET.Element, doc: dict, suffix: str = "") -> None:
    st = doc["selftest"]
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))
    case = ET.SubElement(suite, "testcase", classname=doc["scenario"], name="selftest" + suffix)
    if st.get("error"):
        suite.set("errors", str(int(suite.get("errors", "0")) + 1))
        ET.SubElement(case, "error", type="selftest", message=st["error"])
    elif not st.get("ok"):
        suite.set("failures", str(int(suite.get("failures", "0")) + 1))
        bad = [r for r in st["rows"] if not r["ok"]]
        f = ET.SubElement(case, "failure", type="selftest",
                          message=f"{len(bad)} of {len(st['rows'])} mutations not as expected")
        f.text = "\n".join(json.dumps(r, sort_keys=True) for r in bad)


def write_junit(docs: list[dict], path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_junit(docs), encoding="utf-8")
    return path
