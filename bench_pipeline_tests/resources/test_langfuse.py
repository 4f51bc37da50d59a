"""resources/langfuse.py: the Langfuse resource names the variables that hold the keys and
reads them when asked (``settings()``)."""

from __future__ import annotations

import pytest

from bench_pipeline.publication.settings import LangfuseSettings
from bench_pipeline.resources.langfuse import LangfuseResource

VARIABLES = ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "MY_URL", "MY_PK", "MY_SK")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_unset_keys_mean_not_configured(clean_env: pytest.MonkeyPatch) -> None:
    settings = LangfuseResource().settings()
    assert settings == LangfuseSettings(base_url=None, public_key=None, secret_key=None)
    assert not settings.configured


def test_the_default_variables_are_read_when_settings_are_asked_for(clean_env: pytest.MonkeyPatch) -> None:
    resource = LangfuseResource()
    clean_env.setenv("LANGFUSE_BASE_URL", "https://lf.example")
    clean_env.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-1")
    clean_env.setenv("LANGFUSE_SECRET_KEY", "sk-lf-1")
    assert resource.settings() == LangfuseSettings("https://lf.example", "pk-lf-1", "sk-lf-1")
    assert resource.settings().configured


def test_the_default_variables_honour_the_older_host(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LANGFUSE_HOST", "https://old.example")
    assert LangfuseResource().settings().base_url == "https://old.example"
    clean_env.setenv("LANGFUSE_BASE_URL", "https://new.example")
    assert LangfuseResource().settings().base_url == "https://new.example"


def test_other_variables_can_be_named(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MY_URL", "https://mine.example")
    clean_env.setenv("MY_PK", "pk")
    clean_env.setenv("MY_SK", "sk")
    clean_env.setenv("LANGFUSE_PUBLIC_KEY", "not-this-one")
    resource = LangfuseResource(base_url_env="MY_URL", public_key_env="MY_PK", secret_key_env="MY_SK")
    assert resource.settings() == LangfuseSettings("https://mine.example", "pk", "sk")
    # named variables are read as they are (no LANGFUSE_HOST fallback)
    clean_env.delenv("MY_URL")
    clean_env.setenv("LANGFUSE_HOST", "https://old.example")
    assert resource.settings().base_url is None


def test_the_keys_are_not_part_of_the_config(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LANGFUSE_SECRET_KEY", "sk-secret")
    assert LangfuseResource().model_dump() == {"base_url_env": "LANGFUSE_BASE_URL", "public_key_env": "LANGFUSE_PUBLIC_KEY",
                                               "secret_key_env": "LANGFUSE_SECRET_KEY"}
    assert "sk-secret" not in repr(LangfuseResource().settings())
