package kafkaops.fleet;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.spark.sql.api.java.UDF3;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.events.AliasEvent;
import org.yaml.snakeyaml.events.CollectionStartEvent;
import org.yaml.snakeyaml.events.DocumentStartEvent;
import org.yaml.snakeyaml.events.Event;
import org.yaml.snakeyaml.events.MappingStartEvent;
import org.yaml.snakeyaml.events.ScalarEvent;
import org.yaml.snakeyaml.events.SequenceStartEvent;
import org.yaml.snakeyaml.parser.ParserImpl;
import org.yaml.snakeyaml.reader.StreamReader;

/**
 * The desired stage's rows of one manifest file, read in the JVM: (file, text, rules) -> the JSON
 * rows kafkaops.fleet.documents.parse_files would make of it, one per line, or null when this
 * reader does not vouch for every document of the file (the file is then parsed in Python).
 *
 * <p>It vouches only for what it can answer exactly: KafkaTopic and KafkaAcl documents made of
 * block or flow mappings and sequences whose scalars are unambiguous in YAML 1.1 (a plain scalar
 * starting with a letter that is not a boolean or null word, plain decimal digits, a one-line
 * quoted printable-ASCII string), with the fields and values the rules allow and no finding at
 * all. Anything else (another kind, an anchor, a tag, a duplicate key, a warning, an error, a YAML
 * error) answers null. The rules (patterns, limits, which topic configs and how their values are
 * checked, the ACL vocabulary) come from Python (kafkaops.fleet.jvm_rows.rules_json), so they have
 * one source; tests/fleet compare the rows of both readers document by document.
 */
public final class ManifestRows implements UDF3<String, String, String, String> {
  private static final long serialVersionUID = 1L;
  private static final JsonFactory JSON = new JsonFactory();
  private static final ObjectMapper MAPPER = new ObjectMapper();
  /** A null scalar (an empty plain value, `~`, `null`): no field of a row takes one. */
  private static final Object NULL = new Object();
  // YAML 1.1's booleans and nulls among the plain scalars that start with a letter (PyYAML's resolver)
  private static final Map<String, Object> WORDS = new HashMap<>();

  static {
    for (String word : "yes Yes YES true True TRUE on On ON".split(" ")) {
      WORDS.put(word, Boolean.TRUE);
    }
    for (String word : "no No NO false False FALSE off Off OFF".split(" ")) {
      WORDS.put(word, Boolean.FALSE);
    }
    for (String word : "null Null NULL".split(" ")) {
      WORDS.put(word, NULL);
    }
  }

  // a plain float whose Python str() is its own text: no exponent, no trailing zero, not tiny
  private static final Pattern PLAIN_FLOAT = Pattern.compile("-?(0\\.(?!0000)|[1-9][0-9]{0,5}\\.)[0-9]{0,5}[1-9]");
  private static final Pattern CONFIG_INTEGER = Pattern.compile("-?[0-9]{1,15}");
  private static final Pattern CONFIG_DOUBLE = Pattern.compile("[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?");
  private static final Set<String> TOP = Set.of("apiVersion", "kind", "metadata", "spec");
  private static final Set<String> METADATA = Set.of("name", "namespace", "labels", "annotations");
  private static final Set<String> SPEC = Set.of(
      "clusterRef", "topicName", "partitions", "replicationFactor", "replicaAssignment", "config", "deletionPolicy");
  private static final Set<String> CLUSTER_REF = Set.of("name", "namespace");
  private static final Set<String> DELETION_POLICIES = Set.of("Retain", "Delete");
  private static final Set<String> ACL_SPEC = Set.of("clusterRef", "principal", "acls");
  private static final Set<String> ACL_ENTRY = Set.of("resource", "operations", "host", "permission");
  private static final Set<String> ACL_RESOURCE = Set.of("type", "name", "patternType");


  /** An unquoted float (`0.25`), as written: what a number config receives. */
  private static final class PlainFloat {
    final String text;

    PlainFloat(String text) {
      this.text = text;
    }
  }

  private static volatile Rules cached;

  /** Not vouched for: the file goes to Python. */
  private static final class Declined extends Exception {
    private static final long serialVersionUID = 1L;

    Declined() {
      super(null, null, false, false);
    }
  }

  private static final Declined DECLINED = new Declined();

  /**
   * A scalar (String, Long, Boolean, PlainFloat, NULL), a mapping (key -> Value, in order) or a
   * sequence (List of Value), with where it starts.
   */
  private static final class Value {
    final Object data;
    final Map<String, Value> fields;
    final int line;
    final int column;

