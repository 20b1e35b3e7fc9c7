"""Secrets are removed from text and log records, ordinary text is left alone, length is capped."""

from __future__ import annotations

import logging
import sys

import pytest

from muse_acp.redact import (
    REDACTED,
    SESSION_SECRETS,
    RedactingFilter,
    SecretRegistry,
    looks_like_credential,
    redact,
    secret_arguments,
    url_secrets,
)
from muse_acp.text import ELLIPSIS

ENV = {
    "META_API_KEY": "mk-live-0123456789",
    "github_token": "ghp_abcdefgh",
    "DB_PASSWORD": "hunter22",
    "CLIENT_SECRET": "s3cr3t-value",
    "GCP_CREDENTIALS": "cred-json-blob",
    "AWS_CREDENTIAL": "aws-credential-1",
    "SHORT_TOKEN": "abc12",
    "HOME": "/home/someone",
    "PATH_KEYRING": "not-a-secret-name",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key mk-live-0123456789 rejected", f"key {REDACTED} rejected"),
        ("token=ghp_abcdefgh;", f"token={REDACTED};"),
        ("login hunter22 failed", f"login {REDACTED} failed"),
        ("secret s3cr3t-value", f"secret {REDACTED}"),
        ("creds cred-json-blob, aws-credential-1", f"creds {REDACTED}, {REDACTED}"),
        (
            "Authorization: Bearer eyJhbGciOi.J9-_~+/x==",
            f"Authorization: Bearer {REDACTED}",
        ),
        ("authorization: bearer abc.def", f"authorization: bearer {REDACTED}"),
        (
            "fetch https://alice:pa55@example.com/v1 failed",
            f"fetch https://{REDACTED}@example.com/v1 failed",
        ),
        ("git+ssh://token@host.example/repo", f"git+ssh://{REDACTED}@host.example/repo"),
        (
            "GET https://api.example.com/v1?api_key=AKIA123&limit=5",
            f"GET https://api.example.com/v1?api_key={REDACTED}&limit=5",
        ),
        (
            "https://x.example/?a=1&key=zz9&token=t0k#frag",
            f"https://x.example/?a=1&key={REDACTED}&token={REDACTED}#frag",
        ),
        ("https://x.example/?ACCESS_TOKEN=abc", f"https://x.example/?ACCESS_TOKEN={REDACTED}"),
    ],
)
def test_each_secret_form_is_redacted(text: str, expected: str) -> None:
    assert redact(text, environ=ENV) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Muse could not finish the turn: the model returned an error.",
        "the key to success; a token gesture; password reset link sent",
        "abc12 is too short to be treated as a secret",
        "see https://example.com/docs?page=2&monkey=1 and not-a-secret-name",
        "path /home/someone/project stays",
        "Bearer",
    ],
)
def test_ordinary_text_is_left_unchanged(text: str) -> None:
    assert redact(text, environ=ENV) == text


def test_a_secret_containing_another_secret_is_replaced_whole() -> None:
    env = {"OUTER_TOKEN": "abcdef-123456", "INNER_KEY": "abcdef"}
    assert redact("x abcdef-123456 y abcdef", environ=env) == f"x {REDACTED} y {REDACTED}"


def test_redacting_twice_gives_the_same_text() -> None:
    text = "Bearer abc https://u:p@h.example/?token=t mk-live-0123456789"
    once = redact(text, environ=ENV)
    assert redact(once, environ=ENV) == once


def test_the_process_environment_is_used_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("META_API_KEY", "from-the-environment")
    assert redact("got from-the-environment") == f"got {REDACTED}"


def test_long_text_is_capped_at_the_limit_with_a_marker() -> None:
    result = redact("x" * 5000, environ={})
    assert len(result) == 4096
    assert result.endswith(ELLIPSIS)
    assert redact("y" * 50, environ={}, limit=20) == "y" * 19 + ELLIPSIS


def test_secrets_are_redacted_before_the_length_is_capped() -> None:
    # Capping first would cut the secret in half, and the half would no longer match.
    text = "a" * 10 + " mk-live-0123456789 tail"
    assert len(text) > 30
    assert redact(text, environ=ENV, limit=30) == "a" * 10 + f" {REDACTED} tail"


def _record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("muse_acp", logging.ERROR, __file__, 1, msg, args, None)


def test_the_log_filter_redacts_the_rendered_message() -> None:
    record = _record("host said %s with %s", "Bearer abc.def", "mk-live-0123456789")
    assert RedactingFilter(environ=ENV).filter(record) is True
    assert record.getMessage() == f"host said Bearer {REDACTED} with {REDACTED}"
    assert record.args is None


def test_the_log_filter_redacts_exception_text() -> None:
    try:
        raise RuntimeError("connect https://bob:hunter22@proxy.example failed")
    except RuntimeError:
        record = logging.LogRecord(
            "muse_acp", logging.ERROR, __file__, 1, "failed", None, sys.exc_info()
        )
    RedactingFilter(environ=ENV).filter(record)
    formatted = logging.Formatter().format(record)
    assert "hunter22" not in formatted
    assert "bob" not in formatted
    assert f"https://{REDACTED}@proxy.example" in formatted
    assert "Traceback" in formatted


def test_the_log_filter_caps_messages_at_its_limit() -> None:
    record = _record("%s", "z" * 100)
    RedactingFilter(environ={}, limit=30).filter(record)
    assert record.getMessage() == "z" * 29 + ELLIPSIS


