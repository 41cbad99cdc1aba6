"""The desired stage's JVM reader (kafkaops/fleet/jvm_rows.py, jvm/ManifestRows.java) against the
Python parse it stands in for: whenever it vouches for a file, its rows are parse_files' rows,
document by document; whatever it is unsure of, it leaves to Python; and the stage's output is the
same with it and without it."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_helpers import acl, entry, kcluster, topic, write_yaml

from kafkaops.fleet import desired, jvm_rows
from kafkaops.fleet.documents import parse_files
from kafkaops.resources.config_types import ConfigType
from kafkaops.resources.loader import find_yaml_files
from kafkaops.resources.topic_configs import TOPIC_CONFIGS

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "resources" / "corpus"
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def reader(spark):
    """(file, text) -> the JVM reader's rows as dicts, or None (declined), called through py4j."""
    assert jvm_rows.register(spark), f"the JVM reader is not in this session: is {jvm_rows.jar_path()} built?"
    instance = spark._jvm.kafkaops.fleet.ManifestRows()  # noqa: SLF001
    rules = jvm_rows.rules_json()

    def read(file: str, text: str) -> list[dict[str, Any]] | None:
        answer = instance.call(file, text, rules)
        return None if answer is None else [json.loads(row) for row in answer.split("\n") if row]

    return read


def python_rows(file: str, text: str) -> list[dict[str, Any]]:
    return [json.loads(row) for row in parse_files([(file, text)])]


def agree(read, file: str, text: str) -> bool:
    """True when the JVM reader vouched for the text (and then its rows must be Python's)."""
    got = read(file, text)
    if got is None:
        return False
    assert got == python_rows(file, text), text
    return True


# --- what the reader vouches for -------------------------------------------------------------------------------------

PLAIN = """\
apiVersion: kafkaops.io/v1alpha1
kind: KafkaTopic
metadata:
  name: orders.events
  namespace: team-a
  labels:
    app: orders
spec:
  clusterRef:
    name: prod
    namespace: kafka
  partitions: 12
  replicationFactor: 3
  deletionPolicy: Retain
  config:
    retention.ms: "604800000"   # a week
    min.insync.replicas: 2
    cleanup.policy: compact,delete
    min.cleanable.dirty.ratio: 0.25
    unclean.leader.election.enable: false
    compression.type: 'zstd'
"""


def test_a_plain_topic_file_is_read_in_the_jvm_with_pythons_rows(reader):
    two = PLAIN + "---\n" + PLAIN.replace("orders.events", "orders.state").replace("partitions: 12", "partitions: 6")
    flow = ("{apiVersion: kafkaops.io/v1alpha1, kind: KafkaTopic, metadata: {name: a.b, labels: {}},\n"
            " spec: {clusterRef: {name: c}, 'partitions': 1, \"config\": {retention.ms: '-1'}}}\n")
    for text in (PLAIN, "---\n" + PLAIN + "...\n", two, two + "---\n", "# only a comment\n" + two, flow):
        assert agree(reader, "file:/repo/team-a/topics.yaml", text), text
    rows = reader("file:/repo/team-a/topics.yaml", two)
    assert [(r["index"], r["line"], r["topic_name"], r["partitions"]) for r in rows] == [
        (0, 1, "orders.events", 12), (1, 23, "orders.state", 6)]
    assert rows[0]["config"]["unclean.leader.election.enable"] == "false" and rows[0]["issues"] == []
    assert reader("file:/repo/empty.yaml", "") == [] == python_rows("file:/repo/empty.yaml", "")


def test_the_cluster_comes_from_the_directory_as_in_python(reader):
    bare = PLAIN.replace("  clusterRef:\n    name: prod\n    namespace: kafka\n", "")
    for file in ("file:/repo/clusters/prod/topics/a.yaml", "file:///repo/clusters/prod/a.yaml",
                 "hdfs://nn:8020/git/clusters/prod/x/y/a.yml", "s3a://bucket/clusters/prod/a.yaml",
                 "/plain/clusters/prod/a.yaml", "clusters\\prod\\a.yaml"):
        assert agree(reader, file, bare), file
        assert reader(file, bare)[0]["cluster_from"] == "directory"
        assert agree(reader, file, PLAIN)  # clusterRef `prod` agrees with the directory
    # no cluster at all (the schema's error), and a clusterRef the directory contradicts (a warning)
    assert reader("file:/repo/a.yaml", bare) is None
    assert reader("file:/repo/clusters/dev/a.yaml", PLAIN) is None
    assert python_rows("file:/repo/clusters/dev/a.yaml", PLAIN)[0]["issues"][0]["rule"] == "ClusterRefOutsideDirectory"


