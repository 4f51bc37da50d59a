"""Settings from the environment (never showing the secret) and delivery options."""

from __future__ import annotations

import logging

from bench_pipeline.publication.settings import DEFAULT_BASE_URL, LangfuseSettings, PublishOptions

SECRET = "sk-lf-very-secret-value-0123456789"


def test_settings_from_env_and_repr(monkeypatch):
    for name in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert not LangfuseSettings.from_env().configured
    monkeypatch.setenv("LANGFUSE_HOST", "https://host.example")
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-123456789")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    s = LangfuseSettings.from_env()
    assert s.base_url == "https://host.example" and s.configured
    monkeypatch.setenv("LANGFUSE_BASE_URL", "https://base.example")
    s = LangfuseSettings.from_env()
    assert s.base_url == "https://base.example"
    assert SECRET not in repr(s) and SECRET not in str(s) and "pk-lf-123456789" not in repr(s)
    assert s.secret_key == SECRET


def test_the_url_defaults_to_langfuse_cloud_without_a_trailing_slash():
    assert LangfuseSettings(None, "pk", "sk").url == DEFAULT_BASE_URL
    assert LangfuseSettings("https://lf.example/", "pk", "sk").url == "https://lf.example"
    assert not LangfuseSettings("https://lf.example", "pk", None).configured


def test_options_take_seconds_from_the_environment_and_ignore_what_is_not(monkeypatch, caplog):
    monkeypatch.setenv("LANGFUSE_TIMEOUT", "7.5")
    monkeypatch.setenv("LANGFUSE_READBACK_DELAY", "soon")
    with caplog.at_level(logging.WARNING, logger="bench_pipeline.publication"):
        options = PublishOptions.from_env()
    assert options.timeout == 7.5 and options.readback_delay == 60.0
    assert "LANGFUSE_READBACK_DELAY is not a number of seconds" in caplog.text
    monkeypatch.setenv("LANGFUSE_TIMEOUT", "-1")
    assert PublishOptions.from_env().timeout == 30.0