def test_remembered_secrets_are_redacted_wherever_they_appear() -> None:
    registry = SecretRegistry()
    registry.remember(["mcp-env-value-1", "Bearer hdr-token-22", "hdr-token-22", "short"])
    text = 'env mcp-env-value-1, header "hdr-token-22", word short'
    assert redact(text, environ={}, registry=registry) == (
        f'env {REDACTED}, header "{REDACTED}", word short'
    )


def test_a_remembered_secret_is_redacted_as_json_quotes_it() -> None:
    registry = SecretRegistry()
    registry.remember(['pa"ss\\word'])
    assert redact('{"env": {"X": "pa\\"ss\\\\word"}}', environ={}, registry=registry) == (
        f'{{"env": {{"X": "{REDACTED}"}}}}'
    )


def test_the_registry_keeps_at_most_its_capacity_the_oldest_given_up_first() -> None:
    registry = SecretRegistry(capacity=3)
    registry.remember(["secret-1", "secret-2", "secret-3"])
    registry.remember(["secret-1", "secret-4"])  # the first is given again: kept as recent
    assert sorted(registry.values()) == ["secret-1", "secret-3", "secret-4"]
    assert redact("secret-2 secret-4", environ={}, registry=registry) == f"secret-2 {REDACTED}"


def test_the_process_registry_is_used_by_default_in_messages_and_logs() -> None:
    secret = "process-wide-secret-5e1f"
    SESSION_SECRETS.remember([secret])
    assert redact(f"host said {secret}", environ={}) == f"host said {REDACTED}"
    record = _record("line %s", secret)
    RedactingFilter(environ={}).filter(record)
    assert record.getMessage() == f"line {REDACTED}"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--token=tok-123456"], ["tok-123456"]),
        (["--api-key", "key-123456", "--verbose"], ["key-123456"]),
        (["--client-secret", "sec-123456"], ["sec-123456"]),
        (["GITHUB_TOKEN=ghp-123456"], ["ghp-123456"]),
        (["-H", "Authorization: Bearer abc-123456"], ["Bearer abc-123456", "abc-123456"]),
        (["--password=p@ss:w0rd="], ["p@ss:w0rd="]),
        (["https://u:pw-123456@h.example/"], ["u:pw-123456", "pw-123456", "u"]),
        (["--mode=auth", "plain-value", "--verbose", "x"], []),
        (["serve", "--port", "8080", "https://h.example/?page=2"], []),
        (["--no-auth", "--transport", "stdio"], []),
        (["--token", "--verbose", "--auth", "-"], []),
    ],
)
def test_secret_looking_arguments_are_found(args: list[str], expected: list[str]) -> None:
    assert set(secret_arguments(args)) == set(expected)


def test_url_credentials_are_found() -> None:
    text = "at https://bob:pw%2F123456@h.example/x?token=q-123456&access_token=a-123456&v=2"
    assert set(url_secrets(text)) == {
        "bob:pw%2F123456",
        "bob:pw/123456",
        "pw%2F123456",
        "pw/123456",
        "bob",
        "q-123456",
        "a-123456",
    }
    assert url_secrets("https://h.example/?page=2 and no url at all") == []


def test_a_query_secret_is_redacted_as_the_url_spells_it_and_decoded() -> None:
    url = "https://h.example/mcp?secret=abc%2Fdef123&auth=xyz+uvw987&page=2"
    assert set(url_secrets(url)) == {"abc%2Fdef123", "abc/def123", "xyz+uvw987", "xyz uvw987"}
    registry = SecretRegistry()
    registry.remember(url_secrets(url))
    text = f"GET {url} refused; secret abc/def123, auth xyz uvw987"
    assert redact(text, environ={}, registry=registry) == (
        f"GET https://h.example/mcp?secret={REDACTED}&auth={REDACTED}&page=2 refused; "
        f"secret {REDACTED}, auth {REDACTED}"
    )


def test_a_remembered_secret_is_redacted_percent_encoded() -> None:
    registry = SecretRegistry()
    registry.remember(["s3cr3t/tok=="])
    assert redact("Authorization: Bearer%20s3cr3t%2Ftok%3D%3D", environ={}, registry=registry) == (
        f"Authorization: Bearer%20{REDACTED}"
    )


_PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n"
    "-----END PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "stderr: MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
            f"stderr: {REDACTED}",
        ),
        (" ".join(f"bad key: {_PEM}".split()), f"bad key: {REDACTED}"),
        ("passphrase correct horse battery rejected", f"passphrase {REDACTED} rejected"),
        ("a PRIVATE KEY is correct", "a PRIVATE KEY is correct"),
    ],
)
def test_a_multi_line_secret_is_redacted_collapsed_and_line_by_line(
    text: str, expected: str
) -> None:
    registry = SecretRegistry()
    registry.remember([_PEM, "correct  horse\tbattery"])
    assert redact(text, environ={}, registry=registry) == expected


@pytest.mark.parametrize(
    ("value", "looks"),
    [
        ("ghp_4f9Qx2LmT8rV1zK7", True),
        ("sk-live-0123456789abcdef", True),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", True),
        ("production", False),
        ("/home/alice/.config/mcp", False),
        ("C:\\Users\\alice\\AppData01", False),
        ("https://api.example/v1/endpoint2", False),
        ("text/event-stream", False),
        ("a1b2c3d4e5", False),
        ("correct horse battery staple 42", False),
        ("abcdefghijklmnopqrstuvwxyz", False),
    ],
)
def test_a_credential_is_told_by_its_looks(value: str, looks: bool) -> None:
    assert looks_like_credential(value) is looks