def test_files_of_examples_and_the_corpus_read_in_the_jvm_have_pythons_rows(reader):
    vouched = []
    for path in find_yaml_files(EXAMPLES) + find_yaml_files(CORPUS):
        if agree(reader, "file:" + str(path), path.read_text()):
            vouched.append(path.relative_to(ROOT).as_posix())
    # every example topic and ACL file; the corpus's valid plain topics, not its mistakes
    assert {"examples/clusters/dev/topics/orders.yaml", "examples/clusters/prod/topics/payments.yaml",
            "examples/clusters/dev/acls/orders.yaml", "examples/clusters/prod/acls/payments.yaml",
            "tests/resources/corpus/valid/acl-revoke-all.yaml",
            "tests/resources/corpus/valid/topic-typed-yaml-values.yaml",
            "tests/resources/corpus/valid/topic-replica-assignment.yaml"} <= set(vouched)
    assert not [v for v in vouched if "/invalid/" in v or "/warnings/" in v], vouched


# --- what it leaves to Python ----------------------------------------------------------------------------------------

# Spellings YAML 1.1 reads in ways a reader could get wrong; each replaces one value of PLAIN.
SPELLINGS = [
    "yes", "No", "on", "OFF", "true", "y", "n", "~", "null", "Null", "", "''", '""', "0", "00", "012", "0o12", "0x1F",
    "1_000", "1:30", "-1", "-0", "+1", "1.5", "1.50", "1.0", ".5", "0.00001", "0.0001", "1e3", "1.0e+3", ".inf",
    "-.inf", ".nan", "2024-01-01", "2024-01-01 10:00:00", '"quoted"', "'single'", "'it''s'", '"tab\\there"',
    '"\\u00e9t\\u00e9"', '"\\x41"', "a b", "a#b", "é", "[1, 2]", "[]", "{}", "{a: 1}", "&anchor x", "!!str 5",
    "!!int '5'", "!custom x", "|\n    block", ">-\n    folded", '"two\n    lines"', "plain\n    continued",
    "99999999999999999999", "2147483648", "32768", "-2", "delete,compact", "compact,compact", "zstd", "CreateTime",
    "retention", "__internal", "a" * 250, "UPPER", "has_underscore", ".", "..",
]
VALUE_LINES = [i for i, line in enumerate(PLAIN.splitlines()) if ": " in line and not line.endswith(":")]


def respelled(base: str, value_lines: list[int], words: list[str], rng: random.Random) -> str:
    """`base` with up to two of its value lines respelled from `words`, dropped, repeated (a
    duplicate key) or given another key."""
    lines = base.splitlines()
    for _ in range(rng.randint(0, 2)):
        i = rng.choice(value_lines)
        key, _, _ = lines[i].partition(": ")
        action = rng.random()
        if action < 0.7:
            lines[i] = f"{key}: {rng.choice(words)}"
        elif action < 0.8:
            lines[i] = ""
        elif action < 0.9:
            lines.insert(i, lines[i])  # a duplicate key
        else:
            lines[i] = f"{key.rstrip()}x: 1"
    return "\n".join(lines) + "\n"


def mutated(rng: random.Random) -> str:
    """PLAIN respelled, or the document wrapped in directives, anchors, extra documents."""
    text = respelled(PLAIN, VALUE_LINES, SPELLINGS, rng)
    wrap = rng.random()
    if wrap < 0.05:
        text = "%YAML 1.1\n---\n" + text
    elif wrap < 0.1:
        text = "--- !!map\n" + text
    elif wrap < 0.15:
        text = text + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    elif wrap < 0.2:
        text = text + "---\n" + yaml.safe_dump(acl("app", "User:app", [entry("Topic", "t", ["Read"])], cluster="prod"))
    elif wrap < 0.25:
        text = text.replace("  config:\n", "  config: &shared\n")
    elif wrap < 0.3:
        text = text + "---\nnull\n"
    return text


