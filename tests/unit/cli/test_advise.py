"""`verifier advise`: files in, advice and exit codes out; the chaos hook's comparison."""

from __future__ import annotations

import json

import pytest

from verifier.cli import main
from verifier.cli.advise import ColumnAdvice, column_configs
from verifier.cli.advise_targets import kinds_of
from verifier.orchestration.planning import RunOptions
from verifier.orchestration.scenario import load_scenario


def _advise(tmp_path, capsys, text, *flags, name="p.properties"):
    path = tmp_path / name
    path.write_text(text)
    code = main(["advise", str(path), "--format", "json", *flags])
    return code, json.loads(capsys.readouterr().out)["configurations"][0]


def test_kafka_python_refuses_a_transactional_id_without_idempotence(tmp_path, capsys):
    code, entry = _advise(tmp_path, capsys, "transactional.id=orders\nenable.idempotence=false\n")
    assert code == 1
    assert entry["check"]["ok"] is False
    assert "Cannot set transactional_id without enable_idempotence" in entry["check"]["error"]
    assert [r["id"] for r in entry["advice"]["refused"]] == ["txn-without-idempotence"]
    assert entry["findings"] == []  # the table and the client agree


def test_a_silent_downgrade_is_exit_1_and_the_client_agrees(tmp_path, capsys):
    code, entry = _advise(tmp_path, capsys, "acks=all\nmax.in.flight.requests.per.connection=6\n")
    assert code == 1
    assert entry["check"]["effective"]["enable.idempotence"] is False  # kafka-python's own
    assert entry["advice"]["effective"]["enable.idempotence"] is False
    assert entry["advice"]["mode"] == "at-least-once"
    lost_ack = next(f for f in entry["advice"]["faults"] if f["fault"] == "lost ack")
    assert lost_ack["kinds"] == ["duplicate-same-session", "reorder"]
    assert lost_ack["scenario"] == "ack-loss"


def test_librdkafka_defaults(tmp_path, capsys):
    code, entry = _advise(tmp_path, capsys, "bootstrap.servers=x:9092\nclient.id=c\n",
                          "--client", "librdkafka")
    assert code == 0, entry
    assert entry["check"]["ok"] is True
    assert entry["advice"]["effective"]["enable.idempotence"] is False
    assert entry["advice"]["mode"] == "at-least-once"


def test_librdkafka_refuses_in_flight_6_with_idempotence(tmp_path, capsys):
    code, entry = _advise(tmp_path, capsys, "enable.idempotence=true\nmax.in.flight=6\n",
                          "--client", "librdkafka")
    assert code == 1
    assert "max.in.flight" in entry["check"]["error"]
    assert entry["advice"]["refused"]


def test_an_idempotent_config_is_exit_0(tmp_path, capsys):
    code, entry = _advise(tmp_path, capsys, "enable.idempotence=true\nacks=all\n")
    assert code == 0 and entry["advice"]["mode"] == "idempotent"


def test_a_spark_source_without_read_committed(tmp_path, capsys):
    code, entry = _advise(tmp_path, capsys, "kafka.bootstrap.servers=x:1\nsubscribe=t\n")
    assert entry["advice"]["kind"] == "spark-source"
    assert entry["advice"]["effective"]["isolation.level"] == "read_uncommitted"
    none = next(f for f in entry["advice"]["faults"] if f["fault"] == "no fault")
    assert none["kinds"] == ["aborted-read", "torn-transaction"]


def test_a_pipeline_file_is_read_not_run(tmp_path, capsys):
    code, entry = _advise(tmp_path, capsys, (
        "raise SystemExit('never run')\n"
        "def build(spark, source):\n"
        "    def write(df, batch_id):\n"
        "        df.write.format('delta').option('txnVersion', batch_id).save('x')\n"
        "    return source.writeStream.foreachBatch(write)\n"), name="pipe.py")
    assert entry["advice"]["settings"] == {"sink": "foreachBatch-idempotent"}
    assert entry["advice"]["mode"] == "pipeline/exactly-once"