    Value(Object data, Map<String, Value> fields, int line, int column) {
      this.data = data;
      this.fields = fields;
      this.line = line;
      this.column = column;
    }
  }

  /** What Python says (kafkaops.fleet.jvm_rows.rules_json), parsed once per distinct text. */
  static final class Rules {
    final String text;
    final String apiVersion;
    final String kind;
    final String clustersDirectory;
    final Pattern dnsSubdomain;
    final int dnsSubdomainMax;
    final Pattern dnsLabel;
    final int dnsLabelMax;
    final Pattern topicChars;
    final int topicNameMax;
    final long partitionsMax;
    final long replicationFactorMax;
    final List<String> linePaths = new ArrayList<>();
    final Map<String, String> fieldPaths = new LinkedHashMap<>();
    final Map<String, ConfigRule> configs = new HashMap<>();
    final AclRules acl;

    Rules(String text) throws IOException {
      this.text = text;
      JsonNode root = MAPPER.readTree(text);
      apiVersion = root.get("api_version").asText();
      kind = root.get("kind").asText();
      clustersDirectory = root.get("clusters_directory").asText();
      dnsSubdomain = Pattern.compile(root.get("dns_subdomain").asText());
      dnsSubdomainMax = root.get("dns_subdomain_max").asInt();
      dnsLabel = Pattern.compile(root.get("dns_label").asText());
      dnsLabelMax = root.get("dns_label_max").asInt();
      topicChars = Pattern.compile(root.get("topic_chars").asText());
      topicNameMax = root.get("topic_name_max").asInt();
      partitionsMax = root.get("partitions_max").asLong();
      replicationFactorMax = root.get("replication_factor_max").asLong();
      root.get("line_paths").forEach(p -> linePaths.add(p.asText()));
      root.get("field_paths").properties().forEach(e -> fieldPaths.put(e.getKey(), e.getValue().asText()));
      root.get("configs").properties().forEach(e -> configs.put(e.getKey(), new ConfigRule(e.getValue())));
      acl = new AclRules(root.get("acl"));
    }
  }

  /** What a KafkaAcl's entries may say (kafkaops.resources.acl and acl_rules, through rules_json). */
  static final class AclRules {
    final String kind;
    final Map<String, Set<String>> operations = new HashMap<>();  // resource type -> its valid operations
    final Set<String> patternTypes = new HashSet<>();
    final Set<String> permissions = new HashSet<>();
    final String clusterType;
    final String clusterResourceName;
    final String wildcard;
    final String all;
    final String prefixed;
    final String defaultPatternType;
    final String defaultPermission;

    AclRules(JsonNode node) {
      kind = node.get("kind").asText();
      node.get("operations").properties().forEach(e -> {
        Set<String> valid = new HashSet<>();
        e.getValue().forEach(op -> valid.add(op.asText()));
        operations.put(e.getKey(), valid);
      });
      node.get("pattern_types").forEach(p -> patternTypes.add(p.asText()));
      node.get("permissions").forEach(p -> permissions.add(p.asText()));
      clusterType = node.get("cluster_type").asText();
      clusterResourceName = node.get("cluster_resource_name").asText();
      wildcard = node.get("wildcard").asText();
      all = node.get("all").asText();
      prefixed = node.get("prefixed").asText();
      defaultPatternType = node.get("default_pattern_type").asText();
      defaultPermission = node.get("default_permission").asText();
    }
  }

  /** How one topic config's value is checked: ConfigSpec.check, for the specs rules_json sends. */
  static final class ConfigRule {
    final String type;
    final Double minimum;
    final Double maximum;
    final Double kafka4Minimum;
    final Set<String> choices;

    ConfigRule(JsonNode node) {
      type = node.get("type").asText();
      minimum = node.hasNonNull("minimum") ? node.get("minimum").asDouble() : null;
      maximum = node.hasNonNull("maximum") ? node.get("maximum").asDouble() : null;
      kafka4Minimum = node.hasNonNull("kafka4_minimum") ? node.get("kafka4_minimum").asDouble() : null;
      if (node.hasNonNull("choices")) {
        choices = new HashSet<>();
        node.get("choices").forEach(c -> choices.add(c.asText()));
      } else {
        choices = null;
      }
    }