def test_whatever_the_reader_vouches_for_has_pythons_rows_on_thousands_of_mutations(reader):
    """Thousands of respelled, dropped, repeated and wrapped values: every file the JVM reader reads
    has exactly Python's rows; it still reads a good share (a reader that declines everything would
    pass the first half of this test), and it never reads a file in which Python finds anything."""
    rng = random.Random(20261127)
    vouched = 0
    checked = 3000
    for n in range(checked):
        text = mutated(rng)
        file = rng.choice(["file:/repo/clusters/prod/t.yaml", "file:/repo/teams/t.yaml"])
        if agree(reader, file, text):
            vouched += 1
            assert all(row["valid"] and not row["issues"] for row in python_rows(file, text)), text
    assert checked // 10 < vouched < checked // 2, vouched


def test_a_yaml_error_or_an_odd_file_is_left_to_python(reader):
    for text in ("kind: KafkaTopic\nmetadata: {name: [\n", PLAIN.replace("  partitions", "\tpartitions"),
                 PLAIN.replace("\n", "\r\n"), "\ufeff" + PLAIN, PLAIN + "  bad indent: 1\n", "just a string\n",
                 "- a\n- b\n", PLAIN.replace("KafkaTopic", "KafkaAcl"), PLAIN.replace("v1alpha1", "v1beta1"),
                 PLAIN.replace("name: orders.events", "name: Orders_Events")):
        assert reader("file:/repo/t.yaml", text) is None, text


def combination(replicas: int, config: dict[str, str]) -> str:
    """PLAIN with `replicas` and only `config`."""
    head = PLAIN[:PLAIN.index("  config:\n")].replace("replicationFactor: 3", f"replicationFactor: {replicas}")
    return head + "  config:\n" + "".join(f"    {key}: {value}\n" for key, value in config.items()) if config else head


def test_every_checked_config_key_agrees_with_python_on_its_boundaries(reader):
    """Each topic config the reader checks, with values around its limits and choices, quoted and
    not: a value it accepts is one Python finds nothing wrong with, and vice versa where it reads."""
    rules = json.loads(jvm_rows.rules_json())["configs"]
    assert "message.format.version" not in rules  # deprecated: Python's alone
    assert {"retention.ms", "cleanup.policy", "min.cleanable.dirty.ratio", "preallocate",
            "remote.storage.enable"} <= set(rules)
    read_some = 0
    for key, rule in rules.items():
        spec = TOPIC_CONFIGS[key]
        values = ["0", "1", "-1", "-2", "2147483647", "2147483648", "9223372036854775807", "1.5", "0.5", "abc", "",
                  "true", "false", "True", " 1", "1 "]
        for bound in (spec.minimum, spec.maximum, spec.kafka4_minimum):
            if bound is not None:
                values += [str(int(bound) - 1), str(int(bound)), str(int(bound) + 1)]
        values += sorted(spec.choices or ()) + [",".join(sorted(spec.choices or ("x",))), "delete,delete"]
        for value in values:
            for spelled in (json.dumps(value), value):
                text = combination(3, {key: spelled})
                if agree(reader, "file:/repo/t.yaml", text):
                    read_some += 1
                    assert not python_rows("file:/repo/t.yaml", text)[0]["issues"]
        assert rule["type"] == {ConfigType.INT: "int", ConfigType.LONG: "long", ConfigType.DOUBLE: "double",
                                ConfigType.BOOLEAN: "boolean", ConfigType.STRING: "string",
                                ConfigType.LIST: "list"}[spec.type]
    assert read_some > 150


def test_the_reader_declines_exactly_the_combinations_python_flags(reader):
    """Values each fine alone, flagged together (min.insync.replicas over the replicas, the
    compaction lags crossed, tiered storage with compaction or a local retention over the total):
    the reader reads a document exactly when Python finds nothing in it, with Python's rows."""
    import itertools

    def grid(replicas: list[int], **choices: list[str | None]) -> list[tuple[int, dict[str, str]]]:
        keys = [key.replace("_", ".") for key in choices]
        return [(r, {k: v for k, v in zip(keys, values) if v is not None})
                for r in replicas for values in itertools.product(*choices.values())]

    cases = [
        *grid([1, 2, 3], min_insync_replicas=[None, "1", "2", "3", "4"]),
        *grid([3], min_compaction_lag_ms=[None, "0", "100", "200"], max_compaction_lag_ms=[None, "1", "100", "200"]),
        *grid([3], remote_storage_enable=[None, "true", "'TRUE'", "false"],
              cleanup_policy=[None, "delete", "compact", "compact,delete"],
              local_retention_ms=[None, "-2", "-1", "0", "500", "1000"], retention_ms=[None, "-1", "500", "1000"]),
        *grid([3], remote_storage_enable=["true"], local_retention_bytes=[None, "-2", "-1", "0", "500", "1000"],
              retention_bytes=[None, "-1", "500", "1000"]),
    ]
    outcomes = {"read": 0, "flagged": 0}
    for replicas, config in cases:
        text = combination(replicas, config)
        rows = python_rows("file:/repo/t.yaml", text)
        clean = all(row["valid"] and not row["issues"] for row in rows)
        got = reader("file:/repo/t.yaml", text)
        assert (got is not None) == clean, text
        if got is not None:
            assert got == rows, text
        outcomes["read" if clean else "flagged"] += 1
    assert outcomes["read"] > 200 and outcomes["flagged"] > 100, outcomes


