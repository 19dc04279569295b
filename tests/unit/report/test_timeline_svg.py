"""The timeline plot in report.html (verifier.report.svg.timeline): axes with units, fault
windows labelled with id and kind, one line per series with a legend outside the plot
area. Pure: a verdict document built here, the SVG parsed as XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from verifier.report.svg import CHAR_W, timeline

NS = "{http://www.w3.org/2000/svg}"
T0 = 1_795_817_813_000


def _doc(faults=None, bucket_ms=1000, anomalies=()):
    thr = {m: [[T0 + k * bucket_ms, 100 + k] for k in range(20)]
           for m in ("at-least-once", "idempotent", "transactional")}
    cols = [{"name": n, "mode": n.split("@")[0], "anomalies": {}}
            for n in ("at-least-once", "idempotent", "transactional@read_committed",
                      "transactional@read_uncommitted")]
    cols[0]["anomalies"] = {"lost": {"timeline": [list(a) for a in anomalies]}}
    if faults is None:
        faults = [{"id": 1, "fault": "ack-loss", "target": {"all": True},
                   "start": T0 + 5000, "end": T0 + 9000},
                  {"id": 2, "fault": "broker-kill", "target": {"node": 2},
                   "start": T0 + 5500, "end": None}]
    return {"columns": cols, "faults": faults,
            "timeline": {"bucket_ms": bucket_ms, "throughput": thr}}


def _box(el) -> tuple[float, float, float, float]:
    x, y, w, h = (float(el.get(k)) for k in ("x", "y", "width", "height"))
    assert w > 0 and h > 0, el.attrib
    return x, y, x + w, y + h


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _svg(doc) -> ET.Element:
    return ET.fromstring(timeline(doc))


def _one(root, cls):
    [el] = [e for e in root.iter() if e.get("class") == cls]
    return el


def test_the_legend_is_outside_the_plot_area():
    root = _svg(_doc(anomalies=[(T0 + 6000, 3)]))
    plot, legend = _box(_one(root, "plot-area")), _box(_one(root, "legend-box"))
    assert not _overlap(plot, legend), (plot, legend)
    assert legend[1] > plot[3]  # below it
    # and inside the picture
    assert legend[3] <= float(root.get("height")) and legend[2] <= float(root.get("width"))
    # every point of every line is in the plot area
    for c in root.iter(NS + "circle"):
        x, y = float(c.get("cx")), float(c.get("cy"))
        assert plot[0] <= x <= plot[2] and plot[1] <= y <= plot[3], (x, y)


def test_one_line_per_series_named_in_the_legend():
    root = _svg(_doc())
    lines = [e for e in root.iter(NS + "polyline") if e.get("class") == "series"]
    assert len(lines) == 3
    texts = [t.text for t in _one(root, "legend").iter(NS + "text")]
    assert texts[:3] == ["at-least-once", "idempotent", "transactional "
                         "(transactional@read_committed, transactional@read_uncommitted)"]
    assert any("fault window" in t for t in texts) and any("anomalies" in t for t in texts)
    # each line's colour is its legend swatch's
    swatches = [e.get("stroke") for e in _one(root, "legend").iter(NS + "line")]
    assert swatches == [e.get("stroke") for e in lines]


def test_fault_windows_are_labelled_with_id_and_kind_without_overlap():
    root = _svg(_doc())
    labels = [e for e in root.iter(NS + "text") if e.get("class") == "fault-label"]
    assert [e.text for e in labels] == ["#1 ack-loss", "#2 broker-kill"]
    # 0.5 s apart: the second label goes on a row of its own, above the plot area
    a, b = labels
    assert a.get("y") != b.get("y")
    top = _box(_one(root, "plot-area"))[1]
    assert all(float(e.get("y")) < top for e in labels)
    bands = [e for e in root.iter(NS + "rect") if e.get("class") == "fault"]
    assert len(bands) == 2
    assert "never healed" in "".join(bands[1].itertext())
    # a fault near the end keeps its label in the picture
    late = [{"id": 7, "fault": "network-partition", "start": T0 + 19_500, "end": None}]
    [lab] = [e for e in _svg(_doc(late)).iter(NS + "text") if e.get("class") == "fault-label"]
    assert float(lab.get("x")) + len(lab.text) * CHAR_W <= 1100


def test_axes_say_their_units():
    root = _svg(_doc())
    assert "seconds since the load started" in _one(root, "x-label").text
    assert "records/s" in _one(root, "y-label").text
    ticks = [t.text for t in root.iter(NS + "text") if t.get("text-anchor") == "middle"]
    assert "0" in ticks and "10" in ticks  # seconds from the load's first bucket


def test_counts_per_bucket_become_records_per_second():
    """Half-second buckets of ~100 records are ~200 records/s: the y axis reaches it."""
    root = _svg(_doc(bucket_ms=500))
    yticks = [float(t.text) for t in root.iter(NS + "text") if t.get("text-anchor") == "end"]
    assert max(yticks) >= 2 * 119 and max(yticks) < 2 * 119 * 1.5


def test_no_timed_data():
    doc = _doc(faults=[])
    doc["timeline"]["throughput"] = {}
    assert "No timed data" in timeline(doc)
