"""The Java application presets' Maven project (producers/java-apps, issue 47): built
against kafka-streams at the client's version, rebuilt when a source changes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from verifier.rundata import jvm

POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_kafka_streams_is_taken_at_the_java_clients_version():
    pom = ET.parse(jvm.JAVA_APPS / "pom.xml").getroot()
    versions = {d.findtext("m:artifactId", namespaces=POM_NS): d.findtext("m:version",
                                                                          namespaces=POM_NS)
                for d in pom.iterfind("m:dependencies/m:dependency", POM_NS)}
    assert versions["kafka-streams"] == versions["kafka-clients"] == "${kafka.clients.version}"
    # the build folder the launcher passes is the property the pom builds in
    assert pom.findtext("m:build/m:directory", namespaces=POM_NS) == \
        "${" + jvm.APPS_PROJECT.build_prop + "}"
    assert pom.findtext("m:build/m:finalName", namespaces=POM_NS) + ".jar" == \
        jvm.APPS_PROJECT.jar


def test_the_java_apps_jar_set_follows_the_client_version(monkeypatch):
    monkeypatch.setenv("KAFKA_CLIENTS_VERSION", "3.9.1")
    monkeypatch.setenv("VERIFIER_JARS_DIR", "/j")
    assert str(jvm.java_apps_jars().folder) == "/j/java-apps-3.9.1"


def test_a_build_counts_only_for_the_sources_it_was_made_from(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFIER_JARS_DIR", str(tmp_path / "jars"))
    src = tmp_path / "proj"
    (src / "src" / "main").mkdir(parents=True)
    (src / "pom.xml").write_text("<project/>")
    (src / "src" / "main" / "A.java").write_text("class A {}")
    project = jvm.MavenProject(src, "x.build.dir", "x.jar", "x")
    jars = jvm.JarSet("x", "1.0.0")
    assert not jvm.project_built(project, jars)
    jars.folder.mkdir(parents=True)
    (jars.folder / ".complete").write_text(project.digest() + " mvn ...\n")
    assert jvm.project_built(project, jars)
    (src / "src" / "main" / "A.java").write_text("class A { int x; }")
    assert not jvm.project_built(project, jars)


def _java_strings(source: str, pattern: str) -> set[str]:
    """The string literals of the Java declaration ``pattern`` matches in ``source``."""
    text = (jvm.JAVA_APPS / "src/main/java/verifier/apps" / source).read_text()
    found = re.search(pattern, text, re.S)
    assert found, (source, pattern)
    return set(re.findall(r'"([^"]*)"', found[1]))


def test_the_java_main_accepts_every_value_a_java_preset_passes():
    from verifier.rundata.apps import PRESETS

    accepted = {("copier", "--commit"): _java_strings("Copier.java",
                                                      r"STRATEGIES = List\.of\((.*?)\);"),
                ("streams", "--guarantee"): _java_strings("PassThrough.java",
                                                          r"GUARANTEES = \{(.*?)\};"),
                ("streams", "--topology"): _java_strings("PassThrough.java",
                                                         r"TOPOLOGIES = \{(.*?)\};")}
    java = [p for p in PRESETS.values() if p.runtime == "java"]
    assert len(java) == 9
    # the streams mode's numeric settings (StreamsTuning.java, issue 50): named there
    tuning = (jvm.JAVA_APPS / "src/main/java/verifier/apps/StreamsTuning.java").read_text()
    for p in java:
        kind, options = p.args[0], p.args[1:]
        for flag, value in zip(options[::2], options[1::2], strict=True):
            if kind == "streams" and f'"{flag}"' in tuning:
                assert value.isdigit(), p.name
                continue
            assert value in accepted[(kind, flag)], p.name
    # the count topology's name, as Main compares it
    assert '"count"' in (jvm.JAVA_APPS / "src/main/java/verifier/apps/Main.java").read_text()
    # the share copier takes no option: its kind alone
    assert 'kind.equals("share-copier")' in (
        jvm.JAVA_APPS / "src/main/java/verifier/apps/Main.java").read_text()


def test_setup_builds_the_java_apps_unless_told_not_to(monkeypatch, capsys):
    from verifier.cli import main

    built = []
    monkeypatch.setattr(jvm, "require_java", lambda: None)
    monkeypatch.setattr(jvm, "resolve", lambda s: s.folder)  # nothing downloaded here
    monkeypatch.setattr(jvm, "project_built", lambda p, s: False)
    monkeypatch.setattr(jvm, "build_project", lambda p, s: built.append((p, s.profile)))
    base = ["setup", "--no-spark", "--no-tools", "--no-java-generator"]
    assert main([*base, "--no-java-apps"]) == 0
    assert built == []
    assert main(base) == 0
    assert built == [(jvm.APPS_PROJECT, "java-apps")]
    assert "java-apps" in capsys.readouterr().out


def test_the_java_state_file_has_the_kafka_python_copiers_fields():
    """The instance-kill fault and its exposure read the same fields from every preset's
    state file (verifier.judge.faults.application reads at_risk)."""
    from producers.app_copier import State

    text = (jvm.JAVA_APPS / "src/main/java/verifier/apps/StateFile.java").read_text()
    java = set(re.findall(r'\\"(\w+)\\": ', text))
    python = set(State(None, "0", "before").doc) | {"t"}
    assert python <= java, python - java  # step too: the trigger waits past a second step
    # type, message: an error's; delivery_limit, last_attempts: the share copier's
    assert java - python == {"type", "message", "delivery_limit", "last_attempts"}


def test_the_share_group_sources_are_left_out_before_kafka_clients_4_1():
    """The share copier and share offsets use KIP-932's API (kafka-clients 4.1+): against
    3.9.1 (KAFKA-17754's client, `verifier explore --client java:3.9.1`) the build leaves
    them out, and only them; the pom reads the property it is given."""
    pom = ET.parse(jvm.JAVA_APPS / "pom.xml").getroot()
    excludes = [e.text for e in pom.iterfind(".//m:plugin/m:configuration/m:excludes/m:exclude",
                                             POM_NS)]
    assert excludes == ["${apps.excludes}"]
    assert jvm.APPS_PROJECT.left_out("3.9.1") == ["-Dapps.excludes=verifier/apps/Share*.java"]
    assert jvm.APPS_PROJECT.left_out("4.0.0") == ["-Dapps.excludes=verifier/apps/Share*.java"]
    assert jvm.APPS_PROJECT.left_out("4.1.0") == []
    assert jvm.APPS_PROJECT.left_out("4.4.0") == []
    assert jvm.GENERATOR_PROJECT.left_out("3.9.1") == []
    # exactly the share-group classes match the pattern; Main reaches them by name
    sources = {p.name for p in (jvm.JAVA_APPS / "src/main/java/verifier/apps").glob("*.java")}
    assert {s for s in sources if s.startswith("Share")} == {"ShareCopier.java",
                                                             "ShareOffsets.java"}
    main = (jvm.JAVA_APPS / "src/main/java/verifier/apps/Main.java").read_text()
    assert "new ShareCopier" not in main and "ShareOffsets." not in main