# --- KafkaAcl --------------------------------------------------------------------------------------------------------

PLAIN_ACL = """\
apiVersion: kafkaops.io/v1alpha1
kind: KafkaAcl
metadata:
  name: orders
  namespace: team-a
spec:
  clusterRef:
    name: prod
  principal: "User:orders"
  acls:
    - resource: {type: Topic, name: "orders.", patternType: Prefixed}
      operations: [Read, Describe]
    - resource:
        type: Group
        name: orders-
        patternType: Prefixed
      operations:
        - Read
      host: '*'
      permission: Allow
    - resource: {type: Topic, name: "orders.audit"}
      operations: [Write]
      permission: Deny
    - resource: {type: Cluster, name: kafka-cluster}
      operations: [IdempotentWrite]
    - resource: {type: TransactionalId, name: '*'}
      operations: [All]
"""


def acl_text(entries: list[dict[str, Any]], principal: str = "User:app") -> str:
    return yaml.safe_dump(acl("app", principal, entries, cluster="prod"), sort_keys=False)


def test_a_plain_acl_file_is_read_in_the_jvm_with_pythons_rows(reader):
    """Block and flow entries, defaults given and left out, several documents, a KafkaTopic beside
    them, an empty list (every binding revoked), the cluster from the directory."""
    revoke = PLAIN_ACL[:PLAIN_ACL.index("  acls:")] + "  acls: []\n"
    bare = PLAIN_ACL.replace("  clusterRef:\n    name: prod\n", "")
    for file, text in (("file:/repo/acls.yaml", PLAIN_ACL), ("file:/repo/acls.yaml", PLAIN_ACL + "---\n" + PLAIN),
                       ("file:/repo/acls.yaml", revoke + "---\n" + PLAIN_ACL.replace("orders", "payments")),
                       ("file:/repo/clusters/prod/acls/a.yaml", bare)):
        assert agree(reader, file, text), text
    row = reader("file:/repo/acls.yaml", PLAIN_ACL)[0]
    assert (row["kind"], row["principal"], len(row["bindings"]), row["field_lines"]["acl"]) == (
        "KafkaAcl", "User:orders", 6, 10)
    assert row["bindings"][0] == {"resource_type": "Cluster", "resource_name": "kafka-cluster",
                                  "pattern_type": "Literal", "host": "*", "operation": "IdempotentWrite",
                                  "permission": "Allow"}
    assert reader("file:/repo/acls.yaml", revoke)[0]["bindings"] == []


