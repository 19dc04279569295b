"""The settings of every Spark application the tool starts (issue 17): the user's
--spark-conf applies last; on a standalone master each application takes one core
unless the user said otherwise."""

from __future__ import annotations

import json

from streaming.session import SPARK_CONF_ENV, application_conf


def test_local_master_gets_no_core_limit(monkeypatch):
    monkeypatch.delenv(SPARK_CONF_ENV, raising=False)
    conf = application_conf("local[2]", {"spark.jars": "x.jar"})
    assert "spark.cores.max" not in conf and conf["spark.jars"] == "x.jar"


def test_standalone_master_shares_the_cores(monkeypatch):
    monkeypatch.delenv(SPARK_CONF_ENV, raising=False)
    assert application_conf("spark://127.0.0.1:7077")["spark.cores.max"] == "1"


def test_the_users_settings_apply_last(monkeypatch):
    monkeypatch.setenv(SPARK_CONF_ENV, json.dumps({"spark.cores.max": "3",
                                                   "spark.driver.memory": "2g"}))
    conf = application_conf("spark://127.0.0.1:7077", {"spark.driver.memory": "512m"})
    assert conf["spark.cores.max"] == "3" and conf["spark.driver.memory"] == "2g"
