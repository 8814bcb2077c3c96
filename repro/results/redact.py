"""Kept so that imports of the old name still work: redaction lives in repro.secrets with the rule it applies
(issue 39). New code imports repro.secrets."""

from repro.secrets import (  # noqa: F401
    fingerprint,
    is_redacted,
    is_secret_name,
    marker,
    redact_argv,
    redact_env,
    redact_text,
    redact_tree,
    redact_value,
)