    /** Whether Python's check finds nothing at all in `text` (a value without surrounding blanks). */
    boolean accepts(String text) {
      switch (type) {
        case "int":
        case "long": {
          if (!CONFIG_INTEGER.matcher(text).matches()) {
            return false;
          }
          long value = Long.parseLong(text);
          if (type.equals("int") && (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE)) {
            return false;
          }
          return (minimum == null || value >= minimum)
              && (maximum == null || value <= maximum)
              && (kafka4Minimum == null || value >= kafka4Minimum);
        }
        case "double": {
          if (!CONFIG_DOUBLE.matcher(text).matches()) {
            return false;
          }
          double value = Double.parseDouble(text);
          return !Double.isInfinite(value) && (minimum == null || value >= minimum)
              && (maximum == null || value <= maximum)
              && (kafka4Minimum == null || value >= kafka4Minimum);
        }
        case "boolean": {
          String lower = text.toLowerCase(Locale.ROOT);  // Python's text.lower(): any case
          return lower.equals("true") || lower.equals("false");
        }
        case "list": {
          if (choices == null || text.isEmpty()) {
            return true;
          }
          Set<String> seen = new HashSet<>();
          for (String item : text.split(",", -1)) {
            if (!choices.contains(item) || !seen.add(item)) {
              return false;
            }
          }
          return true;
        }
        case "string":
          return choices == null || choices.contains(text);
        default:
          return false;
      }
    }
  }

  static Rules rules(String text) throws IOException {
    Rules current = cached;
    if (current == null || !current.text.equals(text)) {
      current = new Rules(text);
      cached = current;
    }
    return current;
  }

  /** The file's rows joined by newlines (JSON escapes the newlines inside values), or null. */
  @Override
  public String call(String file, String text, String rulesText) throws Exception {
    List<String> rows = rows(file, text, rules(rulesText));
    return rows == null ? null : String.join("\n", rows);
  }

  /** The rows of one file, or null. */
  static List<String> rows(String file, String text, Rules rules) {
    String shown = displayPath(file);
    String directory = directoryCluster(shown, rules.clustersDirectory);
    String body = text == null ? "" : text;
    for (char c : new char[] {'\r', '\t', '\uFEFF', '\u0085', '\u2028', '\u2029'}) {
      if (body.indexOf(c) >= 0) {
        return null;  // line breaks, tabs and marks the two YAML libraries might count differently
      }
    }
    LoaderOptions options = new LoaderOptions();
    options.setCodePointLimit(Integer.MAX_VALUE);
    options.setAllowDuplicateKeys(true);  // reported as declined below, never dropped
    ParserImpl parser = new ParserImpl(new StreamReader(new StringReader(body)), options);
    List<String> out = new ArrayList<>();
    try {
      int index = 0;
      while (true) {
        Event event = parser.getEvent();
        if (event.is(Event.ID.StreamEnd)) {
          return out;
        }
        if (event.is(Event.ID.StreamStart)) {
          continue;
        }
        if (!event.is(Event.ID.DocumentStart)) {
          return null;
        }
        DocumentStartEvent start = (DocumentStartEvent) event;
        if (start.getVersion() != null || (start.getTags() != null && !start.getTags().isEmpty())) {
          return null;
        }
        Value root = value(parser, parser.getEvent());
        if (!parser.getEvent().is(Event.ID.DocumentEnd)) {
          return null;
        }
        if (root.data == NULL) {
          index++;  // an empty document: Python skips it too, and counts it
          continue;
        }
        out.add(row(shown, directory, index, root, rules));
        index++;
      }
    } catch (Declined | YAMLException declined) {
      return null;
    }
  }