def test_presets_and_usage_errors(capsys):
    assert main(["advise", "idempotent", "kafka-sink"]) == 0
    out = capsys.readouterr().out
    assert "guarantee: idempotent" in out and "guarantee: at-least-once from input" in out
    assert main(["advise", "no-such-thing"]) == 64
    with pytest.raises(SystemExit) as exc:
        main(["advise", "idempotent", "--client", "nope"])
    assert exc.value.code == 64


def test_every_pipeline_a_chaos_run_takes_has_its_sink(tmp_path):
    """``verifier chaos`` reads each --pipeline's sink for its advice before the run: the
    PostgreSQL presets and ``FILE.py:function`` (issue 46) stopped it with exit 64."""
    from verifier.cli.advise_targets import targets

    f = tmp_path / "rt.py"
    f.write_text("def build(spark, source):\n    return source.writeStream.format('kafka')\n"
                 "def micro_batch(spark, source):\n    return build(spark, source)\n")
    got = {name: pairs for name, _, pairs, _ in
           targets([f"{f}:micro_batch", "postgres-upsert", "postgres-append"])}
    assert got[f"{f}:micro_batch"] == [("sink", "kafka")]
    assert got["postgres-upsert"] == [("sink", "foreachBatch-upsert")]
    assert got["postgres-append"] == [("sink", "foreachBatch")]
    assert main(["advise", "postgres-upsert"]) == 0


def test_kinds_of():
    assert kinds_of(["acks"]) == ["producer"]
    assert kinds_of(["isolation.level", "group.id"]) == ["consumer"]
    assert kinds_of(["kafka.isolation.level"]) == ["spark-source"]
    assert kinds_of(["transactional.id", "isolation.level"]) == ["producer", "consumer"]


def test_a_file_with_a_producers_and_a_consumers_settings_is_advised_as_both(tmp_path,
                                                                              capsys):
    """A consume-transform-produce application's one file: its producer's refused setting
    is not hidden by its consumer's read_committed (read as a consumer only, it was exit 0)."""
    path = tmp_path / "app.properties"
    path.write_text("transactional.id=orders-1\nenable.idempotence=false\n"
                    "isolation.level=read_committed\ngroup.id=orders\n")
    code = main(["advise", str(path), "--format", "json"])
    entries = json.loads(capsys.readouterr().out)["configurations"]
    assert code == 1
    producer, consumer = entries
    assert producer["check"]["ok"] is False  # kafka-python refuses it, on its own keys only
    assert "transactional_id without enable_idempotence" in producer["check"]["error"]
    assert [r["id"] for r in producer["advice"]["refused"]] == ["txn-without-idempotence"]
    assert "group.id" not in producer["advice"]["effective"]
    assert consumer["advice"]["effective"]["isolation.level"] == "read_committed"
    assert "transactional.id" not in consumer["advice"]["effective"]


def _judged(tmp_path, anomalies):
    """A run of ack-loss whose idempotent column saw ``anomalies`` (FAIL)."""
    from verifier.assess.facts import RunFacts
    from verifier.assess.finish import Judged
    from verifier.rundata.plan import RunPlan

    col = {"name": "idempotent", "mode": "idempotent", "expect": "idempotent",
           "isolations": ["read_committed", "read_uncommitted"], "pids": ["idempotent-0"],
           "verdict": "FAIL", "anomalies": {k: {"count": n} for k, n in anomalies.items()}}
    doc = {"scenario": "ack-loss", "run": "r", "run_dir": str(tmp_path / "run"),
           "columns": [col], "faults": []}
    plan = RunPlan(run="r", scenario="ack-loss", seed=1, sink="exactly-once",
                   bootstrap_servers="", producers={},
                   extra={"scenario_spec": {"faults": [{"kind": "ack-loss"}]}})
    return Judged(doc, RunFacts(run_dir=tmp_path / "run", config=None, plan=plan))


