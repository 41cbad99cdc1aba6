"""The YAML loader: files, directories, multi-document files, skipped documents, syntax errors."""

from __future__ import annotations

from pathlib import Path

from resource_helpers import dump, topic

from kafkaops.resources import document_from_custom_resource, load_paths, load_text
from kafkaops.resources.loader import find_yaml_files

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"


def test_directory_is_searched_recursively_and_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    (tmp_path / "b" / "one.yaml").write_text(dump(topic("one")))
    (tmp_path / "a" / "deep" / "two.yml").write_text(dump(topic("two")))
    (tmp_path / "a" / "notes.txt").write_text(dump(topic("ignored")))
    (tmp_path / ".git" / "hidden.yaml").write_text(dump(topic("hidden")))
    result = load_paths([tmp_path])
    assert [d.source.name for d in result.documents] == ["two", "one"]
    assert [Path(f).name for f in result.files] == ["two.yml", "one.yaml"]
    assert find_yaml_files(tmp_path / "b" / "one.yaml") == [tmp_path / "b" / "one.yaml"]


def test_multi_document_file_indexes_count_every_document(tmp_path: Path) -> None:
    text = dump(topic("first")) + "---\n" + CONFIG_MAP + "---\n---\n" + dump(topic("second"))
    result = load_text(text, "multi.yaml")
    assert [(d.source.index, d.source.name) for d in result.documents] == [(0, "first"), (3, "second")]
    assert all(d.source.file == "multi.yaml" for d in result.documents)
    assert result.errors == ()


def test_other_api_groups_are_skipped_with_a_note() -> None:
    text = CONFIG_MAP + "---\n- a list\n---\nplain: values\n---\n" + dump(topic())
    result = load_text(text, "mixed.yaml")
    assert len(result.documents) == 1
    assert [n.index for n in result.notes] == [0, 1, 2]
    assert "v1/ConfigMap is not a kafkaops.io resource" in str(result.notes[0])
    assert "not a Kubernetes object" in result.notes[1].message
    assert result.errors == ()


def test_empty_documents_and_files_are_ignored() -> None:
    result = load_text("---\n# only a comment\n---\n", "empty.yaml")
    assert result.documents == () and result.notes == () and result.errors == ()


def test_yaml_syntax_error_names_file_and_line_and_keeps_earlier_documents() -> None:
    text = dump(topic("good")) + "---\napiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: [broken\n"
    result = load_text(text, "broken.yaml")
    assert [d.source.name for d in result.documents] == ["good"]
    (error,) = result.errors
    assert error.rule == "YamlSyntaxError" and error.file == "broken.yaml" and error.index == 1
    assert error.line is not None and error.line > 10
    assert f"line {error.line}" in error.reason


def test_tab_indentation_is_a_syntax_error_with_its_line() -> None:
    result = load_text("a: 1\nb:\n\t- c\n", "tabs.yaml")
    (error,) = result.errors
    assert error.rule == "YamlSyntaxError" and error.line == 3


def test_duplicate_yaml_keys_are_errors_with_path_and_line() -> None:
    text = dump(topic(config={"retention.ms": "1"})).replace("retention.ms: '1'", "retention.ms: '1'\n    retention.ms: '2'")
    result = load_text(text, "dup.yaml")
    (error,) = result.errors
    assert (error.path, error.rule) == ("spec.config.retention.ms", "DuplicateYamlKey")
    assert error.source == result.documents[0].source


def test_unsupported_api_version_and_unknown_kind_are_errors() -> None:
    wrong_version = dump(topic()).replace("kafkaops.io/v1alpha1", "kafkaops.io/v2")
    wrong_kind = dump(topic()).replace("KafkaTopic", "KafkaTopics")
    result = load_text(wrong_version + "---\n" + wrong_kind, "bad.yaml")
    assert result.documents == ()
    assert [(e.index, e.path, e.rule) for e in result.errors] == [
        (0, "apiVersion", "UnsupportedApiVersion"), (1, "kind", "UnknownKind")]
    assert "did you mean KafkaTopic?" in result.errors[1].reason


def test_same_file_given_twice_is_loaded_once(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(dump(topic()))
    assert len(load_paths([path, tmp_path]).documents) == 1


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    (error,) = load_paths([tmp_path / "nope"]).errors
    assert error.rule == "FileNotFound"


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: \xff\xfe\n")
    (error,) = load_paths([path]).errors
    assert error.rule == "UnreadableFile"


def test_documents_record_field_lines() -> None:
    (doc,) = load_text(dump(topic(config={"retention.ms": "1"})), "t.yaml").documents
    assert doc.line == 1
    assert doc.line_of("spec.config.retention.ms") == doc.lines["spec.config.retention.ms"]
    assert doc.line_of("spec.config.retention.ms") > doc.line_of("spec")
    assert doc.line_of("spec.nothing[3].here") == doc.line_of("spec")


def test_custom_resource_document_has_no_file() -> None:
    body = topic("orders", namespace="team-a")
    doc = document_from_custom_resource(body)
    assert (doc.source.file, doc.source.index, doc.source.kind, doc.source.namespace, doc.source.name) == (
        None, 0, "KafkaTopic", "team-a", "orders")
    assert str(doc.source) == "KafkaTopic/team-a/orders"
    assert document_from_custom_resource({}).source.name == ""
