"""The Spark driver's class archive (streaming/class_share.py): every Spark application
the tool starts maps the archive `verifier setup` dumped, unless its own options chose
their class sharing; no archive, no option."""

from __future__ import annotations

import json

import pytest

from streaming import class_share
from streaming.session import SPARK_CONF_ENV, application_conf


@pytest.fixture
def archive(tmp_path, monkeypatch):
    path = tmp_path / "cds" / "spark-4.2.0-abc.jsa"
    monkeypatch.setattr(class_share, "archive_path", lambda: path)
    return path


def test_a_driver_maps_the_archive_when_there_is_one(archive, monkeypatch):
    monkeypatch.setenv(SPARK_CONF_ENV, json.dumps(
        {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}))
    assert application_conf("local[2]")["spark.driver.extraJavaOptions"] == \
        "-XX:TieredStopAtLevel=1"  # none dumped yet
    archive.parent.mkdir()
    archive.write_bytes(b"x")
    options = application_conf("local[2]")["spark.driver.extraJavaOptions"]
    assert options.startswith("-XX:TieredStopAtLevel=1 ")  # the user's and ours kept
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert "-Xlog:cds=off" in options  # a JVM that cannot use it says nothing


def test_options_that_chose_their_own_class_sharing_are_left_alone(archive, monkeypatch):
    archive.parent.mkdir()
    archive.write_bytes(b"x")
    monkeypatch.delenv(SPARK_CONF_ENV, raising=False)
    assert "SharedArchiveFile" in application_conf("local[2]")[
        "spark.driver.extraJavaOptions"]
    for own in ("-Xshare:off", "-XX:SharedArchiveFile=/mine.jsa",
                "-XX:ArchiveClassesAtExit=/dump.jsa"):
        monkeypatch.setenv(SPARK_CONF_ENV, json.dumps({"spark.driver.extraJavaOptions": own}))
        assert application_conf("local[2]")["spark.driver.extraJavaOptions"] == own


def test_the_archive_is_named_by_what_it_is_valid_for(tmp_path, monkeypatch):
    """Another PySpark jar (a reinstall, an upgrade) is another archive, whose name says
    the release; found without starting a JVM."""
    import pyspark

    jars = tmp_path / "pyspark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"1")
    monkeypatch.setattr(class_share, "_pyspark_home", lambda: jars.parent)
    monkeypatch.setenv("VERIFIER_JARS_DIR", str(tmp_path / "j"))
    class_share.archive_path.cache_clear()
    try:
        first = class_share.archive_path()
        assert first.parent == tmp_path / "j" / "cds"
        assert first.name.startswith(f"spark-{pyspark.__version__}-")
        (jars / "spark-core.jar").write_bytes(b"12")
        class_share.archive_path.cache_clear()
        assert class_share.archive_path() != first
    finally:
        class_share.archive_path.cache_clear()
