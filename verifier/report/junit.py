"""junit.xml: a test case per scenario x mode, a failure per forbidden anomaly kind; per
scenario a ``connections`` case (a failure for each connection finding the scenario's
``fail_on`` forbids, the other findings in its output) and a ``selftest`` case when the
run was self-tested."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

SAMPLE_LINES = 10


def render_junit(docs: list[dict]) -> str:
    """One testsuite per run (scenario); UNKNOWN columns are errors, not failures;
    SKIPPED columns (the scenario's faults did not run) are skipped test cases."""
    root = ET.Element("testsuites", name="delivery-verifier")
    for doc in docs:
        cols = doc["columns"]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=doc["scenario"],
            tests=str(len(cols)),
            failures=str(sum(c["verdict"] == "FAIL" for c in cols)),
            errors=str(sum(c["verdict"] == "UNKNOWN" for c in cols)),
            skipped=str(sum(c["verdict"] == "SKIPPED" for c in cols)),
        )
        props = ET.SubElement(suite, "properties")
        for k in ("run", "sink"):
            ET.SubElement(props, "property", name=k, value=str(doc[k]))
        for c in cols:
            case = ET.SubElement(suite, "testcase", classname=doc["scenario"], name=c["name"])
            for kind in c["forbidden"]:
                a = c["anomalies"][kind]
                f = ET.SubElement(
                    case,
                    "failure",
                    type=kind,
                    message=f"{a['count']} {kind} (forbidden for {c['name']})",
                )
                f.text = "\n".join(
                    json.dumps(s, sort_keys=True) for s in a["sample"][:SAMPLE_LINES]
                )
            if c["verdict"] == "SKIPPED":  # its faults did not run: not a pass
                ET.SubElement(case, "skipped", message=c.get("skipped", "skipped"))
            if c["verdict"] == "UNKNOWN":
                e = ET.SubElement(case, "error", type="unknown", message="; ".join(c["reasons"]))
                e.text = "\n".join(c["reasons"])
        if (doc.get("connections") or {}).get("available"):
            _connections_case(suite, doc)
        if doc.get("selftest"):  # chaos --selftest: would the checks have caught it here?
            _selftest_case(suite, doc)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _connections_case(suite: ET.Element, doc: dict) -> None:
    """The connection checks (leak, reconnect storm, no reconnect after a heal) as one
    case: a finding fails it only if the scenario lists its check in ``fail_on``, as it
    fails the run; tolerated findings are in the case's output, so a CI page shows them."""
    sec = doc["connections"]
    findings = sec.get("findings") or []
    forbidden = [f for f in findings if f.get("expectation") == "forbidden"]
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))
    case = ET.SubElement(suite, "testcase", classname=doc["scenario"], name="connections")
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


def _selftest_case(suite: ET.Element, doc: dict) -> None:
    st = doc["selftest"]
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))
    case = ET.SubElement(suite, "testcase", classname=doc["scenario"], name="selftest")
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