  /** One node from its first event: scalars this reader is sure of, and mappings of them. */
  private static Value value(ParserImpl parser, Event event) throws Declined {
    if (event instanceof ScalarEvent) {
      ScalarEvent scalar = (ScalarEvent) event;
      if (scalar.getTag() != null || scalar.getAnchor() != null
          || scalar.getStartMark().getLine() != scalar.getEndMark().getLine()) {
        throw DECLINED;
      }
      return new Value(scalarData(scalar), null, scalar.getStartMark().getLine() + 1,
          scalar.getStartMark().getColumn() + 1);
    }
    if (event instanceof MappingStartEvent) {
      CollectionStartEvent start = (CollectionStartEvent) event;
      if (start.getTag() != null || start.getAnchor() != null) {
        throw DECLINED;
      }
      Map<String, Value> fields = new LinkedHashMap<>();
      while (true) {
        Event next = parser.getEvent();
        if (next.is(Event.ID.MappingEnd)) {
          return new Value(null, fields, start.getStartMark().getLine() + 1, start.getStartMark().getColumn() + 1);
        }
        Value key = value(parser, next);
        if (!(key.data instanceof String) || ((String) key.data).isEmpty()) {
          throw DECLINED;  // a number, empty or null key: Python's rules say what it means
        }
        Value item = value(parser, parser.getEvent());
        Value keyed = new Value(item.data, item.fields, key.line, key.column);  // where the field is: its key
        if (fields.put((String) key.data, keyed) != null) {
          throw DECLINED;  // a duplicate key: Python reports it
        }
      }
    }
    if (event instanceof SequenceStartEvent) {
      CollectionStartEvent start = (CollectionStartEvent) event;
      if (start.getTag() != null || start.getAnchor() != null) {
        throw DECLINED;
      }
      List<Value> items = new ArrayList<>();
      while (true) {
        Event next = parser.getEvent();
        if (next.is(Event.ID.SequenceEnd)) {
          return new Value(items, null, start.getStartMark().getLine() + 1, start.getStartMark().getColumn() + 1);
        }
        items.add(value(parser, next));
      }
    }
    throw DECLINED;  // an alias
  }

