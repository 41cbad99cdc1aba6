"""A Kubernetes API server emulator for end-to-end tests, built on kmock.

The design note is in `kafkaops.testing.k8s_emulator`, the entry point.
"""

from .emulator import DEFAULT_NAMESPACES, KubernetesApiEmulator, load_manifests
from .errors import ApiError
from .resources import ResourceDef

__all__ = ["DEFAULT_NAMESPACES", "ApiError", "KubernetesApiEmulator", "ResourceDef", "load_manifests"]