@pytest.mark.parametrize("anomalies, agree", [
    ({"duplicate-same-session": 2}, False),  # idempotence forbids it under a lost ack
    ({"duplicate-delivery": 2}, True),  # the observer's sink: not the producer's
])
def test_chaos_hook_marks_a_cell_that_disagrees(tmp_path, anomalies, agree, monkeypatch):
    """The comparison is made where the run's document is finished, and the matrix is
    written from the documents in memory with it (report.html shows it)."""
    import verifier.report.matrix as matrix
    from verifier.assess.finish import Ending, finish
    from verifier.assess.outputs import write_matrix

    monkeypatch.setattr("verifier.report.junit.write_junit", lambda *a: None)
    monkeypatch.setattr(matrix, "matrix_html", lambda grid, docs, out, w=None:
                        matrix.advice_html(docs))
    cols = column_configs(RunOptions(out=tmp_path), [load_scenario("ack-loss")])
    doc = finish(_judged(tmp_path, anomalies),
                 Ending(connections=False, advice=ColumnAdvice(cols)))
    assert [r["agree"] for r in doc["advice_check"]] == [agree]
    assert doc["exit_code"] == 1  # the run's, whatever the advice says
    write_matrix([doc], tmp_path / "out", {})
    saved = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert saved["runs"][0]["advice_check"][0]["agree"] is agree
    html = (tmp_path / "out" / "report.html").read_text()
    assert ("DISAGREES" in html) is (not agree)


def test_a_known_bugs_run_is_not_compared_with_the_advice(tmp_path, monkeypatch):
    """The known-bugs profile forces documented bugs: its cells are not held to the
    advice (every run printed 'DISAGREES: duplicate-same-session ... the advisor or the
    client is wrong'); the run's exit code is kept. Without the profile the comparison
    is made."""
    import io
    from types import SimpleNamespace

    import verifier.cli.advise as advise

    opts = SimpleNamespace(out=str(tmp_path), clients=None, client="kafka-python",
                           user_config=None, pipelines=[])
    scenarios = [SimpleNamespace(workload=SimpleNamespace(modes=("transactional",)))]
    prepared = (None, scenarios, None, opts)
    compared = []

    def run(args, *prepared):
        compared.append(getattr(args, "advice", None))
        return 1

    for plans in ([object()], None):
        out = io.StringIO()
        code = advise.chaos_with_advice(SimpleNamespace(known_bug_plans=plans), prepared,
                                        run, out=out)
        assert code == 1
        said = out.getvalue()
        assert ("not compared (the known-bugs profile" in said) == bool(plans), said
    # the run without the profile only is given the advice to compare with
    assert [a is not None for a in compared] == [False, True]


@pytest.mark.parametrize("scenario", ["late-produce", "late-end-txn"])
def test_the_versions_profile_cells_agree_with_the_advice(scenario):
    """Issue 50: `--profile versions` (kafka-python 3.0.12) printed DISAGREES on the
    transactional@read_uncommitted cells of both scenarios: duplicates within one session,
    each an aborted attempt of a transaction and its redo by the same producer, which the
    expectation table tolerates there. The same cells, compared as the chaos hook does."""
    from verifier.judge.advice import compare, fault_classes

    spec = load_scenario(scenario)
    advice = ColumnAdvice(column_configs(RunOptions(out="/tmp/x"), [spec]))
    faults = fault_classes(spec.faults)
    assert faults == {"network cut"}  # a hold
    cells = {iso: {"name": f"transactional@{iso}", "mode": "transactional",
                   "pids": ["transactional-0"], "isolations": [iso], "verdict": "PASS",
                   "anomalies": {"duplicate-same-session": {"count": 12},
                                 "aborted-read": {"count": 640}}}
             for iso in ("read_committed", "read_uncommitted")}
    ru = compare(advice(cells["read_uncommitted"]), cells["read_uncommitted"], faults)
    assert ru["agree"] and ru["disagree"] == [], ru
    # at read_committed a second copy would be a real duplicate: still ruled out
    rc = compare(advice(cells["read_committed"]), cells["read_committed"], faults)
    assert rc["disagree"] == ["duplicate-same-session"], rc
