"""The passwords of KafkaUsers for `kafkaops plan` / `apply`: from files or environment variables,
never from the command line (where `ps` and shell history would show them).

A KafkaUser's password lives in a Secret: the one its passwordSecretRef names (key default
`password`), or for a generated password the Secret the operator creates (authentication.secretName,
default metadata.name; key `password`). The CLI reads that Secret's key as Kubernetes mounts it:

1. the file `<secrets dir>/<secret name>/<key>` (`--secrets-dir DIR` or `$KAFKAOPS_SECRETS_DIR`;
   one trailing newline is dropped), else
2. the environment variable `KAFKAOPS_SECRET_<SECRET NAME>_<KEY>`, upper-cased, every character
   other than A-Z and 0-9 turned into `_` (Secret `orders-app`, key `password`:
   `KAFKAOPS_SECRET_ORDERS_APP_PASSWORD`).

A password found nowhere is not an error here: the plan keeps the user's existing credential, or
reports PasswordUnavailable when there is none (the operator generates such passwords; the CLI never
does). Passwords are wrapped in `Secret` at once (prints as ***) and handed to the log redaction.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from kafkaops.kafka.security import Secret
from kafkaops.kafka.security.settings import hold_secrets
from kafkaops.resources.users import KafkaUser

ENV_PREFIX = "KAFKAOPS_SECRET_"
_NOT_ALNUM = re.compile(r"[^A-Z0-9]")


class PasswordSourceError(ValueError):
    """A password file exists but cannot be read (names the file, never its content)."""


def env_name(secret: str, key: str) -> str:
    """KAFKAOPS_SECRET_<SECRET>_<KEY> for a Secret's key."""
    return ENV_PREFIX + _NOT_ALNUM.sub("_", secret.upper()) + "_" + _NOT_ALNUM.sub("_", key.upper())


def read_password(secret: str, key: str, secrets_dir: str | Path | None,
                  environ: Mapping[str, str] | None = None) -> Secret | None:
    """The password in `secret`'s `key`: the file first, then the environment variable; None when neither."""
    if secrets_dir is not None:
        path = Path(secrets_dir) / secret / key
        if path.is_file():
            try:
                text = path.read_text("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise PasswordSourceError(f"cannot read the password file {path}: {type(exc).__name__}") from None
            return Secret(text[:-1] if text.endswith("\n") else text)
    value = (os.environ if environ is None else environ).get(env_name(secret, key))
    return None if value is None else Secret(value)


def read_passwords(users: Iterable[KafkaUser], secrets_dir: str | Path | None,
                   environ: Mapping[str, str] | None = None) -> dict[str, Secret]:
    """The passwords found for `users`' credentials, by SCRAM user name (DesiredState.passwords)."""
    found: dict[str, Secret] = {}
    for user in users:
        auth = user.authentication
        if auth is not None and (password := read_password(auth.secret_name, auth.password_key, secrets_dir,
                                                           environ)) is not None:
            found[user.user_name] = password
    hold_secrets(found.values())  # scrubbed from every log record of this process (install_redaction)
    return found


def with_passwords(targets: list, secrets_dir: str | Path | None, environ: Mapping[str, str] | None = None) -> list:
    """`targets` (cli/targets.py) whose desired states carry their users' passwords."""
    return [replace(t, desired=replace(t.desired, passwords=read_passwords(t.desired.users, secrets_dir, environ)))
            if t.desired.users else t for t in targets]