def test_the_reader_reads_an_acl_entry_exactly_when_python_finds_nothing(reader):
    """Every resource type with every operation (alone, with All, twice), and every pattern type,
    name, host and permission spelling: the reader reads a document exactly when Python finds
    nothing in it, with Python's rows; the one exception is a host that is an IP address, which it
    leaves to Python's check."""
    import itertools

    types = ["Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"]
    operations = [[op] for op in ("Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction",
                                  "DescribeConfigs", "AlterConfigs", "IdempotentWrite", "CreateTokens",
                                  "DescribeTokens", "All", "Fly")] + [["All", "Describe"], ["Describe", "Describe"],
                                                                       ["All", "All"], []]
    some_valid = {"Topic": "Read", "Group": "Read", "Cluster": "Create", "TransactionalId": "Write",
                  "DelegationToken": "Describe", "User": "Read"}
    cases = [[{"resource": {"type": rtype, "name": "kafka-cluster" if rtype == "Cluster" else "x"}, "operations": ops}]
             for rtype, ops in itertools.product(types, operations)]
    absent = object()
    for rtype, name, pattern, host, permission in itertools.product(
            types, ["x", "*", "kafka-cluster"], [absent, "Literal", "Prefixed", "Match"],
            [absent, "*", "10.0.0.1", "example.com"], [absent, "Allow", "Deny", "Maybe"]):
        resource = {"type": rtype, "name": name} | ({} if pattern is absent else {"patternType": pattern})
        item = {"resource": resource, "operations": [some_valid[rtype]]}
        item |= ({} if host is absent else {"host": host}) | ({} if permission is absent else {"permission": permission})
        cases.append([item])
    cases += [[entry("Topic", "a", ["Read"]), entry("Topic", "a", ["Read"], host="*")],  # the same binding twice
              [entry("Topic", "a", ["Read"]), entry("Topic", "a", ["Read"], permission="Deny")],
              [entry("Topic", "a", ["Read"]), entry("Topic", "a", ["Read"], pattern="Prefixed")]]
    outcomes = {"read": 0, "flagged": 0, "ip": 0}
    for entries in cases:
        text = acl_text(entries)
        rows = python_rows("file:/repo/a.yaml", text)
        clean = all(row["valid"] and not row["issues"] for row in rows)
        ip = any(item.get("host", "*") != "*" for item in entries)
        got = reader("file:/repo/a.yaml", text)
        assert (got is not None) == (clean and not ip), text
        if got is not None:
            assert got == rows, text
        outcomes["read" if got is not None else "ip" if clean else "flagged"] += 1
    assert outcomes["read"] > 150 and outcomes["flagged"] > 500 and outcomes["ip"] > 50, outcomes


def test_an_acl_principal_is_read_exactly_when_python_finds_nothing_in_it(reader):
    """Each principal as PyYAML writes it, and double-quoted as people write it (`":app"` reaches the
    principal check only quoted: plain, YAML's own reading of it is left to Python)."""
    for principal in ("User:app", "Group:ops", "User:a:b", "User:", ":app", " User:app", "User :app", "User: ",
                      "User: app", "app", "", "User:CN=app,O=org"):
        quoted = PLAIN_ACL.replace('"User:orders"', json.dumps(principal))
        for text in (acl_text([entry("Topic", "t", ["Read"])], principal), quoted):
            rows = python_rows("file:/repo/a.yaml", text)
            clean = all(row["valid"] and not row["issues"] for row in rows)
            got = reader("file:/repo/a.yaml", text)
            assert (got is not None) == clean and (got is None or got == rows), text


ACL_VALUE_LINES = [i for i, line in enumerate(PLAIN_ACL.splitlines())
                   if ": " in line and not line.endswith(":") and not line.lstrip().startswith("- resource:")]


def mutated_acl(rng: random.Random) -> str:
    """PLAIN_ACL respelled (YAML's spellings and the ACL vocabulary)."""
    words = SPELLINGS + ["Topic", "Group", "Cluster", "Read", "Write", "All", "Describe", "Prefixed", "Literal",
                         "Deny", "'*'", "kafka-cluster", "[Read, Read]", "[All, Read]", "[IdempotentWrite]",
                         '"User:x"', '"x"', "10.0.0.1"]
    return respelled(PLAIN_ACL, ACL_VALUE_LINES, words, rng)


def test_whatever_acl_file_the_reader_vouches_for_has_pythons_rows_on_thousands_of_mutations(reader):
    rng = random.Random(20261128)
    vouched, checked = 0, 2000
    for _ in range(checked):
        text = mutated_acl(rng)
        if agree(reader, "file:/repo/clusters/prod/a.yaml", text):
            vouched += 1
            assert all(row["valid"] and not row["issues"] for row in python_rows("file:/repo/clusters/prod/a.yaml", text))
    assert checked // 10 < vouched < checked * 2 // 3, vouched


def test_every_acl_rule_python_has_is_one_the_reader_declines_on():
    """acl_rules' findings, by rule name: the reader mirrors each one (it declines the document). A
    new rule fails here until ManifestRows.java checks for it too (or the reader stops reading ACLs)."""
    import re

    from kafkaops.resources import acl_rules

    rules = {value for name, value in vars(acl_rules).items()
             if name.isupper() and isinstance(value, str) and re.fullmatch(r"(?:[A-Z][a-z]+)+", value)}
    assert {"DuplicateAclBinding", "InvalidPrincipal"} <= rules
    assert rules == jvm_rows.MIRRORED_ACL_RULES


# --- the stage -------------------------------------------------------------------------------------------------------


