"""Where kopf keeps what it last handled of each object: the status, not an annotation.

kopf tells a creation from an update, and an update from nothing, by comparing each object with
the copy of its spec, labels and annotations it stored when it last handled it (its "diff base").
Stored as an annotation, as kafkaops did before, every handled change costs two PATCHes: the
object's metadata (the annotation) and its status subresource (the outcome). Stored in the status
(`status.lastHandledConfiguration`), it rides on the status PATCH the outcome needs anyway: one
request and one watch event less per object and change (at 10,000 new KafkaTopics, 10,000 PATCHes
fewer; docs/benchmarks.md, "One PATCH less per object"). It also keeps kopf's bookkeeping out of
`metadata`, where GitOps tools look.

Objects handled by an older kafkaops still carry the annotation: it is read when the status has
none (so an upgrade does not re-run every creation), and removed the first time such an object is
handled again.
"""

from __future__ import annotations

from typing import Any

import kopf

from kafkaops.k8s.kinds import DIFFBASE_FIELD, STORAGE_PREFIX

LEGACY_KEY = "last-handled-configuration"  # the annotation `kopf.kafkaops.io/last-handled-configuration`


class StatusDiffBase(kopf.MultiDiffBaseStorage):
    """kopf's diff base in `status.lastHandledConfiguration`, read from the older annotation as a
    fallback; written to the status only (the annotation, where present, is removed)."""

    def __init__(self) -> None:
        self.status = kopf.StatusDiffBaseStorage(field=f"status.{DIFFBASE_FIELD}")
        self.legacy = kopf.AnnotationsDiffBaseStorage(prefix=STORAGE_PREFIX, key=LEGACY_KEY)
        super().__init__([self.status, self.legacy])  # build drops both from the essence; fetch tries both

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: Any) -> None:
        self.status.store(body=body, patch=patch, essence=essence)
        for key in self.legacy.make_keys(self.legacy.key, body=body):
            if key in body.metadata.annotations:
                patch.metadata.annotations[key] = None
