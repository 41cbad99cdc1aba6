"""The desired stage's JVM reader: whole files of plain KafkaTopic and KafkaAcl documents read without Python.

Parsing a document in a Python worker costs ~80-95 µs (libyaml a quarter of it, our checks, model
and row the rest, then PySpark's framing): at 1,000,000 topics, 100-115 of the run's CPU seconds
(docs/benchmarks.md, "The fleet's floor without its parsing"). `jvm/ManifestRows.java` reads a file in
the Spark task itself (SnakeYAML, which Spark ships) and answers the JSON rows `parse_files` would
make of it, but only when it can vouch for every document of the file: KafkaTopic and KafkaAcl
documents of unambiguous scalars with no finding at all. Any other file (another kind, an error, a warning,
anything the reader is unsure of) answers null and is parsed in Python as before, so what a user
sees never depends on which reader ran. The rules it applies come from here (`rules_json`: the
same patterns, limits, topic-config specs and ACL vocabulary `kafkaops validate` uses), and
tests/fleet compare the two readers' rows document by document.

The reader is a jar built from the Java source by `jvm_build.py` (javac; `make setup`, and the
`EXTRAS=fleet` image's install step; `jar_path()`); without it (a wheel installed where no JDK
built it) every file is parsed in Python, and the desired stage's line says so.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from kafkaops.fleet.documents import CLUSTERS_DIRECTORY, FIELD_PATHS, LINE_PATHS
from kafkaops.resources.acl_rules import (
    DUPLICATE_ACL_BINDING,
    INVALID_ACL_HOST,
    INVALID_CLUSTER_RESOURCE_NAME,
    INVALID_PRINCIPAL,
    OPERATION_NOT_VALID,
    REDUNDANT_ACL_OPERATION,
    WILDCARD_PREFIXED,
)
from kafkaops.resources.config_types import INT_MAX, ConfigType
from kafkaops.resources.acl import (
    CLUSTER_RESOURCE_NAME,
    VALID_OPERATIONS,
    WILDCARD,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from kafkaops.resources.kinds import GROUP_VERSION, KAFKA_ACL, KAFKA_TOPIC
from kafkaops.resources.rules import (
    DNS_LABEL_RE,
    DNS_SUBDOMAIN,
    MAX_REPLICATION_FACTOR,
    MAX_TOPIC_NAME_LENGTH,
    TOPIC_CHARS,
)
from kafkaops.resources.topic_configs import TOPIC_CONFIGS

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

JAR_NAME = "kafkaops-fleet.jar"
CLASS_NAME = "kafkaops.fleet.ManifestRows"
UDF_NAME = "kafkaops_topic_rows"
CONF = "spark.kafkaops.fleet.jvmReader"  # `--conf spark.kafkaops.fleet.jvmReader=false`: every file parsed in Python
# The config keys of the combination rules (rules._check_config_combinations): ManifestRows.java mirrors
# the rules reading the first set (min.insync.replicas against the replicas, the compaction lags, and
# tiered storage's cleanup policy and local retention). A rule it does not mirror names its keys in
# the second set: a document setting one is left to Python (the key is not sent to the reader).
# tests/fleet/test_fleet_jvm_reader.py fails when a rule reads a key neither set names.
MIRRORED_COMBINATIONS = frozenset({"min.insync.replicas", "min.compaction.lag.ms", "max.compaction.lag.ms",
                                   "remote.storage.enable", "cleanup.policy", "retention.ms", "retention.bytes",
                                   "local.retention.ms", "local.retention.bytes"})
UNMIRRORED_COMBINATIONS: frozenset[str] = frozenset()
# The rules of acl_rules.py, each of which the reader declines a KafkaAcl on (a new rule fails
# tests/fleet/test_fleet_jvm_reader.py until ManifestRows.java checks for it too).
MIRRORED_ACL_RULES = frozenset({INVALID_PRINCIPAL, INVALID_ACL_HOST, OPERATION_NOT_VALID, INVALID_CLUSTER_RESOURCE_NAME,
                                DUPLICATE_ACL_BINDING, REDUNDANT_ACL_OPERATION, WILDCARD_PREFIXED})
_CHECKED_TYPES = {ConfigType.INT: "int", ConfigType.LONG: "long", ConfigType.DOUBLE: "double",
                  ConfigType.BOOLEAN: "boolean", ConfigType.STRING: "string", ConfigType.LIST: "list"}


def jar_path() -> Path:
    """Where `jvm_build` writes the reader (beside its source)."""
    return Path(__file__).parent / "jvm" / JAR_NAME


@lru_cache(maxsize=1)
def rules_json() -> str:
    """What ManifestRows.java checks, from the Python rules: the names' patterns and limits, the
    row's line paths, the topic configs whose value checks it can repeat exactly (ConfigSpec.check
    without a validator function, a deprecation, or a type it does not know: those are left to Python),
    and a KafkaAcl entry's vocabulary (acl.py: each resource type's valid operations, the defaults)."""
    configs = {
        key: {"type": _CHECKED_TYPES[spec.type], "minimum": spec.minimum, "maximum": spec.maximum,
              "kafka4_minimum": spec.kafka4_minimum,
              "choices": None if spec.choices is None else sorted(spec.choices)}
        for key, spec in TOPIC_CONFIGS.items()
        if spec.type in _CHECKED_TYPES and spec.validator is None and not spec.deprecated
        and key not in UNMIRRORED_COMBINATIONS
    }
    return json.dumps({
        "api_version": GROUP_VERSION, "kind": KAFKA_TOPIC, "clusters_directory": CLUSTERS_DIRECTORY,
        "dns_subdomain": DNS_SUBDOMAIN.pattern, "dns_subdomain_max": 253,
        "dns_label": DNS_LABEL_RE.pattern, "dns_label_max": 63,
        "topic_chars": TOPIC_CHARS.pattern, "topic_name_max": MAX_TOPIC_NAME_LENGTH,
        "partitions_max": INT_MAX, "replication_factor_max": MAX_REPLICATION_FACTOR,
        "line_paths": list(LINE_PATHS), "field_paths": FIELD_PATHS, "configs": configs,
        "acl": {
            "kind": KAFKA_ACL,
            "operations": {str(t): sorted(str(o) for o in VALID_OPERATIONS[t]) for t in ResourceType},
            "pattern_types": [str(p) for p in PatternType], "permissions": [str(p) for p in AclPermission],
            "cluster_type": str(ResourceType.CLUSTER), "cluster_resource_name": CLUSTER_RESOURCE_NAME,
            "wildcard": WILDCARD, "all": str(AclOperation.ALL), "prefixed": str(PatternType.PREFIXED),
            "default_pattern_type": str(PatternType.LITERAL), "default_permission": str(AclPermission.ALLOW),
        },
    }, sort_keys=True)


def state(spark: SparkSession) -> str:
    """"on" (the reader is registered in this session), "off" (`--conf spark.kafkaops.fleet.jvmReader=false`)
    or "not built" (the session's JVM does not have it)."""
    if spark.conf.get(CONF, "true").strip().lower() == "false":
        return "off"
    return "on" if register(spark) else "not built"


def register(spark: SparkSession, class_name: str = CLASS_NAME) -> bool:
    """Register the reader as the SQL function `kafkaops_topic_rows(file, text, rules)`; False when
    the session's JVM cannot load the class (no jar was built, or the session started without it)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql.types import StringType

    try:
        spark.udf.registerJavaFunction(UDF_NAME, class_name, StringType())
    except AnalysisException as exc:
        if "CANNOT_LOAD_FUNCTION_CLASS" in str(exc) or "Can not load class" in str(exc):
            return False
        raise
    return True


def rows_column(file: Column, text: Column) -> Column:
    """The reader's rows of each file as one text of JSON lines, or null: the file is Python's."""
    from pyspark.sql import functions as F

    return F.call_function(UDF_NAME, file, text, F.lit(rules_json()))