def test_the_desired_stage_is_the_same_with_and_without_the_jvm_reader(spark, tmp_path):
    """A tree of files the JVM reader reads and files it leaves to Python (mistakes, other kinds,
    a broken file): the same documents, issues and topics either way."""
    tree = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "clusters", tree / "clusters")
    write_yaml(tree / "clusters" / "dev" / "more.yaml", *(topic(f"more.t{i}", cluster=None, config={
        "retention.ms": "86400000"}) for i in range(50)))
    write_yaml(tree / "clusters" / "dev" / "bad.yaml", topic("dup", cluster=None, partitions=0),
               topic("orders.events.v1", cluster=None))
    write_yaml(tree / "teams" / "x.yaml", kcluster("other"), topic("x.t", cluster="other"))
    write_yaml(tree / "clusters" / "dev" / "acls" / "more.yaml", *(acl(f"svc-{i}", f"User:svc-{i}", [
        entry("Topic", f"more.t{i}", ["Read", "Describe"]), entry("Group", f"svc-{i}-", ["Read"], pattern="Prefixed")],
        cluster=None) for i in range(20)))
    write_yaml(tree / "clusters" / "dev" / "acls" / "twice.yaml", acl("twice", "User:twice", [
        entry("Topic", "t", ["Read"]), entry("Topic", "t", ["Read"])], cluster=None))
    (tree / "clusters" / "dev" / "broken.yml").write_text("kind: KafkaTopic\nmetadata: {name: [\n")

    def stage(jvm: bool) -> tuple[list, list, list]:
        spark.conf.set(jvm_rows.CONF, str(jvm).lower())
        try:
            loaded = desired.load(spark, [str(tree)])
            key = lambda r: (r["file"], r["index"] if r["index"] is not None else -1, str(r))  # noqa: E731
            out = tuple(sorted((r.asDict(recursive=True) for r in frame.collect()), key=key)
                        for frame in (loaded.docs, loaded.issues, loaded.topics))
            loaded.unpersist()
            return out
        finally:
            spark.conf.unset(jvm_rows.CONF)

    with_jvm, python_only = stage(True), stage(False)
    assert with_jvm == python_only
    docs, issues, topics = with_jvm
    assert len(topics) > 50 and {i["rule"] for i in issues} >= {"DuplicateTopic", "YamlSyntaxError",
                                                                 "DuplicateAclBinding"}
    # and the JVM did read: the rows of more.yaml are the reader's (the same, so ask it directly)
    text = (tree / "clusters" / "dev" / "more.yaml").read_text()
    more = "file:" + str(tree / "clusters" / "dev" / "more.yaml")
    assert spark._jvm.kafkaops.fleet.ManifestRows().call(more, text, jvm_rows.rules_json()) is not None  # noqa: SLF001


def test_the_reader_is_built_and_can_be_turned_off(spark):
    """`make setup` builds the jar and the session loads it; `--conf spark.kafkaops.fleet.jvmReader=false`
    turns it off; a JVM without the class is "not built", and the stage's line says which."""
    assert jvm_rows.jar_path().is_file()
    assert jvm_rows.state(spark) == "on"
    spark.conf.set(jvm_rows.CONF, "false")
    try:
        assert jvm_rows.state(spark) == "off"
    finally:
        spark.conf.unset(jvm_rows.CONF)
    assert jvm_rows.register(spark, "kafkaops.fleet.NoSuchReader") is False
    assert desired.Desired(*[None] * 7, reader="not built").reader_note() == (
        "all parsed in Python: the JVM reader (kafkaops-fleet.jar) is not built; "
        "`python -m kafkaops.fleet.jvm_build` builds it (a JDK 17+)")
    assert desired.Desired(*[None] * 7, reader="off").reader_note() == "all parsed in Python"


def test_every_config_key_a_combination_rule_reads_is_mirrored_or_left_to_python():
    """rules._check_config_combinations compares config values with each other; the reader mirrors
    its rules. A new rule reading a key jvm_rows does not name fails here, before the reader could
    vouch for a document it flags."""
    import inspect
    import re

    from kafkaops.resources import rules

    source = inspect.getsource(rules._check_config_combinations)  # noqa: SLF001
    keys = {key for key in re.findall(r'"([a-z]+(?:\.[a-z]+)+)"', source) if not key.startswith("spec.")}
    assert keys >= {"min.insync.replicas", "remote.storage.enable"}
    assert keys <= jvm_rows.MIRRORED_COMBINATIONS | jvm_rows.UNMIRRORED_COMBINATIONS
    assert not jvm_rows.UNMIRRORED_COMBINATIONS & set(json.loads(jvm_rows.rules_json())["configs"])