  /** A scalar's data as PyYAML's safe loader reads it, or Declined where this reader is unsure. */
  private static Object scalarData(ScalarEvent scalar) throws Declined {
    String text = scalar.getValue();
    if (scalar.isPlain()) {
      if (text.isEmpty()) {
        return NULL;  // an empty value: only an empty document may be one
      }
      char first = text.charAt(0);
      if ((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z')) {
        Object word = WORDS.get(text);
        if (word == NULL || (word == null && !printable(text))) {
          throw DECLINED;
        }
        return word != null ? word : text;  // YAML 1.1 resolves no other plain scalar starting with a letter
      }
      if (decimal(text)) {
        return Long.valueOf(text);
      }
      if (PLAIN_FLOAT.matcher(text).matches()) {
        return new PlainFloat(text);
      }
      throw DECLINED;  // numbers in other spellings, dates, '~', '.inf', '<<', '=': Python decides
    }
    if ((scalar.isSQuoted() || scalar.isDQuoted()) && printable(text)) {
      return text;
    }
    throw DECLINED;  // block scalars, escapes to control or non-ASCII characters
  }

  /** `0` or an optional minus and 1-15 digits without a leading zero: PyYAML's int, written as Python writes it. */
  private static boolean decimal(String text) {
    int start = text.charAt(0) == '-' ? 1 : 0;
    int digits = text.length() - start;
    if (digits < 1 || digits > 15 || (text.charAt(start) == '0' && (digits > 1 || start == 1))) {
      return false;
    }
    for (int i = start; i < text.length(); i++) {
      if (text.charAt(i) < '0' || text.charAt(i) > '9') {
        return false;
      }
    }
    return true;
  }

  private static boolean printable(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        return false;
      }
    }
    return true;
  }

  private static Map<String, Value> mapping(Value value, Set<String> allowed) throws Declined {
    if (value == null) {
      return null;
    }
    if (value.fields == null) {
      throw DECLINED;
    }
    for (String key : value.fields.keySet()) {
      if (!allowed.contains(key)) {
        throw DECLINED;
      }
    }
    return value.fields;
  }

  private static String string(Value value, boolean required) throws Declined {
    if (value == null) {
      if (required) {
        throw DECLINED;
      }
      return null;
    }
    if (!(value.data instanceof String) || ((String) value.data).isEmpty()) {
      throw DECLINED;
    }
    return (String) value.data;
  }

  private static Long integer(Value value, long max) throws Declined {
    if (value == null) {
      return null;
    }
    if (!(value.data instanceof Long) || (Long) value.data < 1 || (Long) value.data > max) {
      throw DECLINED;
    }
    return (Long) value.data;
  }

  private static void stringMap(Value value) throws Declined {
    if (value == null) {
      return;
    }
    if (value.fields == null) {
      throw DECLINED;
    }
    for (Value item : value.fields.values()) {
      if (!(item.data instanceof String)) {
        throw DECLINED;
      }
    }
  }

  /** The row of one KafkaTopic or KafkaAcl document with no finding, or Declined. */
  private static String row(String file, String directory, int index, Value root, Rules rules) throws Declined {
    Map<String, Value> top = mapping(root, TOP);
    if (top == null || !rules.apiVersion.equals(string(top.get("apiVersion"), true))) {
      throw DECLINED;
    }
    String kind = string(top.get("kind"), true);
    boolean topic = rules.kind.equals(kind);
    if (!topic && !rules.acl.kind.equals(kind)) {
      throw DECLINED;
    }
    Map<String, Value> metadata = mapping(top.get("metadata"), METADATA);
    Map<String, Value> spec = mapping(top.get("spec"), topic ? SPEC : ACL_SPEC);
    if (metadata == null || spec == null) {
      throw DECLINED;
    }
    String name = string(metadata.get("name"), true);
    String namespace = string(metadata.get("namespace"), false);
    if (name.length() > rules.dnsSubdomainMax || !rules.dnsSubdomain.matcher(name).matches()
        || (namespace != null && (namespace.length() > rules.dnsLabelMax
            || !rules.dnsLabel.matcher(namespace).matches()))) {
      throw DECLINED;
    }
    stringMap(metadata.get("labels"));
    stringMap(metadata.get("annotations"));

    Map<String, Value> ref = mapping(spec.get("clusterRef"), CLUSTER_REF);
    String cluster;
    String clusterFrom;
    String refNamespace = null;
    if (ref != null) {
      cluster = string(ref.get("name"), true);
      refNamespace = string(ref.get("namespace"), false);
      clusterFrom = "clusterRef";
      if (directory != null && !directory.equals(cluster)) {
        throw DECLINED;  // a ClusterRefOutsideDirectory warning
      }
    } else if (directory != null) {
      cluster = directory;
      clusterFrom = "directory";
    } else {
      throw DECLINED;  // no cluster: the schema's error
    }
    Header header = new Header(file, index, root.line, kind, namespace, name, cluster, clusterFrom,
        refNamespace != null ? refNamespace : namespace);
    return topic ? topicRow(header, root, spec, rules) : aclRow(header, root, spec, rules);
  }

  /** What every row starts with. */
  private static final class Header {
    final String file;
    final int index;
    final int line;
    final String kind;
    final String namespace;
    final String name;
    final String cluster;
    final String clusterFrom;
    final String refNamespace;

    Header(String file, int index, int line, String kind, String namespace, String name, String cluster,
        String clusterFrom, String refNamespace) {
      this.file = file;
      this.index = index;
      this.line = line;
      this.kind = kind;
      this.namespace = namespace;
      this.name = name;
      this.cluster = cluster;
      this.clusterFrom = clusterFrom;
      this.refNamespace = refNamespace;
    }

    void write(JsonGenerator json) throws IOException {
      json.writeStringField("file", file);
      json.writeNumberField("index", index);
      json.writeNumberField("line", line);
      json.writeStringField("kind", kind);
      if (namespace != null) {
        json.writeStringField("namespace", namespace);
      }
      json.writeStringField("name", name);
      json.writeStringField("cluster", cluster);
      json.writeStringField("cluster_from", clusterFrom);
      if (refNamespace != null) {
        json.writeStringField("ref_namespace", refNamespace);
      }
      json.writeBooleanField("valid", true);
    }
  }

  /** A KafkaTopic's row. */
  private static String topicRow(Header header, Value root, Map<String, Value> spec, Rules rules) throws Declined {
    String name = header.name;
    String topicName = string(spec.get("topicName"), false);
    String topicNamePath = "spec.topicName";
    if (topicName == null) {
      topicName = name;
      topicNamePath = "metadata.name";
    }
    if (topicName.length() > rules.topicNameMax || topicName.equals(".") || topicName.equals("..")
        || !rules.topicChars.matcher(topicName).matches() || topicName.startsWith("__")) {
      throw DECLINED;
    }
    Long partitions = integer(spec.get("partitions"), rules.partitionsMax);
    Long replicationFactor = integer(spec.get("replicationFactor"), rules.replicationFactorMax);
    List<List<Long>> assignment = assignment(spec.get("replicaAssignment"), rules);
    if (assignment != null && (partitions != null || replicationFactor != null)) {
      throw DECLINED;  // ReplicaAssignmentConflict
    }
    Long replicasPerPartition = assignment != null ? Long.valueOf(assignment.get(0).size()) : replicationFactor;
    String deletionPolicy = string(spec.get("deletionPolicy"), false);
    if (deletionPolicy != null && !DELETION_POLICIES.contains(deletionPolicy)) {
      throw DECLINED;
    }
    Map<String, String> config = config(spec.get("config"), replicasPerPartition, rules);

    StringWriter buffer = new StringWriter(768);
    try (JsonGenerator json = JSON.createGenerator(buffer)) {
      json.writeStartObject();
      header.write(json);
      json.writeStringField("topic_name", topicName);
      json.writeStringField("topic_name_path", topicNamePath);
      if (partitions != null) {
        json.writeNumberField("partitions", partitions);
      }
      if (replicationFactor != null) {
        json.writeNumberField("replication_factor", replicationFactor);
      }
      if (assignment != null) {
        json.writeArrayFieldStart("replica_assignment");
        for (List<Long> replicas : assignment) {
          json.writeStartArray();
          for (Long broker : replicas) {
            json.writeNumber(broker);
          }
          json.writeEndArray();
        }
        json.writeEndArray();
      }
      json.writeObjectFieldStart("config");
      for (Map.Entry<String, String> entry : config.entrySet()) {
        json.writeStringField(entry.getKey(), entry.getValue());
      }
      json.writeEndObject();
      if (deletionPolicy != null) {
        json.writeStringField("deletion_policy", deletionPolicy);
      }
      writeRowEnd(json, root, config.keySet(), rules);
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return buffer.toString();
  }

  /** A KafkaAcl's row: its principal and its entries expanded to bindings, sorted as Python sorts them. */
  private static String aclRow(Header header, Value root, Map<String, Value> spec, Rules rules) throws Declined {
    String principal = string(spec.get("principal"), true);
    int colon = principal.indexOf(':');
    String type = colon < 0 ? "" : principal.substring(0, colon);
    if (type.isBlank() || !type.equals(type.strip()) || principal.substring(colon + 1).isBlank()) {
      throw DECLINED;  // acl.principal_problem: not Type:name
    }
    List<String[]> bindings = bindings(spec.get("acls"), rules.acl);
    StringWriter buffer = new StringWriter(2048);
    try (JsonGenerator json = JSON.createGenerator(buffer)) {
      json.writeStartObject();
      header.write(json);
      json.writeStringField("principal", principal);
      json.writeArrayFieldStart("bindings");
      for (String[] binding : bindings) {
        json.writeStartObject();
        json.writeStringField("resource_type", binding[0]);
        json.writeStringField("resource_name", binding[1]);
        json.writeStringField("pattern_type", binding[2]);
        json.writeStringField("host", binding[3]);
        json.writeStringField("operation", binding[4]);
        json.writeStringField("permission", binding[5]);
        json.writeEndObject();
      }
      json.writeEndArray();
      writeRowEnd(json, root, Set.of(), rules);
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return buffer.toString();
  }

  /**
   * spec.acls when acl_rules.check_acl_entries and the schema find nothing, as (resource type,
   * name, pattern type, host, operation, permission) bindings in AclBinding's order (the principal
   * is the same in all). A host other than * (an IP address) is left to Python's check.
   */
  @SuppressWarnings("unchecked")
  private static List<String[]> bindings(Value acls, AclRules acl) throws Declined {
    if (acls == null || !(acls.data instanceof List)) {
      throw DECLINED;
    }
    List<String[]> bindings = new ArrayList<>();
    Set<List<String>> seen = new HashSet<>();
    for (Value item : (List<Value>) acls.data) {
      Map<String, Value> entry = mapping(item, ACL_ENTRY);
      Map<String, Value> resource = entry == null ? null : mapping(entry.get("resource"), ACL_RESOURCE);
      if (resource == null) {
        throw DECLINED;
      }
      String type = string(resource.get("type"), true);
      String name = string(resource.get("name"), true);
      String pattern = string(resource.get("patternType"), false);
      String host = string(entry.get("host"), false);
      String permission = string(entry.get("permission"), false);
      pattern = pattern == null ? acl.defaultPatternType : pattern;
      host = host == null ? acl.wildcard : host;
      permission = permission == null ? acl.defaultPermission : permission;
      Set<String> valid = acl.operations.get(type);
      if (valid == null || !acl.patternTypes.contains(pattern) || !acl.permissions.contains(permission)
          || !host.equals(acl.wildcard)) {
        throw DECLINED;
      }
      if ((type.equals(acl.clusterType) && !name.equals(acl.clusterResourceName))
          || (name.equals(acl.wildcard) && pattern.equals(acl.prefixed))) {
        throw DECLINED;  // InvalidClusterResourceName, WildcardWithPrefixedPattern
      }
      Value operations = entry.get("operations");
      if (operations == null || !(operations.data instanceof List) || ((List<Value>) operations.data).isEmpty()) {
        throw DECLINED;
      }
      List<Value> listed = (List<Value>) operations.data;
      for (Value listedOperation : listed) {
        String operation = string(listedOperation, true);
        if (!valid.contains(operation) || (operation.equals(acl.all) && listed.size() > 1)) {
          throw DECLINED;  // OperationNotValidForResource, RedundantAclOperation (or a duplicate)
        }
        if (!seen.add(List.of(type, name, pattern, host, operation, permission))) {
          throw DECLINED;  // DuplicateAclBinding
        }
        bindings.add(new String[] {type, name, pattern, host, operation, permission});
      }
    }
    bindings.sort((a, b) -> {
      for (int i = 0; i < a.length; i++) {
        int order = a[i].compareTo(b[i]);
        if (order != 0) {
          return order;
        }
      }
      return 0;
    });
    return bindings;
  }

  /**
   * What every row ends with: `lines`, `field_lines` (documents.field_lines; `configKeys` are a
   * topic's), no findings, and the flags of the other kinds, false.
   */
  private static void writeRowEnd(JsonGenerator json, Value root, Set<String> configKeys, Rules rules)
      throws IOException {
    Map<String, Integer> lines = new LinkedHashMap<>();
    collectLines(root.fields, "", lines);
    json.writeObjectFieldStart("lines");
    for (String path : rules.linePaths) {
      Integer line = lines.get(path);
      if (line != null) {
        json.writeNumberField(path, line);
      }
    }
    json.writeEndObject();
    json.writeObjectFieldStart("field_lines");
    Map<String, Integer> fieldLines = new LinkedHashMap<>();
    for (Map.Entry<String, String> entry : rules.fieldPaths.entrySet()) {
      Integer line = lines.get(entry.getValue());
      if (line != null) {
        fieldLines.put(entry.getKey(), line);
      }
    }
    Integer topicLine = lines.containsKey("spec.topicName")
        ? lines.get("spec.topicName") : fieldLines.get("resource");
    if (topicLine != null) {
      fieldLines.put("topic", topicLine);
    }
    for (String key : configKeys) {
      Integer line = lines.get("spec.config." + key);
      if (line != null) {
        fieldLines.put("config." + key, line);
      }
    }
    for (Map.Entry<String, Integer> entry : fieldLines.entrySet()) {
      json.writeNumberField(entry.getKey(), entry.getValue());
    }
    json.writeEndObject();
    json.writeArrayFieldStart("issues");
    json.writeEndArray();
    json.writeBooleanField("has_broker_id", false);
    json.writeBooleanField("manages_acls", false);
  }

  /** spec.replicaAssignment when it has no finding: partitions of equally many distinct broker ids. */
  @SuppressWarnings("unchecked")
  private static List<List<Long>> assignment(Value value, Rules rules) throws Declined {
    if (value == null) {
      return null;
    }
    if (!(value.data instanceof List) || ((List<Value>) value.data).isEmpty()) {
      throw DECLINED;
    }
    List<List<Long>> partitions = new ArrayList<>();
    for (Value partition : (List<Value>) value.data) {
      if (!(partition.data instanceof List)) {
        throw DECLINED;
      }
      List<Long> replicas = new ArrayList<>();
      Set<Long> seen = new HashSet<>();
      for (Value broker : (List<Value>) partition.data) {
        if (!(broker.data instanceof Long) || (Long) broker.data < 0 || (Long) broker.data > rules.partitionsMax
            || !seen.add((Long) broker.data)) {
          throw DECLINED;  // not a broker id, or twice in one partition
        }
        replicas.add((Long) broker.data);
      }
      if (replicas.isEmpty() || (!partitions.isEmpty() && replicas.size() != partitions.get(0).size())) {
        throw DECLINED;  // EmptyReplicaAssignment, UnevenReplicaAssignment
      }
      partitions.add(replicas);
    }
    return partitions;
  }

  /** spec.config, each value as Kafka receives it, when every key and value passes the rules. */
  private static Map<String, String> config(Value value, Long replicas, Rules rules) throws Declined {
    Map<String, String> config = new LinkedHashMap<>();
    if (value == null) {
      return config;
    }
    if (value.fields == null) {
      throw DECLINED;
    }
    for (Map.Entry<String, Value> entry : value.fields.entrySet()) {
      ConfigRule rule = rules.configs.get(entry.getKey());
      Object data = entry.getValue().data;
      String text;
      if (rule == null) {
        throw DECLINED;  // an unknown key, or one whose check only Python has
      }
      boolean number = rule.type.equals("int") || rule.type.equals("long") || rule.type.equals("double");
      if (data instanceof String) {
        text = (String) data;
      } else if (number && data instanceof Long) {
        text = data.toString();  // unquoted numbers for a number config: normalised as written, no warning
      } else if (number && data instanceof PlainFloat) {
        text = ((PlainFloat) data).text;
      } else if (rule.type.equals("boolean") && data instanceof Boolean) {
        text = data.toString();  // true / false, however YAML 1.1 spelled it
      } else {
        throw DECLINED;  // an unquoted value for a text config: Python warns
      }
      if (!text.equals(text.strip()) || !rule.accepts(text)) {
        throw DECLINED;
      }
      config.put(entry.getKey(), text);
    }
    String minInsync = config.get("min.insync.replicas");
    if (minInsync != null && replicas != null && Long.parseLong(minInsync) > replicas) {
      throw DECLINED;  // MinInsyncAboveReplicationFactor
    }
    String minLag = config.get("min.compaction.lag.ms");
    String maxLag = config.get("max.compaction.lag.ms");
    if (minLag != null && maxLag != null && Long.parseLong(minLag) > Long.parseLong(maxLag)) {
      throw DECLINED;  // CompactionLagConflict
    }
    String remote = config.get("remote.storage.enable");
    if (remote != null && remote.strip().toLowerCase(Locale.ROOT).equals("true")) {
      for (String policy : config.getOrDefault("cleanup.policy", "delete").split(",", -1)) {
        if (policy.strip().equals("compact")) {
          throw DECLINED;  // RemoteStorageRequiresDelete
        }
      }
      localRetention(config, "local.retention.ms", "retention.ms");
      localRetention(config, "local.retention.bytes", "retention.bytes");
    }
    return config;
  }

  /** rules._check_config_combinations: with tiered storage, the local retention within the total. */
  private static void localRetention(Map<String, String> config, String localKey, String totalKey) throws Declined {
    String local = config.get(localKey);
    String total = config.get(totalKey);
    if (local == null || total == null) {
      return;
    }
    long localValue = Long.parseLong(local);
    long totalValue = Long.parseLong(total);
    if (totalValue != -1 && localValue != -2 && (localValue == -1 || localValue > totalValue)) {
      throw DECLINED;  // LocalRetentionExceedsRetention
    }
  }

  private static void collectLines(Map<String, Value> fields, String path, Map<String, Integer> lines) {
    for (Map.Entry<String, Value> entry : fields.entrySet()) {
      String child = path.isEmpty() ? entry.getKey() : path + "." + entry.getKey();
      lines.put(child, entry.getValue().line);
      if (entry.getValue().fields != null) {
        collectLines(entry.getValue().fields, child, lines);
      }
    }
  }

  /** kafkaops.fleet.documents.display_path. */
  static String displayPath(String path) {
    if (path.startsWith("file://")) {
      return path.substring("file://".length());
    }
    if (path.startsWith("file:")) {
      return path.substring("file:".length());
    }
    return path;
  }

  /** kafkaops.fleet.documents.directory_cluster, of a path display_path has shown. */
  static String directoryCluster(String shown, String clusters) {
    String[] parts = shown.replace('\\', '/').split("/", -1);
    int directories = parts.length - 1;
    for (int i = directories - 2; i >= 0; i--) {
      if (parts[i].equals(clusters) && !parts[i + 1].isEmpty()) {
        return parts[i + 1];
      }
    }
    return null;
  }

  /** For a quick look from a shell: java -cp ... kafkaops.fleet.ManifestRows rules.json file.yaml */
  public static void main(String[] args) throws Exception {
    Rules rules = new Rules(new String(java.nio.file.Files.readAllBytes(java.nio.file.Path.of(args[0])), "UTF-8"));
    for (int i = 1; i < args.length; i++) {
      String text = new String(java.nio.file.Files.readAllBytes(java.nio.file.Path.of(args[i])), "UTF-8");
      List<String> rows = rows(args[i], text, rules);
      System.out.println(args[i] + ": " + (rows == null ? "declined" : rows.size() + " rows"));
    }
  }
}
