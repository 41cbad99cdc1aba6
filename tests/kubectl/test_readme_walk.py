"""Every kubectl command in the README's operator section has a test that runs it, literally.

The commands are the lines starting with `kubectl ` in the section's ```sh blocks and the inline
`kubectl ...` spans of three words or more (comments stripped). A command is covered when
test_kubectl.py passes exactly that string to `k(...)` or `k.watch(...)`.
"""

from __future__ import annotations

import ast
import re

from .conftest import ROOT

SECTIONS = ("## The operator on Kubernetes", "## Try it without a real cluster")


def readme_kubectl_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    commands: list[str] = []
    for title in SECTIONS:
        start = text.index(title)
        end = text.find("\n## ", start + len(title))
        section = text[start:end if end > 0 else len(text)]
        for block in re.findall(r"```sh\n(.*?)```", section, re.S):
            for line in block.splitlines():
                if line.startswith("kubectl "):
                    commands.append(re.sub(r"\s+#.*$", "", line).strip())
        prose = re.sub(r"```.*?```", "", section, flags=re.S)
        for span in re.findall(r"`(kubectl [^`]+)`", prose):
            if len(span.split()) >= 3:
                commands.append(span.strip())
    return list(dict.fromkeys(commands))


def commands_in_tests() -> set[str]:
    tree = ast.parse((ROOT / "tests" / "kubectl" / "test_kubectl.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and \
                isinstance(node.args[0].value, str) and node.args[0].value.startswith("kubectl "):
            found.add(node.args[0].value)
    return found


def test_the_readme_has_kubectl_commands() -> None:
    commands = readme_kubectl_commands()
    assert len(commands) >= 15, commands
    assert "kubectl apply -f crds/" in commands and "kubectl get kafkaops -n kafka-dev" in commands


def test_every_readme_kubectl_command_is_run_by_a_test() -> None:
    missing = [c for c in readme_kubectl_commands() if c not in commands_in_tests()]
    assert not missing, f"README kubectl commands no test runs (add them to tests/kubectl/test_kubectl.py): {missing}"
